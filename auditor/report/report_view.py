"""report.html's view model: `ReportView` and its rows (rules, findings,
séances, money, findings across carnets), pre-computed, pre-formatted and
pre-sorted here, so the template only loops and branches and a misspelt
field fails where the view is built, not silently in a template.

A worker builds the `ReportDraft` (everything that needs the Carnet); the run
finishes it once the batch is known (`finish_report`). The view formats what
the engine found (findings, rule statuses, summary) and reads plain facts from
the carnet (dates, coups per séance, recorded levy); it never re-runs a check.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING

from auditor import __version__
from auditor.catalogue import Money, Shows, codes_with_money, load_catalogue
from auditor.derived.cache import per_carnet
from auditor.i18n import format_day, labels
from auditor.model import AuditResult, Finding, RuleStatus, Severity, Status
from auditor.money import format_cents
from auditor.report import charts
from auditor.report.cross_carnet import combined_verdict
from auditor.report.drafts import TicketSection
from auditor.report.page import (Choice, Count, Field, Page, Place, article_text, as_text, clip, here_text, js_labels,
                                 moment_text, place_text)
from auditor.report.reading_view import reading_section

if TYPE_CHECKING:
    import numpy as np

# What reads the carnet (numpy, pandas, the tickets' and chouette runs'
# modules) is imported by the functions that make a draft, in the worker that
# audits: finishing a kept draft (`finish_report`) needs none of it, so a night
# that makes again only a reviewed carnet's report never imports pandas.

# Rows rendered per rule group. Beyond it the group says how many are left out
# and points to findings.json: this is what bounds report.html's size.
MAX_ROWS_PER_GROUP = 200
MAX_CHOUETTE_RUNS = 300   # the run stories shown; a huge carnet keeps its report readable
MAX_VALUE = 80          # expected / found: values, never prose
# Small reports open every group; big ones start collapsed.
OPEN_GROUPS_UP_TO = 100
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
    values: list[str]      # the cells under the group's value_heads
    fingerprint: str = ""  # the finding's identity: its review, in the procès-verbal


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
    value_heads: list[str]     # "expected", "found"; or what an information finding shows instead
    seance_counts: str         # JSON {séance key: findings of the group}, all of them, for the filters


@dataclass(frozen=True)
class Amount:
    """A line of the money panel: CSS key, label, amount as shown."""

    key: str
    name: str
    amount: str


@dataclass(frozen=True)
class CrossItem:
    """A cross-carnet finding in the report of one carnet it involves."""

    code: str
    severity: str
    severity_text: str
    article: str
    message: str           # seen from this carnet: names the other one
    here: str              # where it sits in this carnet
    others: list[Place]    # the other carnets, linked when their report is in the batch
    impact: str
    fingerprint: str = ""  # its review, in the procès-verbal


@dataclass
class ReportView(Page):
    """Everything report.html.j2 shows, pre-formatted."""

    verdict: str
    verdict_text: str
    verdict_detail: str
    casino: str
    table: str
    period: str
    print_identity: str
    css_identity: str
    identity: list[Field]
    counts: list[Count]
    volume: list[Field]
    money: list[Amount]
    groups: list[RuleGroup]
    seance_groups: list[SeanceGroup]
    total_findings: int
    rendered_findings: int
    rendered_text: str
    truncated: bool
    findings_file: str | None
    annotated_file: str | None   # annotated.xlsx beside the report: it lists every finding
    full_list: str               # where the findings the page leaves out are, in words
    limit: int                   # finding rows per rule in the page
    filter_severities: list[Count]
    filter_rules: list[Choice]
    filter_seances: list[Choice]
    rules: list[RuleRow]
    rules_quiet: str       # printed: how many checked rules without findings the appendix leaves out
    charts: charts.Charts
    tickets: TicketSection
    chouette_runs: list
    chouette_runs_total: int
    chouette_runs_more: str
    cross: list[CrossItem]
    reading: object = None       # how the source was read (reading_view.reading_section)
    # A CSV folder's files with their own SHA-256 ((name, hex), …): the procès-verbal names each.
    source_files: tuple = ()
    series: object = None        # baseline states and reviews (baseline_view.report_part; the templates' `series`), set by the renderer


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
    rules: list[tuple[str, int]] = field(default_factory=list)   # (code, findings in the séance)


def verdict(result: AuditResult) -> str:
    """The carnet's verdict: unreadable, ok (nothing above info), or the worst severity found."""
    if result.carnet.unreadable:
        return "unreadable"
    worst = result.worst()
    if worst is None or worst < Severity.WARNING:
        return "ok"
    return "error" if worst >= Severity.ERROR else "warning"


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


