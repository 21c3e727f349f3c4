"""A carnet's columns as plain numpy arrays, fetched once per carnet.

On a small carnet (one séance, a few hundred rows) pandas' fixed cost per
operation (a column lookup, a boolean filter, a merge) outweighs the work
itself: the ticket rules, the EC00 rules, the ticket ledger and the report
read their columns here once and work on arrays, joining on integer codes
(`auditor.frames.find`) rather than merging frames.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from auditor.carnet import Carnet
from auditor.frames import ints, is_value, present
from auditor.threads import build_once

NA_INT = np.iinfo(np.int64).min        # a missing cell in a plain int64 array


def _memo(carnet: Carnet, table: str, key: tuple, build):
    """What `build(df)` gives for `table`'s frame, once per carnet and key (the
    carnet's frames are never changed once normalised, so one build serves
    every rule; a frame replaced since is built again)."""
    df = carnet.tables[table].df
    memo = carnet.__dict__.setdefault("_arrays", {})
    got = memo.get((table, key))
    if got is None or got[0] is not df:
        got = build_once(carnet.__dict__, memo, (table, key), lambda: (df, build(df)),
                         fresh=lambda kept: kept[0] is df)
    return got[1]


def _read_only(*arrays: np.ndarray):
    # Shared by every rule: one that wrote in an array would raise, never change another rule's input.
    for a in arrays:
        a.flags.writeable = False
    return arrays[0] if len(arrays) == 1 else arrays


def series(carnet: Carnet, table: str, name: str) -> pd.Series:
    """Column `name` of `table` as a Series, fetched once per carnet: each
    `df[name]` costs pandas a new Series."""
    return _memo(carnet, table, ("series", name), lambda df: df[name])


def column(carnet: Carnet, table: str, name: str) -> np.ndarray:
    """Column `name` of `table` as plain int64, NA_INT where missing, fetched
    once per carnet; shared, so read-only, as `ints_of`'s."""
    def build(df):
        parts = _int_parts(carnet, table, name, df)
        if parts is None:
            return _read_only(series(carnet, table, name).to_numpy(dtype=np.int64, na_value=NA_INT))
        data, missing = parts
        return _read_only(data.view() if missing is None else np.where(missing, NA_INT, data))
    return _memo(carnet, table, ("column", name), build)


def _array(carnet: Carnet, table: str, name: str, df: pd.DataFrame) -> pd.api.extensions.ExtensionArray | np.ndarray | None:
    """`df[name].array` as normalise parsed it (an Int64 or text column; `_row`
    as its int64 ndarray), without the Series each `df[name]` costs pandas
    (some 90 µs, a third of a small carnet's column fetches); None for any
    other column, or a frame that is not the one normalise built
    (`normalise.SourceTable.typed`)."""
    typed = getattr(carnet.tables[table], "typed", None)
    if typed is None or typed[0] is not df:
        return None
    return typed[1].get(name)


def _int_parts(carnet: Carnet, table: str, name: str, df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray | None] | None:
    """(int64 data, where missing, or None for none) of an Int64 column or
    `_row` as normalise built it (`_array`); None for any other. A column
    with no cell missing (the usual) says None: its data is then shared as it
    is, never copied with its missing cells filled (for a million stakes,
    8 MB of fresh memory for each key and amount column the rules read)."""
    arr = _array(carnet, table, name, df)
    if isinstance(arr, np.ndarray):
        return arr, None
    if isinstance(arr, pd.arrays.IntegerArray):   # its own data and mask, as frames.ints reads them
        return arr._data, (arr._mask if arr._mask.any() else None)
    return None


def ints_of(carnet: Carnet, table: str, name: str) -> tuple[np.ndarray, np.ndarray]:
    """`frames.ints` of column `name` of `table`, fetched once per carnet: the
    rules and derived facts ask for the same key and amount columns dozens of
    times, and each fetch of a frame's column costs pandas a new Series. The
    arrays are shared, so they are read-only (a rule that wrote in one would
    raise, never change another rule's input)."""
    def build(df):
        parts = _int_parts(carnet, table, name, df)
        if parts is None:
            return _read_only(*ints(series(carnet, table, name)))
        data, missing = parts
        if missing is None:
            return _read_only(data.view(), np.ones(len(data), dtype=bool))
        return _read_only(np.where(missing, 0, data), ~missing)
    return _memo(carnet, table, ("ints", name), build)


# Up to this many rows a text column compared as Python objects costs less than
# an Arrow kernel's call (a few microseconds against some twenty); above it, Arrow's kernel.
SMALL = 4096


def _objects(carnet: Carnet, table: str, name: str) -> np.ndarray | None:
    """A small Arrow text column as an object array (None where missing), once
    per carnet; None for any other column."""
    def build(df):
        arr = _array(carnet, table, name, df)
        if arr is None:
            arr = series(carnet, table, name).array
        chunked = getattr(arr, "_pa_array", None)
        if len(arr) > SMALL or chunked is None or not (pa.types.is_string(chunked.type)
                                                     or pa.types.is_large_string(chunked.type)):
            return None
        return _read_only(np.asarray(chunked.to_numpy(), dtype=object))
    return _memo(carnet, table, ("objects", name), build)


def equals(carnet: Carnet, table: str, name: str, value) -> np.ndarray:
    """`frames.is_value` of column `name` of `table` (<NA> is not equal), once per carnet and value."""
    def build(df):
        objects = _objects(carnet, table, name) if isinstance(value, str) else None
        if objects is not None:
            return _read_only(np.asarray(objects == value, dtype=bool).reshape(len(objects)))
        return _read_only(np.array(is_value(series(carnet, table, name), value), dtype=bool))
    return _memo(carnet, table, ("equals", name, value), build)


