"""Raw text tables → typed tables. Every failure is an EC00 problem, never an
exception: a cell that cannot be parsed becomes <NA> and an EC00-02; a missing
required table or column an EC00-01.

Parsing (text → type) is done here, column by column, vectorised; what a
valid table is (nullability, enumerations, ranges) is the pandera schema's
call (`schemas/`), whose lazy failure cases are mapped to EC00-02 cell by cell.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from functools import partial
from typing import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

import ecarte_schemas
from auditor.carnet import Carnet, Source, Table
from auditor.frames import py
from auditor.model import Violation
from auditor.money import (arrow_strings, cents_from_text, digits_where, plain_cents, plain_then_full, string_array,
                           string_buffers)
from auditor.read import RawCarnet, RawTable
from auditor.read.raw import RawFormula
from auditor.threads import cores as _cores, hand_back_threads_memory


@dataclass
class SourceTable(Table):
    """A typed table and what its source showed besides values: the formula
    cells whose saved result was used (reported in the summary)."""

    formulas: tuple[RawFormula, ...] = ()
    # (frame, {field: its extension array, `_row`: int64}) when the frame holds them as parsed and
    # untouched since: `auditor.arrays` reads them without a Series per column.
    typed: tuple | None = field(default=None, repr=False, compare=False)

_INT_FULL = r"^[+-]?\d{1,15}$"
# A spreadsheet's error values, as Excel (English and French), LibreOffice
# (`Err:502`) and Gnumeric show them and their CSV exports hold them: an
# unreadable cell, never empty, never 0 (format v1.2). The shape (`#`, capital
# letters, `!` or `?`) takes the other languages' and future codes too.
ERROR_VALUE = r"(?i)^(?:#N/A|#N/D|#NV|#DIV/0!|#[A-Z][A-Z0-9_.]*[!?]|#GETTING_DATA|Err:\d{3})$"
# Digits are ASCII (RE2's \d), as in every numeric cell.
_ISO_PARTS = r"^(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})$"
_FR_PARTS = r"^(?P<d>\d{1,2})/(?P<m>\d{1,2})/(?P<y>\d{4})$"
_US_PARTS = r"^(?P<m>\d{1,2})/(?P<d>\d{1,2})/(?P<y>\d{4})$"
# A text date with slashes, for telling its order: the two numbers before the year.
_SLASH_PARTS = r"^\s*(?P<a>\d{1,2})/(?P<b>\d{1,2})/\d{4}\s*$"


def text_cells(s: pd.Series) -> tuple[pa.Array, np.ndarray]:
    """A source column as trimmed Arrow text with null for every empty cell,
    and the empty mask: what every parser starts from."""
    return _trimmed(arrow_strings(s))


def _trimmed(arr: pa.Array) -> tuple[pa.Array, np.ndarray]:
    if isinstance(arr, pa.StringArray) and not arr.null_count and len(arr):
        # Nothing to trim, nothing empty: every cell starts and ends with a
        # printable ASCII character other than the space (never white space).
        offsets, data = string_buffers(arr)
        if np.diff(offsets).min() > 0:
            ends = np.concatenate([data[offsets[:-1]], data[offsets[1:] - 1]])
            if ends.min() >= 0x21 and ends.max() <= 0x7E:
                return arr, np.zeros(len(arr), dtype=bool)
    arr = pc.utf8_trim_whitespace(arr)
    empty = pc.fill_null(pc.equal(arr, ""), True)
    return pc.if_else(empty, None, arr), empty.to_numpy(zero_copy_only=False)


def error_values(chunks: list[pa.StringArray]) -> np.ndarray | None:
    """Which cells hold a spreadsheet error value (after trimming), or None
    when none does. Every error value holds `#` or `Err:`: a column whose
    bytes hold neither (the usual) is cleared with one pass over its buffer."""
    found: list[np.ndarray | None] = []   # None: a chunk without any
    for arr in chunks:
        arr = string_array(arr)
        _, data = string_buffers(arr)
        # `Err:` looked for (in a copy of the bytes, in any case, as ERROR_VALUE
        # reads it) only where a `:` is.
        if not len(data) or not ((data == 0x23).any() or ((data == 0x3A).any() and b"err:" in data.tobytes().lower())):
            found.append(None)
            continue
        hit = pc.fill_null(pc.match_substring_regex(pc.utf8_trim_whitespace(arr), ERROR_VALUE), False)
        found.append(hit.to_numpy(zero_copy_only=False) if hit.true_count else None)
    if all(f is None for f in found):
        return None
    return np.concatenate([np.zeros(len(c), dtype=bool) if f is None else f for c, f in zip(chunks, found)])


def plain_ints(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Integers written as plain ASCII digits (1 to 15, no sign, no space):
    values (0 elsewhere) and which cells they are, straight from the buffers."""
    arr = string_array(arr)
    offsets, data = string_buffers(arr)
    lengths = np.diff(offsets)
    return digits_where(arr, offsets, data, (lengths >= 1) & (lengths <= 15), arr.null_count)


