"""The column parsers agree cell by cell with a plain Python reading of the
format, whichever path (fast cast or regex) a cell takes."""

from __future__ import annotations

import re

import pandas as pd
from hypothesis import given, strategies as st

from auditor.money import AmountError, parse_cents, parse_cents_series
from auditor.normalise import parse_int

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


@given(st.lists(_AMOUNT_CELL, max_size=30))
def test_amounts_equal_the_scalar_parse(texts):
    _agrees(parse_cents_series, parse_cents, texts)


@given(st.lists(_INT_CELL, max_size=30))
def test_ints_equal_the_scalar_reading(texts):
    _agrees(parse_int, _scalar_int, texts)


def test_parse_int_examples():
    values, bad = parse_int(pd.Series(["12", " 7 ", "+3", "-4", "", None, "0x10", "1e3", "١٢", "1234567890123456"]))
    assert values.tolist()[:4] == [12, 7, 3, -4]
    assert bad.tolist() == [False] * 6 + [True] * 4
