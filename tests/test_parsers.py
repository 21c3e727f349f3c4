"""The column parsers of normalisation agree cell by cell with a plain
Python reading of the format, whichever path (fast cast or regex) a cell takes."""

from __future__ import annotations

import re

import pandas as pd
from hypothesis import given, strategies as st

from auditor.normalise import parse_int

_INT = re.compile(r"[+-]?[0-9]{1,15}")


def _scalar_int(text):
    if text is None or text.strip() == "":
        return None
    t = text.strip()
    return int(t) if _INT.fullmatch(t) else "bad"


_CELL = st.one_of(
    st.text(alphabet="0123456789 +-x\u00a0\u0661\t", max_size=18),
    st.from_regex(r"\A[0-9]{1,17}\Z"),
    st.none(),
)


@given(st.lists(_CELL, max_size=30))
def test_parse_int_equals_scalar_reading(texts):
    values, bad = parse_int(pd.Series(texts, dtype="object"))
    assert str(values.dtype) == "Int64"
    for text, v, b in zip(texts, values.tolist(), bad.tolist()):
        got = "bad" if b else (None if v is pd.NA else v)
        assert got == _scalar_int(text), repr(text)


def test_parse_int_examples():
    values, bad = parse_int(pd.Series(["12", " 7 ", "+3", "-4", "", None, "0x10", "1e3", "١٢", "1234567890123456"]))
    assert values.tolist()[:4] == [12, 7, 3, -4]
    assert bad.tolist() == [False] * 6 + [True] * 4
