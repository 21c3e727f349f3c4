"""Helpers the article modules share: sequence breaks and violation emission."""

from __future__ import annotations

from typing import Callable, Iterator

import numpy as np
import pandas as pd

from auditor.arrays import column, ints_of
from auditor.frames import cat, ints, pair_codes, plain_rows, running_max
from auditor.model import Violation


def records(df: pd.DataFrame) -> Iterator[dict]:
    """The rows of a (small) frame of violations as plain Python dicts."""
    if df.empty:   # the usual case: most rules find nothing, and columns cost time to fetch
        return
    yield from plain_rows({c: df[c].tolist() for c in df.columns})


def emit(df: pd.DataFrame, make: Callable[[dict], Violation]) -> Iterator[Violation]:
    """One violation per row of `df`, made by `make` from the row as plain Python values."""
    for rec in records(df):
        yield make(rec)


def emit_at(df: pd.DataFrame, at, make: Callable[[dict], Violation]) -> Iterator[Violation]:
    """`emit(df.iloc[at], make)`. Most rules find nothing: then no frame is
    cut at all (taking no row of a frame still copies its every column, a
    fixed cost per call)."""
    if len(at):
        yield from emit(df.iloc[at], make)


def group_codes(df: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """One int64 per row for the group of its `keys` (no missing values), in the
    order of the keys: sorting by the code sorts by the keys. Two small
    non-negative keys pack into one integer; anything else is ranked."""
    cols = [df[k].to_numpy(dtype=np.int64) for k in keys]
    if len(cols) == 1:
        return cols[0]
    if len(cols) == 2 and len(df):
        a, b = cols
        if min(a.min(), b.min()) >= 0 and max(a.max(), b.max()) < 2**31:
            return (a << 32) | b
    if not len(df):
        return np.zeros(0, dtype=np.int64)
    return np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)


def _segment_starts(sorted_codes: np.ndarray) -> np.ndarray:
    return cat(True, sorted_codes[1:] != sorted_codes[:-1]) if len(sorted_codes) else np.zeros(0, bool)


def sequence_breaks(df: pd.DataFrame, keys: list[str], col: str) -> pd.DataFrame:
    """Where `col` is not the uninterrupted series 1, 2, 3 … within each group,
    in row order. One row per break, with the group keys and:

    kind: `start` (first number is not 1), `gap` (numbers missing), `duplicate`,
    `order` (a number lower than one already seen); first/last: the missing
    range (gap, start) or the number itself; found: the number in the row;
    _row: the source row where the break shows.

    Plain numpy on one integer group code: sorts and shifts, no per-group work.
    """
    columns = keys + ["kind", "first", "last", "found", "_row"]
    b = breaks_of(df, keys, col)
    if b is None:
        return pd.DataFrame(columns=columns)
    return b.frame(df, keys)


_KINDS = np.array(["duplicate", "gap", "order", "start"], dtype=object)   # in the order they sort


