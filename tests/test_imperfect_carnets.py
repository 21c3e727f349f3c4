"""Systematic tests over imperfect carnets: compliant generated carnets of
both kinds (simple only, with chouette runs) in both containers (CSV folder,
workbook), each spoiled in one way at a time.

- a missing column or table: EC00-01 only, and exactly the rules that declare
  it `not_checked` (every other rule keeps its status and its findings);
- one unreadable cell in any typed column: its EC00-02, the row counted as
  rejected, and no other new finding (KNOCK_ON lists what may follow);
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import ecarte_schemas
from auditor.catalogue import load_profile
from auditor.synth.generate import COLUMNS, Spec, generate, write_csv_folder, write_xlsx
from auditor.model import Status
from auditor.audit import audit_path
from auditor.checks import registered, registered_batch

PROFILE = load_profile()
KINDS = {"simple": False, "chouette": True}
CONTAINERS = ("csv", "xlsx")


def write(tables, folder: Path, container: str, columns=None) -> Path:
    if container == "xlsx":
        return write_xlsx(tables, folder / "carnet.xlsx", columns=columns)
    return write_csv_folder(tables, folder / "carnet", columns=columns)


def compliant(kind: str, seed: int = 5):
    return generate(Spec(seances=2, coups=7, mises=4, seed=seed, chouette=KINDS[kind]))


def findings_by_code(result) -> dict[str, list[tuple]]:
    out: dict[str, list[tuple]] = {}
    for f in result.findings:
        out.setdefault(f.code, []).append((f.seance, f.coup, f.rang, f.table, f.row, f.column, f.message,
                                           f.impact_cents))
    return out


def statuses(result) -> dict[str, Status]:
    return {r.code: r.status for r in result.rules}


@pytest.fixture(scope="module")
def baselines(tmp_path_factory):
    """The audit of each compliant carnet, untouched (kind, container) → result."""
    out = {}
    for kind in KINDS:
        for container in CONTAINERS:
            folder = tmp_path_factory.mktemp(f"base-{kind}-{container}")
            out[kind, container] = audit_path(write(compliant(kind), folder, container), PROFILE, debug=True)
    return out


# The rules across the carnets of a table need the table's other carnets: a
# carnet audited alone never checks them (rules.md v1.2).
ACROSS_A_TABLE = set(registered_batch()) - set(registered())   # checked over a batch only


def test_baselines_are_compliant(baselines):
    for result in baselines.values():
        assert {f.code for f in result.findings} <= {"EC83-02"}   # info: books still in progress
        assert {c for c, s in statuses(result).items() if s is not Status.CHECKED} == ACROSS_A_TABLE


# -- missing columns and tables ---------------------------------------------------

def declared_columns() -> list[tuple[str, str, bool]]:
    """(table, source column, required) for every column a table must have, and
    every optional column some rule declares it needs (an optional column with
    a default, such as `restitue`, is read as its default when absent)."""
    needs = {n for spec in registered().values() for n in spec.needs + spec.needs_if_present}
    out = []
    for table, schema in ecarte_schemas.MODELS.items():
        for field, column in schema.columns.items():
            meta = column.metadata
            source = meta.get("source") or field
            defaulted = meta.get("default") is not None or meta.get("default_from")
            if meta.get("required") or (f"{table}.{source}" in needs and not defaulted):
                out.append((table, source, bool(meta.get("required"))))
    return out


def needing(item: str) -> set[str]:
    """Codes whose declared needs include `item`: a column (needed always, or
    when its table is there), or any column of a table (needed always)."""
    table, dot, _ = item.partition(".")
    return {code for code, spec in registered().items()
            if any(n == item or (not dot and n.partition(".")[0] == table)
                   for n in spec.needs + (spec.needs_if_present if dot else ()))}


def check_missing(base, result, item: str, ec00_01: int) -> None:
    lost = needing(item)
    got, want = statuses(result), statuses(base)
    for code in lost:
        assert got[code] is Status.NOT_CHECKED, f"{code} reads {item} but was {got[code]}"
        reason = next(r.reason for r in result.rules if r.code == code)
        assert f"{item} absent" in reason, reason
    assert {c: s for c, s in got.items() if c not in lost} == {c: s for c, s in want.items() if c not in lost}
    b, r = findings_by_code(base), findings_by_code(result)
    assert len(r.pop("EC00-01", [])) == ec00_01
    # The rules that do not read what is missing give exactly what they gave before.
    assert r == {c: f for c, f in b.items() if c not in lost}


def each_kind_and_container(items):
    """Every item on both kinds of carnet, the container alternating item by
    item: each item is seen in both containers and both kinds, every pair of
    kind and container is seen, at half the cost of all four."""
    return [(kind, CONTAINERS[(i + k) % 2], *item) for i, item in enumerate(items) for k, kind in enumerate(KINDS)]


COLUMN_CASES = each_kind_and_container(declared_columns())


@pytest.mark.parametrize("kind, container, table, column, required", COLUMN_CASES,
                         ids=[f"{k}-{c}-{t}.{col}" for k, c, t, col, _ in COLUMN_CASES])
def test_a_missing_column_gives_ec00_01_only_and_its_rules_not_checked(kind, container, table, column, required,
                                                                       baselines, tmp_path):
    columns = {**COLUMNS, table: [c for c in COLUMNS[table] if c != column]}
    result = audit_path(write(compliant(kind), tmp_path, container, columns), PROFILE, debug=True)
    check_missing(baselines[kind, container], result, f"{table}.{column}", 1 if required else 0)


TABLE_CASES = each_kind_and_container([(t,) for t in ecarte_schemas.MODELS])


@pytest.mark.parametrize("kind, container, table", TABLE_CASES, ids=[f"{k}-{c}-{t}" for k, c, t in TABLE_CASES])
def test_a_missing_table_gives_ec00_01_only_and_its_rules_not_checked(kind, container, table, baselines,
                                                                      tmp_path):
    tables = {name: rows for name, rows in compliant(kind).items() if name != table}
    result = audit_path(write(tables, tmp_path, container), PROFILE, debug=True)
    required = table in ecarte_schemas.REQUIRED_TABLES
    check_missing(baselines[kind, container], result, table, 1 if required else 0)


# -- unreadable cells --------------------------------------------------------------

# The only findings besides the cell's EC00-02 that one unreadable cell may give
# in a compliant carnet, per column (docs/interpretations.md, "Unreadable cells"):
# none. A value that cannot be read is left out of every rule, and a rule that
# would count the row (a coup's stakes, a series of numbers, a register) leaves
# out what the row may belong to; a new knock-on finding fails this test.
KNOCK_ON: dict[str, set[str]] = {}
UNREADABLE = {"int": "x7", "amount": "douze", "date": "31/02/2026", "enum": "zz"}


def typed_columns() -> list[tuple[str, str, str]]:
    """(table, source column, kind) of every column that can hold an unreadable cell."""
    return [(table, column.metadata.get("source") or field, column.metadata["kind"])
            for table, schema in ecarte_schemas.MODELS.items() for field, column in schema.columns.items()
            if column.metadata["kind"] in UNREADABLE]


def spoil(tables, table: str, column: str, text: str) -> int:
    """Write `text` in one cell of `column`: a filled cell near the middle of the
    table. Returns the source row (header = 1)."""
    rows = tables[table]
    filled = [i for i, r in enumerate(rows) if r.get(column) not in (None, "")] or list(range(len(rows)))
    i = filled[len(filled) // 2]
    rows[i] = {**rows[i], column: text}
    return i + 2


def new_findings(base, result) -> list[tuple]:
    before = {(f.code, f.seance, f.coup, f.rang, f.table, f.row, f.column, f.impact_cents) for f in base.findings}
    return [k for k in ((f.code, f.seance, f.coup, f.rang, f.table, f.row, f.column, f.impact_cents)
                        for f in result.findings) if k not in before]


CELL_CASES = each_kind_and_container(typed_columns())


@pytest.mark.parametrize("kind, container, table, column, type_", CELL_CASES,
                         ids=[f"{k}-{c}-{t}.{col}" for k, c, t, col, _ in CELL_CASES])
def test_one_unreadable_cell_gives_ec00_02_and_only_the_allowed_knock_on(kind, container, table, column, type_,
                                                                         baselines, tmp_path):
    tables = compliant(kind)
    row = spoil(tables, table, column, UNREADABLE[type_])
    result = audit_path(write(tables, tmp_path, container), PROFILE, debug=True)
    new = new_findings(baselines[kind, container], result)
    cell = [f for f in new if f[0] == "EC00-02"]
    assert [(f[4], f[5]) for f in cell] == [(table, row)], new
    others = sorted({f[0] for f in new if f[0] != "EC00-02"})
    assert set(others) <= KNOCK_ON.get(f"{table}.{column}", set()), new
    assert all(s is Status.CHECKED for c, s in statuses(result).items() if c not in ACROSS_A_TABLE)
    # The report counts the row as rejected.
    before = baselines[kind, container].summary["tables"][table]["rejected"]
    assert result.summary["tables"][table]["rejected"] == before + 1


# -- numbering: repeated coups, rows out of order ------------------------------------

def renumber(tables, seance: int, old: int, new: int) -> None:
    for name in ("coups", "mises", "tickets"):
        for r in tables[name]:
            if r["seance"] == seance and r["coup"] == old:
                r["coup"] = new


@pytest.mark.parametrize("kind, container", [("simple", "csv"), ("chouette", "xlsx")])
def test_a_repeated_coup_number_is_ec64_01_and_no_pooled_money(kind, container, baselines, tmp_path):
    tables = compliant(kind)
    first = tables["coups"][0]["seance"]
    renumber(tables, first, 3, 2)       # two coups numbered 2, with their stakes and tickets
    result = audit_path(write(tables, tmp_path, container), PROFILE, debug=True)
    new = new_findings(baselines[kind, container], result)
    assert {f[0] for f in new} == {"EC64-01"}, new
    assert sorted((f[2], f[4]) for f in new) == [(2, "coups"), (3, "coups")]   # the repeat, the missing 3
    assert result.summary["levy_expected_cents"] == result.summary["levy_recorded_cents"]
    assert all(f.impact_cents == 0 for f in result.findings)


def shuffled(tables, rng: random.Random):
    out = {}
    for name, rows in tables.items():
        rows = list(rows)
        if name != "carnet":
            rng.shuffle(rows)
        out[name] = rows
    return out


def play_findings(result) -> list[tuple]:
    """What a finding says of the play, not of the rows: code, séance, coup, rang
    (row order only decides EC64-01 and EC64-02's "out of order")."""
    return sorted((f.code, f.seance or 0, f.coup or 0, f.rang or 0) for f in result.findings
                  if f.code not in ("EC64-01", "EC64-02"))


SHUFFLE_SEEDS = [(seed, kind, CONTAINERS[seed % 2]) for seed in range(4) for kind in KINDS]


@pytest.mark.parametrize("seed, kind, container", SHUFFLE_SEEDS)
def test_rows_shuffled_give_the_same_findings(seed, kind, container, tmp_path):
    from auditor.synth.breaches import INJECTORS, CannotInject, inject

    rng = random.Random()           # a new shuffle each run: any order must do
    tables = compliant(kind, seed=seed)
    codes = random.Random(seed).sample(sorted(INJECTORS), 3)
    for code in codes:              # a few breaches, so that there is something to find
        try:
            inject(tables, [code], seed=seed)
        except CannotInject:
            pass
    straight = audit_path(write(tables, tmp_path / "a", container), PROFILE, debug=True)
    mixed = audit_path(write(shuffled(tables, rng), tmp_path / "b", container), PROFILE, debug=True)
    assert play_findings(mixed) == play_findings(straight)
    assert straight.summary["levy_expected_cents"] == mixed.summary["levy_expected_cents"]


# -- money at stake ------------------------------------------------------------------

@pytest.mark.parametrize("kind, container", [("simple", "xlsx"), ("chouette", "csv")])
def test_a_lost_ticket_counts_once_in_the_total(kind, container, baselines, tmp_path):
    tables = compliant(kind)
    runs = [r for r in tables["tickets"] if r["valeur"] == 10]
    # A 0,10 € ticket lost at a coup whose séance detaches 0,10 € tickets again later.
    lost = next(r for i, r in enumerate(runs[:-1]) if r["dernier"] > r["premier"]
                and runs[i + 1]["seance"] == r["seance"])
    lost["dernier"] -= 1
    seance = next(s for s in tables["seances"] if s["seance"] == lost["seance"])
    seance["cagnotte"] -= 10
    result = audit_path(write(tables, tmp_path, container), PROFILE, debug=True)
    new = new_findings(baselines[kind, container], result)
    assert sorted((f[0], f[7]) for f in new) == [("EC661-01", 10), ("EC83-01", 10)], new
    assert result.summary["impact_cents"] - baselines[kind, container].summary["impact_cents"] == 10
    html = (tmp_path / "r.html")
    from auditor.report import html_report
    html.write_text(html_report.render_report(result, "c", "2026-01-01T00:00:00Z", findings_file=None))
    assert "chaque centime une fois" in html.read_text()


def test_other_impacts_add_up():
    from auditor.stake import total_at_stake
    from auditor.model import Finding, Severity

    def f(code, seance, cents):
        return Finding(code, Severity.ERROR, "", "", None, None, None, None, seance, 1, None, None, None, cents)

    assert total_at_stake([f("EC66-01", 1, 50), f("EC661-01", 1, 10), f("EC83-01", 1, 10),
                           f("EC83-01", 2, 30), f("EC661-01", 3, 20), f("EC66-02", 2, -40)]) == 50 + 10 + 30 + 20
