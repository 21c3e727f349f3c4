"""The procès-verbal (proces-verbal.pdf): the official record of one
carnet's audit, a PDF/A-3 document with findings.json attached inside.

It is laid out from the same finished view as report.html (`ReportView`,
built once per carnet in `outputs.finish`) and the run's reviews; nothing of
the audit is computed again here. Python turns the view into plain data (a
JSON document); the Typst template in templates/pv/ places it. Carnet text
travels as JSON strings and is set as text by the template, never written
into Typst markup, so nothing has to be escaped by hand.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import resources
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

from auditor import __version__
from auditor.i18n import format_day
from auditor.report.baseline_view import review_view as review_text

if TYPE_CHECKING:   # the audit command imports this module for its Visit, before any audit
    from auditor.report.report_view import ReportView

FILE_NAME = "proces-verbal.pdf"
TEMPLATE = ("templates", "pv", "proces-verbal.typ")
# The PDF's keywords carry the attached findings.json's hash, where `verify`
# reads it back (the same hash is printed in the identity table).
KEYWORD = "findings-sha256:"
KEYWORD_RE = re.compile(re.escape(KEYWORD) + r"([0-9a-f]{64})")
# And, for a CSV folder, each source file's own SHA-256 and name (its name
# percent-encoded: no comma or space splits a keyword), which `verify`
# compares file by file (printed in the identity table too).
SOURCE_KEYWORD = "source-sha256:"
SOURCE_KEYWORD_RE = re.compile(re.escape(SOURCE_KEYWORD) + r"([0-9a-f]{64}):([^\s,;]*)")
# French casinos: the visit's local date is Paris's. A machine without a time
# zone database (Windows without the tzdata package) falls back to UTC and
# says so in the label.
LOCAL_ZONE = "Europe/Paris"


@dataclass(frozen=True)
class Visit:
    """Who audits, where: given on the command line (never the login name)."""

    inspector: str = ""
    grade: str = ""
    place: str = ""


def local_day(stamp: str) -> tuple[str, bool]:
    """The run's time stamp (`2026-01-01T23:30:00Z`) as a day in Paris (ISO),
    and whether Paris's zone was known (else the UTC day)."""
    moment = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    try:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        return moment.astimezone(ZoneInfo(LOCAL_ZONE)).date().isoformat(), True
    except (ImportError, ZoneInfoNotFoundError, ValueError):
        return moment.date().isoformat(), False


def pv_data(view: ReportView, reviews: dict[str, dict], document: dict, findings_sha256: str, visit: Visit,
            rules_digest: str) -> dict:
    """The procès-verbal as the template reads it: every text pre-formatted in the view's language.
    `reviews`: fingerprint → latest decision (baseline.BaselineComparison.reviews)."""
    lang, lab = view.lang, view.t
    t = lab["pv"]
    blank = t["blank"]

    def review(fingerprint: str) -> dict | None:
        r = reviews.get(fingerprint) if fingerprint else None
        if r is None:
            return None
        shown = review_text(r, lang)
        return {"status_text": shown["status_text"], "justification": shown["justification"] or "",
                "by": shown["by"] or "", "at": shown["at"], "stale": bool(r.get("stale"))}

    # An unreadable carnet has no cover: its pages are named by its source file.
    source = next((f.value for f in view.identity if f.name == lab["source"]), "")
    running = " — ".join(p for p in (view.casino or source.replace("\\", "/").rsplit("/", 1)[-1],
                                      t["running_table"].format(table=view.table) if view.table else "") if p)
    sha_name = lab["sha256"]
    identity = []
    for f in view.identity:
        identity.append({"name": f.name, "value": f.value, "mono": f.name == sha_name})
        if f.name == sha_name:   # a CSV folder's files, each with its own SHA-256, under the folder's
            identity += [{"name": t["source_file"].format(name=name), "value": digest, "mono": True}
                         for name, digest in view.source_files]
    identity += [
        {"name": t["findings_file"], "value": findings_sha256, "mono": True},
        {"name": t["tool"], "value": f"ecarte-auditor {__version__}", "mono": False},
        {"name": t["rulebook"], "mono": False,
         "value": t["rulebook_value"].format(profile=(document.get("profile") or {}).get("name", ""),
                                             digest=rules_digest[:16])},
    ]
    groups = []
    for g in view.groups:
        groups.append({
            "code": g.code, "title": g.title, "article": g.article, "severity": g.severity_text,
            "count_text": t["count"].format(n=g.count), "impact": g.impact, "more": g.more,
            # Expected and found, or the one value an information finding shows instead (view.value_columns).
            "heads": [*t["columns"][:4], *g.value_heads, t["columns"][-1]],
            "rows": [{"cells": [r.seance, r.coup, r.where, r.message, *r.values, r.impact],
                      "review": review(r.fingerprint)} for r in g.rows]})
    day, paris = local_day(view.generated_at)
    visit_rows = [{"name": t["inspector"], "value": visit.inspector or blank},
                  {"name": t["grade"], "value": visit.grade or blank},
                  {"name": t["place"], "value": visit.place or blank},
                  {"name": t["date"] if paris else f"{t['date'].split(' (')[0]} (UTC)",
                   "value": format_day(day, lang)}]
    reading = None
    if view.reading:
        reading = {"lines": list(view.reading["lines"]),
                   "rows": [{**r, "header_row": str(r["header_row"] or ""), "sheet": str(r["sheet"] or "")}
                            for r in view.reading["rows"]]}
    return {
        "lang": lang, "t": t, "title": t["title"], "subtitle": t["subtitle"], "running": running,
        "author": visit.inspector or "ecarte-auditor",
        "keywords": [KEYWORD + findings_sha256, *source_keywords(view.source_files)],
        "identity": identity,
        "verdict": {"key": view.verdict, "text": view.verdict_text, "detail": view.verdict_detail},
        "money": [{"name": m.name, "amount": m.amount, "total": m.key == "impact"} for m in view.money],
        "groups": groups,
        "cross": [{"code": c.code, "severity": c.severity_text, "message": c.message, "here": c.here,
                   "others": [p.text for p in c.others], "impact": c.impact, "review": review(c.fingerprint)}
                  for c in view.cross],
        "not_checked": _not_checked(view),
        "comparison": _comparison(view),
        "reading": reading,
        "visit": visit_rows,
        "done_at": t["done_at"].format(place=visit.place or blank, date=format_day(day, lang)),
        "signatures": [
            {"title": t["sign_inspector"],
             "hint": t["sign_inspector_hint"].format(name=visit.inspector or blank,
                                                     grade=f", {visit.grade}" if visit.grade else "")},
            {"title": t["sign_casino"], "hint": t["sign_casino_hint"]}],
        "closing": t["closing"].format(version=__version__, moment=view.generated_text),
    }