def value_text(text: str | None, lab: dict) -> str:
    """A value of the carnet's enumerations (oui, non, remise, avant …) in the
    reader's words (`values` of the label file; French keeps them as written)."""
    words = lab.get("values") or {}
    text = as_text(text)
    return _WORD.sub(lambda m: words.get(m[0], m[0]), text) if words else text


_WORD = re.compile(r"[^\W\d_]+")


def remaining_tickets(f: Finding) -> str:
    """EC83-02 (information): the tickets left in the book in progress, from its
    last number (expected) and the last one detached (found)."""
    try:
        return str(int(as_text(f.expected)) - int(as_text(f.found)))
    except ValueError:
        return ""


# Information findings that nothing is wrong with show one value of their own
# instead of expected / found (the catalogue's `shows`): its heading label and its text.
SHOWN_VALUES = {Shows.REMAINING_TICKETS: ("tk_remaining", remaining_tickets)}


@lru_cache(maxsize=1)    # asked once per finding row
def value_columns() -> dict[str, tuple]:
    """Per code whose catalogue entry `shows` a value of its own: (heading label key, value of a finding)."""
    return {code: SHOWN_VALUES[meta.shows] for code, meta in load_catalogue().items()
            if meta.shows is not Shows.EXPECTED_FOUND}


def finding_row(f: Finding, lab: dict, lang: str) -> FindingRow:
    """A finding as the report's tables show it."""
    expected, found = clip(value_text(f.expected, lab), MAX_VALUE), clip(value_text(f.found, lab), MAX_VALUE)
    special = value_columns().get(f.code)
    return FindingRow(
        code=f.code, severity=f.severity.label, severity_text=lab[f.severity.label], article=f.article,
        message=clip(f.message), seance=as_text(f.seance), coup=as_text(f.coup), rang=as_text(f.rang),
        where=clip(_where(f, lab)), expected=expected, found=found,
        impact=format_cents(f.impact_cents, lang) if f.impact_cents else "",
        impact_cents=int(f.impact_cents), seance_key=_seance_key(f),
        values=[special[1](f)] if special else [expected, found], fingerprint=f.fingerprint or "")


def _positive_impact(findings) -> int:
    # Same convention as summary.impact_cents: money owed, not money over-collected.
    return sum(f.impact_cents for f in findings if f.impact_cents > 0)


def _rule_groups(result: AuditResult, lab: dict, lang: str) -> list[RuleGroup]:
    catalogue = load_catalogue()
    by_code: dict[str, list[Finding]] = defaultdict(list)
    for f in result.findings:
        by_code[f.code].append(f)
    small = len(result.findings) <= OPEN_GROUPS_UP_TO
    special = value_columns()
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
            open=small,
            seance_counts=json.dumps(dict(Counter(_seance_key(f) for f in found)), sort_keys=True,
                                     separators=(",", ":")),
            value_heads=[lab[special[code][0]]] if code in special else [lab["expected"], lab["found"]]))
    return groups


def _rules(result: AuditResult, lab: dict, lang: str) -> list[RuleRow]:
    return [rule_row(st, st.reason or result.notes.get(st.code, ""), lab, lang) for st in result.rules]


