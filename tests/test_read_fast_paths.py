"""The CSV reader's shortcuts give what the full reading gives, over classes
of input: a header matched once per batch (memoised by its texts) against
matching it afresh; the header found at once in the first record against the
search among the first twenty; the blank-row test skipped when every first
cell starts with a printable character; the trailing totals records ruled out
from the last line against parsing the whole tail with the csv module."""

from __future__ import annotations

import csv
import io

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings, strategies as st

from auditor.read import columns as columns_module
from auditor.read.columns import ALIASES, ColumnMap, find_header, is_totals_label, match_header
from auditor.read.csv_folder import (_header_offset, _last_record_not_totals, _nonempty_rows, text_lines)

_TABLES = sorted(ALIASES) + ["autre"]
# Header cells of every class: the carnet's own names and variants (accents,
# case, units), near misses, totals labels, blanks, numbers, and None.
_NAMES = sorted({v for table in ALIASES.values() for variants in table.values() for v in variants}
                | {c for table in ALIASES.values() for c in table})
_CELL = st.one_of(
    st.sampled_from(_NAMES),
    st.sampled_from(_NAMES).map(str.upper),
    st.sampled_from(_NAMES).map(lambda s: f" {s} (€) "),
    st.sampled_from(["", " ", "Total", "TOTAUX :", "Sous-total séance 2", "N°", "Montant (cts)", "x", "Côté "]),
    st.text(alphabet="aeéÉ nN°º_-()€;,\u00a0", max_size=12),
    st.integers(0, 20), st.floats(0, 3, allow_nan=False), st.none(), st.booleans(),
)
_MAPPING = ColumnMap("m.toml", "0" * 64, (("mises", (("Somme versée", "montant"), ("Côté", "cote"))),))


def _as_dict(m) -> dict:
    return {k: getattr(m, k) for k in ("keep", "how", "ambiguous", "ambiguous_how", "ignored", "extra",
                                       "required_found", "found")}


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(_TABLES), st.lists(_CELL, max_size=10), st.sampled_from([None, _MAPPING]))
def test_a_header_matched_again_is_matched_as_the_first_time(table, header, mapping):
    columns_module._MATCHES.clear()
    fresh = columns_module._match_header(table, ["" if c is None else str(c) for c in header], mapping)
    first = match_header(table, header, mapping)
    first.keep["changed"] = 99          # a caller's change stays its own
    first.ignored.append(99)
    for m in first.ambiguous.values():
        m.append(99)
    again = match_header(table, list(header), mapping)
    assert _as_dict(again) == _as_dict(fresh)
    # The texts are the key: a cell 1 and a cell "1" are one header, 1 and 1.0 two.
    texts = match_header(table, ["" if c is None else str(c) for c in header], mapping)
    assert _as_dict(texts) == _as_dict(fresh)


def _reference_header_offset(table, text, delim, mapping):
    """_header_offset as it was: the first twenty records, then find_header."""
    try:
        reader = csv.reader(text_lines(text), delimiter=delim)
        records = []
        for record in reader:
            records.append(record)
            if len(records) >= 20:
                break
    except csv.Error:
        return 0, 0, []
    found = find_header(table, records, mapping)
    if found is None or found[0] == 0:
        return 0, 0, []
    skip = found[0]
    reader = csv.reader(text_lines(text), delimiter=delim)
    for _ in range(skip):
        next(reader)
    offset = 0
    for _, line in zip(range(reader.line_num), text_lines(text)):
        offset += len(line)
    title = [i + 1 for i, r in enumerate(records[:skip]) if any(v.strip() for v in r)]
    return skip, offset, title


_RECORD = st.lists(st.one_of(_CELL.map(lambda c: "" if c is None else str(c)).map(lambda s: s.replace(";", "")),
                             st.sampled_from(['"a;b"', '"x\ny"', '"', 'a"b', '""'])), max_size=9)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(st.sampled_from(_TABLES), st.lists(_RECORD, max_size=6), st.sampled_from(["\n", "\r\n", "\r"]),
       st.sampled_from([None, _MAPPING]), st.booleans())
