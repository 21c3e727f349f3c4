"""Audit one carnet: read → normalise → check (the derived facts are computed
on first use, once) → findings, rule statuses and the summary.

`audit_path` takes a carnet's path and never raises for a bad carnet (an
unreadable one, or a defect of ours, is an EC00-01 finding); `audit` runs
every catalogue rule over a normalised carnet.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Sequence

import numpy as np

from auditor.arrays import equals
from auditor.carnet import Carnet, Source
from auditor.catalogue import Money, Profile, RowRejection, codes_with_money, load_catalogue
from auditor.derived.levy import levy_totals
from auditor.findings import make_finding
from auditor.fingerprint import assign as assign_fingerprints, seance_dates
from auditor.i18n import label
from auditor.limits import Limits
from auditor.model import (AuditResult, BatchCarnet, Finding, RuleStatus, Severity, Status, Violation,
                           sort_findings)
from auditor.normalise import normalise
from auditor.read import read_carnet
from auditor.stake import total_at_stake
from auditor.checks import registered, registered_batch
from auditor.threads import cores, run_all, sharing



def audit_path(path: Path, profile: Profile, lang: str = "fr", debug: bool = False,
               limits: Limits | None = None, columns=None) -> AuditResult:
    """Read, normalise and audit the carnet at `path` (a workbook or a CSV
    folder). A carnet that cannot be read gives its EC00-01 finding; an error
    of the auditor itself too, unless `debug` (then it is raised).
    `columns`: the user's mapping file (auditor.read.ColumnMap), if any.
    """
    # Each rule's own defect is that rule's `not_checked` (see `audit`); only a
    # defect of the reader or the normaliser leaves the carnet unaudited.
    try:
        carnet = normalise(read_carnet(path, limits, columns), free_raw=True)
        release_unused_memory()
    except Exception as exc:  # a defect of ours must not end the batch: report it as a finding
        if debug:
            raise
        carnet = Carnet(Source(str(path), "", container_of(path)), unreadable=True)
        carnet.problems.append(("EC00-01", Violation(kind="unreadable", params={
            "reason": internal_error(exc, lang)})))
    return audit(carnet, profile, lang, debug=debug)


def release_unused_memory() -> None:
    """Hand back to the system what the raw text tables held. Arrow's memory
    pool keeps freed pages for Arrow's next allocations, while the rules
    allocate through numpy: a million-stake carnet's text (some 60 MB kept
    there) would otherwise stay resident under the rules' own peak. Costs
    tens of microseconds."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def audit_refused(shown: str, sha256: str, problem: tuple, profile: Profile, lang: str = "fr") -> AuditResult:
    """A carnet refused before reading (an upload that is a hostile archive):
    unreadable, with its EC00-01 `problem`, audited as any other."""
    from auditor.read import RawCarnet

    raw = RawCarnet(path=shown, format="csv", sha256=sha256, problems=[problem], unreadable=True)
    return audit(normalise(raw), profile, lang)


def container_of(path: Path) -> str:
    """The source format findings.json names for a carnet at `path`: the
    workbook's container (xlsx, ods, xls …), or csv for a folder."""
    from auditor.read.workbook import SUFFIXES

    return SUFFIXES.get(path.suffix.lower(), "xlsx") if path.is_file() else "csv"


