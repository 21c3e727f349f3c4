"""The numpy fast paths of the rules against plain readings, on both of their
branches (the packed or dense one, and the fallback for values that do not
fit): running maxima, pair codes, first stake of each (séance, fiche), play order;
the order told by neighbours, the numbering found whole without a group code,
and EC64-05's returns on stakes in rank order and shuffled."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from auditor.checks._util import _numbered_in_order, ordered, sequence_breaks
from auditor.checks.art63 import _first_of_pairs, _in_play_order
from auditor.frames import pair_codes, running_max, shared_codes
from carnet_fixture import audit_case
from test_sequence_breaks import naive

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
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(-2, 9)), max_size=40), SCALES,
       st.sampled_from([0, 2**63 - 20, -2**63 + 5]), st.sampled_from([1, 3, 1 << 16]))
def test_first_of_pairs_in_order_of_first_appearance(pairs, scale, offset, piece):
    # `offset`: fiche numbers at the ends of int64; `piece`: the dense slots taken a few rows
    # at a time (a pair's rows in several pieces) or all at once.
    seance = np.array([s for s, _ in pairs], dtype=np.int64)
    fiche = np.array([f for _, f in pairs], dtype=np.int64) * (1 if offset else scale) + offset
    first: dict = {}
    count: dict = {}
    for i, key in enumerate(zip(seance.tolist(), fiche.tolist())):
        first.setdefault(key, i)
        count[key] = count.get(key, 0) + 1
    got_first, got_count = _first_of_pairs(seance, fiche, piece)
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
    if rnd.random() < 0.5:     # the usual carnet: stakes written in play order (no sort taken)
        order = np.lexsort((np.array(rows, dtype=np.int64), np.array([r for _, r, _ in stakes]),
                            np.array([c for c, _, _ in stakes]))) if stakes else np.zeros(0, dtype=np.int64)
        stakes = [stakes[i] for i in order]
        rows = sorted(rows)
    coup = np.array([c for c, _, _ in stakes], dtype=np.int64)
    rang = np.array([r for _, r, _ in stakes], dtype=np.int64) * scale
    row = np.array(rows, dtype=np.int64) * 3 + 2
    keys = SimpleNamespace(coup_rank=coup, rang=rang)
    every = np.arange(len(stakes))
    assert _in_play_order(keys, every, row).tolist() == np.lexsort((row, rang, coup)).tolist()
    some = every[::2]      # a selection of the stakes (those of known coups)
    want = some[np.lexsort((row[some], rang[some], coup[some]))]
    assert _in_play_order(keys, some, row).tolist() == want.tolist()


KEYS = st.lists(st.tuples(st.integers(0, 2), st.integers(-1, 2), st.integers(0, 3)), max_size=30)


@settings(max_examples=300, deadline=None)
@given(KEYS, st.booleans())
def test_ordered_is_a_sortedness_test(rows, sort):
    # Both classes: rows sorted (ties kept) and rows as drawn (mostly not sorted).
    if sort:
        rows = sorted(rows)
    keys = [np.array([r[k] for r in rows], dtype=np.int64) for k in range(3)]
    for width in (1, 2, 3):
        want = all(tuple(a[:width]) <= tuple(b[:width]) for a, b in zip(rows, rows[1:]))
        assert ordered(*keys[:width]) is want


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 6)), max_size=12),
       st.lists(st.tuples(st.integers(0, 40), st.integers(-1, 6)), max_size=3), st.randoms())
def test_numbered_in_order_is_the_breaks_found(groups, edits, rnd):
    """Carnets numbered 1 … k in order (the fast path's class), and the same
    with a few numbers changed or rows swapped: the fast path answers "no
    break" exactly when the plain reading finds none on sorted keys, and
    sequence_breaks agrees with the plain reading either way."""
    rows = [(s, c, n) for s, c in sorted(set(groups)) for n in range(1, 1 + (s + c) % 4 + 1)]
    for at, change in edits:
        if rows:
            i = at % len(rows)
            if change < 0:
                j = rnd.randrange(len(rows))
                rows[i], rows[j] = rows[j], rows[i]
            else:
                rows[i] = (*rows[i][:2], change)
    if not rows:
        return
    df = pd.DataFrame({"seance": pd.array([r[0] for r in rows], dtype="Int64"),
                       "coup": pd.array([r[1] for r in rows], dtype="Int64"),
                       "rang": pd.array([r[2] for r in rows], dtype="Int64"),
                       "_row": np.arange(len(rows)) + 2})
    want = naive([((s, c), n, i + 2) for i, (s, c, n) in enumerate(rows)])
    got = sequence_breaks(df, ["seance", "coup"], "rang")
    have = [(int(r["_row"]), r["kind"], (int(r["seance"]), int(r["coup"])), int(r["first"]), int(r["last"]),
             int(r["found"])) for _, r in got.iterrows()]
    assert have == want
    cols = [df[k].to_numpy(dtype=np.int64) for k in ("seance", "coup", "rang")]
    sorted_keys = all(a[:2] <= b[:2] for a, b in zip(rows, rows[1:]))
    if sorted_keys:
        assert _numbered_in_order(cols[:2], cols[2]) is (want == [])
    elif _numbered_in_order(cols[:2], cols[2]):
        raise AssertionError("keys out of order taken for a whole numbering")


def _returns_naive(stakes: list[tuple[int, int, str, int, int]]) -> list[tuple[int, str]]:
    """EC64-05 read plainly. stakes: (row, coup, cote, rang, montant, restitue) in row
    order. Per coup in rank order (rang, then row): on each side, the first stake
    that keeps some of its stake after a return on that side; and, for a coup with
    returns on both sides, its first return."""
    out = []
    for coup in sorted({s[1] for s in stakes}):
        ranked = sorted((s for s in stakes if s[1] == coup), key=lambda s: (s[3], s[0]))
        returned = {"a": False, "b": False}
        flagged = set()
        for row, _, side, _, montant, restitue in ranked:
            if returned[side] and restitue < montant and side not in flagged:
                out.append((row, "not_last"))
                flagged.add(side)
            returned[side] |= restitue > 0
        backs = [s for s in ranked if s[5] > 0]
        if {s[2] for s in backs} == {"a", "b"}:
            out.append((backs[0][0], "both_sides"))
    return sorted(out)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3), st.sampled_from("ab"), st.sampled_from([0, 1, 2])),
                min_size=1, max_size=14), st.booleans(), st.randoms())
def test_excess_returned_to_last_in_rank_order_and_shuffled(tmp_path_factory, draws, shuffle, rnd):
    # Ranks numbered in each coup as drawn; rows in rank order (the fast path: no
    # sort) or shuffled (the sort), and the same findings as the plain reading.
    ranks: dict[int, int] = {}
    stakes = []
    for coup, side, back in sorted(draws, key=lambda d: d[0]):
        ranks[coup] = ranks.get(coup, 0) + 1
        stakes.append((coup, side, ranks[coup], 1000, (0, 500, 1000)[back]))
    if shuffle:
        rnd.shuffle(stakes)
    text = "seance;coup;rang;cote;montant;restitue\n" + "".join(
        f"1;{c};{r};{side};{m // 100},00;{b // 100},00\n" for c, side, r, m, b in stakes)
    result = audit_case({"mises": text}, tmp_path_factory.mktemp("ec6405"))
    got = sorted((f.row, "both_sides" if f.expected is None else "not_last")
                 for f in result.findings if f.code == "EC64-05")
    assert got == _returns_naive([(i + 2, *s) for i, s in enumerate(stakes)])
