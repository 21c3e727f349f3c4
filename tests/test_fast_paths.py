"""The fast paths of reading and normalising give exactly what the reference
paths give, cell by cell: the plain readings of amounts, integers and dates
straight from the Arrow buffers against parse_cents, the integer regex and
the regex date parser; a whole column (defaults, formulas without value,
blank and spaced cells) against trimming every cell then parsing it; the
lazy line reader against io.StringIO. A cell the fast path cannot read must
come out as the reference says, value or EC00-02."""

from __future__ import annotations

import io
import random
from pathlib import Path
import re

import numpy as np
import pytest
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings, strategies as st

from auditor.money import AmountError, parse_cents, plain_cents
from auditor.normalise import PARSERS, _as_date, _parsed, _trimmed, parsed_in_full, plain_dates, plain_ints
from auditor.read.csv_folder import _first_pieces, text_lines

_INT = re.compile(r"[+-]?[0-9]{1,15}")

# Cells of every class the format, or a clerk, may write in a number column.
_TRICKY = [
    "", " ", "\t", "\u00a0", "0", "00", "007", "1", "+1", "-1", "+-1", "- 1", "1 ", " 1", "\u00a01", "1\u202f",
    "12,50", "12.50", "12,5", "12.5", "12,505", ",50", ".50", "12,", "12.", "1,2,34", "1.2,34", "1,,34", "12,.5",
    "1 234,50", "1\u00a0234,50", "1\u202f234,50", "1 234", "12 345 678,90", "1 23,50", "1,234", "1.234,56",
    "12,50 €", "12,50€", "12 €", "€12", "-12,50 €", "+0,05", "-0", "-0,00", "١", "١٢,٥٠", "１２", "²", "12\u200b",
    "999999999999", "9999999999999", "000000000000", "0000000000000", "999999999999,99", "9999999999999,99",
    "0000000000000,00", "123456789012345", "1234567890123456", "99999999999999999999", "1e3", "0x1f", "x", "12;5",
    "12 50", "1 50", "12 5", "12\u00a050", "12-50", "12+50", "12x50", "12;50", "12\u066b50", "12\uff0c50",
]
_NUMBER_CELL = st.one_of(
    st.sampled_from(_TRICKY),
    st.text(alphabet="0123456789,. -+€\u00a0\u202f\u0661\uff11x\t", max_size=20),
    st.from_regex(r"\A[0-9]{0,16}([.,][0-9]{0,3})?\Z"),
    st.from_regex(r"\A[0-9]{0,14}[ .,;x+\u00a0\u202f-][0-9]{0,3}\Z"),
    st.from_regex(r"\A[+-]?[0-9]{1,3}([ \u00a0\u202f][0-9]{3}){0,4}([.,][0-9]{1,2})?( ?€)?\Z"),
)


def _reference_cents(text: str):
    try:
        return parse_cents(text)
    except AmountError:
        return "bad"


def _reference_int(text: str):
    return int(text) if _INT.fullmatch(text) else "bad"


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(_NUMBER_CELL, min_size=1, max_size=40))
def test_plain_cents_reads_only_what_parse_cents_reads_and_the_same(cells):
    values, ok = plain_cents(pa.array(cells, type=pa.string()))
    for text, v, good in zip(cells, values.tolist(), ok.tolist()):
        if good:
            assert text == text.strip() and v == parse_cents(text), repr(text)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(_NUMBER_CELL, min_size=1, max_size=40))
def test_plain_ints_read_only_what_the_integer_grammar_reads_and_the_same(cells):
    values, ok = plain_ints(pa.array(cells, type=pa.string()))
    for text, v, good in zip(cells, values.tolist(), ok.tolist()):
        if good:
            assert text == text.strip() and v == _reference_int(text), repr(text)