class Breaks:
    """The breaks of `sequence_breaks` as numpy arrays, in its order: `at`,
    the row's position in the table; `kind` (index in _KINDS), first, last,
    found."""

    __slots__ = ("at", "kind", "first", "last", "found")

    def __init__(self, at, kind, first, last, found):
        self.at, self.kind, self.first, self.last, self.found = at, kind, first, last, found

    def __len__(self) -> int:
        return len(self.at)

    def frame(self, df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
        """The breaks as `sequence_breaks` gives them, `df` being the table they were found in."""
        res = pd.DataFrame({k: df[k].to_numpy()[self.at].astype(np.int64) for k in keys})
        res["kind"] = _KINDS[self.kind]
        res["first"], res["last"], res["found"] = self.first, self.last, self.found
        res["_row"] = df["_row"].to_numpy()[self.at]
        return res


def ordered(*keys: np.ndarray) -> bool:
    """Whether the rows are sorted by `keys` (the first the most significant),
    ties allowed: the check that lets a rule skip its sort, made of comparisons
    of neighbours only (bool temporaries, where a packed int64 key of a million
    rows would cost tens of megabytes)."""
    undecided = None     # pairs of neighbours equal on every key so far
    for key in keys:
        left, right = key[:-1], key[1:]
        down = right < left
        if undecided is not None:
            down &= undecided
        if down.any():
            return False
        same = right == left
        if undecided is None:
            undecided = same
        else:
            undecided &= same
        if not undecided.any():
            return True
    return True


def _numbered_in_order(keys: list[np.ndarray], number: np.ndarray) -> bool:
    """Whether the rows come sorted by `keys` and each group (run of equal
    keys) numbers its rows 1, 2 … k: then `breaks_of` finds no break. Told
    from comparisons of neighbours and the ends of the runs alone: no group
    code, no int64 temporary of the table's length."""
    if not ordered(*keys, number):
        return False
    new_group = np.zeros(len(number), dtype=bool)
    new_group[0] = True
    for key in keys:
        new_group[1:] |= key[1:] != key[:-1]
    # Sorted and never twice the same number in a run: the numbers rise in it.
    repeat = number[1:] == number[:-1]
    repeat &= ~new_group[1:]
    if repeat.any():
        return False
    # Rising integers from 1 to the run's length: exactly 1, 2 … k.
    starts = np.flatnonzero(new_group)
    ends = cat(starts[1:], len(number)) - 1
    return bool((number[starts] == 1).all() and (number[ends] == ends - starts + 1).all())


def breaks_of(df: pd.DataFrame, keys: list[str], col: str, carnet=None, table: str | None = None) -> Breaks | None:
    """The breaks of `sequence_breaks` (None when no row has its keys and number).
    `carnet` and `table`: `df` is that table's frame, whose columns the carnet
    has already fetched (not a part of it)."""
    whole_table = carnet is not None and carnet.tables[table].df is df
    parts = [ints_of(carnet, table, k) if whole_table else ints(df[k]) for k in keys + [col]]
    ok = np.logical_and.reduce([p[1] for p in parts])
    whole = bool(ok.all())
    rows = np.arange(len(ok)) if whole else np.flatnonzero(ok)
    if not len(rows):
        return None
    cols = [p[0] if whole else p[0][rows] for p in parts]
    if _numbered_in_order(cols[:-1], cols[-1]):     # the usual carnet: no break, and nothing to sort
        return Breaks(*(np.zeros(0, dtype=np.int64) for _ in range(5)))
    g = cols[0] if len(keys) == 1 else pair_codes((cols[0], cols[1]))[0]
    v = cols[-1]
    n = len(rows)
    pos = np.arange(n)
    # Duplicates: a (group, number) seen at an earlier position.
    # Carnets are almost always written in order already: then no sort at all.
    g_step = g[1:] > g[:-1]
    g_up = bool(np.all(g_step | (g[1:] == g[:-1])))
    in_order = g_up and bool(np.all(g_step | (v[1:] >= v[:-1])))
    if in_order:
        by_value, gv, vv = pos, g, v
    else:
        by_value = np.lexsort((pos, v, g))
        gv, vv = g[by_value], v[by_value]
    first_seen = cat(True, (gv[1:] != gv[:-1]) | (vv[1:] != vv[:-1]))
    if in_order:
        dup = ~first_seen
        # Numbers never go down within a group: nothing is out of order.
        order = np.zeros(n, dtype=bool)
    else:
        dup = np.empty(n, dtype=bool)
        dup[by_value] = ~first_seen
        # Order: lower than the highest number already seen in the group (row order).
        by_group = pos if g_up else np.argsort(g, kind="stable")
        gg, vg = (g, v) if g_up else (g[by_group], v[by_group])
        group_start = _segment_starts(gg)
        running = running_max(vg, group_start)
        lower = cat(False, vg[1:] < running[:-1]) & ~group_start
        order = np.empty(n, dtype=bool)
        order[by_group] = lower
        order &= ~dup
    # Gaps: between consecutive distinct numbers, located at the row of the
    # number that follows the gap (its first occurrence).
    if in_order and first_seen.all():     # no repeat either: every row is its number's first
        u, ug, uv = pos, g, v
    else:
        u = np.flatnonzero(first_seen) if in_order else by_value[first_seen]
        ug, uv = g[u], v[u]
    new_group = _segment_starts(ug)
    prev = cat(0, uv[:-1])
    start = new_group & (uv != 1)
    gap = ~new_group & (uv - prev > 1)
    if not (dup.any() or order.any() or start.any() or gap.any()):
        return Breaks(*(np.zeros(0, dtype=np.int64) for _ in range(5)))
    parts = [
        (0, np.flatnonzero(dup), v[dup], v[dup]),
        (2, np.flatnonzero(order), v[order], v[order]),
        (3, u[start], np.ones(int(start.sum()), dtype=np.int64), uv[start] - 1),
        (1, u[gap], prev[gap] + 1, uv[gap] - 1),
    ]
    at = np.concatenate([p[1] for p in parts])
    kind = np.concatenate([np.full(len(p[1]), p[0], dtype=np.int64) for p in parts])
    first = np.concatenate([p[2] for p in parts])
    last = np.concatenate([p[3] for p in parts])
    source = (column(carnet, table, "_row") if whole_table else df["_row"].to_numpy())[rows[at]]
    # By source row, then kind (the kinds' indices sort like their names); stable.
    order = np.lexsort((kind, source))
    return Breaks(rows[at][order], kind[order], first[order], last[order], v[at][order])


def fillable(breaks: pd.DataFrame, carnet, table: str, keys: list[str], col: str) -> np.ndarray:
    """Gaps of `sequence_breaks` that a row with an unreadable key or number
    could fill: its readable keys match the gap's group and its number, when
    readable, lies in the missing range. Such a gap may be no gap at all (the
    number is there, in a cell that cannot be read): the rule leaves it out."""
    out = np.zeros(len(breaks), dtype=bool)
    if breaks.empty:
        return out
    t = carnet.df(table)
    blind = carnet.unreadable_rows(table, *keys, col).to_numpy()
    if not blind.any():
        return out
    rows = t.loc[blind, keys + [col]].drop_duplicates()
    missing = breaks["kind"].isin(["gap", "start"]).to_numpy()
    b = breaks.assign(_at=np.arange(len(breaks)), **{k: breaks[k].astype("Int64") for k in keys})[missing]
    na = rows.isna()
    for pattern in na.drop_duplicates().itertuples(index=False):
        sel = rows[(na.to_numpy() == list(pattern)).all(axis=1)]
        known = [k for k, m in zip(keys, pattern) if not m]
        pairs = b.merge(sel[known + [col]].rename(columns={col: "_n"}), on=known, how="inner") if known else \
            b.merge(sel[[col]].rename(columns={col: "_n"}), how="cross")
        if not pattern[-1]:   # the row's number is readable: it fills only a range that holds it
            n = pairs["_n"].astype("Int64")
            pairs = pairs[((n >= pairs["first"]) & (n <= pairs["last"])).fillna(False).to_numpy(bool)]
        out[pairs["_at"].to_numpy(dtype=np.int64)] = True
    return out


# The key columns of a table as numpy, for rules that build their findings
# from positions (values at missing cells are never read: 0 stands there).
def rows_of(df: pd.DataFrame) -> np.ndarray:
    """The source rows."""
    return df["_row"].to_numpy()


def seance_of(df: pd.DataFrame) -> np.ndarray:
    """The séance numbers (0 where unreadable)."""
    return df["seance"].to_numpy(dtype=np.int64, na_value=0)


def coup_of(df: pd.DataFrame) -> np.ndarray:
    """The coup numbers (0 where unreadable)."""
    return df["coup"].to_numpy(dtype=np.int64, na_value=0)


def keys_of(carnet, table: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`rows_of`, `seance_of` and `coup_of` of the carnet's `table`, fetched once per carnet."""
    return (column(carnet, table, "_row"), ints_of(carnet, table, "seance")[0], ints_of(carnet, table, "coup")[0])