def test_the_header_is_found_where_the_search_among_twenty_records_finds_it(table, records, end, mapping, full):
    if full and table in ALIASES:   # a complete header somewhere (first, or below a title)
        records.insert(len(records) // 2, list(ALIASES[table]))
    text = end.join(";".join(r) for r in records) + end
    assert _header_offset(table, text, ";", mapping) == _reference_header_offset(table, text, ";", mapping)


def _reference_nonempty(tbl: pa.Table):
    first = pc.utf8_trim_whitespace(tbl.column(0))
    candidates = pc.indices_nonzero(pc.equal(first, ""))
    if len(candidates) == 0:
        return None
    blank = np.ones(len(candidates), dtype=bool)
    for column in tbl.columns[1:]:
        cells = pc.utf8_trim_whitespace(pc.take(column, candidates))
        blank &= pc.equal(cells, "").to_numpy(zero_copy_only=False)
    keep = np.ones(tbl.num_rows, dtype=bool)
    keep[candidates.to_numpy()[blank]] = False
    return keep


_TEXT = st.one_of(st.sampled_from(["", " ", "\t", "\u00a0", "\u3000", "1", " 1", "é", "~", "\x7f", "a b"]),
                  st.text(max_size=4))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_TEXT, _TEXT), max_size=12), st.integers(1, 3))
def test_blank_rows_are_those_the_trimmed_cells_show(rows, chunks):
    firsts = [a for a, _ in rows]
    cut = len(firsts) // chunks
    pieces = [firsts[:cut], firsts[cut:]] if chunks > 1 else [firsts]
    tbl = pa.table({"c0": pa.chunked_array([pa.array(p, pa.string()) for p in pieces], pa.string()),
                    "c1": pa.array([b for _, b in rows], pa.string())})
    got = _nonempty_rows(tbl)
    want = _reference_nonempty(tbl)
    assert (got is None) == (want is None)
    if got is not None:
        assert got.to_numpy(zero_copy_only=False).tolist() == want.tolist()


def _reference_last_not_totals(tail: str, delim: str) -> bool:
    records = [r for r in csv.reader(io.StringIO(tail, newline=""), delimiter=delim) if "".join(r).strip()]
    if not records:
        return False
    return not is_totals_label(next((v for v in records[-1] if v.strip()), ""))


_TAIL_CELL = st.one_of(st.sampled_from(["", " ", "1", "12,50", "Total", " TOTAUX :", "Sous-total séance 2", "total",
                                        "Totalement", "\u00a0", "\t", "x", "Tötal", "ＴＯＴＡＬ"]),
                       st.text(alphabet="Tta ;\r\n\"\x00", max_size=5))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(_TAIL_CELL, max_size=4), max_size=6), st.sampled_from(["\n", "\r\n", "\r"]),
       st.sampled_from([";", ","]), st.booleans())
def test_the_last_record_is_ruled_out_only_when_the_csv_module_rules_it_out(records, end, delim, trailing):
    tail = end.join(delim.join(r) for r in records) + (end if trailing else "")
    if _last_record_not_totals(tail, delim):
        assert _reference_last_not_totals(tail, delim)
    elif '"' not in tail and "\0" not in tail:
        assert not _reference_last_not_totals(tail, delim)


_SLASH_CELL = st.one_of(
    st.sampled_from(["02/03/2026", "13/02/2026", "02/13/2026", "13/13/2026", "2/13/2026", "13/2/2026", " 02/13/2026",
                     "02/13/2026 ", "2026-03-02", "00/00/0000", "٠٢/١٣/٢٠٢٦", "02/13/26", "12/12/2026", "99/99/9999",
                     "02\\13\\2026", "", " ", "\u00a013/02/2026"]),
    st.from_regex(r"\A[0-9]{1,2}/[0-9]{1,2}/[0-9]{4}\Z"),
    st.from_regex(r"\A\s?[0-9]{2}[/-][0-9]{2}[/-][0-9]{2,4}\s?\Z"),
    st.text(alphabet="0123456789/ a", min_size=8, max_size=11),
)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(_SLASH_CELL, st.none()), max_size=30), st.booleans())
def test_the_order_of_slash_dates_is_what_the_regex_reads(cells, sliced):
    from auditor.normalise import _regex_slash_orders, _slash_orders

    arr = pa.array(["x"] + cells, pa.string())
    arr = arr.slice(1) if sliced else pa.array(cells, pa.string())
    day, month = _slash_orders(arr)
    want_day, want_month = _regex_slash_orders(arr)
    assert day.tolist() == want_day.tolist() and month.tolist() == want_month.tolist()


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(_TABLES), st.lists(_CELL.map(lambda c: "" if c is None else str(c)), max_size=10),
       st.sampled_from([None, _MAPPING]), st.booleans())
