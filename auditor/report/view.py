"""The view model the templates render: everything pre-computed, pre-formatted
and pre-sorted here, so templates only loop and branch.

The view formats what the engine found (findings, rule statuses, summary) and
reads plain facts from the carnet (dates, coups per séance, recorded levy); it
never re-runs a check.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

import pandas as pd

from auditor import __version__
from auditor.catalogue import load_catalogue
from auditor.model import AuditResult
from auditor.i18n import format_day, labels
from auditor.model import Finding, Severity, Status
from auditor.money import format_cents
from auditor.report import charts, tickets_view
from auditor.report.chouette_runs import run_stories

# Rows rendered per rule group. Beyond it the group says how many are left out
# and points to findings.json: this is what bounds report.html's size.
MAX_ROWS_PER_GROUP = 200
MAX_CHOUETTE_RUNS = 300   # the run stories shown; a huge carnet keeps its report readable
# Text fields shown in a row are clipped (a cell can hold 32 767 characters);
# findings.json keeps them whole.
MAX_TEXT = 200
MAX_VALUE = 80          # expected / found: values, never prose
# Small reports open every group; big ones start collapsed.
OPEN_GROUPS_UP_TO = 100
# Codes whose impact is levy not collected / face value of missing tickets.
LEVY_CODES = ("EC66-01", "EC66-02")
MISSING_TICKET_CODES = ("EC83-01",)
NO_SEANCE = "-"


@dataclass(frozen=True)
class RuleRow:
    """One rule of the report's rule table."""

    code: str
    article: str
    severity: str          # error / warning / info (CSS class, filter value)
    severity_text: str
    title: str
    explain: str
    status: str
    checked: bool
    findings: int
    reason: str


@dataclass(frozen=True)
class FindingRow:
    """One finding as the report's tables show it."""

    code: str
    severity: str
    severity_text: str
    article: str
    message: str
    seance: str
    coup: str
    rang: str
    where: str
    expected: str
    found: str
    impact: str
    impact_cents: int
    seance_key: str        # filter value: the séance number, or NO_SEANCE


@dataclass
class RuleGroup:
    """The findings of one rule, as the report groups them."""

    code: str
    article: str
    severity: str
    severity_text: str
    title: str
    explain: str
    count: int
    impact: str
    rows: list[FindingRow]
    more: str              # "… n more in findings.json", or ""
    open: bool


@dataclass
class SeanceGroup:
    """The findings of one séance, as the report groups them."""

    key: str
    label: str
    date: str
    coups: str
    errors: int
    warnings: int
    info: int
    impact: str
    rules: list[tuple[str, int]] = field(default_factory=list)


from auditor.report.reading_view import reading_section

def verdict(result: AuditResult) -> str:
    """The carnet's verdict: unreadable, ok (nothing above info), or the worst severity found."""
    if result.carnet.unreadable:
        return "unreadable"
    worst = result.worst()
    if worst is None or worst < Severity.WARNING:
        return "ok"
    return "error" if worst >= Severity.ERROR else "warning"


def _s(v) -> str:
    return "" if v is None else str(v)


def clip(text: str | None, limit: int = MAX_TEXT) -> str:
    """`text` cut to `limit` characters, with an ellipsis when it was longer."""
    text = _s(text)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _where(f: Finding, lab: dict) -> str:
    parts = [f.table or ""]
    if f.row is not None:
        parts.append(f"{lab['row']} {f.row}")
    if f.cell:
        parts.append(f"{lab['cell']} {f.cell}")
    elif f.column:
        parts.append(f"{lab['column']} {f.column}")
    return ", ".join(p for p in parts if p)


def _seance_key(f: Finding) -> str:
    return NO_SEANCE if f.seance is None else str(f.seance)


def finding_row(f: Finding, lab: dict, lang: str) -> FindingRow:
    """A finding as the report's tables show it."""
    return FindingRow(
        code=f.code, severity=f.severity.label, severity_text=lab[f.severity.label], article=f.article,
        message=clip(f.message), seance=_s(f.seance), coup=_s(f.coup), rang=_s(f.rang),
        where=clip(_where(f, lab)), expected=clip(f.expected, MAX_VALUE), found=clip(f.found, MAX_VALUE),
        impact=format_cents(f.impact_cents, lang) if f.impact_cents else "",
        impact_cents=int(f.impact_cents), seance_key=_seance_key(f))


