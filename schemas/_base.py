"""Shared vocabulary of the table schemas."""

from __future__ import annotations

import pandas as pd
import pandera.pandas as pa

KINDS = ("int", "amount", "date", "text", "enum")

SIDES = ["a", "b"]
COUP_TYPES = ["simple", "chouette"]
PHASES = ["avant", "apres"]
EVENTS = ["adjudication", "remise"]
YES_NO = ["oui", "non"]

Int = pd.Int64Dtype
Text = pd.StringDtype


def col(kind: str, source: str | None = None, *, required: bool = True, default: str | None = None,
        default_from: str | None = None) -> dict:
    """Metadata for a schema field.

    kind: how the source text is parsed; source: the source column (defaults
    to the field name); required: the column must exist in the table;
    default: the text used when the column is absent or the cell is empty;
    default_from: the field whose value fills an absent column or empty cell.
    """
    if kind not in KINDS:
        raise ValueError(kind)
    return {"kind": kind, "source": source, "required": required, "default": default,
            "default_from": default_from}


def column(dtype, metadata: dict, *checks, nullable: bool = False) -> pa.Column:
    """A typed column; values are required unless `nullable`."""
    return pa.Column(dtype, list(checks), nullable=nullable, metadata=metadata)


def schema(name: str, columns: dict[str, pa.Column]) -> pa.DataFrameSchema:
    # The object API rather than DataFrameModel classes: turning a model into a
    # schema makes pandera import every installed backend (dask: ~2 s a process).
    return pa.DataFrameSchema(columns, name=name, strict=False, coerce=False)