def rule_row(st: RuleStatus, reason: str, lab: dict, lang: str) -> RuleRow:
    """One rule of the report's rule table: checked (with its findings) or not, and why."""
    meta = load_catalogue()[st.code]
    checked = st.status is Status.CHECKED
    return RuleRow(st.code, meta.article, meta.severity.label, lab[meta.severity.label], meta.title[lang],
                   meta.explain[lang], lab["checked" if checked else "not_checked"], checked, st.findings, reason)


# -- plain facts read from the carnet (no check is re-run) -----------------------

def _seance_facts(result: AuditResult) -> tuple[dict[int, str], dict[int, int], dict[int, int], dict[int, int]]:
    """Per séance: date (ISO), number of coup rows, highest coup number, recorded levy in cents
    (read once per carnet: the report and the batch summary's period both ask; never changed by them)."""
    return _carnet_facts(result.carnet)


@per_carnet
def _carnet_facts(carnet) -> tuple[dict[int, str], dict[int, int], dict[int, int], dict[int, int]]:
    import numpy as np
    import pandas as pd

    from auditor.arrays import NA_INT, column, series

    dates: dict[int, str] = {}
    n_coups: dict[int, int] = {}
    top_coup: dict[int, int] = {}
    levy: dict[int, int] = {}
    if "seances" in carnet.tables:
        date = series(carnet, "seances", "date")
        number = column(carnet, "seances", "seance")
        known = np.flatnonzero(number != NA_INT)
        _, first = np.unique(number[known], return_index=True)
        at = known[np.sort(first)]      # each séance's first row, in row order
        if date.dtype.kind == "M":
            days = date.to_numpy()[at]
            text = np.where(np.isnat(days), "", np.datetime_as_string(days, unit="D"))
            dates.update(zip(number[at].tolist(), text.tolist()))
        else:
            for no, d in zip(number[at].tolist(), date.iloc[at].tolist()):
                dates[no] = "" if pd.isna(d) else d.date().isoformat()
    if "coups" in carnet.tables:
        number = column(carnet, "coups", "seance")
        known = number != NA_INT
        ids, inv, count = np.unique(number[known], return_inverse=True, return_counts=True)
        recorded = (_zero_na(column(carnet, "coups", "prelevement_cents"))
                    + _zero_na(column(carnet, "coups", "prelevement_apres_cents")))[known]
        total = np.zeros(len(ids), dtype=np.int64)
        np.add.at(total, inv, recorded)
        top = np.full(len(ids), NA_INT, dtype=np.int64)
        np.maximum.at(top, inv, column(carnet, "coups", "coup")[known])
        ids = ids.tolist()
        n_coups.update(zip(ids, count.tolist()))
        top_coup.update(zip(ids, np.where(top == NA_INT, 0, top).tolist()))
        levy.update(zip(ids, total.tolist()))
    return dates, n_coups, top_coup, levy


def _zero_na(values: np.ndarray) -> np.ndarray:
    import numpy as np

    from auditor.arrays import NA_INT

    return np.where(values == NA_INT, 0, values)


def _period(dates: dict[int, str], cover: dict) -> str:
    days = sorted(d for d in dates.values() if d)
    if not days:
        return as_text(cover.get("date_debut"))
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
            coups=as_text(n_coups.get(no)) if no is not None else "",
            errors=sev[Severity.ERROR], warnings=sev[Severity.WARNING], info=sev[Severity.INFO],
            impact=format_cents(impact, lang) if impact else "",
            rules=[(code, codes[code]) for code in sorted(codes, key=lambda c: (-codes[c], c))]))
    return groups


@dataclass(frozen=True)
class MoneyFacts:
    """What the money panel needs of the carnet's own audit: the levy
    shortfall and excess, the missing tickets' value, and which of these
    figures a rule that ran could give (a zero from a rule that did not run
    would read as "nothing missing")."""

    short: int
    excess: int
    missing: int
    levy_known: bool          # the summary's levy totals were computed
    levy_checked: bool        # a levy rule ran
    missing_checked: bool     # the missing-tickets rule ran
    impact_known: bool        # some rule that carries money ran on a readable carnet