def _comparison(view: ReportView) -> dict | None:
    """The findings against the previous audit (the run's baseline): how many
    are new, updated, unchanged, and those gone since; None without one."""
    series = view.series if isinstance(view.series, dict) else None
    if not series or not series.get("has_baseline"):
        return None
    return {"counts": [{"name": name, "n": str(n)} for _, name, n in series["counts"]],
            "absent": [{"code": a["code"] or "", "where": " / ".join(str(x) for x in (a["seance"], a["coup"]) if x != ""),
                        "message": a["message"] or ""} for a in series["absent"]]}


def source_keywords(files) -> list[str]:
    """The PDF keywords naming each source file with its SHA-256."""
    return [f"{SOURCE_KEYWORD}{digest}:{quote(name, safe='')}" for name, digest in files]


def source_files_of(keywords: str) -> list[tuple[str, str]]:
    """(name, SHA-256) of each source file the keywords name, in their order."""
    return [(unquote(m[2]), m[1]) for m in SOURCE_KEYWORD_RE.finditer(keywords)]


def _not_checked(view: ReportView) -> list[dict]:
    """The rules not checked, gathered by reason (an unreadable carnet stops them
    all for one reason: one line, not forty), in the catalogue's order."""
    by_reason: dict[str, list[str]] = {}
    for r in view.rules:
        if not r.checked:
            by_reason.setdefault(r.reason or "", []).append(r.code)
    return [{"codes": ", ".join(codes), "reason": reason} for reason, codes in by_reason.items()]


def render_pdf(data: dict, findings_json: bytes, generated_at: str) -> bytes:
    """The PDF/A-3b bytes of the procès-verbal: Typst's own embedded fonts
    only (no system font, no network), dated by the run's one time stamp so
    the same inputs give the same bytes."""
    import typst

    moment = datetime.strptime(generated_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    with resources.as_file(resources.files("auditor").joinpath(*TEMPLATE)) as template:
        return typst.compile(
            str(template), root=str(template.parent), font_paths=[], ignore_system_fonts=True,
            sys_inputs={"data": json.dumps(data, ensure_ascii=False), "findings": findings_json.decode("utf-8")},
            pdf_standards=["a-3b"], timestamp=int(moment.timestamp()))


def proces_verbal(view: ReportView, reviews: dict[str, dict], document: dict, findings_json: bytes,
                  visit: Visit) -> bytes:
    """The unsigned procès-verbal of one carnet, findings.json (`findings_json`, the bytes written beside it)
    attached."""
    from auditor.catalogue import rules_digest

    digest = hashlib.sha256(findings_json).hexdigest()
    data = pv_data(view, reviews, document, digest, visit, rules_digest())
    return render_pdf(data, findings_json, view.generated_at)