def _positive_impact(findings) -> int:
    # Same convention as summary.impact_cents: money owed, not money over-collected.
    return sum(f.impact_cents for f in findings if f.impact_cents > 0)


def _rule_groups(result: AuditResult, lab: dict, lang: str) -> list[RuleGroup]:
    catalogue = load_catalogue()
    by_code: dict[str, list[Finding]] = defaultdict(list)
    for f in result.findings:
        by_code[f.code].append(f)
    small = len(result.findings) <= OPEN_GROUPS_UP_TO
    groups = []
    # Catalogue order, as in the rules table; a code the catalogue lacks (never
    # expected) still gets its group, after the others.
    order = [st.code for st in result.rules] + sorted(set(by_code) - {st.code for st in result.rules})
    for code in order:
        found = by_code.get(code)
        if not found:
            continue
        meta = catalogue.get(code)
        sev = found[0].severity.label
        shown = found[:MAX_ROWS_PER_GROUP]
        more = len(found) - len(shown)
        groups.append(RuleGroup(
            code=code, article=article_text(found[0].article, lab), severity=sev, severity_text=lab[sev],
            title=meta.title[lang] if meta else code, explain=meta.explain[lang] if meta else "",
            count=len(found), impact=format_cents(_positive_impact(found), lang) if _positive_impact(found) else "",
            rows=[finding_row(f, lab, lang) for f in shown],
            more=lab["rows_left_out"].format(shown=len(shown), total=len(found)) if more else "",
            open=small))
    return groups


def _rules(result: AuditResult, lab: dict, lang: str) -> list[RuleRow]:
    catalogue = load_catalogue()
    rows = []
    for st in result.rules:
        meta = catalogue[st.code]
        reason = st.reason or result.notes.get(st.code, "")
        checked = st.status is Status.CHECKED
        rows.append(RuleRow(st.code, meta.article, meta.severity.label, lab[meta.severity.label], meta.title[lang],
                            meta.explain[lang], lab["checked" if checked else "not_checked"], checked,
                            st.findings, reason))
    return rows


# -- plain facts read from the carnet (no check is re-run) -----------------------

def _seance_facts(result: AuditResult) -> tuple[dict[int, str], dict[int, int], dict[int, int], dict[int, int]]:
    """Per séance: date (ISO), number of coup rows, highest coup number, recorded levy in cents."""
    carnet = result.carnet
    dates: dict[int, str] = {}
    n_coups: dict[int, int] = {}
    top_coup: dict[int, int] = {}
    levy: dict[int, int] = {}
    if "seances" in carnet.tables:
        s = carnet.df("seances")
        s = s[s["seance"].notna()]
        for no, d in zip(s["seance"].tolist(), s["date"].tolist()):
            if int(no) not in dates:
                dates[int(no)] = "" if pd.isna(d) else d.date().isoformat()
    if "coups" in carnet.tables:
        c = carnet.df("coups")
        c = c[c["seance"].notna()]
        recorded = (c["prelevement_cents"].fillna(0) + c["prelevement_apres_cents"].fillna(0)).astype("int64")
        g = pd.DataFrame({"seance": c["seance"].astype("int64"), "coup": c["coup"], "levy": recorded})
        for no, part in g.groupby("seance", sort=True):
            n_coups[int(no)] = len(part)
            top = part["coup"].max()
            top_coup[int(no)] = 0 if pd.isna(top) else int(top)
            levy[int(no)] = int(part["levy"].sum())
    return dates, n_coups, top_coup, levy


def _period(dates: dict[int, str], cover: dict) -> str:
    days = sorted(d for d in dates.values() if d)
    if not days:
        return _s(cover.get("date_debut"))
    return days[0] if days[0] == days[-1] else f"{days[0]} → {days[-1]}"


def _seance_groups(result: AuditResult, dates, n_coups, lab: dict, lang: str) -> list[SeanceGroup]:
    per: dict[str, list[Finding]] = defaultdict(list)
    for f in result.findings:
        per[_seance_key(f)].append(f)

    def order(key: str):
        return (0, 0) if key == NO_SEANCE else (1, int(key))

    groups = []
    for key in sorted(per, key=order):
        found = per[key]
        sev = Counter(f.severity for f in found)
        codes = Counter(f.code for f in found)
        no = None if key == NO_SEANCE else int(key)
        impact = _positive_impact(found)
        groups.append(SeanceGroup(
            key=key, label=lab["no_seance"] if no is None else key,
            date=format_day(dates.get(no, ""), lang) if no is not None else "",
            coups=_s(n_coups.get(no)) if no is not None else "",
            errors=sev[Severity.ERROR], warnings=sev[Severity.WARNING], info=sev[Severity.INFO],
            impact=format_cents(impact, lang) if impact else "",
            rules=[(code, codes[code]) for code in sorted(codes, key=lambda c: (-codes[c], c))]))
    return groups