def money_facts(result: AuditResult) -> MoneyFacts:
    """The money panel's facts from the carnet's own findings and rule statuses."""
    checked = {st.code for st in result.rules if st.status is Status.CHECKED}
    levy_codes, missing_codes = set(codes_with_money(Money.LEVY)), set(codes_with_money(Money.FACE_VALUE))
    levy = [f.impact_cents for f in result.findings if f.code in levy_codes]
    return MoneyFacts(
        short=sum(x for x in levy if x > 0), excess=-sum(x for x in levy if x < 0),
        missing=_positive_impact(f for f in result.findings if f.code in missing_codes),
        levy_known=levy_known(result), levy_checked=bool(checked & levy_codes),
        missing_checked=bool(checked & missing_codes),
        impact_known=not result.carnet.unreadable and bool(checked & set(codes_with_money())))


def _money(m: MoneyFacts, s: dict, lab: dict, lang: str) -> list[Amount]:
    """Money at stake: the summary's levy totals, then the findings' impacts by
    kind. `s`: the summary the page shows (the carnet's, with its findings
    across carnets). An amount that could not be computed reads "not verified", never 0."""
    other = s["impact_cents"] - m.short - m.missing

    def amount(cents: int, known: bool) -> str:
        # A zero from a rule that did not run would read as "nothing missing".
        return format_cents(cents, lang) if known else lab["unverified"]

    rows = [Amount("levy_expected", lab["levy_expected"], amount(s["levy_expected_cents"], m.levy_known)),
            Amount("levy_recorded", lab["levy_recorded"], amount(s["levy_recorded_cents"], m.levy_known)),
            Amount("levy_shortfall", lab["levy_shortfall"], amount(m.short, m.levy_checked))]
    if m.excess:
        rows.append(Amount("levy_excess", lab["levy_excess"], format_cents(m.excess, lang)))
    rows.append(Amount("missing_tickets", lab["missing_tickets_value"], amount(m.missing, m.missing_checked)))
    if other:
        rows.append(Amount("other_impact", lab["other_impact"], format_cents(other, lang)))
    rows.append(Amount("impact", lab["impact_total"], impact_text(m, s["impact_cents"], lab, lang)))
    return rows


def levy_known(result: AuditResult) -> bool:
    """The summary's levy totals were computed: the engine computes them only
    from readable coups and mises tables (0 otherwise, which is not a figure)."""
    carnet = result.carnet
    return not carnet.unreadable and carnet.has("coups") and carnet.has("mises")


def impact_text(m: MoneyFacts, cents: int, lab: dict, lang: str) -> str:
    """The total at stake, or "not verified" when no rule that carries money ran."""
    return format_cents(cents, lang) if m.impact_known else lab["unverified"]


@dataclass
class ReportDraft:
    """report.html as far as the carnet alone decides it: what a worker hands
    back and the cache keeps. Everything that needs the Carnet (charts, ticket
    pictures, chouette stories, séance facts, reading notes) is in `view`,
    laid out for the carnet's own findings; the run fills in the rest once
    the batch is known (`finish_report`): the findings across carnets, the
    verdict and counts with them, the baseline and reviews, the time stamp."""

    view: ReportView
    verdict: str               # the carnet's own verdict
    summary: dict              # its own counts and money (findings.json's summary)
    money: MoneyFacts


