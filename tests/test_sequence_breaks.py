"""sequence_breaks against a plain Python reading of "1, 2, 3 … in row order"."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from auditor.checks._util import sequence_breaks


def naive(rows: list[tuple[int, int, int]]) -> list[tuple]:
    """rows: (group, number, source row) in row order → sorted breaks."""
    out = []
    seen: dict[int, set] = {}
    high: dict[int, int] = {}
    first_row: dict[tuple[int, int], int] = {}
    for grp, n, row in rows:
        s = seen.setdefault(grp, set())
        if n in s:
            out.append((row, "duplicate", grp, n, n, n))
        else:
            if grp in high and n < high[grp]:
                out.append((row, "order", grp, n, n, n))
            s.add(n)
            first_row[(grp, n)] = row
        high[grp] = max(high.get(grp, n), n)
    for grp, s in seen.items():
        numbers = sorted(s)
        if numbers[0] != 1:
            out.append((first_row[(grp, numbers[0])], "start", grp, 1, numbers[0] - 1, numbers[0]))
        for a, b in zip(numbers, numbers[1:]):
            if b - a > 1:
                out.append((first_row[(grp, b)], "gap", grp, a + 1, b - 1, b))
    return sorted(out, key=lambda t: (t[0], t[1]))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 3), st.integers(-2, 7)), max_size=40),
       st.sampled_from([0, 2**40]))
def test_sequence_breaks_match_the_naive_reading(pairs, shift):
    # `shift` pushes group keys past the packed range, so the ranked codes are tested too.
    rows = [(grp + shift, n, i + 2) for i, (grp, n) in enumerate(pairs)]
    df = pd.DataFrame({"seance": pd.array([r[0] for r in rows], dtype="Int64"),
                       "coup": pd.array([r[0] % 2 for r in rows], dtype="Int64"),
                       "rang": pd.array([r[1] for r in rows], dtype="Int64"),
                       "_row": [r[2] for r in rows]})
    got = sequence_breaks(df, ["seance", "coup"], "rang")
    want = naive([((g, g % 2), n, row) for g, n, row in rows])
    have = [(int(r["_row"]), r["kind"], (int(r["seance"]), int(r["coup"])), int(r["first"]), int(r["last"]),
             int(r["found"])) for _, r in got.iterrows()]
    assert have == want


def test_single_key_and_missing_values_are_skipped():
    df = pd.DataFrame({"seance": pd.array([1, 1, 1, None, 2], dtype="Int64"),
                       "fiche": pd.array([1, 3, 3, 5, 2], dtype="Int64"), "_row": [2, 3, 4, 5, 6]})
    got = sequence_breaks(df, ["seance"], "fiche")
    assert list(zip(got["_row"], got["kind"], got["first"], got["last"])) == [
        (3, "gap", 2, 2), (4, "duplicate", 3, 3), (6, "start", 1, 1)]