def _money(result: AuditResult, lab: dict, lang: str) -> list[tuple[str, str, str]]:
    """Money at stake: the summary's levy totals, then the findings' impacts by kind."""
    s = result.summary
    checked = {st.code for st in result.rules if st.status is Status.CHECKED}
    levy = [f.impact_cents for f in result.findings if f.code in LEVY_CODES]
    short = sum(x for x in levy if x > 0)
    excess = -sum(x for x in levy if x < 0)
    missing = _positive_impact(f for f in result.findings if f.code in MISSING_TICKET_CODES)
    other = s["impact_cents"] - short - missing

    def amount(cents: int, codes: tuple[str, ...]) -> str:
        # A zero from a rule that did not run would read as "nothing missing".
        return format_cents(cents, lang) if checked & set(codes) else lab["not_checked"]

    rows = [("levy_expected", lab["levy_expected"], format_cents(s["levy_expected_cents"], lang)),
            ("levy_recorded", lab["levy_recorded"], format_cents(s["levy_recorded_cents"], lang)),
            ("levy_shortfall", lab["levy_shortfall"], amount(short, LEVY_CODES))]
    if excess:
        rows.append(("levy_excess", lab["levy_excess"], format_cents(excess, lang)))
    rows.append(("missing_tickets", lab["missing_tickets_value"], amount(missing, MISSING_TICKET_CODES)))
    if other:
        rows.append(("other_impact", lab["other_impact"], format_cents(other, lang)))
    rows.append(("impact", lab["impact_total"], format_cents(s["impact_cents"], lang)))
    return rows


def article_text(article: str, lab: dict) -> str:
    """`art. 64`, `art. 66-1`; the format rules (EC00) have no article."""
    return f"{lab['art']} {article}" if article[:1].isdigit() else lab.get(f"article_{article}", article)


def js_labels(lab: dict) -> dict[str, str]:
    """The few strings the inline script shows, from the same catalogue."""
    return {k[3:]: v for k, v in lab.items() if k.startswith("js_") and isinstance(v, str)}


def report_view(result: AuditResult, source_path: str, generated_at: str,
                findings_file: str | None = "findings.json") -> dict:
    """Everything report.html.j2 shows. `findings_file` is the findings.json
    beside the report (None when it is not written): truncated groups link to it."""
    lang = result.lang
    lab = labels(lang)
    summary = result.summary
    cover = result.carnet.cover
    src = result.carnet.source
    dates, n_coups, top_coup, levy_recorded = _seance_facts(result)
    v = verdict(result)
    casino, table = _s(cover.get("casino")), _s(cover.get("table"))
    period = format_day(_period(dates, cover), lang)   # dates as the report's reader writes them
    identity = [(lab["casino"], casino), (lab["table"], table), (lab["period"], period),
                (lab["date_debut"], format_day(_s(cover.get("date_debut")), lang)),
                (lab["seances"], str(summary["seances"])), (lab["coups"], str(summary["coups"])),
                (lab["mises"], str(summary["mises"])), (lab["tickets"], str(summary["tickets"])),
                (lab["source"], source_path), (lab["format"], src.format), (lab["sha256"], src.sha256)]
    counts = [("error", lab["errors"], summary["errors"]), ("warning", lab["warnings"], summary["warnings"]),
              ("info", lab["infos"], summary["info"])]
    volume = [(lab["rows_read"], summary["rows_read"]), (lab["rows_rejected"], summary["rows_rejected"])]
    groups = _rule_groups(result, lab, lang)
    rendered = sum(len(g.rows) for g in groups)
    total = len(result.findings)
    seances = _seance_groups(result, dates, n_coups, lab, lang)
    sev_counts = Counter(f.severity.label for f in result.findings)
    # The one line each page of the printed report carries: who, which table, when.
    print_identity = " — ".join(p for p in (casino, f"{lab['table']} {table}" if table else "", period) if p)
    return {
        "lang": lang, "t": lab, "js_labels": js_labels(lab),
        "verdict": v, "verdict_text": lab[f"verdict_{v}"],
        "verdict_detail": lab["verdict_detail"].format(
            errors=summary["errors"], warnings=summary["warnings"], info=summary["info"],
            impact=format_cents(summary["impact_cents"], lang)),
        "casino": casino, "table": table, "period": period, "print_identity": print_identity,
        "css_identity": charts.css_string(print_identity),
        "identity": identity, "counts": counts, "volume": volume, "money": _money(result, lab, lang),
        "groups": groups, "seance_groups": seances,
        "total_findings": total, "rendered_findings": rendered,
        "rendered_text": lab["rows_rendered"].format(shown=rendered, total=total, limit=MAX_ROWS_PER_GROUP),
        "truncated": rendered < total, "findings_file": findings_file,
        "filter_severities": [(s, lab[s], sev_counts.get(s, 0)) for s in ("error", "warning", "info")],
        "filter_rules": [(g.code, f"{g.code} — {g.title} ({g.count})") for g in groups],
        "filter_seances": [(g.key, f"{g.label} ({g.errors + g.warnings + g.info})") for g in seances],
        "rules": _rules(result, lab, lang),
        "charts": charts.report_charts(result, lab, lang, groups, dates, n_coups, top_coup, levy_recorded,
                                       LEVY_CODES, tickets_view.face_per_seance(result)),
        "tickets": tickets_view.tickets_section(result, lab, lang),
        "tool_version": __version__, "generated_at": generated_at,
        **_chouette_runs(result, lab, lang),
        "reading": reading_section(result, lab),
    }


