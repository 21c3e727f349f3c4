"""findings.json, exactly as spec/outputs.md lays it out (stable key order, cents)."""

from __future__ import annotations


from auditor import __version__, jsontext
from auditor.catalogue import Profile
from auditor.clock import generated_at
from auditor.model import AuditResult


def findings_document(result: AuditResult, profile: Profile, source_path: str, at: str | None = None) -> dict:
    """`at`: the batch's one timestamp (computed once by the client), else now."""
    src = result.carnet.source
    rules = []
    for status in result.rules:
        entry = status.as_json()
        if status.code in result.notes:
            entry["note"] = result.notes[status.code]
        rules.append(entry)
    return {
        "schema_version": 1,
        "tool": {"name": "ecarte-auditor", "version": __version__},
        "generated_at": at or generated_at(),
        "source": {"path": source_path, "sha256": src.sha256, "format": src.format},
        "carnet": result.carnet.cover,
        "profile": profile.as_json(),
        "summary": result.summary,
        "rules": rules,
        "findings": [f.as_json() for f in result.findings],
        # How the source was understood: not findings, no rule code (outputs.md v1.1).
        "reading": result.carnet.reading,
    }


def dumps(document: dict) -> str:
    """A JSON document as the outputs write it (UTF-8 text, indented, newline at the end)."""
    return jsontext.dumps(document) + "\n"
