"""Small pandas helpers shared by normalisation, derived amounts and checks.

pandas and Arrow are imported by the helpers that read or make their
objects: the checks over a batch use the others (`cat`, `running_max`) in a
process that imports neither (auditor.checks)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa


def eq(series: pd.Series, value) -> pd.Series:
    """`series == value` as a plain bool mask (<NA> counts as not equal)."""
    import pandas as pd

    return pd.Series((series == value).to_numpy(dtype=bool, na_value=False), index=series.index)


def notna(df: pd.DataFrame, columns) -> pd.Series:
    """Rows where every listed column has a value."""
    return df[list(columns)].notna().all(axis=1)


def plain_rows(columns: dict[str, list]):
    """Rows of equal-length columns of values as dicts of plain Python values (`py`)."""
    names = list(columns)
    for values in zip(*columns.values()):
        yield {c: py(v) for c, v in zip(names, values)}


def py(value):
    """A pandas scalar as a plain Python value (None for missing)."""
    import pandas as pd

    if value is None or value is pd.NA or value is pd.NaT:
        return None
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    if hasattr(value, "item"):
        return value.item()
    return value


def scatter(base: pa.Array, idx: pa.Array, values: pa.Array) -> pa.Array:
    """`base` (bool or int64) with `values` written at positions `idx`: how a
    parser's slow path puts back the few cells its fast path left. Integers
    stay integers (no float on the way); nulls travel as a mask."""
    import pyarrow as pa
    import pyarrow.compute as pc

    positions = idx.to_numpy()
    if pa.types.is_boolean(base.type):
        out = base.to_numpy(zero_copy_only=False).copy()
        out[positions] = values.to_numpy(zero_copy_only=False)
        return pa.array(out, type=pa.bool_())
    out = pc.fill_null(base, 0).to_numpy().copy()
    valid = pc.is_valid(base).to_numpy(zero_copy_only=False).copy()
    out[positions] = pc.fill_null(values, 0).to_numpy()
    valid[positions] = pc.is_valid(values).to_numpy(zero_copy_only=False)
    return pa.array(out, type=pa.int64(), mask=~valid)


def shared_codes(*frames: pd.DataFrame, keys: tuple[str, ...] = ("seance", "coup")) -> list[np.ndarray]:
    """One int64 code per row of each frame for its `keys` (no missing values),
    the same code for the same keys in every frame and ordered like the keys.
    Small non-negative pairs pack into one integer; anything else is ranked."""
    cols = [[f[k].to_numpy(dtype=np.int64) for k in keys] for f in frames]
    flat = [np.concatenate([c[i] for c in cols]) for i in range(len(keys))]
    sizes = np.cumsum([len(f) for f in frames])[:-1]
    if len(flat[0]) == 0:
        return [np.zeros(len(f), dtype=np.int64) for f in frames]
    if len(keys) == 2 and min(flat[0].min(), flat[1].min()) >= 0 and max(flat[0].max(), flat[1].max()) < 2**31:
        return np.split((flat[0] << 32) | flat[1], sizes)
    if len(keys) == 1:
        return np.split(flat[0], sizes)
    ranked = np.unique(np.stack(flat, axis=1), axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)
    return np.split(ranked, sizes)


def group_sums(codes: np.ndarray, *values: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Per distinct code (sorted): the code, the row count and the integer sum
    of each of `values` (integers stay integers: no float on the way)."""
    order = None if np.all(codes[1:] >= codes[:-1]) else np.argsort(codes, kind="stable")
    c = codes if order is None else codes[order]
    if len(c) == 0:
        return c, np.zeros(0, dtype=np.int64), [np.zeros(0, dtype=np.int64) for _ in values]
    starts = np.flatnonzero(cat(True, c[1:] != c[:-1]))
    counts = np.diff(cat(starts, len(c)))
    sums = [np.add.reduceat(v if order is None else v[order], starts) for v in values]
    return c[starts], counts, sums