def _column_agrees(kind: str, cells: list, reference) -> None:
    """The whole column path: value, <NA> and not bad when blank, bad when the reference refuses."""
    values, bad, empty = _parsed(kind, pa.array(cells, type=pa.string()), None, None)
    got = pd.array(values).tolist()
    for text, v, b, e in zip(cells, got, bad.tolist(), empty.tolist()):
        if text is None or text.strip() == "":
            assert (v is pd.NA, b, e) == (True, False, True), repr(text)
            continue
        want = reference(text.strip())
        assert not e and ("bad" if b else v) == want, repr(text)
        assert (v is pd.NA) == b, repr(text)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_NUMBER_CELL, st.none()), min_size=1, max_size=40))
def test_amount_columns_equal_parse_cents_cell_by_cell(cells):
    _column_agrees("amount", cells, _reference_cents)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_NUMBER_CELL, st.none()), min_size=1, max_size=40))
def test_int_columns_equal_the_integer_grammar_cell_by_cell(cells):
    _column_agrees("int", cells, _reference_int)


def _old_column(kind: str, raw: pa.Array, no_value, default):
    """What normalisation did before the fast paths: trim every cell, null the
    empty ones, put the default in the empty ones, parse the whole column."""
    values, bad, empty = parsed_in_full(kind, raw, no_value, default)
    return pd.Series(values).astype({"date": "datetime64[us]"}.get(kind, "Int64")), bad, empty


_DATE_CELL = st.one_of(
    st.sampled_from(["02/03/2026", "2/3/2026", "2026-03-02", "31/02/2026", "29/02/2024", "29/02/2026", "00/01/2026",
                     "01/13/2026", "01/01/0000", "0000-01-01", "01/01/0001", "9999-12-31", "2026-3-2", " 02/03/2026",
                     "02/03/26", "2026/03/02", "02-03-2026", "٠٢/٠٣/٢٠٢٦", "31/04/2026", "30/04/2026", "", " "]),
    st.from_regex(r"\A[0-9]{2}[/-][0-9]{2}[/-][0-9]{4}\Z"),
    st.from_regex(r"\A[0-9]{4}[/-][0-9]{2}[/-][0-9]{2}\Z"),
    st.text(alphabet="0123456789/- ", min_size=8, max_size=11),
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(_NUMBER_CELL, _DATE_CELL, st.none()), min_size=1, max_size=30), st.data())
def test_a_column_reads_as_before_whatever_its_defaults_and_formulas(cells, data):
    raw = pa.array(cells, type=pa.string())
    no_value = np.array(data.draw(st.lists(st.booleans(), min_size=len(cells), max_size=len(cells))))
    for kind, default in (("int", None), ("int", "0"), ("amount", None), ("amount", "0"), ("amount", "x"),
                          ("date", None), ("date", "02/03/2026")):
        for formulas in (None, no_value):
            values, bad, empty = _parsed(kind, raw, formulas, default)
            old_values, old_bad, old_empty = _old_column(kind, raw, formulas, default)
            new = pd.Series(values)
            assert str(new.dtype) == str(old_values.dtype)
            assert new.equals(old_values), (kind, default)
            assert (bad == old_bad).all() and (empty == old_empty).all(), (kind, default)


def test_every_calendar_day_and_every_near_miss_reads_as_the_regex_parser_reads_it():
    cells = []
    for y in [*range(0, 30), *range(990, 1010), *range(1896, 2105), *range(9990, 10000)]:
        for m in range(0, 14):
            for d in (0, 1, 28, 29, 30, 31, 32):
                cells += [f"{d:02d}/{m:02d}/{y:04d}", f"{y:04d}-{m:02d}-{d:02d}"]
    arr = pa.array(cells)
    values, ok = plain_dates(arr)
    reference, _ = _as_date(arr)
    assert (ok == ~np.isnat(reference)).all()
    assert (values[ok] == reference[ok].view(np.int64)).all()