def present_of(carnet: Carnet, table: str, name: str) -> np.ndarray:
    """`frames.present` of column `name` of `table` (where it has a value), once per carnet."""
    def build(df):
        parts = _int_parts(carnet, table, name, df)
        if parts is not None:
            data, missing = parts
            return _read_only(np.ones(len(data), dtype=bool) if missing is None else ~missing)
        arr = _array(carnet, table, name, df)
        if arr is not None:   # frames.present, on the array
            return _read_only(~np.asarray(arr.isna(), dtype=bool))
        return _read_only(np.array(present(series(carnet, table, name)), dtype=bool))
    return _memo(carnet, table, ("present", name), build)


def records_of(carnet: Carnet, table: str):
    """`checks._util.records(carnet.df(table))` — the rows of a (small) table
    as dicts of plain Python values — from the arrays normalise built where it
    kept them (`df[name].tolist()` is the column's array's tolist), without a
    Series per column."""
    from auditor.frames import plain_rows

    df = carnet.tables[table].df
    if df.empty:
        return
    kept = {name: _array(carnet, table, name, df) for name in df.columns}
    yield from plain_rows({name: (series(carnet, table, name) if arr is None else arr).tolist()
                           for name, arr in kept.items()})


def texts(carnet: Carnet, table: str, name: str, at: np.ndarray | None = None) -> np.ndarray:
    """Column `name` of `table` (its rows `at` only, when given) as an object
    array of plain Python values, None where missing: for the few rows a rule
    or the report writes out (a whole column of a large table costs a Python
    object per cell)."""
    objects = _objects(carnet, table, name)
    if objects is not None:
        return objects.copy() if at is None else objects[np.asarray(at, dtype=np.int64)]
    arr = _array(carnet, table, name, carnet.tables[table].df)
    if arr is None or isinstance(arr, np.ndarray):
        arr = series(carnet, table, name).array
    if at is not None:
        arr = arr.take(np.asarray(at, dtype=np.int64))
    return np.asarray(arr.to_numpy(dtype=object, na_value=None), dtype=object)


def blind(carnet: Carnet, table: str, *fields: str) -> np.ndarray:
    """`carnet.unreadable_rows(table, *fields)` as a bool array, without
    touching the frame when no cell of those fields is unreadable (the usual case)."""
    t = carnet.tables[table]
    sources = {t.source_column(f) for f in fields}
    rows = {v.row for code, v in carnet.problems
            if code == "EC00-02" and v.table == table and v.column in sources}
    if not rows:
        return np.zeros(len(t.df), dtype=bool)
    return np.isin(column(carnet, table, "_row"), np.fromiter(rows, dtype=np.int64, count=len(rows)))


def blind_cells(carnet: Carnet, table: str, field: str) -> np.ndarray:
    """`carnet.unreadable_cells(table, field)` as a bool array, without
    touching the frame when no cell of that field is unreadable (the usual case)."""
    source = carnet.tables[table].source_column(field)
    if not carnet.tables[table].ambiguous and not any(
            code == "EC00-02" and v.table == table and v.column == source and v.kind != "missing"
            for code, v in carnet.problems):
        return np.zeros(len(carnet.tables[table].df), dtype=bool)
    return carnet.unreadable_cells(table, field).to_numpy(bool)


def could_be(carnet: Carnet, table: str, keys: list[str], target: pd.DataFrame, at=None) -> np.ndarray:
    """`carnet.could_be(table, keys, target)` as a bool array: rows of `target`
    (its rows `at` only, when given) that a row of `table` with an unreadable
    key could belong to. Without such a row (the usual case) no frame is touched."""
    n = len(target) if at is None else len(at)
    if not blind(carnet, table, *keys).any():
        return np.zeros(n, dtype=bool)
    sub = target if at is None else target.iloc[np.asarray(at, dtype=np.int64)]
    return carnet.could_be(table, keys, sub).to_numpy(bool)


def value(x):
    """A plain Python value of an int64 array's item: None for NA_INT."""
    x = int(x)
    return None if x == NA_INT else x


class Columns:
    """Named numpy columns of one length: what the ledger's views are, a frame
    without pandas' fixed cost on every column fetch, filter and build."""

    __slots__ = ("cols", "n")

    def __init__(self, cols: dict[str, np.ndarray], n: int | None = None):
        self.cols = cols
        self.n = n if n is not None else (len(next(iter(cols.values()))) if cols else 0)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.cols[name]

    def __contains__(self, name: str) -> bool:
        return name in self.cols

    def __len__(self) -> int:
        return self.n

    @property
    def empty(self) -> bool:
        """No row at all."""
        return self.n == 0

    def take(self, idx) -> "Columns":
        """The rows `idx` (positions or a bool mask), in that order."""
        cols = {k: v[idx] for k, v in self.cols.items()}
        return Columns(cols, len(next(iter(cols.values()))) if cols else 0)

    def frame(self) -> pd.DataFrame:
        """The columns as a frame (for the few findings whose values pandas shapes, such as dates)."""
        return pd.DataFrame(self.cols)

    def records(self):
        """The rows as dicts of plain Python values (what `checks._util.records` gives for a frame)."""
        if self.n == 0:
            return
        names = list(self.cols)
        for values in zip(*(self.cols[k].tolist() for k in names)):
            yield dict(zip(names, values))


def values_of(carnet: Carnet, table: str, name: str) -> np.ndarray:
    """`df[name].to_numpy()` of `table`, once per carnet: a column of plain
    numpy values (dates as datetime64, NaT where missing; the source rows)."""
    return _memo(carnet, table, ("values", name), lambda df: _read_only(series(carnet, table, name).to_numpy()))