def lookup(table_codes: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Position of each code in the sorted `table_codes`, and whether it is there."""
    pos = np.searchsorted(table_codes, codes)
    safe = np.minimum(pos, max(len(table_codes) - 1, 0))
    found = (pos < len(table_codes)) & (table_codes[safe] == codes if len(table_codes) else False)
    return safe, found


def cat(*parts) -> np.ndarray:
    """`np.r_[*parts]` for Python scalars and 1-d arrays: the same values and
    dtype (np.r_ parses its key at every call, some 7 µs against 1-2 here, and
    the rules call it a few dozen times per carnet)."""
    dtype = np.result_type(*(p.dtype if isinstance(p, np.ndarray) else p for p in parts))
    return np.concatenate([p if isinstance(p, np.ndarray) else np.array([p], dtype=dtype) for p in parts], dtype=dtype)


# -- plain numpy views of columns, for the rules that work on whole arrays ------
# A rule over a few hundred rows spends its time in pandas' fixed cost per
# operation (alignment, Series and frame construction): these take a column
# out once, as numpy, so that the rule's logic is plain array operations.

def ints(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """An integer column as (int64 values with 0 where missing, where there is a value)."""
    import pandas as pd

    arr = series.array
    if isinstance(arr, pd.arrays.IntegerArray):
        return arr.to_numpy(dtype=np.int64, na_value=0), ~arr.isna()
    values = series.to_numpy()
    return values.astype(np.int64, copy=False), np.ones(len(values), dtype=bool)


def present(series: pd.Series) -> np.ndarray:
    """Where a column has a value, as a plain bool array."""
    return ~np.asarray(series.array.isna(), dtype=bool)


def is_value(series: pd.Series, value) -> np.ndarray:
    """`series == value` as a plain bool array (<NA> counts as not equal), like `eq`."""
    chunked = getattr(series.array, "_pa_array", None)
    if chunked is not None and isinstance(value, str):
        import pyarrow as pa
        import pyarrow.compute as pc

        if pa.types.is_string(chunked.type) or pa.types.is_large_string(chunked.type):
            return pc.fill_null(pc.equal(chunked, value), False).to_numpy(zero_copy_only=False)
    return (series == value).to_numpy(dtype=bool, na_value=False)


def pair_codes(*pairs: tuple[np.ndarray, np.ndarray]) -> list[np.ndarray]:
    """`shared_codes` on arrays: one int64 code per (a, b) of each pair of
    int64 arrays, the same code for the same pair everywhere and ordered like
    the pairs. Small non-negative pairs pack into one integer, each pair
    where it is (one new array each: the stakes' keys and the coups', joined
    first, made four arrays of a million stakes' length, each fresh memory
    to fault in); else ranked, all pairs together."""
    lengths = [len(a) for a, _ in pairs]
    if not any(lengths):
        return [np.zeros(0, dtype=np.int64) for _ in pairs]
    filled = [(a, b) for a, b in pairs if len(a)]
    low = min(min(a.min(), b.min()) for a, b in filled)
    high = max(max(a.max(), b.max()) for a, b in filled)
    if low >= 0 and high < 2**31:
        out = []
        for a, b in pairs:
            codes = a.astype(np.int64, copy=False) << 32
            codes |= b
            out.append(codes)
        return out
    bounds = np.cumsum([0, *lengths]).tolist()
    a = np.concatenate([p[0] for p in pairs]) if len(pairs) > 1 else pairs[0][0]
    b = np.concatenate([p[1] for p in pairs]) if len(pairs) > 1 else pairs[0][1]
    codes = np.unique(np.stack([a, b], axis=1), axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)
    # Slices of the one array (what np.split gives, without its cost per call).
    return [codes[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:])]


def first_each(codes: np.ndarray) -> np.ndarray:
    """Positions of the first row of each distinct code, in row order."""
    if len(codes) == 0:
        return np.zeros(0, dtype=np.int64)
    _, first = np.unique(codes, return_index=True)
    first.sort()
    return first


def find(table_codes: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Position in `table_codes` (distinct codes, any order) of each code, -1 where absent."""
    if len(table_codes) == 0:
        return np.full(len(codes), -1, dtype=np.int64)
    order = np.argsort(table_codes, kind="stable")
    at, found = lookup(table_codes[order], codes)
    return np.where(found, order[at], -1)


def running_max(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The running maximum of int64 `values`, starting again at each True of `starts`."""
    if len(values) == 0:
        return values.copy()
    segment = np.cumsum(starts) - 1
    low, span = int(values.min()), int(values.max()) - int(values.min()) + 1
    if span * (int(segment[-1]) + 1) < 2**62:
        # Segments stacked one above the other: one accumulate over the whole array.
        return np.maximum.accumulate(segment * span + (values - low)) - segment * span + low
    out = values.copy()
    bounds = cat(np.flatnonzero(starts), len(values))
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        out[lo:hi] = np.maximum.accumulate(values[lo:hi])
    return out