def test_the_plain_readings_follow_the_array_they_are_given():
    """Slices (an offset into shared buffers), chunks and nulls."""
    base = pa.array(["x", "1,50", None, "12", " 3", "0.05", "", "7"])
    for arr in (base.slice(1), base.slice(3, 4), pa.chunked_array([base.slice(0, 3), base.slice(3)])):
        cells = arr.to_pylist()
        cents, ok = plain_cents(arr)
        assert [c if k else None for c, k in zip(cents.tolist(), ok.tolist())] == \
            [parse_cents(t) if t is not None and t in ("1,50", "12", "0.05", "7") else None for t in cells]
        ints, ok = plain_ints(arr)
        assert [c if k else None for c, k in zip(ints.tolist(), ok.tolist())] == \
            [int(t) if t in ("12", "7") else None for t in cells]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab;,\r\n\" ", max_size=60))
def test_lines_are_those_of_stringio(text):
    assert list(text_lines(text)) == list(io.StringIO(text, newline=""))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="a\n\r", max_size=40), st.integers(1, 6))
def test_first_pieces_are_those_of_split(text, count):
    assert list(_first_pieces(text, "\n", count)) == text.split("\n", count)[:count]


_TEXT_CELL = st.one_of(
    st.sampled_from(["a", "b", "A", " a", "a ", "\u00a0b", "Après", "APRES", "apres", "e\u0301", "x y", "", " ", "\t",
                     "simple", "Chouette", "ÉTÉ", "ß", "İ", "\u3000a", "a\u2003"]),
    st.text(alphabet="abAB \u00a0é\u0301\t-", max_size=6),
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_TEXT_CELL, st.none()), min_size=1, max_size=30))
def test_text_and_enum_columns_read_as_before(cells):
    raw = pa.array(cells, type=pa.string())
    old = pc.utf8_trim_whitespace(raw)
    empty = pc.fill_null(pc.equal(old, ""), True)
    old = pc.if_else(empty, None, old)
    arr, new_empty = _trimmed(raw)
    assert (new_empty == empty.to_numpy(zero_copy_only=False)).all()
    assert arr.equals(old)
    lowered = pc.utf8_lower(old)
    if not pc.all(pc.fill_null(pc.string_is_ascii(lowered), True)).as_py():
        lowered = pc.replace_substring_regex(pc.utf8_normalize(lowered, "NFKD"), r"[^\x00-\x7f]", "")
        lowered = pc.if_else(pc.equal(lowered, ""), None, lowered)
    want = pd.Series(pd.StringDtype().__from_arrow__(lowered))
    for got in (PARSERS["enum"](arr)[0], PARSERS["enum"](old)[0]):
        assert pd.Series(got).equals(want) and pd.Series(got).dtype == want.dtype


def test_plain_cents_keeps_a_null_cell_that_holds_bytes_null():
    # pc.if_else(mask, None, arr) keeps the masked cells' bytes behind the null bit:
    # such a cell is null, never an amount (nor an integer, nor a day).
    cells = pa.array(["12,50", "34,00", "56", "7", "2026-03-02", "2026-03-03"])
    mask = pa.array([False, True, False, True, False, True])
    arr = pc.if_else(mask, None, cells).slice(0)
    assert arr.null_count == 3
    cents, ok = plain_cents(arr)
    assert ok.tolist() == [True, False, True, False, False, False]
    assert cents[:3].tolist() == [1250, 0, 5600]
    values, ok = plain_ints(arr)
    assert ok.tolist() == [False, False, True, False, False, False]
    _, ok = plain_dates(arr)
    assert ok.tolist() == [False, False, False, False, True, False]
    sliced = arr.slice(1, 4)
    assert plain_cents(sliced)[1].tolist() == [False, True, False, False]


# -- the plain readings of a carnet's short columns, read together --------------------------

_SAMPLES = Path(__file__).resolve().parent.parent / "sample_carnets"


