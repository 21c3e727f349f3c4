"""The array helpers the ticket rules, EC00 and the report share
(auditor/arrays.py, auditor/frames.py, intervals.merge_grouped): each branch gives
what the frame-based way it replaced gives."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from auditor.arrays import NA_INT, Columns
from auditor.checks._util import records
from auditor.frames import find, pair_codes
from auditor.tickets.intervals import merge_grouped


@pytest.mark.parametrize("low, high", [(0, 50), (-5, 5), (2**31 - 3, 2**31 + 3)])
def test_pair_codes_order_and_equality_like_tuples(low, high):
    # Small non-negative pairs are packed, others ranked: both keep tuple order and equality.
    rng = np.random.default_rng(low & 0xFFFF)
    a1, b1, a2, b2 = (rng.integers(low, high, 40) for _ in range(4))
    c1, c2 = pair_codes((a1, b1), (a2, b2))
    pairs = list(zip(a1.tolist(), b1.tolist())) + list(zip(a2.tolist(), b2.tolist()))
    codes = np.r_[c1, c2].tolist()
    for i in range(len(pairs)):
        for j in range(len(pairs)):
            assert (codes[i] == codes[j]) == (pairs[i] == pairs[j])
            assert (codes[i] < codes[j]) == (pairs[i] < pairs[j])


def test_pair_codes_empty_and_find():
    assert [len(c) for c in pair_codes((np.zeros(0, np.int64), np.zeros(0, np.int64)))] == [0]
    table = np.array([2, 5, 9])
    assert find(table, np.array([5, 1, 9, 10])).tolist() == [1, -1, 2, -1]
    assert find(table[:0], np.array([5])).tolist() == [-1]


def test_columns_records_like_frame_records():
    cols = {"seance": np.array([1, None, 3], dtype=object), "n": np.array([4, 5, 6]),
            "ok": np.array([True, False, True]), "kind": np.array(["gap", "one", "gap"])}
    assert list(Columns(cols).records()) == list(records(pd.DataFrame(cols)))
    taken = Columns(cols).take(np.array([2, 0]))
    assert len(taken) == 2 and taken["n"].tolist() == [6, 4]
    assert list(Columns(cols).take(np.zeros(3, bool)).records()) == []


def _merge_grouped_reference(group, s, e):
    d = pd.DataFrame({"g": group, "s": s, "e": e}).sort_values(["g", "s", "e"], kind="stable")
    out = []
    for g, part in d.groupby("g", sort=True):
        cur = None
        for start, end in zip(part["s"], part["e"]):
            if cur is not None and start <= cur[1] + 1:
                cur[1] = max(cur[1], end)
            else:
                if cur is not None:
                    out.append((g, *cur))
                cur = [start, end]
        out.append((g, *cur))
    out.sort(key=lambda x: (x[1], x[0]))
    return out


def test_merge_grouped_like_a_loop_per_group():
    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(1, 25))
        g = rng.integers(-2, 4, n).astype(np.int64)
        g[rng.random(n) < 0.2] = NA_INT
        s = rng.integers(0, 80, n).astype(np.int64)
        e = s + rng.integers(0, 12, n)
        got = list(zip(*(x.tolist() for x in merge_grouped(g, s, e))))
        assert got == _merge_grouped_reference(g, s, e)


@pytest.mark.parametrize("sort_codes, sort_among", [(True, True), (True, False), (False, True), (False, False)])
def test_ec00_absent_like_isin(sort_codes, sort_among):
    from auditor.checks.ec00_format import _absent

    rng = np.random.default_rng(5)
    for _ in range(50):
        codes, among = rng.integers(0, 30, int(rng.integers(0, 40))), rng.integers(0, 30, int(rng.integers(0, 20)))
        codes = np.sort(codes) if sort_codes else codes
        among = np.sort(among) if sort_among else among
        assert _absent(codes, among).tolist() == (~np.isin(codes, among)).tolist()


@pytest.mark.parametrize("seed", range(40))
def test_running_reach_grouped_like_pandas_cummax(seed):
    """The checks over a batch run without pandas: the running reach of each
    group (contiguous, as the cross-carnet check numbers them) is pandas's
    groupby cummax, with every class of value (negative, huge, ties, empty)."""
    from auditor.tickets.intervals import running_reach

    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    scale = [3, 10**6, 2**61][seed % 3]
    ends = rng.integers(-scale, scale, n, dtype=np.int64)
    groups = np.cumsum(rng.random(n) < 0.3).astype(np.int64)
    pos = np.arange(n)
    want = pd.Series(ends).groupby(groups, sort=False).cummax().to_numpy()
    want_by = pd.Series(np.where(ends == want, pos, -1)).groupby(groups, sort=False).cummax().to_numpy()
    reach, reacher = running_reach(ends, groups)
    assert reach.tolist() == want.tolist() and reacher.tolist() == want_by.tolist()
