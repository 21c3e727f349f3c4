"""Normalising with `free_raw` (each text column of a large table dropped once
parsed, the cells findings quote taken first) gives exactly what normalising
with the whole text at hand gives: every typed table and every problem, over
every carnet the tests and samples hold (CSV folders, workbooks with formulas,
office exports) and over generated tables whose cells fail in every way
(unparseable, error values, out of range, outside an enumeration, missing,
text dates in the other order). The row threshold is lowered to 0 so that
small tables take the path."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import auditor.normalise as normalise_module
from auditor.normalise import normalise
from auditor.read import discover, read_carnet

ROOT = Path(__file__).resolve().parent.parent
_CARNETS = sorted({p for base in (ROOT / "sample_carnets", ROOT / "tests" / "fixtures") for p in discover(base)})


def _same(a, b) -> None:
    assert a.problems == b.problems
    assert a.reading == b.reading
    assert sorted(a.tables) == sorted(b.tables)
    for name in a.tables:
        x, y = a.tables[name], b.tables[name]
        assert list(x.df.columns) == list(y.df.columns)
        assert list(x.df.dtypes) == list(y.df.dtypes)
        assert x.df.equals(y.df), name
        assert x.present == y.present and x.rows_read == y.rows_read


@pytest.fixture
def free_everything(monkeypatch):
    monkeypatch.setattr(normalise_module, "FREE_ROWS", 0)


def test_the_carnets_at_hand_are_many():
    assert len(_CARNETS) >= 40


@pytest.mark.slow
def test_every_carnet_at_hand_normalises_the_same_when_its_text_is_let_go(free_everything):
    for path in _CARNETS:
        _same(normalise(read_carnet(path)), normalise(read_carnet(path), free_raw=True))


_AMOUNT = st.sampled_from(["12,50", "7", "-5,00", "1 234,50", "12,505", "abc", "#N/A", "#DIV/0!", "Err:502", "", " ",
                           "0,00", "-0,10", "  3,40 ", "€"])
_INT = st.sampled_from(["1", "2", "0", "-1", "+3", "x", "", " 4", "#VALUE!", "1,5", "99999999999999999"])
_SIDE = st.sampled_from(["a", "b", "A", "B", "c", "", "Côté", "#N/A"])


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(_INT, _INT, _INT, _INT, _SIDE, _AMOUNT, _AMOUNT), min_size=1, max_size=25),
       st.sampled_from(["13/02/2026", "02/13/2026", "02/03/2026", "2026-02-30", "x", ""]))
def test_stakes_failing_every_way_normalise_the_same_when_their_text_is_let_go(free_everything, tmp_path_factory,
                                                                               rows, day):
    folder = tmp_path_factory.mktemp("carnet")
    (folder / "carnet.csv").write_text("casino;table;date_debut\nDeauville;2;01/02/2026\n", encoding="utf-8")
    (folder / "seances.csv").write_text(f"seance;date;timbre;jeux;cagnotte\n1;{day};{day};2;10,00\n"
                                        "2;14/02/2026;14/02/2026;2;10,00\n", encoding="utf-8")
    (folder / "coups.csv").write_text("seance;coup;type;total_a;total_b;prelevement\n1;1;simple;10,00;10,00;1,00\n",
                                      encoding="utf-8")
    (folder / "mises.csv").write_text(
        "seance;coup;rang;fiche;cote;montant;restitue\n" + "".join(";".join(r) + "\n" for r in rows), encoding="utf-8")
    _same(normalise(read_carnet(folder)), normalise(read_carnet(folder), free_raw=True))