def ints_from_text(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Integers as the format writes them (`[+-]?digits`, up to 15 digits):
    values (null where null or bad) and whether each cell is one.

    Plain ASCII digits are cast straight away; only the other cells (signs,
    junk) go through the regex."""
    return plain_then_full(arr, plain_ints, _regex_ints)


def _regex_ints(text: pa.Array) -> tuple[pa.Array, pa.Array]:
    good = pc.fill_null(pc.match_substring_regex(text, _INT_FULL), False)
    text = pc.replace_substring_regex(pc.if_else(good, text, None), r"^\+", "")
    return pc.cast(text, pa.int64()), good


def _int64(values: pa.Array, ok: pa.Array, arr: pa.Array) -> tuple[pd.arrays.IntegerArray, np.ndarray]:
    known = pc.is_valid(values).to_numpy(zero_copy_only=False)
    data = pc.fill_null(values, 0).to_numpy(zero_copy_only=False, writable=True)
    bad = pc.and_(pc.is_valid(arr), pc.invert(ok)).to_numpy(zero_copy_only=False)
    return pd.arrays.IntegerArray(data, ~known), bad


def _as_int(arr: pa.Array) -> tuple[pd.arrays.IntegerArray, np.ndarray]:
    return _int64(*ints_from_text(arr), arr)


def _as_amount(arr: pa.Array) -> tuple[pd.arrays.IntegerArray, np.ndarray]:
    return _int64(*cents_from_text(arr), arr)


def _as_date(arr: pa.Array, month_first: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """`2026-03-02` or `2/3/2026`: a real calendar day (31/02 is bad, not
    moved to March as strptime alone would), in Arrow kernels. `month_first`:
    the carnet writes its text dates `MM/DD/YYYY`."""
    iso = pc.extract_regex(arr, _ISO_PARTS)
    fr = pc.extract_regex(arr, _US_PARTS if month_first else _FR_PARTS)
    # A struct's fields are "" where the struct is null (no match): masked first.
    iso_ok, fr_ok = pc.is_valid(iso), pc.is_valid(fr)
    parts = {k: pc.cast(pc.coalesce(pc.if_else(iso_ok, iso.field(k), None), pc.if_else(fr_ok, fr.field(k), None)),
                        pa.int64()) for k in ("y", "m", "d")}
    text = pc.binary_join_element_wise(
        pc.utf8_lpad(pc.cast(parts["y"], pa.string()), 4, "0"),
        pc.utf8_lpad(pc.cast(parts["m"], pa.string()), 2, "0"),
        pc.utf8_lpad(pc.cast(parts["d"], pa.string()), 2, "0"), "-")
    stamp = pc.strptime(text, format="%Y-%m-%d", unit="us", error_is_null=True)
    real = pc.and_(pc.and_(pc.equal(pc.year(stamp), parts["y"]), pc.equal(pc.month(stamp), parts["m"])),
                   pc.and_(pc.equal(pc.day(stamp), parts["d"]), pc.greater_equal(parts["y"], 1)))
    stamp = pc.if_else(pc.fill_null(real, False), stamp, None)
    values = pc.fill_null(stamp, 0).cast(pa.int64()).to_numpy().astype("datetime64[us]")
    missing = pc.is_null(stamp).to_numpy(zero_copy_only=False)
    values[missing] = np.datetime64("NaT")
    bad = pc.is_valid(arr).to_numpy(zero_copy_only=False) & missing
    return values, bad


_STRING = pd.StringDtype()


def _as_text(arr: pa.Array) -> tuple[pd.api.extensions.ExtensionArray, np.ndarray]:
    return _STRING.__from_arrow__(arr), np.zeros(len(arr), dtype=bool)


def _as_enum(arr: pa.Array) -> tuple[pd.api.extensions.ExtensionArray, np.ndarray]:
    # Enumerations are case- and accent-insensitive (`Après` = `apres`): NFKD,
    # then drop the combining marks; an all-ASCII column (the usual) skips both,
    # and one already in lower case (bytes all ASCII, none A-Z) is as it is.
    if isinstance(arr, pa.StringArray):
        offsets, data = string_buffers(arr)
        cells = data[offsets[0]:offsets[-1]]
        if not cells.size or (cells.max() < 128 and not ((cells >= 65) & (cells <= 90)).any()):
            return _as_text(arr)
    arr = pc.utf8_lower(arr)
    if not pc.all(pc.fill_null(pc.string_is_ascii(arr), True)).as_py():
        arr = pc.replace_substring_regex(pc.utf8_normalize(arr, "NFKD"), r"[^\x00-\x7f]", "")
        arr = pc.if_else(pc.equal(arr, ""), None, arr)
    return _as_text(arr)


def _from_series(parser):
    """The parser for a pandas text column (tests and callers outside normalise)."""
    def parse(s: pd.Series) -> tuple[pd.Series, pd.Series]:
        arr, _ = text_cells(s)
        values, bad = parser(arr)
        return pd.Series(values, index=s.index), pd.Series(bad, index=s.index, dtype=bool)
    return parse


PARSERS = {"int": _as_int, "amount": _as_amount, "date": _as_date, "text": _as_text, "enum": _as_enum}
parse_int, parse_date, parse_text, parse_enum = (_from_series(PARSERS[k]) for k in ("int", "date", "text", "enum"))
EMPTY_DTYPES = {"int": "Int64", "amount": "Int64", "date": "datetime64[us]", "text": "string", "enum": "string"}


def normalise(raw: RawCarnet, free_raw: bool = False) -> Carnet:
    """Type the raw text tables of a carnet (money as integer cents): every cell or row that fails is an
    EC00-01/EC00-02 problem of the carnet, never an exception.

    `free_raw`: the caller keeps nothing of `raw` (`normalise(read_carnet(…))`):
    each Arrow text column is dropped from it once parsed, the cells a finding
    quotes taken first, so a large table's text and its typed columns are not
    all held at once."""
    carnet = Carnet(Source(raw.path, raw.sha256, raw.format, tuple(raw.files)), unreadable=raw.unreadable, reading=raw.reading())
    for p in raw.problems:
        carnet.problems.append((p.code, Violation(table=p.table, row=p.row, column=p.column,
                                                  kind=p.kind, params=dict(p.params))))
    if raw.unreadable:
        return carnet
    if free_raw:
        # What reading freed (the file's bytes and text, the reader's blocks) is
        # kept by Arrow's pool for Arrow alone; the typed columns come from numpy's.
        pa.default_memory_pool().release_unused()
    order = date_order(raw)
    plain = _plain_readings(raw)
    if order.month_first and carnet.reading is not None:
        carnet.reading["dates"] = {"order": "month_first", "proof": order.proof,
                                   "left_out": order.minority}
    for name, schema in ecarte_schemas.MODELS.items():
        rt = raw.tables.get(name)
        if rt is None:
            if name in ecarte_schemas.REQUIRED_TABLES and not _table_problem(raw, name):
                carnet.problems.append(("EC00-01", Violation(table=name, kind="missing_table",
                                                             params={"table": name})))
            continue
        carnet.tables[name] = _normalise_table(rt, schema, carnet.problems, order, free_raw, plain)
    cover = carnet.tables.get("carnet")
    if cover is not None and len(cover.df) != 1:
        # One finding per row past the first, so each unused row is accounted for.
        extra = [None] if cover.df.empty else [int(r) for r in cover.df["_row"].iloc[1:]]
        for row in extra:
            carnet.problems.append(("EC00-01", Violation(table="carnet", row=row, kind="cover_rows",
                                                         params={"count": len(cover.df)})))
    return carnet


@dataclass
class DateOrder:
    """How a carnet writes its text dates `a/b/YYYY` (format v1.2): day-first
    unless a cell proves month-first (its second number above 12). When cells
    prove both orders, the larger side is the carnet's order and the proving
    cells of the smaller one are unreadable (a tie keeps day-first)."""

    month_first: bool = False
    proof: str = ""          # a cell that proves the order read, `seances.date: 02/13/2026`
    minority: int = 0        # cells proving the other order, each an EC00-02


def _slash_orders(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Which cells can only be day-first (first number above 12) and which
    only month-first (second number above 12).

    Cells written exactly `NN/NN/NNNN` (ASCII digits, the usual) are read from
    the Arrow buffers; only the others go through the regex."""
    arr = string_array(arr)
    n = len(arr)
    offsets, data = string_buffers(arr)
    plain = np.diff(offsets) == 10
    if arr.null_count:
        plain &= pc.is_valid(arr).to_numpy(zero_copy_only=False)
    where = np.flatnonzero(plain)
    day, month = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    if len(where):
        b = data[offsets[where][:, None] + np.arange(10)].astype(np.int64) - 48
        shaped = ((b[:, 2] == -1) & (b[:, 5] == -1)   # `/` is 47
                  & ((b[:, [0, 1, 3, 4, 6, 7, 8, 9]] >= 0) & (b[:, [0, 1, 3, 4, 6, 7, 8, 9]] <= 9)).all(axis=1))
        a, second = b[:, 0] * 10 + b[:, 1], b[:, 3] * 10 + b[:, 4]
        at = where[shaped]
        a, second = a[shaped], second[shaped]
        day[at] = (a > 12) & (second <= 12)
        month[at] = (second > 12) & (a <= 12)
        plain[:] = False
        plain[at] = True
    rest = np.flatnonzero(~plain)
    if len(rest) == n:
        return _regex_slash_orders(arr)
    if len(rest):
        d, m = _regex_slash_orders(pc.take(arr, pa.array(rest)))
        day[rest], month[rest] = d, m
    return day, month


def _regex_slash_orders(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    parts = pc.extract_regex(arr, _SLASH_PARTS)
    ok = pc.is_valid(parts)
    a = pc.cast(pc.if_else(ok, parts.field("a"), None), pa.int64())
    b = pc.cast(pc.if_else(ok, parts.field("b"), None), pa.int64())
    day = pc.fill_null(pc.and_(pc.greater(a, 12), pc.less_equal(b, 12)), False).to_numpy(zero_copy_only=False)
    month = pc.fill_null(pc.and_(pc.greater(b, 12), pc.less_equal(a, 12)), False).to_numpy(zero_copy_only=False)
    return day, month


def _date_columns(raw: RawCarnet):
    """(table, source column, text) of every date column the carnet has."""
    for name, schema in ecarte_schemas.MODELS.items():
        rt = raw.tables.get(name)
        if rt is None:
            continue
        for field, column in schema.columns.items():
            meta = column.metadata or {}
            source = meta.get("source") or field
            if meta["kind"] == "date" and source in rt.columns:
                yield name, source, rt.text(source)


def date_order(raw: RawCarnet) -> DateOrder:
    """The carnet's order of text dates, from every date cell of every table.
    A cell is looked at only when its column holds a `/` at all."""
    day_n = month_n = 0
    day_proof = month_proof = ""
    for table, source, arr in _date_columns(raw):
        _, data = string_buffers(arr)
        if not (data == 0x2F).any():
            continue
        day, month = by_distinct(_slash_orders, arr)
        if day.any() and not day_proof:
            day_proof = f"{table}.{source}: {arr[int(day.argmax())].as_py().strip()}"
        if month.any() and not month_proof:
            month_proof = f"{table}.{source}: {arr[int(month.argmax())].as_py().strip()}"
        day_n += int(day.sum())
        month_n += int(month.sum())
    if month_n and month_n > day_n:
        return DateOrder(True, month_proof, day_n)
    return DateOrder(False, day_proof, month_n)


def _table_problem(raw: RawCarnet, name: str) -> bool:
    return any(p.table == name for p in raw.problems)


def plain_dates(arr: pa.Array, month_first: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Days written exactly `DD/MM/YYYY` or `YYYY-MM-DD` (ASCII digits, no
    space) that are real calendar days of year 1 or later, as int64
    microseconds since the epoch (0 elsewhere), and which cells they are."""
    arr = string_array(arr)
    n = len(arr)
    values, ok = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
    offsets, data = string_buffers(arr)
    ten = np.diff(offsets) == 10
    if arr.null_count:
        ten &= pc.is_valid(arr).to_numpy(zero_copy_only=False)
    where = np.flatnonzero(ten)
    if not len(where):
        return values, ok
    b = data[offsets[where][:, None] + np.arange(10)].astype(np.int64)
    digit = (b >= 48) & (b <= 57)
    b -= 48
    fr = (b[:, 2] == -1) & (b[:, 5] == -1) & digit[:, [0, 1, 3, 4, 6, 7, 8, 9]].all(axis=1)   # `/` is 47
    iso = (b[:, 4] == -3) & (b[:, 7] == -3) & digit[:, [0, 1, 2, 3, 5, 6, 8, 9]].all(axis=1)  # `-` is 45

    def number(*cols):
        out = np.zeros(len(b), dtype=np.int64)
        for c in cols:
            out = out * 10 + b[:, c]
        return out
    first, second = (number(3, 4), number(0, 1)) if month_first else (number(0, 1), number(3, 4))
    d = np.where(fr, first, number(8, 9))
    m = np.where(fr, second, number(5, 6))
    y = np.where(fr, number(6, 7, 8, 9), number(0, 1, 2, 3))
    good = (fr | iso) & (y >= 1) & (m >= 1) & (m <= 12) & (d >= 1) & (d <= 31)
    month = np.where(good, (y - 1970) * 12 + m - 1, 0).astype("datetime64[M]")
    day = month.astype("datetime64[D]") + np.where(good, d - 1, 0).astype("timedelta64[D]")
    good &= day.astype("datetime64[M]") == month   # 31/04 is no day, not 1 May
    values[where[good]] = day[good].astype("datetime64[us]").astype(np.int64)
    ok[where[good]] = True
    return values, ok


def _full_ints(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return _full_of(*ints_from_text(arr), arr)


def _full_cents(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return _full_of(*cents_from_text(arr), arr)


def _full_of(values: pa.Array, ok: pa.Array, arr: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (pc.fill_null(values, 0).to_numpy(), pc.is_valid(values).to_numpy(zero_copy_only=False),
            pc.and_(pc.is_valid(arr), pc.invert(ok)).to_numpy(zero_copy_only=False))


def _full_dates(arr: pa.Array, month_first: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    values, bad = _as_date(arr, month_first)
    known = ~np.isnat(values)
    return np.where(known, values.view(np.int64), 0), known, bad


# The cells written the plain way, read from the Arrow buffers (values as
# int64, ok); every other cell goes through the full parser (values, known, bad).
# (reading, its arguments, a cell's text) → what the reading gives that cell:
# a carnet writes the same few dates on every row. Bounded.
_READ_ONCE: dict[tuple, tuple] = {}
_READ_ONCE_MAX = 1 << 14


def by_distinct(read, arr: pa.Array, *args, repeats: bool = True) -> tuple[np.ndarray, ...]:
    """`read(arr, *args)` for a reading of each cell on its own (numpy arrays,
    one value per cell), each distinct text read once per process: a short
    column (a cover's, a séance's row), whose reading costs mostly the call,
    and, if `repeats`, a column of few distinct texts (a séance's date on each
    of its rows). The texts' readings are spread back to the cells. A column
    with nulls, or long with many distinct texts, is read as it is."""
    arr = string_array(arr)
    if not len(arr) or arr.null_count:
        return read(arr, *args)
    if len(arr) <= _FEW:
        texts, at = arr.to_pylist(), None
    elif repeats:
        encoded = pc.dictionary_encode(arr)
        texts = encoded.dictionary.to_pylist()
        if len(texts) > 2 * _FEW:
            return read(arr, *args)
        at = encoded.indices.to_numpy(zero_copy_only=False)
    else:
        return read(arr, *args)
    # The readings are looked up once into `got`: emptying the cache below
    # (it is full) must not lose those of this column's texts read before.
    got: dict[str, tuple] = {}
    missing = []
    for text in dict.fromkeys(texts):
        reading = _READ_ONCE.get((read, args, text))
        if reading is None:
            missing.append(text)
        else:
            got[text] = reading
    if missing:   # read together: the reading's cost is mostly per call, not per cell
        if len(_READ_ONCE) + len(missing) > _READ_ONCE_MAX:
            _READ_ONCE.clear()
        parts = read(pa.array(missing, pa.string()), *args)
        for i, text in enumerate(missing):
            got[text] = _READ_ONCE[(read, args, text)] = tuple(part[i] for part in parts)
    known = [got[text] for text in texts]
    return tuple(np.array(part) if at is None else np.array(part)[at] for part in zip(*known))


_FEW = 64


def _distinct_dates(arr: pa.Array, month_first: bool = False) -> tuple[np.ndarray, np.ndarray]:
    return by_distinct(plain_dates, arr, month_first)


def _few_ints(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    return by_distinct(plain_ints, arr, repeats=False)


def _few_cents(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    return by_distinct(plain_cents, arr, repeats=False)


_PLAIN = {"int": _few_ints, "amount": _few_cents, "date": _distinct_dates}
_FULL = {"int": _full_ints, "amount": _full_cents, "date": _full_dates}


def _joined(parts) -> tuple[np.ndarray, np.ndarray]:
    parts = list(parts)
    if len(parts) == 1:
        return parts[0]
    return np.concatenate([v for v, _ in parts]), np.concatenate([k for _, k in parts])


def _blank(arr: pa.StringArray) -> np.ndarray:
    """Cells of no character at all (not null)."""
    offsets, _ = string_buffers(arr)
    blank = np.diff(offsets) == 0
    if arr.null_count:
        blank &= pc.is_valid(arr).to_numpy(zero_copy_only=False)
    return blank


def parsed_in_full(kind: str, raw: pa.StringArray, no_value: np.ndarray | None,
                   default: str | None, trimmed: tuple | None = None) -> tuple[object, np.ndarray, np.ndarray]:
    """A source column → (values, bad mask, empty mask) the whole way: trim
    every cell, null the empty ones, put the default in them (not in a formula
    left without a value, which becomes <NA>), parse the column. The reading
    of text and enumerations, and the reference `_parsed` must agree with.
    `trimmed`: `_trimmed(raw)`, if it was made with other columns (`_plain_readings`)."""
    arr, empty = _trimmed(raw) if trimmed is None else (trimmed[0], trimmed[1].copy())
    if no_value is not None:
        empty = empty & ~no_value
    if default is not None and empty.any():
        arr = pc.if_else(pa.array(empty), default, arr)
    values, bad = PARSERS[kind](arr)
    if no_value is not None:
        values = pd.Series(values)
        for pos in no_value.nonzero()[0]:
            values.iat[int(pos)] = pd.NA
        values = values.astype(EMPTY_DTYPES[kind]).array
    return values, bad, empty


def _parsed(kind: str, raw: pa.StringArray | list[pa.StringArray], no_value: np.ndarray | None,
            default: str | None, month_first: bool = False, read: tuple | None = None
            ) -> tuple[pd.arrays.IntegerArray | np.ndarray, np.ndarray, np.ndarray]:
    """A numeric or date source column → (values, bad mask, empty mask), as
    trimming every cell, null for the empty ones, then the column parser
    would give them: only the cells the plain reading leaves (empty, spaced,
    signed, grouped, junk) are trimmed and parsed in full. Empty cells take
    the default's value (unless a formula left them without one). Values:
    Int64, or datetime64[us] with NaT for dates. `raw`: one array, or the
    chunks of one column. `read`: the plain reading of `raw` (values, known),
    if it was read with other columns (`_plain_readings`)."""
    chunks = raw if isinstance(raw, list) else [raw]
    n = sum(len(c) for c in chunks)
    plain, full = _PLAIN[kind], _FULL[kind]
    if month_first:
        plain, full = partial(_distinct_dates, month_first=True), partial(_full_dates, month_first=True)
    if read is not None:   # this column's own arrays: the cells below are written into them
        values, known = read[0].copy(), read[1].copy()
    else:
        values, known = _joined(plain(c) for c in chunks)
    bad = np.zeros(n, dtype=bool)
    empty = np.zeros(n, dtype=bool)
    rest = ~known
    if rest.any():
        blank = np.concatenate([_blank(c) for c in chunks]) if len(chunks) > 1 else _blank(chunks[0])
        empty |= rest & blank
        hard = rest & ~blank
        if hard.any():
            idx = np.flatnonzero(hard)
            cells = pc.take(chunks[0] if len(chunks) == 1 else pa.chunked_array(chunks, pa.string()), pa.array(idx))
            arr, hard_empty = _trimmed(string_array(cells))
            empty[idx] = hard_empty
            values[idx], known[idx], bad[idx] = full(arr)
    if no_value is not None:
        empty &= ~no_value
    if default is not None and empty.any():
        v, k, b = full(pa.array([default], type=pa.string()))
        values[empty], known[empty], bad[empty] = v[0], k[0], b[0]
    if no_value is not None:
        known &= ~no_value
    if kind == "date":
        values = values.view("datetime64[us]")
        values[~known] = np.datetime64("NaT")
        return values, bad, empty
    return pd.arrays.IntegerArray(values, ~known), bad, empty


# Columns of at most this many rows are read the plain way together (`_plain_readings`).
PLAIN_TOGETHER_ROWS = 4096


def _plain_readings(raw: RawCarnet) -> dict[tuple[str, str, str], tuple]:
    """The first step of reading every short integer, amount, text and
    enumeration source column of the carnet, the columns of a kind joined
    into one array and read in one call: (table, source, kind) → the plain
    reading (values, known) of an integer or amount column (`_parsed`), the
    trimmed text (Arrow text, empty mask) of a text or enumeration column
    (`parsed_in_full`, kind "trim"), then the column's text chunks. A small
    carnet has some forty such columns of a few hundred cells, whose reading
    costs mostly the calls (tens of numpy and Arrow steps each); each cell's
    reading depends on that cell alone. Long columns are read on their own:
    their calls cost little beside their cells, and joining them would copy
    their text."""
    columns: dict[str, dict[tuple[str, str, str], list[pa.StringArray]]] = {kind: {} for kind in _TOGETHER}
    for name, schema in ecarte_schemas.MODELS.items():
        rt = raw.tables.get(name)
        if rt is None or rt.num_rows > PLAIN_TOGETHER_ROWS:
            continue
        present = set(rt.columns)
        for field_name, column in schema.columns.items():
            meta = column.metadata or {}
            source, kind = meta.get("source") or field_name, _JOINED_AS.get(meta["kind"])
            if kind is not None and source in present:
                columns[kind][(name, source, kind)] = rt.text_chunks(source)
    out: dict[tuple[str, str, str], tuple] = {}
    for kind, found in columns.items():
        if len(found) < 2:
            continue
        arrays = [string_array(c) for chunks in found.values() for c in chunks]
        first, mask = _TOGETHER[kind](pa.concat_arrays(arrays))
        start = 0
        for key, chunks in found.items():
            end = start + sum(len(c) for c in chunks)
            part = first.slice(start, end - start) if isinstance(first, pa.Array) else first[start:end]
            out[key] = (part, mask[start:end], chunks)
            start = end
    return out


_TOGETHER = {"int": plain_ints, "amount": plain_cents, "trim": lambda arr: _trimmed(arr)}
_JOINED_AS = {"int": "int", "amount": "amount", "text": "trim", "enum": "trim"}

# Tables of this many rows or more drop each text column once parsed (normalise's `free_raw`).
FREE_ROWS = 65536


# A table this long has its columns parsed on several threads at once: the
# work is Arrow's casts and numpy's loops over whole columns, which let go of
# the GIL (a million stakes' seven columns: 0.09–0.15 s on one thread,
# 0.05–0.08 s on two). Each column is taken, and its text dropped, in the
# schema's order as soon as it is parsed.
PARALLEL_ROWS = 65536


@dataclass(frozen=True, eq=False)
class _ColumnJob:
    """What parsing one source column takes (`_parsed`, `parsed_in_full`)."""

    kind: str
    raw: object
    no_value: np.ndarray | None
    default: str | None
    month_first: bool
    first: tuple | None

    def parse(self) -> tuple[object, np.ndarray, np.ndarray]:
        if self.kind in _PLAIN:
            return _parsed(self.kind, self.raw, self.no_value, self.default, self.month_first, self.first)
        return parsed_in_full(self.kind, self.raw, self.no_value, self.default, self.first)


def _parse_columns(jobs: dict[str, _ColumnJob], threads: bool) -> Iterator[tuple]:
    """(values, bad, empty) of each job, in the jobs' order, each as soon as it
    is parsed: one after the other when asked for (so a column's text can be
    dropped before the next is parsed), or with `threads` on as many threads
    as this process may use cores, at most one per column. The same answers
    either way: each column's parse reads only its own cells. `jobs` is
    emptied as they are handed out: a job done holds no text any longer."""
    workers = min(len(jobs), _cores()) if threads else 1
    if workers < 2:
        for field in list(jobs):
            yield jobs.pop(field).parse()
        return
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(workers, thread_name_prefix="ecarte-audit-normalise")
    try:
        futures = []
        try:
            for field in list(jobs):
                futures.append(pool.submit(jobs[field].parse))
                del jobs[field]
        except RuntimeError:
            pass   # no thread could be started (a limit on the process's threads): the rest one by one
        for i, future in enumerate(futures):
            futures[i] = None
            yield future.result()
        for field in list(jobs):
            yield jobs.pop(field).parse()
    finally:
        # The last result taken, the caller closes this: the threads end, then
        # their memory is handed back. Stopped before (a parse that raised, the
        # carnet's time limit, Ctrl-C): the columns not begun are not parsed.
        pool.shutdown(wait=True, cancel_futures=True)
        hand_back_threads_memory()


def _normalise_table(rt: RawTable, schema, problems: list, order: DateOrder | None = None,
                     free_raw: bool = False, plain: dict | None = None) -> Table:
    n = rt.num_rows
    columns = set(rt.columns)
    rows = rt.row_numbers()
    # Schema-wide checks may fail on any row: then every text column stays for pandera's cases.
    # A small table's text is not worth the bookkeeping.
    free = (free_raw and n >= FREE_ROWS and isinstance(rt.data, pa.Table)
            and not (schema.checks or schema.unique))
    quoted: dict[tuple[str, int], str] = {}    # (source, position) → the cell's text, of dropped columns
    checked: set[str] = set()                  # fields _column_valid has passed (as validated: not filled)
    index = pd.RangeIndex(n)
    typed: dict[str, pd.Series] = {}
    present: set[str] = set()
    defaulted: set[str] = set()                # absent, read as the format's default
    ambiguous: set[str] = set()                # two source columns for it: unknown
    sources: dict[str, str] = {}
    bad_cells: dict[tuple[str, int], str] = {}    # (field, position) → EC00-02 kind
    filled_from: dict[str, tuple[str, np.ndarray]] = {}
    # A formula whose result Excel did not save reads "" but is not empty:
    # never a default, never a value, an EC00-02 of its own.
    unsaved: dict[str, set[int]] = {}
    for f in rt.formulas:
        if not f.has_value:
            unsaved.setdefault(f.column, set()).add(f.row)
    # The source columns present, parsed first (on several threads for a long
    # table: `_parse_columns`), then taken in the schema's order below.
    # Per field of the schema: its column, metadata, source column, kind and default.
    specs = [(field, column, meta, meta.get("source") or field, meta["kind"], meta.get("default"))
             for field, column in schema.columns.items() for meta in (column.metadata or {},)]
    jobs: dict[str, _ColumnJob] = {}
    masks: dict[str, tuple] = {}
    for field, column, meta, source, kind, default in specs:
        if source not in columns:
            continue
        # The first step of reading it, if it was taken with the carnet's other short columns.
        first = plain.get((rt.name, source, _JOINED_AS.get(kind))) if plain else None
        raw = first[2] if first is not None else rt.text_chunks(source) if kind in _PLAIN else rt.text(source)
        formula = np.isin(rows, list(unsaved[source])) if source in unsaved else None
        # An error value is no value either: not empty (no default), <NA>.
        errors = None if rt.no_error_values else error_values(raw if isinstance(raw, list) else [raw])
        month_first = kind == "date" and order is not None and order.month_first
        wrong_order = None
        if kind == "date" and order is not None and order.minority:
            # Cells that can only be read in the carnet's other order: unreadable.
            day, month = by_distinct(_slash_orders, rt.text(source))
            other = day if order.month_first else month
            wrong_order = other if other.any() else None
        no_value = None
        for mask in (formula, errors, wrong_order):
            if mask is not None:
                no_value = mask if no_value is None else (no_value | mask)
        jobs[field] = _ColumnJob(kind, raw, no_value, default, month_first, first)
        masks[field] = (formula, errors, wrong_order)
    raw = first = None   # each job holds its column's text: a dropped column's is then let go
    # Closed however the loop ends (a defect, the time limit, Ctrl-C): the
    # parse's threads are stopped and their memory handed back (`_parse_columns`).
    with contextlib.closing(_parse_columns(jobs, threads=n >= PARALLEL_ROWS)) as parsed:
        for field, column, meta, source, kind, default in specs:
            sources[field] = source
            if source in columns:
                present.add(field)
                values, bad, empty = next(parsed)
                formula, errors, wrong_order = masks.pop(field)
                # The most telling reason wins for a cell: formula, error value, order.
                for mask, why in ((bad, "unparseable"), (formula, "formula_no_value"), (errors, "error_value"),
                                  (wrong_order, "date_order")):
                    if mask is not None:
                        for pos in mask.nonzero()[0]:
                            bad_cells[(field, int(pos))] = why
                # A column filled from another is validated as filled (below): it stays.
                if free and not meta.get("default_from") and _column_valid(column, values):
                    checked.add(field)
                    # Nothing pandera could add in this column: its findings are the cells above.
                    quoted.update(_texts(rt, source, (bad, formula, errors, wrong_order)))
                    rt.drop_column(source)
                    # Arrow's pool keeps freed pages for itself; the typed columns come from numpy's.
                    pa.default_memory_pool().release_unused()
            else:
                if _ambiguous(problems, rt.name, source):
                    # Two source columns for it, neither read: its values are unknown,
                    # never its default (carnet-format.md: "never a guess"), and the
                    # rules that read it are not checked (`Carnet.has`).
                    ambiguous.add(field)
                    default = None
                elif meta.get("required"):
                    problems.append(("EC00-01", Violation(table=rt.name, row=rt.header_row, column=source,
                                                          kind="missing_column",
                                                          params={"table": rt.name, "column": source})))
                elif default is not None or meta.get("default_from"):
                    defaulted.add(field)
                empty = np.ones(n, dtype=bool)
                if kind in ("int", "amount"):
                    cells = pa.nulls(n, pa.string()) if default is None else pa.repeat(pa.scalar(default), n)
                    values = (pd.arrays.IntegerArray(np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool))
                              if default is None else _parsed(kind, cells, None, None)[0])
                else:
                    cells = pa.nulls(n, pa.string()) if default is None else pa.repeat(pa.scalar(default), n)
                    values, _ = PARSERS[kind](cells)
            if meta.get("default_from") and field not in ambiguous:
                filled_from[field] = (meta["default_from"], empty)
            typed[field] = values
    for field, (other, empty) in filled_from.items():
        typed[field] = _filled(typed[field], empty, typed[other])
    # The arrays are this table's own: the frame takes them as they are.
    row_numbers = np.array(rows, dtype=np.int64)
    out = pd.DataFrame({**typed, "_row": row_numbers}, index=index, copy=False)
    untouched = _validate(schema, out, present, bad_cells, typed, checked)
    problems.extend(_cell_problems(rt.name, out, rt, sources, bad_cells, rt.letters, columns, quoted))
    used = {sources[f] for f in present}
    formulas = tuple(f for f in rt.formulas if f.has_value and f.column in used)
    # The frame holds the extension arrays as they are (numpy dates become DatetimeArray: left out).
    kept = ({**{f: v for f, v in typed.items() if isinstance(v, pd.api.extensions.ExtensionArray)}, "_row": row_numbers}
            if untouched else None)
    return SourceTable(rt.name, out, frozenset(present), rt.letters, sources, rows_read=rt.rows_read,
                       rows_left_out=rt.rows_left_out, defaulted=frozenset(defaulted), ambiguous=frozenset(ambiguous),
                       formulas=formulas, typed=(out, kept) if kept else None)


def _texts(rt: RawTable, source: str, masks) -> dict[tuple[str, int], str]:
    """The text of the cells of `source` that any of `masks` marks, as rt.cell gives it."""
    marked = None
    for mask in masks:
        if mask is not None:
            marked = mask if marked is None else (marked | mask)
    at = np.flatnonzero(marked) if marked is not None else ()
    if not len(at):
        return {}
    return {(source, int(pos)): rt.cell(source, int(pos)) for pos in at}


def _ambiguous(problems: list, table: str, column: str) -> bool:
    # Two source columns for one carnet column: already an EC00-01 naming both.
    return any(code == "EC00-01" and v.kind in ("ambiguous_column", "ambiguous_mapping") and v.table == table and v.column == column
               for code, v in problems)


def _filled(values, empty: np.ndarray, other):
    """`values` where the cell was not empty, `other`'s value where it was
    (Series.where on the two columns, in numpy for two Int64 columns)."""
    if isinstance(values, pd.arrays.IntegerArray) and isinstance(other, pd.arrays.IntegerArray):
        data = np.where(empty, other.to_numpy(dtype=np.int64, na_value=0), values.to_numpy(dtype=np.int64, na_value=0))
        return pd.arrays.IntegerArray(data, np.where(empty, other.isna(), values.isna()))
    return pd.Series(values).where(~empty, pd.Series(other)).array


def _validate(schema, out: pd.DataFrame, present: set[str], bad_cells: dict, arrays: dict | None = None,
              checked: set[str] = frozenset()) -> bool:
    """Pandera's lazy failure cases → bad cells (set to <NA> so no rule uses
    them); False when pandera was asked (the frame may have changed).

    The parsers already gave every column its declared dtype, so pandera runs
    on a copy of the schema without dtypes, and only when the table may fail:
    a table that certainly passes (the usual case) is not handed to it.
    `arrays`: the frame's columns as arrays, when the caller has them;
    `checked`: those of them already found valid."""
    if _columns_valid(schema, arrays, checked) if arrays is not None else _certainly_valid(schema, out):
        return True
    import pandera.pandas as pandera   # only for a table that may fail: its import is a quarter of a second

    try:
        _checking_schema(schema).validate(out, lazy=True)
        return True
    except pandera.errors.SchemaErrors as exc:
        cases = exc.failure_cases
    cases = cases[cases["index"].notna() & cases["column"].notna()]
    for column, check, idx in zip(cases["column"], cases["check"], cases["index"]):
        pos = int(idx)
        if column not in present or (column, pos) in bad_cells:
            continue  # already an EC00-01 (missing column) or an unparseable cell
        bad_cells[(column, pos)] = ("missing" if check == "not_nullable"
                                    else "enum" if str(check).startswith("isin") else "range")
        out.at[pos, column] = pd.NA
    return False


_CHECKING: dict[int, tuple] = {}


def _checking_schema(schema):
    """The schema without its dtypes, built once per process (schemas are not
    hashable: kept by identity, with the schema itself so the id stays its own)."""
    entry = _CHECKING.get(id(schema))
    if entry is None or entry[0] is not schema:
        entry = _CHECKING[id(schema)] = (schema, schema.pandera().update_columns(
            {name: {"dtype": None} for name in schema.columns}))
    return entry[1]


def _certainly_valid(schema, out: pd.DataFrame) -> bool:
    """True when pandera would find nothing: every non-nullable column full,
    every check of the kinds the schemas use (isin, ge) passed. Any other
    check, or any doubt, leaves the call to pandera."""
    return _columns_valid(schema, {name: out[name].array for name in schema.columns if name in out.columns})


def _columns_valid(schema, columns: dict, checked: set[str] = frozenset()) -> bool:
    """_certainly_valid on the columns as arrays (pandas extension arrays or
    numpy), without building a Series per column."""
    if schema.checks or schema.unique:
        return False
    return all(name in checked or _column_valid(column, columns.get(name)) for name, column in schema.columns.items())


def _column_valid(column, values) -> bool:
    """One column's part of _columns_valid: pandera would find nothing in it
    (its own checks are all it is held to, besides the schema's)."""
    if values is None or column.unique or getattr(column, "regex", False):
        return False
    if isinstance(values, np.ndarray):
        values = pd.array(values, copy=False)
    # An Int64 column's own mask and data, read as they are (isna and to_numpy copy them).
    masked = isinstance(values, pd.arrays.IntegerArray)
    na = values._mask if masked else values.isna()
    if na.any() and not column.nullable:
        return False
    for check in column.checks:
        if not check.ignore_na:
            return False
        stats = check.statistics
        if check.name == "greater_than_or_equal_to" and masked:
            if not ((values._data >= stats["min_value"]) | na).all():
                return False
            continue
        if check.name == "isin" and isinstance(values, pd.arrays.ArrowStringArray):
            ok = _all_in(values.__arrow_array__(), stats["allowed_values"])
            if not ok:
                return False
            continue
        present = values[~na] if na.any() else values
        if check.name == "isin":
            ok = present.isin(stats["allowed_values"]).all()
        elif check.name == "greater_than_or_equal_to" and pd.api.types.is_integer_dtype(values.dtype):
            ok = (present.to_numpy(dtype=np.int64) >= stats["min_value"]).all()
        else:
            return False
        if not ok:
            return False
    return True


def _all_in(chunks: pa.ChunkedArray, allowed) -> bool:
    """Every non-null cell is one of `allowed`: `isin(allowed).all()` on the
    non-null cells, each distinct text compared once. An enumeration's column
    holds a handful of texts: one hash pass over it (a million stakes' `cote`:
    some 10 ms), where comparing cell by cell made column-long masks and
    gathers, each fresh memory touched for the first time (50–60 ms in the
    audit's process). Texts Arrow cannot compare with `allowed`: not
    certainly valid, pandera decides."""
    try:
        distinct = pc.unique(chunks).drop_null()
        return bool(pc.all(pc.is_in(distinct, pa.array(list(allowed), distinct.type)), min_count=0).as_py())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return False


def _cell_problems(name: str, out: pd.DataFrame, rt: RawTable, sources: dict, bad_cells: dict,
                   letters: dict[str, str] | None = None, columns: set | None = None, quoted: dict | None = None):
    """One EC00-02 per bad cell, located by séance/coup/rang where the row has them.
    `columns`: the table's source columns as read; `quoted`: the text of the
    bad cells of the columns dropped since."""
    columns = set(rt.columns) if columns is None else columns
    quoted = quoted or {}
    for (field, pos), kind in sorted(bad_cells.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        source = sources[field]
        raw = quoted[(source, pos)] if (source, pos) in quoted else rt.cell(source, pos) if source in columns else ""
        where = {k: py(out[k].iat[pos]) if k in out.columns and k != field else None
                 for k in ("seance", "coup", "rang")}
        row = int(out["_row"].iat[pos])
        cell = f"{letters[source]}{row}" if letters and source in letters else ""
        yield ("EC00-02", Violation(
            table=name, row=row, column=source, kind=kind, found=raw, **where,
            params={"table": name, "column": source, "raw": raw, "cell": cell}))
