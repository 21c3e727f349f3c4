"""Interval algebra on sorted int64 keys: the ticket ledger, the report's
ticket picture and the cross-carnet check all work on runs of numbers, never
on single tickets."""

from __future__ import annotations

import numpy as np

from auditor.frames import cat, running_max


def merge(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of key intervals sorted by start: disjoint, non-adjacent, sorted."""
    if len(s) == 0:
        return s[:0], e[:0]
    cm = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > cm[:-1] + 1
    first = np.flatnonzero(new)
    last = cat(first[1:] - 1, len(s) - 1)
    return s[first], cm[last]


def overlaps(a_s, a_e, b_s, b_e):
    """Every pair (i, j) where interval a[i] meets b[j], and their intersection.

    `b` must be sorted by start with non-decreasing ends (merged intervals, or
    books, which all have the same size). Returns i, j, start, end.
    """
    lo = np.searchsorted(b_e, a_s, "left")     # first b ending at or after a starts
    hi = np.searchsorted(b_s, a_e, "right")    # first b starting after a ends
    n = np.maximum(hi - lo, 0)
    i = np.repeat(np.arange(len(a_s)), n)
    j = lo[i] + (np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n))
    return i, j, np.maximum(a_s[i], b_s[j]), np.minimum(a_e[i], b_e[j])


def gaps(s: np.ndarray, e: np.ndarray, stride: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Holes between consecutive merged intervals of the same value: start,
    end, and the key where numbers resume after the hole."""
    same = (s[1:] // stride) == (e[:-1] // stride)
    return e[:-1][same] + 1, s[1:][same] - 1, s[1:][same]


def range_min(lo: np.ndarray, hi: np.ndarray, weight: np.ndarray, size: int) -> np.ndarray:
    """For `size` slots and ranges [lo, hi) with weights, the least weight of the
    ranges covering each slot (int64 max where none): a segment tree, each range
    laid on its O(log size) canonical nodes, level by level for all ranges at once."""
    width = 1 << max(1, int(size - 1).bit_length())
    tree = np.full(2 * width, np.iinfo(np.int64).max, dtype=np.int64)
    left, right, w = lo + width, hi + width, weight
    while len(left):
        odd = (left & 1) == 1
        np.minimum.at(tree, left[odd], w[odd])
        left = left + odd
        odd = (right & 1) == 1
        np.minimum.at(tree, right[odd] - 1, w[odd])
        right = right - odd
        left, right = left >> 1, right >> 1
        keep = left < right
        left, right, w = left[keep], right[keep], w[keep]
    level = 2
    while level < 2 * width:            # push each node's least weight down to its children
        nodes = np.arange(level, 2 * level)
        tree[nodes] = np.minimum(tree[nodes], tree[nodes >> 1])
        level *= 2
    return tree[width:width + size]


def pieces(xs: np.ndarray, xe: np.ndarray, bs: np.ndarray, be: np.ndarray):
    """Intervals x cut at the rows b (sorted by start, ends never decreasing, as
    books and blocks of one size are): index in x, index in b, start, end."""
    if len(xs) == 0 or len(bs) == 0:
        z = np.array([], dtype=np.int64)
        return z, z, z, z
    return overlaps(xs, xe, bs, be)


def merge_grouped(group: np.ndarray, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Union of the intervals of each group (such as the runs of one séance):
    group, start, end of the merged intervals, sorted by start then group."""
    if len(s) == 0:
        z = np.array([], dtype=np.int64)
        return z, z, z
    o = np.lexsort((e, s, group))
    g, s, e = group[o], s[o], e[o]
    reach = _cummax_grouped(g, e)
    new = cat(True, (g[1:] != g[:-1]) | (s[1:] > reach[:-1] + 1))
    first = np.flatnonzero(new)
    g, s, e = g[first], s[first], np.maximum.reduceat(reach, first)
    o = np.lexsort((g, s))
    return g[o], s[o], e[o]


def _cummax_grouped(g: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Running maximum of `e` within each run of equal `g` (groups contiguous):
    each group lifted above the one before it, so one running maximum never
    carries a value from one group into the next."""
    rank = np.cumsum(cat(0, g[1:] != g[:-1]))
    low = e.min()
    span = e.max() - low + 1
    lifted = (e - low) + rank * span
    return np.maximum.accumulate(lifted) - rank * span + low


def running_reach(ends: np.ndarray, groups: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """For intervals sorted by start (within each group; groups contiguous):
    the running maximum of their ends, `reach`, and the position of the last
    interval that reached it, `reacher`. An interval starting at or before
    the reach of the one before it meets an earlier interval: that one's."""
    pos = np.arange(len(ends))
    if groups is None:
        reach = np.maximum.accumulate(ends) if len(ends) else ends
        return reach, (np.maximum.accumulate(np.where(ends == reach, pos, 0)) if len(ends) else pos)
    starts = cat(True, groups[1:] != groups[:-1]) if len(groups) else np.zeros(0, dtype=bool)
    reach = running_max(np.asarray(ends, dtype=np.int64), starts)
    return reach, running_max(np.where(ends == reach, pos, -1).astype(np.int64), starts)
