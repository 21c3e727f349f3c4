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
from auditor.errors import WriteError
from auditor.i18n import format_day
from auditor.names import code_point
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

# The characters the procès-verbal can show: those the fonts Typst embeds
# map (Libertinus Serif, New Computer Modern and its Math, DejaVu Sans Mono;
# Typst falls back from one to another), as hexadecimal code points and
# ranges, less DEL and the private use area (a font's own glyphs there say
# nothing of the carnet's text), less what Typst refuses all the same (a
# symbol of DejaVu Sans Mono's upright fonts only, in italic; a combining
# mark after a Latin letter). `python tests/test_pv_glyphs.py` makes it from
# the installed typst; a test compares. PDF/A forbids text a font lacks, and
# Typst refuses the whole document for one such character: any other
# character is written `<U+XXXX>`, visibly (docs/interpretations.md).
SHOWN = """
20-7E A0-377 37A-37F 384-38A 38C 38E-3A1 3A3-484 487-4FF 510-513 51A-51D 531-58F 591-5C7 5D0-5EB 5EF-5F5
5F7 606-60C 615 61B 61F 621-63A 640-64A 65A 660-66D 674 679-67B 67E-680 683-684 686-687 691 698 6A4 6A9
6AF 6BE 6CC 6F0-6F9 900-950 955-97F E3F E81-E82 E84 E87-E88 E8A E8D E94-E97 E99-E9F EA1-EA3 EA5 EA7
EAA-EAB EAD-EB9 EBB-EBC EC8-ECD 10D0-10FF 13A0-13FD 1D00-1DBF 1E00-1F15 1F18-1F1D 1F20-1F45 1F48-1F4D
1F50-1F57 1F59 1F5B 1F5D 1F5F-1F7D 1F80-1FB4 1FB6-1FC4 1FC6-1FD3 1FD6-1FDB 1FDD-1FEF 1FF2-1FF4 1FF6-1FFE
2000-2027 2029 202F-2040 2042 2044-2052 2054-2064 2070-2071 2074-208E 2090-209C 20A0-20C0 2100-211E 2120
2122 2124 2126-2151 2153-2184 2189 2190-23FF 2422-2423 2460-2606 2609-262F 2638-268B 2690-269C 26A0-26A7
26AA-26AF 26B2 2701-2704 2706-2709 270C-2714 2717-2726 272A-274B 274D 274F-2752 2756 2758-275E 2761-277F
2794 2798-27AF 27B1-2B73 2B76-2B95 2B97-2BFF 2C60-2CF3 2CF9-2CFF 2E02-2E05 2E08-2E0A 2E17-2E18 2E1F
2E22-2E25 2E2E 3012 3016-3017 301A-301B 3030 3036 306E A46A-A46B A640-A641 A648-A649 A656-A657 A708-A716
A71B-A727 A72D A730 A735 A765 A789-A78E A790-A791 A793 A7AA A7F8-A7F9 AB52 AB66 AB70-ABBF FB00-FB06
FB13-FB17 FB1D-FB4F FB52-FB81 FB8A-FB95 FB9E-FB9F FBAA-FBAD FBE8-FBE9 FBFC-FBFF FE00-FE01 FE2E-FE2F FE66
FE70-FE74 FE76-FEFC FEFF FFF9-FFFD 10140-1018E 102E1-102FB 1D106-1D107 1D400-1D454 1D456-1D49C
1D49E-1D49F 1D4A2 1D4A5-1D4A6 1D4A9-1D4AC 1D4AE-1D4B9 1D4BB 1D4BD-1D4C3 1D4C5-1D505 1D507-1D50A
1D50D-1D514 1D516-1D51C 1D51E-1D539 1D53B-1D53E 1D540-1D544 1D546-1D547 1D54A-1D550 1D552-1D6A5
1D6A8-1D7CB 1D7CE-1D7FF 1EE00-1EE22 1EE24 1EE27 1EE29-1EE32 1EE34-1EE37 1EE39 1EE3B 1EE42 1EE47 1EE49
1EE4B 1EE4D-1EE4F 1EE51-1EE52 1EE54 1EE57 1EE59 1EE5B 1EE5D 1EE5F 1EE61-1EE62 1EE64 1EE67-1EE6A
1EE6C-1EE72 1EE74-1EE77 1EE79-1EE7C 1EE7E-1EE89 1EE8B-1EE9B 1EEA1-1EEA3 1EEA5-1EEA9 1EEAB-1EEBB
1EEF0-1EEF1 1F12F 1F6D1 1F780-1F7D8 1F7E0-1F7EB 1F7FF-1F80B 1F810-1F847 1F850-1F859 1F860-1F887
1F890-1F8AD 1F8B0-1F8BB 1F8C0-1F8C1 1F8D0-1F8D8
"""
# Tab, line feed and carriage return are no glyphs: Typst lays them out as
# white space and line breaks.
LAID_OUT = "\t\n\r"
# The PDF's metadata, not typeset: kept as they are.
METADATA = ("author", "keywords")
# Typst refused text the table says its fonts show (a typst whose fonts
# differ): that text's characters are written `<U+XXXX>` too and the PV made
# again, at most this many times.
RETRIES = 4
GLYPH_ERROR_RE = re.compile(r'the text `"((?:[^"\\]|\\.)*)"` could not be displayed')


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
    # The record says each message whole (the web report clips them at 200
    # characters, for its size): findings.json, the document attached, has them.
    whole = {f.get("fingerprint"): f.get("message") for f in document.get("findings") or ()
             if isinstance(f, dict) and f.get("fingerprint") and isinstance(f.get("message"), str)}

    def message(fingerprint: str, clipped: str) -> str:
        return whole.get(fingerprint, clipped) if fingerprint else clipped

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
            "rows": [{"cells": [r.seance, r.coup, r.where, message(r.fingerprint, r.message), *r.values, r.impact],
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
        "cross": [{"code": c.code, "severity": c.severity_text, "message": message(c.fingerprint, c.message),
                   "here": c.here,
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


def _ranges(table: str) -> str:
    """SHOWN as the inside of a regular expression's character class."""
    out = []
    for item in table.split():
        first, _, last = item.partition("-")
        out.append(f"\\U{int(first, 16):08x}" + (f"-\\U{int(last, 16):08x}" if last else ""))
    return "".join(out)


NOT_SHOWN_RE = re.compile(f"[^{re.escape(LAID_OUT)}{_ranges(SHOWN)}]")


def shown_text(text: str, refused: frozenset[str] = frozenset()) -> str:
    """`text` with each character the procès-verbal's fonts cannot show (and
    each of `refused`) written as its code point."""
    text = NOT_SHOWN_RE.sub(lambda m: code_point(m[0]), text)
    if refused:
        text = "".join(code_point(c) if c in refused else c for c in text)
    return text


def shown_data(data, refused: frozenset[str] = frozenset()):
    """The template's document with every text it typesets made showable
    (shown_text); the PDF's metadata (METADATA) is kept as it is."""
    def walk(value):
        if isinstance(value, str):
            return shown_text(value, refused)
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [walk(v) for v in value]
        return value

    return {k: v if k in METADATA else walk(v) for k, v in data.items()}


def _refused_characters(exc) -> set[str]:
    """The characters of the texts Typst says no font could display
    (each of its errors names one text), save printable ASCII, which the
    fonts surely have, and the white space Typst lays out."""
    said = f"{getattr(exc, 'diagnostic', '')}\n{getattr(exc, 'message', '')}"
    found = set()
    for m in GLYPH_ERROR_RE.finditer(said):
        found |= {c for c in _rust_unescaped(m[1]) if not (" " <= c <= "~" or c in LAID_OUT)}
    return found


def _rust_unescaped(text: str) -> str:
    """A string as Typst quotes it in an error (Rust's escapes: `\\u{1f600}`, `\\n`, `\\"`)."""
    simple = {"n": "\n", "t": "\t", "r": "\r", "0": "\0"}
    return re.sub(r"\\u\{([0-9a-fA-F]{1,6})\}|\\(.)",
                  lambda m: chr(int(m[1], 16)) if m[1] else simple.get(m[2], m[2]), text)


def render_pdf(data: dict, findings_json: bytes, generated_at: str, carnet: str = "") -> bytes:
    """The PDF/A-3b bytes of the procès-verbal: Typst's own embedded fonts
    only (no system font, no network), dated by the run's one time stamp so
    the same inputs give the same bytes. A character no font shows is written
    as its code point (shown_data). Typst failing otherwise stops the run as
    a file that cannot be written does (WriteError: one line, exit status 2),
    naming `carnet`."""
    import typst

    moment = datetime.strptime(generated_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    refused: frozenset[str] = frozenset()
    with resources.as_file(resources.files("auditor").joinpath(*TEMPLATE)) as template:
        for attempt in range(RETRIES + 1):
            try:
                return typst.compile(
                    str(template), root=str(template.parent), font_paths=[], ignore_system_fonts=True,
                    sys_inputs={"data": json.dumps(shown_data(data, refused), ensure_ascii=False),
                                "findings": findings_json.decode("utf-8")},
                    pdf_standards=["a-3b"], timestamp=int(moment.timestamp()))
            except typst.TypstError as exc:
                more = _refused_characters(exc) - refused
                if not more or attempt == RETRIES:
                    raise WriteError("audit.pv_not_made", carnet=carnet, reason=_first_line(exc)) from None
                refused |= more
    raise AssertionError("unreachable")   # the loop returns or raises


def _first_line(exc: Exception) -> str:
    """Typst's message, on one line and bounded (a carnet's text may be in it)."""
    text = " ".join(str(getattr(exc, "message", "") or exc).split())
    return text if len(text) <= 300 else text[:299] + "…"


def proces_verbal(view: ReportView, reviews: dict[str, dict], document: dict, findings_json: bytes,
                  visit: Visit) -> bytes:
    """The unsigned procès-verbal of one carnet, findings.json (`findings_json`, the bytes written beside it)
    attached."""
    from auditor.catalogue import rules_digest

    digest = hashlib.sha256(findings_json).hexdigest()
    data = pv_data(view, reviews, document, digest, visit, rules_digest())
    source = next((f.value for f in view.identity if f.name == view.t["source"]), "")
    return render_pdf(data, findings_json, view.generated_at, carnet=source or view.casino or "?")
