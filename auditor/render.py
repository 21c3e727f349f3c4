"""Rendering outputs: one audited carnet's files (findings.json, report.html,
annotated.xlsx) and its row of the batch summary, and the batch's own
summary.json and index.html."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from auditor import __version__
from auditor.catalogue import Profile
from auditor.model import AuditResult, Finding, Violation
from auditor.report import html_report, json_report

from auditor.report.view import period_of, verdict

if TYPE_CHECKING:
    from auditor.batch.plan import CarnetJob

FORMATS = ("html", "json", "xlsx")


def render_outputs(result: AuditResult, job: CarnetJob, formats: tuple[str, ...], profile: Profile,
                   generated_at: str | None = None, view=None, cross: list[dict] | None = None,
                   reports: dict[str, str | None] | None = None) -> tuple[dict[str, bytes], dict]:
    """The carnet's files (name → bytes) and its row in the batch summary;
    `view` is the carnet's findings against its baseline and reviews.
    `cross`: the batch's cross-carnet findings involving this carnet (seen from
    it, `for_carnet`), shown and counted in its report; `reports`: each
    carnet id's report path in the batch, to link to the other carnet."""
    from auditor import series

    view = view or series.apply(result.findings, job.context)
    doc = series.decorate(json_report.findings_document(result, profile, job.shown, generated_at),
                          result.findings, view)
    files: dict[str, bytes] = {}
    if "json" in formats:
        files["findings.json"] = json_report.dumps(doc).encode("utf-8")
    if "html" in formats:
        files["report.html"] = html_report.render_report(
            result, job.shown, doc["generated_at"],
            findings_file="findings.json" if "json" in formats else None,
            annotated_file="annotated.xlsx" if "xlsx" in formats else None,
            cross=cross, reports=reports, series=view).encode("utf-8")
    if "xlsx" in formats:
        from auditor.report.excel_report import annotated_bytes

        files["annotated.xlsx"] = annotated_bytes(result, job.path, result.lang, doc["generated_at"])
    entry = {"id": job.id, "path": job.shown, "verdict": verdict(result), "sha256": result.carnet.source.sha256,
             "carnet": doc["carnet"], "period": period_of(result), "summary": doc["summary"],
             "report": f"{job.id}/report.html" if "html" in formats else None}
    if view.has_baseline:
        entry["baseline_counts"] = view.counts()
    return files, entry


def restamp_outputs(files: dict[str, bytes], old: str, new: str) -> dict[str, bytes]:
    """Rendered files stamped `old` (a cached result), stamped `new` instead:
    the same bytes a fresh render at `new` gives. The stamp is replaced only
    where the renderers put it (findings.json's `generated_at`, the report's
    footer, the workbook's properties), never in the carnet's own text."""
    if old == new:
        return files
    out = dict(files)
    if "findings.json" in out:
        out["findings.json"] = out["findings.json"].replace(
            f'"generated_at": "{old}"'.encode(), f'"generated_at": "{new}"'.encode(), 1)
    if "report.html" in out:
        html = out["report.html"]
        at = html.rfind(b"<footer>")
        if at >= 0:
            from auditor.i18n import LANGS
            from auditor.report.view import moment_text

            tail = html[at:].replace(old.encode(), new.encode())
            for lang in LANGS:   # the footer also writes the moment the reader's way
                tail = tail.replace(moment_text(old, lang).encode(), moment_text(new, lang).encode())
            out["report.html"] = html[:at] + tail
    if "annotated.xlsx" in out:
        from auditor.report.xlsx_io import restamp

        out["annotated.xlsx"] = restamp(out["annotated.xlsx"], new)
    return out


def write_batch(entries: list[dict], out: Path, formats: tuple[str, ...], lang: str, generated_at: str,
                cross_findings: list[dict] | None = None, trends: list[dict] | None = None) -> None:
    """Write the batch's summary.json and index.html beside the carnets' folders."""
    totals = {k: sum(e["summary"][k] for e in entries)
              for k in ("errors", "warnings", "info", "impact_cents", "rows_read", "rows_rejected")}
    # A cross-carnet finding counts once in the totals, though each carnet it involves counts it.
    for f in cross_findings or []:
        key = {"error": "errors", "warning": "warnings", "info": "info"}[f["severity"]]
        totals[key] += 1
        totals["impact_cents"] += max(int(f.get("impact_cents") or 0), 0)
    totals["carnets"] = len(entries)
    totals["cross_carnet_findings"] = len(cross_findings or [])
    doc = {"schema_version": 1, "tool": {"name": "ecarte-auditor", "version": __version__},
           "generated_at": generated_at, "carnets": entries, "totals": totals,
           "cross_carnet_findings": cross_findings or []}
    from auditor.atomic import write_atomic

    if "json" in formats:
        write_atomic(out / "summary.json", json.dumps(doc, ensure_ascii=False, indent=2) + "\n")
    if "html" in formats:
        from auditor.report.series_view import index_part
        from auditor.report.view import index_view

        view = index_view(doc, lang)
        view.series = index_part(entries, lang, trends)
        write_atomic(out / "index.html", html_report.render("index.html.j2", view))


def cross_carnet_json(f: Finding, v: Violation) -> dict:
    """A finding over a batch as summary.json lists it: code, severity,
    article, message, then where (casino, value, numbers, the two carnets)."""
    p = v.params
    return {"code": f.code, "severity": f.severity.label, "article": f.article, "message": f.message,
            "casino": p["casino"], "valeur_cents": p["valeur_cents"], "first": p["first"], "last": p["last"],
            "carnets": p["carnets"], "impact_cents": int(f.impact_cents)}

