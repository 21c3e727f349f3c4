"""Money: text → integer cents, the levy and its rounding edges, display."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, strategies as st

from auditor.money import AmountError, Levy, accepted, format_cents, parse_cents, parse_cents_series


@pytest.mark.parametrize("text, cents", [
    ("12.5", 1250), ("12,50", 1250), ("12,50 €", 1250), ("12,50€", 1250), ("1 234,50", 123450),
    ("1\u00a0234,50 €", 123450), ("1\u202f234,50", 123450), ("0", 0), ("0,1", 10), ("-5", -500),
    ("+3,20", 320), ("1 000 000", 100000000), (" 7 ", 700), ("0.3", 30),
])
def test_parse_accepts_the_formats_clerks_write(text, cents):
    assert parse_cents(text) == cents


@pytest.mark.parametrize("text", ["1.250", "1,250", "12.555", "abc", "", "1e5", "12,", ",50", "1 23,00",
                                  "12,5,0", "€", "1234567890123456"])
def test_parse_refuses_what_it_would_have_to_guess(text):
    with pytest.raises(AmountError):
        parse_cents(text)


def test_series_parse_matches_scalar_parse():
    texts = ["12.5", "12,50 €", "1 234,50", "", "1.250", "abc", "-0,10", "0"]
    cents, bad = parse_cents_series(pd.Series(texts, dtype="object"))
    for text, c, b in zip(texts, cents.tolist(), bad.tolist()):
        if text == "":
            assert c is pd.NA and not b
            continue
        try:
            assert c == parse_cents(text) and not b
        except AmountError:
            assert c is pd.NA and b
    assert str(cents.dtype) == "Int64"


@given(st.integers(min_value=-10**11, max_value=10**11))
def test_series_parse_round_trips_any_amount(cents):
    sign = "-" if cents < 0 else ""
    text = f"{sign}{abs(cents) // 100},{abs(cents) % 100:02d}"
    got, bad = parse_cents_series(pd.Series([text]))
    assert got.iloc[0] == cents == parse_cents(text) and not bad.iloc[0]


@pytest.mark.parametrize("mass, levy", [
    (100, 10),    # 5 % of 1,00 € = 0,05 €: a tie, rounded up
    (90, 0),      # 0,045 € → 0
    (10, 0),      # 0,005 € → 0
    (300, 20),    # 0,15 € tie → 0,20 €
    (299, 10), (301, 20), (1000, 50), (0, 0), (123450, 6170),
])
def test_levy_rounds_to_ten_cents_tie_up(mass, levy):
    L = Levy("0.05", 10, "up")
    assert L(mass) == levy
    lo, hi = L.bounds_series(pd.Series([mass]))
    assert lo.iloc[0] == hi.iloc[0] == levy


def test_levy_tie_down_and_either():
    assert Levy("0.05", 10, "down")(100) == 0
    assert Levy("0.05", 10, "either").bounds(100) == (0, 10)
    assert Levy("0.05", 10, "either").bounds(90) == (0, 0)
    lo, hi = Levy("0.05", 10, "either").bounds_series(pd.Series([100, 300, 301]))
    assert lo.tolist() == [0, 10, 20] and hi.tolist() == [10, 20, 20]


@given(st.integers(min_value=0, max_value=10**9), st.sampled_from(["up", "down", "either"]))
def test_vectorised_levy_equals_scalar_levy(mass, tie):
    L = Levy("0.05", 10, tie)
    lo, hi = L.bounds_series(pd.Series([mass]))
    assert (lo.iloc[0], hi.iloc[0]) == L.bounds(mass)


def test_levy_is_integer_arithmetic():
    assert isinstance(Levy("0.05", 10, "up")(10**15 + 100), int)


def test_accepted_needs_the_step_grid():
    rec = pd.Series([0, 10, 5, 20], dtype="Int64")
    lo = pd.Series([0, 0, 0, 0], dtype="Int64")
    hi = pd.Series([10, 10, 10, 10], dtype="Int64")
    assert accepted(rec, lo, hi, 10).tolist() == [True, True, False, False]


def test_unknown_tie_rule_is_refused():
    with pytest.raises(ValueError):
        Levy("0.05", 10, "sideways")


def test_format_cents():
    assert format_cents(123450) == "1\u202f234,50\u00a0€"
    assert format_cents(-5, "en") == "-€0.05"
    assert format_cents(None) == ""


@pytest.mark.parametrize("tie", ["up", "down", "either"])
def test_levy_bounds_array_is_bounds_cell_by_cell(tie):
    """The derived levy reads the bounds of whole columns from `bounds_array`:
    the same integers as `bounds` on each amount, ties and large sums included."""
    L = Levy("0.05", 10, tie)
    amounts = [0, 1, 99, 100, 199, 200, 300, 301, 1_000_000, 2**53 + 300, -100, -300]
    lo, hi = L.bounds_array(np.array(amounts, dtype=np.int64))
    assert [(int(a), int(b)) for a, b in zip(lo, hi)] == [L.bounds(x) for x in amounts]
