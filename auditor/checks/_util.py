"""Helpers the article modules share: sequence breaks and violation emission."""

from __future__ import annotations

from typing import Callable, Iterator

import pandas as pd

from auditor.frames import py
from auditor.model import Violation


def records(df: pd.DataFrame) -> Iterator[dict]:
    """The rows of a (small) frame of violations as plain Python dicts."""
    cols = list(df.columns)
    for values in zip(*(df[c].tolist() for c in cols)):
        yield {c: py(v) for c, v in zip(cols, values)}


def emit(df: pd.DataFrame, make: Callable[[dict], Violation]) -> Iterator[Violation]:
    for rec in records(df):
        yield make(rec)


def sequence_breaks(df: pd.DataFrame, keys: list[str], col: str) -> pd.DataFrame:
    """Where `col` is not the uninterrupted series 1, 2, 3 … within each group,
    in row order. One row per break, with the group keys and:

    kind: `start` (first number is not 1), `gap` (numbers missing), `duplicate`,
    `order` (a number lower than one already seen); first/last: the missing
    range (gap, start) or the number itself; found: the number in the row;
    _row: the source row where the break shows.
    """
    d = df.loc[df[keys + [col]].notna().all(axis=1), keys + [col, "_row"]].copy()
    out = []
    if d.empty:
        return pd.DataFrame(columns=keys + ["kind", "first", "last", "found", "_row"])
    dup = d.duplicated(keys + [col], keep="first")
    prev_max = d.groupby(keys, sort=False)[col].cummax().groupby([d[k] for k in keys], sort=False).shift()
    order = (d[col] < prev_max).fillna(False).astype(bool) & ~dup
    for kind, mask in (("duplicate", dup), ("order", order)):
        hit = d[mask]
        out.append(pd.DataFrame({**{k: hit[k] for k in keys}, "kind": kind, "first": hit[col],
                                 "last": hit[col], "found": hit[col], "_row": hit["_row"]}))
    # Gaps: between consecutive distinct numbers, located at the row of the
    # number that follows the gap (its first occurrence).
    u = d[~dup].sort_values(keys + [col], kind="stable")
    prev = u.groupby(keys, sort=False)[col].shift()
    starts = prev.isna() & (u[col] != 1)
    gaps = prev.notna() & (u[col] - prev > 1)
    s = u[starts]
    out.append(pd.DataFrame({**{k: s[k] for k in keys}, "kind": "start", "first": 1,
                             "last": s[col] - 1, "found": s[col], "_row": s["_row"]}))
    g = u[gaps]
    out.append(pd.DataFrame({**{k: g[k] for k in keys}, "kind": "gap", "first": prev[gaps] + 1,
                             "last": g[col] - 1, "found": g[col], "_row": g["_row"]}))
    res = pd.concat([o for o in out if len(o)], ignore_index=True) if any(len(o) for o in out) else out[0].iloc[0:0]
    return res.sort_values(["_row", "kind"], kind="stable").reset_index(drop=True)