def audit(carnet: Carnet, profile: Profile, lang: str = "fr", debug: bool = False) -> AuditResult:
    """Run every catalogue rule over a normalised carnet: findings in the spec's order, the status of each rule
    (checked, or why not), the summary. A rule runs only when each table and column it declares is there; a rule
    that raises is that rule's `not_checked` (internal error, with the exception's type) and the others still run.
    `debug` lets the exception through instead (tests and the fuzzer)."""
    catalogue = load_catalogue()
    checks = registered()
    batch_checks = registered_batch()
    findings: list[Finding] = []
    statuses: list[RuleStatus] = []
    notes: dict[str, str] = {}
    n_chouette = _count_coups(carnet, "chouette")
    known: dict[str, bool] = {}     # need → carnet.has(need), asked once per audit
    # Per rule of the catalogue, in its order: its status when it does not run, else its spec.
    plan: list[tuple[str, RuleStatus | object]] = []
    for code, meta in catalogue.items():
        spec = checks.get(code)
        if meta.retired:
            continue
        if spec is None:
            # A rule checked only across the carnets of a batch (rules.md v1.2)
            # needs the table's other carnets: the run says how it went.
            reason = "archive_needs_other_carnets" if code in batch_checks else "not_implemented"
            plan.append((code, RuleStatus(code, Status.NOT_CHECKED, reason=label(reason, lang))))
            continue
        if carnet.unreadable and code != "EC00-01":
            plan.append((code, RuleStatus(code, Status.NOT_CHECKED, reason=label("carnet_unreadable", lang))))
            continue
        missing = missing_needs(carnet, spec.required(carnet.tables), known)
        if missing:
            # A column two source columns name (EC00-01) is not absent: it is not read.
            plan.append((code, RuleStatus(code, Status.NOT_CHECKED, reason=", ".join(
                f"{n} {label('rd_ambiguous' if carnet.ambiguous(n) else 'absent', lang)}" for n in missing))))
            continue
        plan.append((code, spec))
    runs = [(catalogue[code], spec) for code, spec in plan if not isinstance(spec, RuleStatus)]
    outcomes = iter(_run_rules(carnet, profile, runs, lang, debug))
    for code, spec in plan:
        if isinstance(spec, RuleStatus):
            statuses.append(spec)
            continue
        got = next(outcomes)
        if isinstance(got, _Failed):
            statuses.append(RuleStatus(code, Status.NOT_CHECKED, reason=str(got)))
            continue
        findings.extend(got)
        statuses.append(RuleStatus(code, Status.CHECKED, findings=len(got)))
        if "chouette" in spec.passes_over and n_chouette:
            notes[code] = label("chouette_passed_over", lang).format(n=n_chouette)
    findings = assign_fingerprints(sort_findings(findings), carnet.cover, seance_dates(carnet))
    checked = {r.code for r in statuses if r.status is Status.CHECKED}
    return AuditResult(carnet, findings, statuses, _summary(carnet, profile, findings, checked), lang, notes,
                       profile)


# A carnet with a table this long has its rules run on two threads: most of
# a rule's time there is numpy's and Arrow's loops over whole columns, which
# let go of the GIL (a million stakes: 0.14–0.21 s instead of 0.21–0.33 s).
# Two, not one per core: each thread's rule holds its own temporary columns
# at once, so the peak grows with each thread added. A small carnet's rules
# cost mostly Python's own steps, which one thread at a time may take.
PARALLEL_ROWS = 65536
RULE_THREADS = 2


class _Failed(str):
    """A rule that raised: why it is not checked (`internal_error`)."""


def _run_rules(carnet: Carnet, profile: Profile, runs: list, lang: str, debug: bool) -> list:
    """Each (rule's meta, spec) of `runs` run over the carnet: its findings,
    or why its defect leaves it not checked (`_Failed`; `debug`: the
    exception raised), in `runs`' order.
    A long carnet's rules are shared out between RULE_THREADS threads; the
    facts they derive are built once whichever asks first (`threads.sharing`)."""
    def outcome(meta, spec):
        def call():
            try:
                return [make_finding(meta, v, carnet, lang) for v in spec.func(carnet, profile)]
            except Exception as exc:  # one rule's defect must not take the carnet's other rules with it
                if debug:
                    raise
                # Its words only: the exception would keep the rule's frames and
                # their arrays alive until every other rule has run.
                return _Failed(internal_error(exc, lang))
        return call

    calls = [outcome(meta, spec) for meta, spec in runs]
    longest = max((len(t.df) for t in carnet.tables.values()), default=0)
    if longest < PARALLEL_ROWS:
        return run_all(calls, 1, "rules")
    # pandas wraps some operations in warnings.catch_warnings, which is not
    # thread-safe before Python 3.14: two threads' blocks crossing can leave
    # the process's warning filters changed. Whatever they did is undone here.
    with sharing(carnet.__dict__), warnings.catch_warnings():
        return run_all(calls, min(RULE_THREADS, cores()), "rules")


