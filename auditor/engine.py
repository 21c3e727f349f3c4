"""Run every catalogue rule over a normalised carnet → findings and rule statuses."""

from __future__ import annotations

from dataclasses import dataclass, field

from auditor.carnet import Carnet
from auditor.catalogue import Profile, RuleMeta, load_catalogue
from auditor.frames import eq
from auditor.i18n import format_day, label
from auditor.model import Cents, Day, Finding, RuleStatus, Severity, Status, Violation, sort_findings
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
    # The regulation profile the carnet was audited with: the report draws the
    # ticket series with the same values and book size as the rules.
    profile: Profile | None = None

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
        params[key] = format_day(value, lang) if isinstance(value, Day) else value
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
    if isinstance(value, Day):
        return format_day(value, lang)
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
    return AuditResult(carnet, findings, statuses, _summary(carnet, profile, findings), lang, notes, profile)


def _count_coups(carnet: Carnet, kind: str) -> int:
    if "coups" not in carnet.tables:
        return 0
    return int(eq(carnet.df("coups")["type"], kind).sum())


def _summary(carnet: Carnet, profile: Profile, findings: list[Finding]) -> dict:
    from auditor.checks.art66 import levy_totals

    by = {s: 0 for s in Severity}
    for f in findings:
        by[f.severity] += 1
    tables = row_accounting(carnet, findings)
    rejected = sum(t["rejected"] for t in tables.values())
    rows_read = sum(t.rows_read for t in carnet.tables.values())
    expected, recorded = levy_totals(carnet, profile) if _levy_ready(carnet) else (0, 0)

    def n(table):
        return len(carnet.tables[table].df) if table in carnet.tables else 0

    seances = n("seances")
    return {
        "errors": by[Severity.ERROR], "warnings": by[Severity.WARNING], "info": by[Severity.INFO],
        "seances": seances, "coups": n("coups"), "mises": n("mises"), "tickets": n("tickets"),
        "rows_read": rows_read, "rows_rejected": rejected,
        "rows_left_out": sum(t["left_out"] for t in tables.values()),
        "levy_expected_cents": int(expected), "levy_recorded_cents": int(recorded),
        "impact_cents": int(sum(f.impact_cents for f in findings if f.impact_cents > 0)),
        "formulas": sum(len(getattr(t, "formulas", ())) for t in carnet.tables.values()),
        "tables": tables,
    }


def row_accounting(carnet: Carnet, findings: list[Finding]) -> dict:
    """Per table: rows read = rows audited + rows rejected + rows left out
    (totals rows under the data), and why rows were rejected.

    A row is rejected when it has an EC00-02 or EC00-03 finding (a bad cell,
    a row the reader could not shape, an orphan), or an EC00-01 located on
    one of its data rows (a second cover row). `rejected_by` counts the
    distinct rows per code; the findings themselves give each row's reason.
    Workbook formula cells whose saved value was used are listed per column
    as cell ranges (`F2:F40`).
    """
    data_rows = {name: set(t.df["_row"].tolist()) for name, t in carnet.tables.items()}
    by_row: dict[tuple[str, int], set[str]] = {}
    for f in findings:
        if not f.table or f.row is None:
            continue
        if f.code in REJECTING_CODES or (f.code == "EC00-01" and f.row in data_rows.get(f.table, ())):
            by_row.setdefault((f.table, f.row), set()).add(f.code)
    out: dict[str, dict] = {}
    for name in sorted(carnet.tables):
        t = carnet.tables[name]
        rows = {row: codes for (table, row), codes in by_row.items() if table == name}
        reasons: dict[str, int] = {}
        for codes in rows.values():
            for code in codes:
                reasons[code] = reasons.get(code, 0) + 1
        left_out = int(getattr(t, "rows_left_out", 0))
        out[name] = {"read": int(t.rows_read), "audited": int(t.rows_read) - len(rows) - left_out,
                     "rejected": len(rows), "left_out": left_out,
                     "rejected_by": dict(sorted(reasons.items())),
                     "formulas": _formula_ranges(getattr(t, "formulas", ()))}
    return out


def _formula_ranges(formulas) -> dict[str, list[str]]:
    """Formula cells per column, consecutive rows merged: {"total_a": ["F2:F40"]}."""
    by_column: dict[str, list] = {}
    for f in formulas:
        by_column.setdefault(f.column, []).append((f.row, f.cell[: len(f.cell) - len(str(f.row))]))
    out: dict[str, list[str]] = {}
    for column in sorted(by_column):
        runs: list[str] = []
        cells = sorted(set(by_column[column]))
        start = prev = cells[0]
        for cur in cells[1:] + [None]:
            if cur is not None and cur[0] == prev[0] + 1 and cur[1] == prev[1]:
                prev = cur
                continue
            first, last = f"{start[1]}{start[0]}", f"{prev[1]}{prev[0]}"
            runs.append(first if first == last else f"{first}:{last}")
            if cur is not None:
                start = prev = cur
        out[column] = runs
    return out


def _levy_ready(carnet: Carnet) -> bool:
    return all(carnet.has(n) for n in ("coups", "mises"))
