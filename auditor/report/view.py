"""The view model the templates render: everything pre-computed and pre-sorted
here, so templates only loop and branch."""

from __future__ import annotations

from dataclasses import dataclass

from auditor import __version__
from auditor.catalogue import load_catalogue
from auditor.engine import AuditResult
from auditor.i18n import labels
from auditor.model import Severity, Status
from auditor.money import format_cents


@dataclass(frozen=True)
class RuleRow:
    code: str
    article: str
    severity: str
    title: str
    status: str
    checked: bool
    findings: int
    reason: str


@dataclass(frozen=True)
class FindingRow:
    code: str
    severity: str
    article: str
    message: str
    seance: str
    coup: str
    rang: str
    where: str
    expected: str
    found: str
    impact: str


def verdict(result: AuditResult) -> str:
    if result.carnet.unreadable:
        return "unreadable"
    worst = result.worst()
    if worst is None or worst < Severity.WARNING:
        return "ok"
    return "error" if worst >= Severity.ERROR else "warning"


def _where(f, lab) -> str:
    parts = [f.table or ""]
    if f.row is not None:
        parts.append(f"{lab['row']} {f.row}")
    if f.cell:
        parts.append(f"{lab['cell']} {f.cell}")
    elif f.column:
        parts.append(f"{lab['column']} {f.column}")
    return ", ".join(p for p in parts if p)


def _s(v) -> str:
    return "" if v is None else str(v)


def report_view(result: AuditResult, source_path: str, generated_at: str) -> dict:
    lang = result.lang
    lab = labels(lang)
    catalogue = load_catalogue()
    summary = result.summary
    cover = result.carnet.cover
    rules = []
    for st in result.rules:
        meta = catalogue[st.code]
        reason = st.reason or result.notes.get(st.code, "")
        rules.append(RuleRow(st.code, meta.article, lab[meta.severity.label], meta.title[lang],
                             lab["checked" if st.status is Status.CHECKED else "not_checked"],
                             st.status is Status.CHECKED, st.findings, reason))
    findings = [FindingRow(f.code, f.severity.label, f.article, f.message, _s(f.seance), _s(f.coup),
                           _s(f.rang), _where(f, lab), _s(f.expected), _s(f.found),
                           format_cents(f.impact_cents, lang) if f.impact_cents else "")
                for f in result.findings]
    money = [(lab["levy_expected"], format_cents(summary["levy_expected_cents"], lang)),
             (lab["levy_recorded"], format_cents(summary["levy_recorded_cents"], lang)),
             (lab["impact"], format_cents(summary["impact_cents"], lang))]
    counts = [("error", lab["errors"], summary["errors"]), ("warning", lab["warnings"], summary["warnings"]),
              ("info", lab["infos"], summary["info"])]
    volume = [(lab[k], summary[k]) for k in ("seances", "coups", "mises", "tickets", "rows_read", "rows_rejected")]
    identity = [(lab["casino"], _s(cover["casino"])), (lab["table"], _s(cover["table"])),
                (lab["date_debut"], _s(cover["date_debut"])), (lab["source"], source_path),
                (lab["format"], result.carnet.source.format), (lab["sha256"], result.carnet.source.sha256)]
    v = verdict(result)
    return {
        "lang": lang, "t": lab, "verdict": v, "verdict_text": lab[f"verdict_{v}"],
        "identity": identity, "counts": counts, "volume": volume, "money": money,
        "rules": rules, "findings": findings, "tool_version": __version__, "generated_at": generated_at,
        "casino": _s(cover["casino"]), "table": _s(cover["table"]),
    }


def index_view(summary_doc: dict, lang: str) -> dict:
    lab = labels(lang)
    rows = []
    for e in summary_doc["carnets"]:
        s = e["summary"]
        rows.append({"id": e["id"], "path": e["path"], "verdict": e["verdict"],
                     "verdict_text": lab[f"verdict_{e['verdict']}"], "casino": _s(e["carnet"]["casino"]),
                     "table": _s(e["carnet"]["table"]), "errors": s["errors"], "warnings": s["warnings"],
                     "info": s["info"], "impact": format_cents(s["impact_cents"], lang), "report": e["report"]})
    tot = summary_doc["totals"]
    return {"lang": lang, "t": lab, "rows": rows, "tool_version": __version__,
            "generated_at": summary_doc["generated_at"],
            "totals": {"errors": tot["errors"], "warnings": tot["warnings"], "info": tot["info"],
                       "impact": format_cents(tot["impact_cents"], lang)}}
