"""Two source columns for one carnet column (carnet-format.md: "an EC00-01
naming both: never a guess"), as classes over every column of the schemas.

- every optional column the format gives a default (`restitue` 0, `phase`
  avant, `dernier` = premier, `prelevement_apres` 0 …), written twice under
  two header variants: its EC00-01, its values unknown, never its default:
  every rule that reads it is not checked (naming it), and no rule that the
  default would have given a finding is checked; a compliant carnet so
  damaged gives that EC00-01 and nothing else;
- the same for every required column a rule reads (no "colonne absente" besides);
- across the carnets of a table: a carnet whose tickets' `dernier` or `phase`
  is ambiguous has tickets that cannot be read for those rules.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import ecarte_schemas
from auditor.audit import audit_path
from auditor.catalogue import load_profile
from auditor.checks import registered
from auditor.checks.archive import archive_codes, archive_statuses
from auditor.derived.batch_facts import batch_facts
from auditor.i18n import label
from auditor.model import Severity, Status
from auditor.normalise import normalise
from auditor.read import read_carnet
from auditor.synth.archive import ArchiveSpec, generate_archive
from auditor.synth.generate import COLUMNS, MONEY, Spec, source_text, write_csv_folder, write_xlsx
from batch_fixture import run_batch
from test_imperfect_carnets import KINDS, baselines, compliant, findings_by_code, statuses  # noqa: F401 (the same carnets, views and fixture)

PROFILE = load_profile()
CONTAINERS = ("csv", "xlsx")
AMBIGUOUS = label("rd_ambiguous", "fr")


def schema_columns(required: bool) -> list[tuple[str, str]]:
    """(table, source column) of every required column, or of every optional
    column the format fills when it is absent (`default` or `default_from`)."""
    out = []
    for table, schema in ecarte_schemas.MODELS.items():
        for field, column in schema.columns.items():
            meta = column.metadata
            source = meta.get("source") or field
            if required and meta.get("required"):
                out.append((table, source))
            elif not required and not meta.get("required") and (meta.get("default") is not None
                                                                 or meta.get("default_from")):
                out.append((table, source))
    return out


def needing(table: str, column: str) -> set[str]:
    """Codes that declare they read `table.column` (always, or when its table is there)."""
    item = f"{table}.{column}"
    return {code for code, spec in registered().items() if item in spec.needs + spec.needs_if_present}


DEFAULTED = schema_columns(required=False)
# A required column no rule reads (the cover's casino) has nothing to leave unchecked.
REQUIRED = [(t, c) for t, c in schema_columns(required=True) if needing(t, c)]
# The classes are the schemas' columns: never empty, whatever the schemas become.
assert {"mises.restitue", "tickets.phase", "tickets.dernier", "coups.prelevement_apres"} <= {
    f"{t}.{c}" for t, c in DEFAULTED}
assert ("tickets", "premier") in REQUIRED


def variant(column: str) -> str:
    """Another way of heading `column` that folds to the same name (`PRELEVEMENT APRES`)."""
    return column.replace("_", " ").upper()


def write(tables: dict, folder: Path, container: str, table: str | None = None, column: str | None = None,
          drop: bool = False) -> Path:
    """The carnet, with `table.column` written twice (the second under a header
    variant, the same values), or left out (`drop`: read as its default)."""
    columns = dict(COLUMNS)
    if table is not None and drop:
        columns[table] = [c for c in COLUMNS[table] if c != column]
    elif table is not None:
        second = variant(column)
        columns[table] = [*COLUMNS[table], second]
        rows = []
        for row in tables[table]:
            value = row.get(column)
            if container == "xlsx":
                # As the writer puts the first one: money as euros, the rest as it is.
                value = value / 100 if column in MONEY and isinstance(value, int) else value
            else:
                value = source_text(column, value)
            rows.append({**row, second: value})
        tables = {**tables, table: rows}
    if container == "xlsx":
        return write_xlsx(tables, folder / "carnet.xlsx", columns=columns)
    return write_csv_folder(tables, folder / "carnet", columns=columns)


def reasons(result) -> dict[str, str | None]:
    return {r.code: r.reason for r in result.rules}


def serious(result) -> dict[str, int]:
    """Error and warning findings per code."""
    out: dict[str, int] = {}
    for f in result.findings:
        if f.severity >= Severity.WARNING:
            out[f.code] = out.get(f.code, 0) + 1
    return out


def test_the_compliant_carnets_are_compliant(baselines):
    """What the class tests below compare with holds no error or warning."""
    assert {key: serious(result) for key, result in baselines.items()} == {key: {} for key in baselines}


def check_ambiguous(base, result, table: str, column: str) -> None:
    """One EC00-01 naming both headers of `table.column` (and no other); every
    rule that reads the column not checked, naming it; every other rule as on
    the untouched carnet, with the same findings."""
    ec00 = [f for f in result.findings if f.code == "EC00-01"]
    assert [(f.table, f.column) for f in ec00] == [(table, column)], [f.message for f in ec00]
    assert f"« {column} »" in ec00[0].message and f"« {variant(column)} »" in ec00[0].message, ec00[0].message
    lost = needing(table, column)
    assert lost, f"no rule declares it reads {table}.{column}"
    got, want, why = statuses(result), statuses(base), reasons(result)
    for code in lost:
        assert got[code] is Status.NOT_CHECKED, f"{code} reads {table}.{column} but was {got[code]}"
        assert f"{table}.{column} {AMBIGUOUS}" in why[code], why[code]
    assert {c: s for c, s in got.items() if c not in lost} == {c: s for c, s in want.items() if c not in lost}
    b, r = findings_by_code(base), findings_by_code(result)
    r.pop("EC00-01")
    assert r == {c: f for c, f in b.items() if c not in lost}
    # A compliant carnet so damaged: its EC00-01 and nothing else worth a warning.
    assert serious(result) == {"EC00-01": 1}


def each_kind_and_container(items):
    """Every item on both kinds of carnet, the container alternating item by item."""
    return [(kind, CONTAINERS[(i + k) % 2], *item) for i, item in enumerate(items) for k, kind in enumerate(KINDS)]


DEFAULTED_CASES = each_kind_and_container(DEFAULTED)




def optional_without_default() -> list[tuple[str, str]]:
    """(table, source column) of every optional column the format gives no default."""
    return [(table, column.metadata.get("source") or field)
            for table, schema in ecarte_schemas.MODELS.items() for field, column in schema.columns.items()
            if not column.metadata.get("required") and column.metadata.get("default") is None
            and not column.metadata.get("default_from")]


WITHOUT_DEFAULT = optional_without_default()
assert {"coups.chouette", "coups.en_dehors", "coups.evenement"} <= {f"{t}.{c}" for t, c in WITHOUT_DEFAULT}
UNKNOWN_CASES = [(k, c, *item) for item in WITHOUT_DEFAULT for k in KINDS for c in CONTAINERS]


@pytest.mark.parametrize("kind, container, table, column", UNKNOWN_CASES,
                         ids=[f"{k}-{c}-{t}.{col}" for k, c, t, col in UNKNOWN_CASES])
def test_an_ambiguous_column_without_a_default_is_every_cell_unknown_never_empty(kind, container, table, column,
                                                                               tmp_path):
    """An optional column without a default (the chouette's amounts, the
    coup's event, the séance's stamp…) written twice: its cells are unknown,
    as unreadable cells are, never empty — no "chouette without its amount",
    no "run without adjudication" on a compliant carnet; its EC00-01 alone."""
    result = audit_path(write(compliant(kind), tmp_path, container, table, column), PROFILE, debug=True)
    assert serious(result) == {"EC00-01": 1}, findings_by_code(result)


GUESS_CASES = [(c, *item) for item in DEFAULTED for c in CONTAINERS]


@pytest.mark.parametrize("container, table, column", GUESS_CASES,
                         ids=[f"{c}-{t}.{col}" for c, t, col in GUESS_CASES])
def test_no_rule_the_default_would_mislead_is_checked(container, table, column, tmp_path):
    """The chouette carnet holds values other than the default in every such
    column (stakes partly returned, tickets after the result, runs of several
    tickets, levies after the result): read as the default, rules find breaches
    that are not there. Ambiguous, none of those rules is checked."""
    tables = compliant("chouette")
    guessed = audit_path(write(tables, tmp_path / "absent", container, table, column, drop=True), PROFILE,
                         debug=True)
    misled = set(serious(guessed))
    assert misled, f"the default of {table}.{column} gives no finding here: the case proves nothing"
    result = audit_path(write(tables, tmp_path / "twice", container, table, column), PROFILE, debug=True)
    got = statuses(result)
    assert {c for c in misled if got[c] is Status.CHECKED} == set(), reasons(result)
    assert serious(result) == {"EC00-01": 1}


REQUIRED_CASES = each_kind_and_container(REQUIRED)


# Optional columns with a default (unknown, never the default) and required columns (one EC00-01, their rules
# not checked): the same checks.
AMBIGUOUS_CASES = [("default", *c) for c in DEFAULTED_CASES] + [("required", *c) for c in REQUIRED_CASES]


@pytest.mark.parametrize("which, kind, container, table, column", AMBIGUOUS_CASES,
                         ids=[f"{w}-{k}-{c}-{t}.{col}" for w, k, c, t, col in AMBIGUOUS_CASES])
def test_an_ambiguous_column_is_unknown_and_its_rules_not_checked(which, kind, container, table, column,
                                                                  baselines, tmp_path):
    result = audit_path(write(compliant(kind), tmp_path, container, table, column), PROFILE, debug=True)
    check_ambiguous(baselines[kind, container], result, table, column)


# -- across the carnets of a table ---------------------------------------------------

TICKET_DEFAULTED = [c for t, c in DEFAULTED if t == "tickets"]


@pytest.mark.parametrize("column", TICKET_DEFAULTED)
def test_a_carnet_whose_tickets_column_is_ambiguous_has_unreadable_tickets_across_carnets(column, tmp_path):
    """Three consecutive carnets of a table, the middle one with the column
    written twice: its tickets cannot be read across carnets (its first and
    last tickets are unknown), so no finding between it and its neighbours
    and the ticket rules across carnets not checked, naming it."""
    carnets = generate_archive(ArchiveSpec(carnets=3, carnet=Spec(
        seances=2, coups=5, mises=3, chouette=True, ticket_start={10: 400001, 100: 400001, 1000: 400001})))
    batch = []
    for k, (day, tables) in enumerate(carnets):
        folder = tmp_path / day.isoformat()
        folder.mkdir()
        path = write(tables, folder, "csv", *(("tickets", column) if k == 1 else ()))
        batch.append(batch_facts(normalise(read_carnet(path)), day.isoformat(), day.isoformat(), PROFILE))
    assert [c.tickets_readable for c in batch] == [True, False, True]
    assert run_batch(batch, archive_codes(tickets_only=True)) == []
    _, tables = archive_statuses(batch, PROFILE, "en")
    for code in archive_codes(tickets_only=True):
        rule = tables[0]["rules"][code]
        assert rule["status"] == "not_checked" and batch[1].path in rule["reason"], rule