def report_draft(result: AuditResult, source_path: str, findings_file: str | None = "findings.json", *,
                 annotated_file: str | None = None) -> ReportDraft:
    """The report of one audited carnet, all but what the batch and the run
    decide. `findings_file` is the findings.json beside the report (None when
    it is not written): truncated groups link to it."""
    from auditor.report import tickets_view
    from auditor.report.chouette_runs import run_stories

    lang = result.lang
    lab = labels(lang)
    summary = result.summary
    cover = result.carnet.cover
    src = result.carnet.source
    dates, n_coups, top_coup, levy_recorded = _seance_facts(result)
    casino, table = as_text(cover.get("casino")), as_text(cover.get("table"))
    period = format_day(_period(dates, cover), lang)   # dates as the report's reader writes them
    identity = [Field(lab["casino"], casino), Field(lab["table"], table), Field(lab["period"], period),
                Field(lab["date_debut"], format_day(as_text(cover.get("date_debut")), lang)),
                Field(lab["seances"], str(summary["seances"])), Field(lab["coups"], str(summary["coups"])),
                Field(lab["mises"], str(summary["mises"])), Field(lab["tickets"], str(summary["tickets"])),
                Field(lab["source"], source_path), Field(lab["format"], src.format),
                Field(lab["sha256"], src.sha256), Field(lab["audit_date"], "")]
    volume = [Field(lab["rows_read"], str(summary["rows_read"])),
              Field(lab["rows_rejected"], str(summary["rows_rejected"]))]
    groups = _rule_groups(result, lab, lang)
    rendered = sum(len(g.rows) for g in groups)
    total = len(result.findings)
    seances = _seance_groups(result, dates, n_coups, lab, lang)
    sev_counts = Counter(f.severity.label for f in result.findings)
    # The one line each page of the printed report carries: who, which table, when.
    print_identity = " — ".join(p for p in (casino, f"{lab['table']} {table}" if table else "", period) if p)
    rules = _rules(result, lab, lang)
    quiet = sum(1 for r in rules if r.checked and not r.findings)
    runs = run_stories(result.carnet, lang)
    left = len(runs) - MAX_CHOUETTE_RUNS
    view = ReportView(
        lang=lang, t=lab, js_labels=js_labels(lab), tool_version=__version__, generated_at="",
        generated_text="", verdict="", verdict_text="", verdict_detail="",
        casino=casino, table=table, period=period, print_identity=print_identity,
        css_identity=charts.css_string(print_identity),
        identity=identity, counts=[], volume=volume, money=[],
        groups=groups, seance_groups=seances,
        total_findings=total, rendered_findings=rendered,
        rendered_text=lab["rows_rendered"].format(shown=rendered, total=total, limit=MAX_ROWS_PER_GROUP),
        truncated=rendered < total, findings_file=findings_file, annotated_file=annotated_file,
        limit=MAX_ROWS_PER_GROUP,
        full_list=(lab["full_list_workbook"].format(file=annotated_file, sheet=lab["xlsx_findings_sheet"])
                   if annotated_file else lab["full_list_json"].format(file=findings_file) if findings_file
                   else lab["full_list_none"]),
        filter_severities=[Count(s, lab[s], sev_counts.get(s, 0)) for s in ("error", "warning", "info")],
        filter_rules=[Choice(g.code, f"{g.code} — {g.title} ({g.count})") for g in groups],
        filter_seances=[Choice(g.key, f"{g.label} ({g.errors + g.warnings + g.info})") for g in seances],
        rules=rules, rules_quiet=lab["rules_quiet"].format(n=quiet) if quiet else "",
        charts=charts.report_charts(result, lab, lang, groups, dates, n_coups, top_coup, levy_recorded,
                                    codes_with_money(Money.LEVY), tickets_view.face_per_seance(result)),
        tickets=tickets_view.tickets_section(result, lab, lang),
        chouette_runs=runs[:MAX_CHOUETTE_RUNS], chouette_runs_total=len(runs),
        chouette_runs_more=lab["chouette_runs_more"].format(shown=MAX_CHOUETTE_RUNS, left=left) if left > 0 else "",
        cross=[], reading=reading_section(result, lab), source_files=tuple(src.files))
    return ReportDraft(view, verdict(result), dict(summary), money_facts(result))