def _with_cells(raw, cells: list[str], rnd, rows: int, kinds=("int", "amount")) -> int:
    """Keep the first `rows` rows of each table of `raw` and put cells drawn
    from `cells` in every column of `kinds`; how many columns."""
    import ecarte_schemas

    changed = 0
    for name, rt in raw.tables.items():
        schema = ecarte_schemas.MODELS.get(name)
        if schema is None:
            continue
        rt.data = rt.data.slice(0, rows) if isinstance(rt.data, pa.Table) else rt.data.iloc[:rows].copy()
        for field_name, column in schema.columns.items():
            meta = column.metadata or {}
            source = meta.get("source") or field_name
            if meta["kind"] not in kinds or source not in rt.columns:
                continue
            new = [rnd.choice(cells) for _ in range(rt.num_rows)]
            if isinstance(rt.data, pa.Table):
                at = rt.data.column_names.index(source)
                rt.data = rt.data.set_column(at, source, pa.array(new, pa.string()))
            else:
                rt.data[source] = new
            changed += 1
    return changed


@pytest.mark.slow
@pytest.mark.parametrize("sample", ["compliant/deauville-table1", "compliant/cabourg-table8-chouette.xlsx"])
@settings(max_examples=6, deadline=None)   # each example is three normalises through pandera (~2 s)
@given(cells=st.lists(_NUMBER_CELL.filter(lambda c: "\n" not in c and "\r" not in c), min_size=1, max_size=12),
       texts=st.lists(_TEXT_CELL, min_size=1, max_size=8), seed=st.integers(0, 2**32))
def test_a_carnet_reads_the_same_with_its_short_columns_read_together_or_each_alone(sample, cells, texts, seed):
    """Every integer, amount, text and enumeration column of a carnet, its
    cells of every class, gives the same frames, the same EC00 problems and
    the same kept arrays whether its short columns are read in one call per
    kind, each on its own, or some together and the longer ones alone (tables
    cut to 30 rows: a column of bad cells costs its EC00-02 problems)."""
    import auditor.normalise as normalise_module
    from auditor.read import read_carnet

    readings = {}
    for together in (0, 20, normalise_module.PLAIN_TOGETHER_ROWS):
        raw = read_carnet(_SAMPLES / sample)
        assert _with_cells(raw, cells, random.Random(seed), 30) >= 5
        assert _with_cells(raw, texts, random.Random(seed), 30, ("text", "enum")) >= 5
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(normalise_module, "PLAIN_TOGETHER_ROWS", together)
            readings[together] = normalise_module.normalise(raw)
    alone = readings.pop(0)
    for together, carnet in readings.items():
        assert carnet.problems == alone.problems, together
        assert carnet.tables.keys() == alone.tables.keys()
        for name, t in carnet.tables.items():
            pd.testing.assert_frame_equal(t.df, alone.tables[name].df)
            assert (t.typed is None) == (alone.tables[name].typed is None), (together, name)


def test_the_plain_readings_together_are_taken_from_the_joined_columns(monkeypatch):
    """The test above is not idle: a sample carnet's short columns are read in
    one call per kind, and no column is read alone."""
    import auditor.normalise as normalise_module
    from auditor.read import read_carnet

    calls = []
    for kind, read in list(normalise_module._TOGETHER.items()):
        monkeypatch.setitem(normalise_module._TOGETHER, kind,
                            lambda arr, read=read: calls.append(len(arr)) or read(arr))
    monkeypatch.setitem(normalise_module._PLAIN, "int", lambda arr: pytest.fail("an int column read alone"))
    monkeypatch.setitem(normalise_module._PLAIN, "amount", lambda arr: pytest.fail("an amount column read alone"))
    trimmed = normalise_module._trimmed
    monkeypatch.setattr(normalise_module, "_trimmed", lambda arr: calls.append(("trimmed", len(arr))) or trimmed(arr))
    normalise_module.normalise(read_carnet(_SAMPLES / "compliant/deauville-table1"))
    # One call per kind (int, amount, trim), the last trimming the text columns joined: none trimmed alone.
    assert len(calls) == 4 and min(n for n in calls if isinstance(n, int)) > 20, calls
    assert calls[-1] == ("trimmed", calls[-2])
