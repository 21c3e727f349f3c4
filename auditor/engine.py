"""Run every catalogue rule over a normalised carnet → findings and rule statuses."""

from __future__ import annotations

from dataclasses import dataclass, field

from auditor.carnet import Carnet
from auditor.catalogue import Profile, RuleMeta, load_catalogue
from auditor.frames import eq
from auditor.i18n import label
from auditor.model import Cents, Finding, RuleStatus, Severity, Status, Violation, sort_findings
from auditor.money import format_cents
from auditor.registry import registered

REJECTING_CODES = ("EC00-02", "EC00-03")


@dataclass
class AuditResult:
    carnet: Carnet
    findings: list[Finding]
    rules: list[RuleStatus]
    summary: dict
    lang: str = "fr"
    notes: dict[str, str] = field(default_factory=dict)

    def worst(self) -> Severity | None:
        return max((f.severity for f in self.findings), default=None)


def make_finding(meta: RuleMeta, v: Violation, carnet: Carnet, lang: str) -> Finding:
    table = carnet.tables.get(v.table) if v.table else None
    column = table.source_column(v.column) if table else v.column
    cell = table.cell(v.column, v.row) if table else None
    params = {"seance": v.seance, "coup": v.coup, "rang": v.rang, "table": v.table, "column": column}
    for key, value in v.params.items():
        if key.endswith("_cents"):
            params[key[:-6]] = format_cents(value, lang)
        params[key] = value
    expected, found = _shown(v.expected, lang), _shown(v.found, lang)
    params.setdefault("expected", expected)
    params.setdefault("found", found)
    return Finding(
        code=meta.code, severity=meta.severity, article=meta.article,
        message=meta.message(v.kind, lang).format(**params),
        table=v.table, row=v.row, column=column, cell=cell,
        seance=v.seance, coup=v.coup, rang=v.rang,
        expected=expected, found=found, impact_cents=int(v.impact_cents),
    )


def _shown(value, lang: str) -> str | None:
    if isinstance(value, Cents):
        return format_cents(int(value), lang)
    return None if value is None else str(value)


def audit(carnet: Carnet, profile: Profile, lang: str = "fr") -> AuditResult:
    catalogue = load_catalogue()
    checks = registered()
    findings: list[Finding] = []
    statuses: list[RuleStatus] = []
    notes: dict[str, str] = {}
    n_chouette = _count_coups(carnet, "chouette")
    for code, meta in catalogue.items():
        spec = checks.get(code)
        if meta.retired:
            continue
        if spec is None:
            statuses.append(RuleStatus(code, Status.NOT_CHECKED, reason=label("not_implemented", lang)))
            continue
        if carnet.unreadable and code != "EC00-01":
            statuses.append(RuleStatus(code, Status.NOT_CHECKED, reason=label("carnet_unreadable", lang)))
            continue
        missing = [n for n in spec.needs if not carnet.has(n)]
        if missing:
            statuses.append(RuleStatus(code, Status.NOT_CHECKED,
                                       reason=", ".join(f"{n} {label('absent', lang)}" for n in missing)))
            continue
        got = [make_finding(meta, v, carnet, lang) for v in spec.func(carnet, profile)]
        findings.extend(got)
        statuses.append(RuleStatus(code, Status.CHECKED, findings=len(got)))
        if "chouette" in spec.passes_over and n_chouette:
            notes[code] = label("chouette_passed_over", lang).format(n=n_chouette)
    findings = sort_findings(findings)
    return AuditResult(carnet, findings, statuses, _summary(carnet, profile, findings), lang, notes)


def _count_coups(carnet: Carnet, kind: str) -> int:
    if "coups" not in carnet.tables:
        return 0
    return int(eq(carnet.df("coups")["type"], kind).sum())


def _summary(carnet: Carnet, profile: Profile, findings: list[Finding]) -> dict:
    from auditor.checks.art66 import levy_totals

    by = {s: 0 for s in Severity}
    for f in findings:
        by[f.severity] += 1
    rejected = {(f.table, f.row) for f in findings if f.code in REJECTING_CODES and f.table and f.row}
    rows_read = sum(t.rows_read for t in carnet.tables.values())
    expected, recorded = levy_totals(carnet, profile) if _levy_ready(carnet) else (0, 0)

    def n(table):
        return len(carnet.tables[table].df) if table in carnet.tables else 0

    seances = n("seances")
    return {
        "errors": by[Severity.ERROR], "warnings": by[Severity.WARNING], "info": by[Severity.INFO],
        "seances": seances, "coups": n("coups"), "mises": n("mises"), "tickets": n("tickets"),
        "rows_read": rows_read, "rows_rejected": len(rejected),
        "levy_expected_cents": int(expected), "levy_recorded_cents": int(recorded),
        "impact_cents": int(sum(f.impact_cents for f in findings if f.impact_cents > 0)),
    }


def _levy_ready(carnet: Carnet) -> bool:
    return all(carnet.has(n) for n in ("coups", "mises"))
