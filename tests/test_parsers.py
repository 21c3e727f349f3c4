"""The column parsers agree cell by cell with a plain Python reading of the
format, whichever path (fast cast or regex) a cell takes."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from auditor.money import AmountError, parse_cents, parse_cents_series
from auditor.normalise import parse_date, parse_int

_INT = re.compile(r"[+-]?[0-9]{1,15}")


def _scalar_int(text: str) -> int:
    if not _INT.fullmatch(text):
        raise ValueError(text)
    return int(text)


def _agrees(series_parser, scalar, texts) -> None:
    """series_parser(texts) gives, per cell, what `scalar` says of the trimmed
    text: its value, <NA> and not bad when empty, <NA> and bad when it raises."""
    values, bad = series_parser(pd.Series(texts, dtype="object"))
    assert str(values.dtype) == "Int64"
    for text, v, b in zip(texts, values.tolist(), bad.tolist()):
        if text is None or text.strip() == "":
            want = None
        else:
            try:
                want = scalar(text.strip())
            except (AmountError, ValueError):
                want = "bad"
        assert ("bad" if b else (None if v is pd.NA else v)) == want, repr(text)


# Cells close to the plain forms the fast paths take (`12,50`, `12`), and the
# ones they must hand to the full grammar: spaces, signs, euro, other digits…
_AMOUNT_CELL = st.one_of(
    st.text(alphabet="0123456789,.- +€\u00a0\u202fx\u0661", max_size=18),
    st.from_regex(r"\A[0-9]{0,15}([.,][0-9]{0,3})?\Z"),
    st.none(),
)
_INT_CELL = st.one_of(
    st.text(alphabet="0123456789 +-x\u00a0\u0661\t", max_size=18),
    st.from_regex(r"\A[0-9]{1,17}\Z"),
    st.none(),
)


@pytest.mark.slow
@given(st.lists(_AMOUNT_CELL, max_size=30))
def test_amounts_equal_the_scalar_parse(texts):
    _agrees(parse_cents_series, parse_cents, texts)


@pytest.mark.slow
@given(st.lists(_INT_CELL, max_size=30))
def test_ints_equal_the_scalar_reading(texts):
    _agrees(parse_int, _scalar_int, texts)


def test_parse_int_examples():
    values, bad = parse_int(pd.Series(["12", " 7 ", "+3", "-4", "", None, "0x10", "1e3", "١٢", "1234567890123456"]))
    assert values.tolist()[:4] == [12, 7, 3, -4]
    assert bad.tolist() == [False] * 6 + [True] * 4


def _scalar_date(text: str):
    """A date as the format writes it: `YYYY-MM-DD` or `D/M/YYYY`, ASCII digits,
    a real calendar day of a year from 1 on."""
    import datetime as dt

    iso = re.fullmatch(r"([0-9]{4})-([0-9]{2})-([0-9]{2})", text)
    fr = re.fullmatch(r"([0-9]{1,2})/([0-9]{1,2})/([0-9]{4})", text)
    if iso:
        y, m, d = map(int, iso.groups())
    elif fr:
        d, m, y = map(int, fr.groups())
    else:
        raise ValueError(text)
    return pd.Timestamp(dt.date(y, m, d))   # raises ValueError for 31/02 or year 0


_DATE_CELL = st.one_of(
    st.from_regex(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}\Z"),
    st.from_regex(r"\A[0-9]{1,3}/[0-9]{1,3}/[0-9]{3,5}\Z"),
    st.builds(lambda d: d.strftime(f"%-d/%-m/{d.year:04d}"), st.dates()),
    st.builds(lambda d: f"{d.year:04d}-{d.month:02d}-{d.day:02d}", st.dates()),
    st.text(alphabet="0123456789-/ x\u0663", max_size=12),
    st.none(),
)


@pytest.mark.slow
@settings(deadline=None)
@given(st.lists(_DATE_CELL, max_size=30))
def test_dates_equal_the_scalar_reading(texts):
    values, bad = parse_date(pd.Series(texts, dtype="object"))
    assert str(values.dtype) == "datetime64[us]"
    for text, v, b in zip(texts, values.tolist(), bad.tolist()):
        if text is None or text.strip() == "":
            want = None
        else:
            try:
                want = _scalar_date(text.strip())
            except ValueError:
                want = "bad"
        assert ("bad" if b else (None if pd.isna(v) else v)) == want, repr(text)


def test_date_examples():
    values, bad = parse_date(pd.Series(["31/02/2026", "29/02/2024", "2/3/2026", "0000-01-01", "٣/3/2026", ""]))
    assert bad.tolist() == [True, False, False, True, True, False]
    assert [None if pd.isna(v) else v.date().isoformat() for v in values] == \
        [None, "2024-02-29", "2026-03-02", None, None, None]
