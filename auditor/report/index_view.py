"""index.html's view model: `IndexView`, one row per carnet of a batch
(worst first), its filters, totals and the findings across carnets, from the
batch's summary.json document."""

from __future__ import annotations

import posixpath
from collections import Counter
from dataclasses import dataclass

from auditor import __version__
from auditor.i18n import format_day, labels
from auditor.money import format_cents
from auditor.report.page import Choice, Count, Page, Place, as_text, clip, js_labels, moment_text, place_text


@dataclass(frozen=True)
class IndexRow:
    """One carnet of a batch in index.html."""

    id: str
    path: str
    verdict: str
    verdict_rank: int
    verdict_text: str
    casino: str
    table: str
    errors: int
    warnings: int
    info: int
    impact: str
    impact_cents: int
    report: str | None
    cross: str             # "including n across carnets", or ""
    first: str             # first and last séance dates, ISO (filter values)
    last: str
    period: str            # the same, as the reader writes them
    link_text: str         # the report link, naming the carnet


@dataclass(frozen=True)
class CrossRow:
    """One cross-carnet finding in index.html."""

    code: str
    severity: str
    severity_text: str
    message: str
    places: list[Place]
    impact: str


@dataclass(frozen=True)
class IndexTotals:
    """The batch's totals as index.html shows them."""

    carnets: int
    errors: int
    warnings: int
    info: int
    impact: str


@dataclass
class IndexView(Page):
    """Everything index.html.j2 shows."""

    rows: list[IndexRow]
    cross: list[CrossRow]
    root: str                           # what was audited: the rows' paths are relative to it
    choices: dict[str, list[Choice]]    # the filters' options: verdict, casino, table
    verdict_counts: list[Count]
    totals: IndexTotals
    series: object = None        # baseline counts and trends (baseline_view.index_part; the templates' `series`), set by the renderer
    archive: object = None       # each table's archive (archive_view.archive_view), set by the renderer
    dashboard: str | None = None  # the indicators' page (with --history), set by the renderer


def _audited_root(paths: list[str]) -> str:
    """The folder the batch's carnets were found under (their common parent)."""
    parents = [posixpath.dirname(p.replace("\\", "/").rstrip("/")) for p in paths]
    if not parents:
        return ""
    try:
        return posixpath.commonpath(parents) if len({p.startswith("/") for p in parents}) == 1 else ""
    except ValueError:
        return ""


def _relative(path: str, root: str) -> str:
    """A carnet's path relative to what was audited."""
    path = path.replace("\\", "/")
    return posixpath.relpath(path, root) if root and (path + "/").startswith(root.rstrip("/") + "/") else path


def index_view(summary_doc: dict, lang: str) -> IndexView:
    """index.html of a batch: one row per carnet (worst first), filters, totals,
    cross-carnet findings."""
    lab = labels(lang)
    rank = {"ok": 0, "warning": 1, "error": 2, "unreadable": 3}
    root = _audited_root([e["path"] for e in summary_doc["carnets"]])
    rows = []
    for e in summary_doc["carnets"]:
        s = e["summary"]
        # The carnet's summary counts its own findings and those across carnets that involve it.
        cc = e.get("cross_carnet") or {}
        n = {k: s[k] for k in ("errors", "warnings", "info", "impact_cents")}
        carnet = e.get("carnet") or {}
        period = e.get("period") or {}
        first, last = as_text(period.get("first")), as_text(period.get("last"))
        rel = _relative(e["path"], root)
        rows.append(IndexRow(
            id=e["id"], path=rel, verdict=e["verdict"], verdict_rank=rank.get(e["verdict"], 4),
            verdict_text=lab[f"verdict_{e['verdict']}_short"], casino=as_text(carnet.get("casino")),
            table=as_text(carnet.get("table")), errors=n["errors"], warnings=n["warnings"], info=n["info"],
            impact=lab["unverified"] if e["verdict"] == "unreadable" else format_cents(n["impact_cents"], lang),
            impact_cents=-1 if e["verdict"] == "unreadable" else n["impact_cents"], report=e.get("report"),
            cross=lab["index_cross"].format(n=len(cc["findings"])) if cc.get("findings") else "",
            first=first, last=last,
            period=format_day(first if first == last else f"{first} → {last}", lang) if first else "",
            link_text=lab["index_link"].format(name=rel)))
    # Worst first: the verdict's gravity, then errors, then the amount at stake.
    rows.sort(key=lambda r: (-r.verdict_rank, -r.errors, -r.warnings, -r.impact_cents, r.path))
    tot = summary_doc["totals"]
    verdicts = Counter(e["verdict"] for e in summary_doc["carnets"])
    reports = {e["id"]: e.get("report") for e in summary_doc["carnets"]}
    cross = []
    for f in summary_doc.get("cross_carnet_findings") or []:
        places = []
        for c in f.get("across") or []:
            places.append(Place(place_text(c, lab), reports.get(c.get("carnet"))))
        sev = as_text(f.get("severity"))
        cross.append(CrossRow(as_text(f.get("code")), sev, lab.get(sev, sev), clip(f.get("message")), places,
                              format_cents(f["impact_cents"], lang) if f.get("impact_cents") else ""))
    return IndexView(
        lang=lang, t=lab, js_labels=js_labels(lab), tool_version=__version__,
        generated_at=summary_doc["generated_at"], generated_text=moment_text(summary_doc["generated_at"], lang),
        rows=rows, cross=cross, root=root,
        choices={"verdict": [Choice(k, lab[f"verdict_{k}_short"]) for k in ("error", "warning", "ok", "unreadable")
                             if any(r.verdict == k for r in rows)],
                 "casino": [Choice(c, c) for c in sorted({r.casino for r in rows if r.casino})],
                 "table": [Choice(t, t) for t in sorted({r.table for r in rows if r.table},
                                                        key=lambda t: (len(t), t))]},
        verdict_counts=[Count(k, lab[f"verdict_{k}_short"], verdicts.get(k, 0))
                        for k in ("ok", "warning", "error", "unreadable")],
        totals=IndexTotals(len(rows), tot["errors"], tot["warnings"], tot["info"],
                           format_cents(tot["impact_cents"], lang)))