def _chouette_runs(result: AuditResult, lab: dict, lang: str) -> dict:
    runs = run_stories(result.carnet, lang)
    left = len(runs) - MAX_CHOUETTE_RUNS
    return {"chouette_runs": runs[:MAX_CHOUETTE_RUNS], "chouette_runs_total": len(runs),
            "chouette_runs_more": lab["chouette_runs_more"].format(shown=MAX_CHOUETTE_RUNS, left=left)
            if left > 0 else ""}


def index_view(summary_doc: dict, lang: str) -> dict:
    """index.html of a batch: one row per carnet, totals, cross-carnet findings."""
    lab = labels(lang)
    rows = []
    for e in summary_doc["carnets"]:
        s = e["summary"]
        carnet = e.get("carnet") or {}
        rows.append({"id": e["id"], "path": e["path"], "verdict": e["verdict"],
                     "verdict_rank": {"ok": 0, "warning": 1, "error": 2, "unreadable": 3}.get(e["verdict"], 4),
                     "verdict_text": lab[f"verdict_{e['verdict']}_short"], "casino": _s(carnet.get("casino")),
                     "table": _s(carnet.get("table")), "errors": s["errors"], "warnings": s["warnings"],
                     "info": s["info"], "impact": format_cents(s["impact_cents"], lang),
                     "impact_cents": s["impact_cents"], "report": e.get("report")})
    tot = summary_doc["totals"]
    verdicts = Counter(e["verdict"] for e in summary_doc["carnets"])
    reports = {e["id"]: e.get("report") for e in summary_doc["carnets"]}
    cross = []
    for f in summary_doc.get("cross_carnet_findings") or []:
        places = []
        for c in f.get("carnets") or []:
            places.append({"text": lab["cross_place"].format(path=_s(c.get("path")), table=_s(c.get("table")),
                                                             seance=_s(c.get("seance")), coup=_s(c.get("coup")),
                                                             row=_s(c.get("row"))),
                           "href": reports.get(c.get("id"))})
        sev = _s(f.get("severity"))
        cross.append({"code": _s(f.get("code")), "severity": sev, "severity_text": lab.get(sev, sev),
                      "message": clip(f.get("message")), "places": places,
                      "impact": format_cents(f["impact_cents"], lang) if f.get("impact_cents") else ""})
    return {"lang": lang, "t": lab, "js_labels": js_labels(lab), "rows": rows, "tool_version": __version__,
            "generated_at": summary_doc["generated_at"], "cross": cross,
            "verdict_counts": [(k, lab[f"verdict_{k}_short"], verdicts.get(k, 0))
                               for k in ("ok", "warning", "error", "unreadable")],
            "totals": {"carnets": len(rows), "errors": tot["errors"], "warnings": tot["warnings"],
                       "info": tot["info"], "impact": format_cents(tot["impact_cents"], lang)}}
