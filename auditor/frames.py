"""Small pandas helpers shared by normalisation, derived amounts and checks."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc


def eq(series: pd.Series, value) -> pd.Series:
    """`series == value` as a plain bool mask (<NA> counts as not equal)."""
    return series.eq(value).fillna(False).astype(bool)


def notna(df: pd.DataFrame, columns) -> pd.Series:
    """Rows where every listed column has a value."""
    return df[list(columns)].notna().all(axis=1)


def py(value):
    """A pandas scalar as a plain Python value (None for missing)."""
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