def missing_needs(carnet: Carnet, needs: tuple[str, ...], known: dict[str, bool] | None = None) -> list[str]:
    """The needs the carnet lacks, as the reason names them: `coups.gagnant`,
    or the table alone when the whole table is absent. `known`: what
    `carnet.has` said of needs already asked (the rules of one audit share
    most of theirs; the tables do not change while the rules run)."""
    out: list[str] = []
    for need in needs:
        if known is None:
            has = carnet.has(need)
        else:
            has = known.get(need)
            if has is None:
                has = known[need] = carnet.has(need)
        if not has:
            table = need.partition(".")[0]
            item = table if table not in carnet.tables else need
            if item not in out:
                out.append(item)
    return out


def internal_error(exc: BaseException, lang: str) -> str:
    """An auditor defect as the reports show it: the exception's type and message."""
    return label("internal_error", lang).format(error=f"{type(exc).__name__}: {exc}")[:300]


def audit_batch(batch: Sequence[BatchCarnet], profile: Profile, lang: str = "fr") -> list[tuple[Finding, Violation]]:
    """Every check over a batch (catalogue order) → its findings, each with the
    violation it comes from (which names the carnets involved), in the order
    the checks give them."""
    catalogue = load_catalogue()
    checks = registered_batch()
    out: list[tuple[Finding, Violation]] = []
    for code, meta in catalogue.items():
        spec = checks.get(code)
        if spec is None or meta.retired:
            continue
        out += [(make_finding(meta, v, None, lang), v) for v in spec.func(batch, profile)]
    return out


def _count_coups(carnet: Carnet, kind: str) -> int:
    if "coups" not in carnet.tables:
        return 0
    return int(np.count_nonzero(equals(carnet, "coups", "type", kind)))


def _summary(carnet: Carnet, profile: Profile, findings: list[Finding], checked: set[str]) -> dict:
    by = {s: 0 for s in Severity}
    for f in findings:
        by[f.severity] += 1
    tables = row_accounting(carnet, findings)
    rejected = sum(t["rejected"] for t in tables.values())
    rows_read = sum(t.rows_read for t in carnet.tables.values())
    # The levy totals are the levy rules' own figures: shown when both rules ran.
    ready = set(codes_with_money(Money.LEVY)) <= checked and _levy_ready(carnet)
    expected, recorded = levy_totals(carnet, profile) if ready else (0, 0)

    def n(table):
        return len(carnet.tables[table].df) if table in carnet.tables else 0

    seances = n("seances")
    return {
        "errors": by[Severity.ERROR], "warnings": by[Severity.WARNING], "info": by[Severity.INFO],
        "seances": seances, "coups": n("coups"), "mises": n("mises"), "tickets": n("tickets"),
        "rows_read": rows_read, "rows_rejected": rejected,
        "rows_left_out": sum(t["left_out"] for t in tables.values()),
        "levy_expected_cents": int(expected), "levy_recorded_cents": int(recorded),
        "impact_cents": total_at_stake(findings),
        "formulas": sum(len(getattr(t, "formulas", ())) for t in carnet.tables.values()),
        "tables": tables,
    }


def row_accounting(carnet: Carnet, findings: list[Finding]) -> dict:
    """Per table: rows read = rows audited + rows rejected + rows left out
    (totals rows under the data), and why rows were rejected.

    A row is rejected by the findings of rules whose catalogue entry says
    `rejects_row = "always"` (EC00-02, EC00-03: a bad cell,
    a row the reader could not shape, an orphan), or `"data_row"` when located on
    one of its data rows (a second cover row). `rejected_by` counts the
    distinct rows per code; the findings themselves give each row's reason.
    Workbook formula cells whose saved value was used are listed per column
    as cell ranges (`F2:F40`).
    """
    data_rows: dict[str, set] = {}     # filled only for the tables an EC00-01 finding names (rare)

    def is_data_row(table: str, row: int) -> bool:
        if table not in data_rows:
            t = carnet.tables.get(table)
            data_rows[table] = set(t.df["_row"].tolist()) if t is not None else set()
        return row in data_rows[table]

    rejects = {code: meta.rejects_row for code, meta in load_catalogue().items()}
    by_row: dict[tuple[str, int], set[str]] = {}
    for f in findings:
        if not f.table or f.row is None:
            continue
        rejection = rejects.get(f.code, RowRejection.NEVER)
        if rejection is RowRejection.ALWAYS or (rejection is RowRejection.DATA_ROW and is_data_row(f.table, f.row)):
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