def finish_report(draft: ReportDraft, generated_at: str, across: list[Finding] = (),
                  reports: dict[str, str | None] | None = None, series: object = None,
                  statuses: dict[str, RuleStatus] | None = None, moment: str | None = None,
                  summary: dict | None = None) -> ReportView:
    """The report as the run shows it: the draft, with the findings across
    carnets that involve this carnet (`across`, each seen from it: counted in
    its verdict and cards, listed in their section with a link to the other
    carnets' reports, `reports`: carnet id → report path in the batch), the
    baseline and reviews (`series`, baseline_view.report_part), the status of
    the rules checked across carnets (`statuses`) and the run's time
    (`moment`: how the page writes it, when not `moment_text(generated_at)`);
    `summary`: the carnet's summary with its findings across carnets
    (outputs.finish counts them, their money once), required with them;
    without, the draft's own."""
    view = draft.view
    moment = moment_text(generated_at, view.lang) if moment is None else moment
    lang, lab = view.lang, view.t
    rules = view.rules
    if statuses:
        rules = [rule_row(statuses[r.code], statuses[r.code].reason or "", lab, lang) if r.code in statuses else r
                 for r in rules]
    if summary is None:
        if across:
            raise ValueError("finish_report: findings across carnets come with the summary that counts them")
        summary = draft.summary
    v = combined_verdict(draft.verdict, [f.severity.label for f in across])
    identity = [*view.identity[:-1], Field(view.identity[-1].name, moment)]
    return replace(
        view, generated_at=generated_at, generated_text=moment,
        verdict=v, verdict_text=lab[f"verdict_{v}"],
        verdict_detail=lab["verdict_detail"].format(
            errors=summary["errors"], warnings=summary["warnings"], info=summary["info"],
            impact=impact_text(draft.money, summary["impact_cents"], lab, lang))
        + (" " + lab["verdict_cross"].format(n=len(across)) if across else ""),
        identity=identity,
        counts=[Count("error", lab["errors"], summary["errors"]),
                Count("warning", lab["warnings"], summary["warnings"]),
                Count("info", lab["infos"], summary["info"])],
        money=_money(draft.money, summary, lab, lang),
        cross=[_cross_item(f, reports or {}, lab, lang) for f in across],
        rules=rules, series=series,
        rules_quiet=lab["rules_quiet"].format(n=quiet) if (quiet := sum(1 for r in rules if r.checked and
                                                                          not r.findings)) else "")


def report_view(result: AuditResult, source_path: str, generated_at: str,
                findings_file: str | None = "findings.json", *, annotated_file: str | None = None) -> ReportView:
    """Everything report.html.j2 shows of one carnet audited alone."""
    draft = report_draft(result, source_path, findings_file, annotated_file=annotated_file)
    return finish_report(draft, generated_at)


def _cross_item(f: Finding, reports: dict[str, str | None], lab: dict, lang: str) -> CrossItem:
    """One finding across carnets seen from this carnet: its message (already
    written from this carnet's side) names the other carnets; `across[0]` is
    its place here, the others are linked to their reports."""
    here, others = f.across[0], f.across[1:]
    sev = f.severity.label
    return CrossItem(
        code=f.code, severity=sev, severity_text=lab.get(sev, sev),
        article=article_text(f.article, lab) if f.article else "", message=clip(f.message),
        here=here_text(here, lab),
        # The reports of a batch sit side by side: OUT/<id>/report.html.
        others=[Place(place_text(c, lab), f"../{reports[c['carnet']]}" if reports.get(c.get("carnet")) else None)
                for c in others],
        impact=format_cents(f.impact_cents, lang) if f.impact_cents else "", fingerprint=f.fingerprint or "")


def period_of(result: AuditResult) -> dict:
    """First and last séance dates of the carnet, ISO (None when unknown): summary.json's `period`."""
    dates, _, _, _ = _seance_facts(result)
    days = sorted(d for d in dates.values() if d)
    if not days:
        start = as_text(result.carnet.cover.get("date_debut"))
        return {"first": start or None, "last": start or None}
    return {"first": days[0], "last": days[-1]}
