"""The numpy fast paths of the rules against plain readings, on both of their
branches (the packed or dense one, and the fallback for values that do not
fit): running maxima, pair codes, first stake of each (séance, fiche), play order."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from auditor.checks.art63 import _first_of_pairs, _in_play_order
from auditor.frames import pair_codes, running_max, shared_codes

SCALES = st.sampled_from([1, 2**40, 2**58])


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(-5, 50)), min_size=1, max_size=40), SCALES)
def test_running_max_is_a_cummax_per_segment(cells, scale):
    starts = np.array([True] + [s for s, _ in cells[1:]])
    values = np.array([v for _, v in cells], dtype=np.int64) * scale
    want = pd.Series(values).groupby(np.cumsum(starts)).cummax().to_numpy()
    assert (running_max(values, starts) == want).all()


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 4), st.integers(-3, 4)), max_size=30),
       st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), max_size=30))
def test_pair_codes_are_shared_codes(left, right):
    frames = [pd.DataFrame(rows or [(0, 0)][:0], columns=["seance", "coup"]).astype("int64") for rows in (left, right)]
    got = pair_codes(*((f["seance"].to_numpy(), f["coup"].to_numpy()) for f in frames))
    want = shared_codes(*frames)
    joint_got, joint_want = np.concatenate(got), np.concatenate(want)
    # Same equalities and the same order as the pairs themselves.
    assert (np.argsort(joint_got, kind="stable") == np.argsort(joint_want, kind="stable")).all()
    assert ((joint_got[:, None] == joint_got[None, :]) == (joint_want[:, None] == joint_want[None, :])).all()


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(-2, 9)), max_size=40), SCALES)
def test_first_of_pairs_in_order_of_first_appearance(pairs, scale):
    seance = np.array([s for s, _ in pairs], dtype=np.int64)
    fiche = np.array([f for _, f in pairs], dtype=np.int64) * scale
    first: dict = {}
    count: dict = {}
    for i, key in enumerate(zip(seance.tolist(), fiche.tolist())):
        first.setdefault(key, i)
        count[key] = count.get(key, 0) + 1
    got_first, got_count = _first_of_pairs(seance, fiche)
    assert got_first.tolist() == list(first.values())
    assert got_count.tolist() == list(count.values())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3), st.integers(0, 10**6)), min_size=0, max_size=30),
       SCALES, st.randoms())
def test_play_order_sorts_like_the_four_keys(stakes, scale, rnd):
    rows = list(range(len(stakes)))
    rnd.shuffle(rows)
    coup = np.array([c for c, _, _ in stakes], dtype=np.int64)
    rang = np.array([r for _, r, _ in stakes], dtype=np.int64) * scale
    row = np.array(rows, dtype=np.int64) * 3 + 2
    keys = SimpleNamespace(coup_rank=coup, rang=rang)
    every = np.arange(len(stakes))
    assert _in_play_order(keys, every, row).tolist() == np.lexsort((row, rang, coup)).tolist()
    some = every[::2]      # a selection of the stakes (those of known coups)
    want = some[np.lexsort((row[some], rang[some], coup[some]))]
    assert _in_play_order(keys, some, row).tolist() == want.tolist()