def test_a_header_kept_again_is_kept_as_the_first_time(table, header, mapping, repeat):
    from auditor.read import csv_folder

    csv_folder._KEEPS.clear()
    want_problems: list = []
    want = csv_folder._header_keep_made(table, list(header), mapping, want_problems)
    if repeat:   # the cache filled by another carnet's identical header first
        csv_folder._header_keep(table, list(header), mapping, [])[0]["changed"] = 99
    got_problems: list = []
    got = csv_folder._header_keep(table, list(header), mapping, got_problems)
    assert got == want
    assert [(p.code, p.kind, p.table, p.row, p.column, p.params) for p in got_problems] == \
        [(p.code, p.kind, p.table, p.row, p.column, p.params) for p in want_problems]


_DAY_CELL = st.one_of(_SLASH_CELL, st.sampled_from(["2026-02-29", "2024-02-29", "0000-01-01", "2026-13-01"]))
_FIGURE_CELL = st.one_of(st.sampled_from(["1", "07", "12,50", "7.5", "-1", "+2", " 3", "", "x", "1 234,50",
                                          "9999999999999999", "0,001"]),
                         st.text(alphabet="0123456789,.- ", max_size=6))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_DAY_CELL, _FIGURE_CELL), min_size=1, max_size=6), st.lists(st.integers(0, 5), max_size=80),
       st.booleans(), st.booleans(), st.booleans())
def test_a_reading_of_the_distinct_texts_spread_back_is_the_reading_of_every_cell(pool, picks, month_first,
                                                                                 with_null, sliced):
    """Short columns and columns that repeat a few texts (the shortcut's
    cases), with a null or sliced, and readings cached by an earlier column."""
    from auditor.money import plain_cents
    from auditor.normalise import _READ_ONCE, _slash_orders, by_distinct, plain_dates, plain_ints

    cells = [pool[i % len(pool)] for i in picks] + ([None] if with_null else [])
    arr = pa.array(["x"] + cells, pa.string()).slice(1) if sliced else pa.array(cells, pa.string())
    for read, args, repeats in ((plain_dates, (month_first,), True), (_slash_orders, (), True),
                                (plain_ints, (), False), (plain_cents, (), False)):
        if month_first:
            _READ_ONCE.clear()
        got, want = by_distinct(read, arr, *args, repeats=repeats), read(arr, *args)
        assert [g.dtype for g in got] == [w.dtype for w in want]
        assert all(g.tolist() == w.tolist() for g, w in zip(got, want))
        assert all(g.flags.writeable for g in got)


_ERROR_CELL = st.one_of(st.sampled_from(["#N/A", " #DIV/0! ", "#VALEUR!", "Err:502", "err:502", "Err:5021", "12:30", "#",
                                         "a#b", "Err:", "1", "", "#NOM?", "#n/a", "x Err:502"]),
                        st.text(alphabet="#Err:0N/A!? ", max_size=8))


def _reference_error_values(chunks):
    """Which cells ERROR_VALUE reads as an error value, every cell read: what
    error_values' shortcuts (a column without `#` nor `err:` in any case is
    not read) must answer."""
    from auditor.money import string_array
    from auditor.normalise import ERROR_VALUE

    found = [pc.fill_null(pc.match_substring_regex(pc.utf8_trim_whitespace(string_array(arr)), ERROR_VALUE), False)
             .to_numpy(zero_copy_only=False) for arr in chunks]
    mask = found[0] if len(found) == 1 else np.concatenate(found) if found else np.zeros(0, dtype=bool)
    return mask if mask.any() else None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.one_of(_ERROR_CELL, st.none()), max_size=6), min_size=1, max_size=3))
