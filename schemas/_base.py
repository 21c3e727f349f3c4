"""Shared vocabulary of the table schemas.

A schema is declared here as plain data (`Schema`, `Column`, `Check`, with
pandera's own attribute names) and turned into a pandera `DataFrameSchema`
by `Schema.pandera()` on first use. Importing pandera costs a quarter of a
second per process (pydantic, typeguard and its engines), and most audits
never need it: a table that certainly passes its schema is not handed to
pandera at all (`auditor.normalise._certainly_valid`), and the reader, the
column map and the template only read the declarations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

KINDS = ("int", "amount", "date", "text", "enum")

SIDES = ["a", "b"]
COUP_TYPES = ["simple", "chouette"]
PHASES = ["avant", "apres"]
EVENTS = ["adjudication", "remise"]
YES_NO = ["oui", "non"]

# Column types, by the name pandas gives them: nullable integers, text, dates.
Int = "Int64"
Text = "string"
DateTime = "datetime"


@dataclass(frozen=True)
class Check:
    """One per-cell check of a column, as pandera names it and its statistics."""

    name: str
    statistics: dict[str, Any]
    ignore_na: bool = True

    @classmethod
    def isin(cls, allowed) -> "Check":
        return cls("isin", {"allowed_values": list(allowed)})

    @classmethod
    def ge(cls, minimum) -> "Check":
        return cls("greater_than_or_equal_to", {"min_value": minimum})

    def pandera(self):
        import pandera.pandas as pa

        if self.name == "isin":
            return pa.Check.isin(self.statistics["allowed_values"])
        if self.name == "greater_than_or_equal_to":
            return pa.Check.ge(self.statistics["min_value"])
        raise ValueError(self.name)


@dataclass(frozen=True)
class Column:
    """A typed column; values are required unless `nullable`."""

    dtype: str
    checks: tuple[Check, ...]
    nullable: bool
    metadata: dict
    unique: bool = False
    regex: bool = False


@dataclass(frozen=True, eq=False)
class Schema:
    """A table's columns, in order (never strict: other columns are allowed)."""

    name: str
    columns: dict[str, Column]
    checks: tuple = ()
    unique: Any = None
    _built: dict = field(default_factory=dict, repr=False)

    def pandera(self):
        """The pandera schema of these declarations, built once per process."""
        if "schema" not in self._built:
            self._built["schema"] = _pandera_schema(self)
        return self._built["schema"]


def _pandera_schema(schema: Schema):
    import pandas as pd
    import pandera.pandas as pa

    dtypes = {Int: pd.Int64Dtype(), Text: pd.StringDtype(), DateTime: pa.DateTime}
    # The object API rather than DataFrameModel classes: turning a model into a
    # schema makes pandera import every installed backend (dask: ~2 s a process).
    return pa.DataFrameSchema(
        {name: pa.Column(dtypes[c.dtype], [chk.pandera() for chk in c.checks], nullable=c.nullable,
                         metadata=c.metadata)
         for name, c in schema.columns.items()},
        name=schema.name, strict=False, coerce=False)


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


def column(dtype: str, metadata: dict, *checks: Check, nullable: bool = False) -> Column:
    """A typed column; values are required unless `nullable`."""
    return Column(dtype, tuple(checks), nullable, metadata)


def schema(name: str, columns: dict[str, Column]) -> Schema:
    return Schema(name, columns)
