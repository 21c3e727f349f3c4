"""Small pandas helpers shared by normalisation, derived amounts and checks."""

from __future__ import annotations

import pandas as pd


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