def test_error_values_are_the_cells_the_pattern_reads(chunks):
    from auditor.normalise import error_values

    arrays = [pa.array(c, pa.string()) for c in chunks]
    want, got = _reference_error_values(arrays), error_values(arrays)
    assert (got is None) == (want is None)
    if got is not None:
        assert got.tolist() == want.tolist()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_ERROR_CELL.filter(lambda c: ";" not in c and "\n" not in c and "\r" not in c),
                         min_size=2, max_size=2), min_size=1, max_size=6))
def test_a_csv_text_said_free_of_error_values_holds_none(rows):
    """A table the CSV reader says holds no error value (`no_error_values`:
    normalise then looks at none of its columns) has no cell the pattern
    reads as one; on the others normalise looks, and finds what the pattern does."""
    from auditor.read.csv_folder import parse_csv_text

    text = "seance;coup\n" + "\n".join(";".join(r) for r in rows) + "\n"
    raw, _ = parse_csv_text("coups", text)
    want = _reference_error_values([pa.array([c for r in rows for c in r], pa.string())])
    if raw.no_error_values:
        assert want is None
    assert raw.no_error_values == all(("#" not in c and "err:" not in c.lower()) for r in rows for c in r)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="eErR:#;a\u0130\u212a", max_size=60), st.booleans())
def test_the_error_value_look_finds_what_the_pattern_does(text, many_colons):
    """`may_hold_error_values` answers as `#|[Ee][Rr][Rr]:` would, with few
    colons (each looked at) and with many (the pattern), a mark at the very
    start or end, letters whose lower case is not ASCII (İ) included."""
    import re

    from auditor.read import csv_folder

    if many_colons:
        text += ":" * (csv_folder.FEW_COLONS + 1)
    assert csv_folder.may_hold_error_values(text) == (re.search(r"#|[Ee][Rr][Rr]:", text) is not None)


_LINE_TEXT = st.text(alphabet="ab;,é \t\r\n\x0b\x1c\u2028", max_size=80)


@settings(max_examples=500, deadline=None)
@given(st.one_of(_LINE_TEXT, st.lists(st.lists(st.sampled_from(["", "1", " ", "a b", "é", "12,50"]), min_size=1,
                                               max_size=4).map(";".join), max_size=8)
                 .map(lambda lines: "h;h;h\n" + "\n".join(lines))), st.integers(2, 4), st.sampled_from([";", ","]))
def test_a_short_text_is_read_as_arrow_reads_it(text, width, delim):
    from auditor.read.csv_folder import _arrow_table, _small_table

    small, arrow = _small_table(text, delim, width), _arrow_table(text, delim, width)
    assert (small is None) == (arrow is None)
    if small is not None:
        assert small.equals(arrow) and small.schema == arrow.schema
        assert [c.num_chunks for c in small.columns] == [c.num_chunks for c in arrow.columns]


def test_a_text_with_quotes_or_past_the_size_is_left_to_arrow():
    from auditor.read.csv_folder import _SMALL_TEXT, _small_table

    assert _small_table('h;h\n"a";b\n', ";", 2) is None
    assert _small_table("h;h\n" + "a;b\n" * (_SMALL_TEXT // 4), ";", 2) is None
    assert _small_table("h;h\na;b\n", ";", 2).num_rows == 1


def test_by_distinct_when_its_cache_fills_mid_column(monkeypatch):
    """A column with texts already read and new ones, met when the cache is
    full: the cache is emptied to make room, and the texts read before must
    be read again, not looked for in the emptied cache (a KeyError: a worker
    that had audited enough carnets failed the next one's reading)."""
    from auditor import normalise
    from auditor.normalise import _READ_ONCE, by_distinct, plain_ints

    monkeypatch.setattr(normalise, "_READ_ONCE_MAX", 4)
    _READ_ONCE.clear()
    try:
        by_distinct(plain_ints, pa.array(["1", "2", "3"], pa.string()), repeats=False)
        arr = pa.array(["1", "4", "5", "2"], pa.string())   # 3 cached + 2 new > 4: emptied
        values, known = by_distinct(plain_ints, arr, repeats=False)
        assert values.tolist() == [1, 4, 5, 2] and known.all()
        assert len(_READ_ONCE) <= 4
    finally:
        _READ_ONCE.clear()
