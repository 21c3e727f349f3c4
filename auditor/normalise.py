"""Raw text tables → typed tables. Every failure is an EC00 problem, never an
exception: a cell that cannot be parsed becomes <NA> and an EC00-02; a missing
required table or column an EC00-01.

Parsing (text → type) is done here, column by column, vectorised; what a
valid table is (nullability, enumerations, ranges) is the pandera schema's
call (`schemas/`), whose lazy failure cases are mapped to EC00-02 cell by cell.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

import ecarte_schemas
from auditor.carnet import Carnet, Source, Table
from auditor.frames import py, scatter
from auditor.model import Violation
from auditor.money import arrow_strings, cents_from_text
from auditor.read import RawCarnet, RawTable
from auditor.read.raw import RawFormula


@dataclass
class SourceTable(Table):
    """A typed table and what its source showed besides values: the formula
    cells whose saved result was used (reported in the summary)."""

    formulas: tuple[RawFormula, ...] = ()

_INT_FULL = r"^[+-]?\d{1,15}$"
# Digits are ASCII (RE2's \d), as in every numeric cell.
_ISO_PARTS = r"^(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})$"
_FR_PARTS = r"^(?P<d>\d{1,2})/(?P<m>\d{1,2})/(?P<y>\d{4})$"


def text_cells(s: pd.Series) -> tuple[pa.Array, np.ndarray]:
    """A source column as trimmed Arrow text with null for every empty cell,
    and the empty mask: what every parser starts from."""
    arr = pc.utf8_trim_whitespace(arrow_strings(s))
    empty = pc.fill_null(pc.equal(arr, ""), True)
    return pc.if_else(empty, None, arr), empty.to_numpy(zero_copy_only=False)


def ints_from_text(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Integers as the format writes them (`[+-]?digits`, up to 15 digits):
    values (null where null or bad) and whether each cell is one.

    Plain ASCII digits are cast straight away; only the other cells (signs,
    junk) go through the regex."""
    plain = pc.fill_null(pc.and_(pc.ascii_is_decimal(arr), pc.less_equal(pc.utf8_length(arr), 15)), False)
    values = pc.cast(pc.if_else(plain, arr, None), pa.int64())
    ok = plain
    rest = pc.and_(pc.invert(plain), pc.is_valid(arr))
    if pc.any(rest).as_py():
        idx = pc.indices_nonzero(rest)
        text = pc.take(arr, idx)
        good = pc.fill_null(pc.match_substring_regex(text, _INT_FULL), False)
        text = pc.replace_substring_regex(pc.if_else(good, text, None), r"^\+", "")
        values = scatter(values, idx, pc.cast(text, pa.int64()))
        ok = scatter(ok, idx, good)
    return values, ok


def _int64(values: pa.Array, ok: pa.Array, arr: pa.Array, index) -> tuple[pd.Series, np.ndarray]:
    out = pd.Series(values.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get), index=index)
    bad = pc.and_(pc.is_valid(arr), pc.invert(ok)).to_numpy(zero_copy_only=False)
    return out.astype("Int64"), bad


def _as_int(arr: pa.Array, index) -> tuple[pd.Series, np.ndarray]:
    return _int64(*ints_from_text(arr), arr, index)


def _as_amount(arr: pa.Array, index) -> tuple[pd.Series, np.ndarray]:
    return _int64(*cents_from_text(arr), arr, index)


def _as_date(arr: pa.Array, index) -> tuple[pd.Series, np.ndarray]:
    """`2026-03-02` or `2/3/2026`: a real calendar day (31/02 is bad, not
    moved to March as strptime alone would), in Arrow kernels."""
    iso = pc.extract_regex(arr, _ISO_PARTS)
    fr = pc.extract_regex(arr, _FR_PARTS)
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
    return pd.Series(values, index=index), bad


def _as_text(arr: pa.Array, index) -> tuple[pd.Series, np.ndarray]:
    out = pd.Series(arr.to_pandas(types_mapper={pa.string(): pd.StringDtype()}.get), index=index)
    return out.astype("string"), np.zeros(len(arr), dtype=bool)


def _as_enum(arr: pa.Array, index) -> tuple[pd.Series, np.ndarray]:
    # Enumerations are case- and accent-insensitive (`Après` = `apres`): NFKD,
    # then drop the combining marks; an all-ASCII column (the usual) skips both.
    arr = pc.utf8_lower(arr)
    if not pc.all(pc.fill_null(pc.string_is_ascii(arr), True)).as_py():
        arr = pc.replace_substring_regex(pc.utf8_normalize(arr, "NFKD"), r"[^\x00-\x7f]", "")
        arr = pc.if_else(pc.equal(arr, ""), None, arr)
    return _as_text(arr, index)


def _from_series(parser):
    """The parser for a pandas text column (tests and callers outside normalise)."""
    def parse(s: pd.Series) -> tuple[pd.Series, pd.Series]:
        arr, _ = text_cells(s)
        values, bad = parser(arr, s.index)
        return values, pd.Series(bad, index=s.index, dtype=bool)
    return parse


PARSERS = {"int": _as_int, "amount": _as_amount, "date": _as_date, "text": _as_text, "enum": _as_enum}
parse_int, parse_date, parse_text, parse_enum = (_from_series(PARSERS[k]) for k in ("int", "date", "text", "enum"))
EMPTY_DTYPES = {"int": "Int64", "amount": "Int64", "date": "datetime64[us]", "text": "string", "enum": "string"}


def normalise(raw: RawCarnet) -> Carnet:
    """Type the raw text tables of a carnet (money as integer cents): every cell or row that fails is an
    EC00-01/EC00-02 problem of the carnet, never an exception."""
    carnet = Carnet(Source(raw.path, raw.sha256, raw.format), unreadable=raw.unreadable, reading=raw.reading())
    for p in raw.problems:
        carnet.problems.append((p.code, Violation(table=p.table, row=p.row, column=p.column,
                                                  kind=p.kind, params=dict(p.params))))
    if raw.unreadable:
        return carnet
    for name, schema in ecarte_schemas.MODELS.items():
        rt = raw.tables.get(name)
        if rt is None:
            if name in ecarte_schemas.REQUIRED_TABLES and not _table_problem(raw, name):
                carnet.problems.append(("EC00-01", Violation(table=name, kind="missing_table",
                                                             params={"table": name})))
            continue
        carnet.tables[name] = _normalise_table(rt, schema, carnet.problems)
    cover = carnet.tables.get("carnet")
    if cover is not None and len(cover.df) != 1:
        # One finding per row past the first, so each unused row is accounted for.
        extra = [None] if cover.df.empty else [int(r) for r in cover.df["_row"].iloc[1:]]
        for row in extra:
            carnet.problems.append(("EC00-01", Violation(table="carnet", row=row, kind="cover_rows",
                                                         params={"count": len(cover.df)})))
    return carnet


def _table_problem(raw: RawCarnet, name: str) -> bool:
    return any(p.table == name for p in raw.problems)


def _normalise_table(rt: RawTable, schema, problems: list) -> Table:
    df = rt.df
    typed: dict[str, pd.Series] = {}
    present: set[str] = set()
    sources: dict[str, str] = {}
    bad_cells: dict[tuple[str, int], str] = {}    # (field, position) → EC00-02 kind
    filled_from: dict[str, tuple[str, pd.Series]] = {}
    # A formula whose result Excel did not save reads "" but is not empty:
    # never a default, never a value, an EC00-02 of its own.
    unsaved: dict[str, set[int]] = {}
    for f in rt.formulas:
        if not f.has_value:
            unsaved.setdefault(f.column, set()).add(f.row)
    for field, column in schema.columns.items():
        meta = column.metadata or {}
        source = meta.get("source") or field
        kind, default = meta["kind"], meta.get("default")
        sources[field] = source
        if source in df.columns:
            present.add(field)
            arr, empty = text_cells(df[source])
            no_value = (df["_row"].isin(unsaved[source]).to_numpy() if source in unsaved
                        else np.zeros(len(df), dtype=bool))
            empty = empty & ~no_value
            if default is not None and empty.any():
                arr = pc.if_else(pa.array(empty), default, arr)
            values, bad = PARSERS[kind](arr, df.index)
            for pos in bad.nonzero()[0]:
                bad_cells[(field, int(pos))] = "unparseable"
            for pos in no_value.nonzero()[0]:
                bad_cells[(field, int(pos))] = "formula_no_value"
                values.iat[int(pos)] = pd.NA
        else:
            if meta.get("required") and not _ambiguous(problems, rt.name, source):
                problems.append(("EC00-01", Violation(table=rt.name, row=rt.header_row, column=source,
                                                      kind="missing_column",
                                                      params={"table": rt.name, "column": source})))
            empty = np.ones(len(df), dtype=bool)
            cells = pa.nulls(len(df), pa.string()) if default is None else pa.repeat(pa.scalar(default), len(df))
            values, _ = PARSERS[kind](cells, df.index)
        if meta.get("default_from"):
            filled_from[field] = (meta["default_from"], empty)
        typed[field] = values.astype(EMPTY_DTYPES[kind]).reset_index(drop=True)
    out = pd.DataFrame(typed, index=pd.RangeIndex(len(df)))
    for field, (other, empty) in filled_from.items():
        out[field] = out[field].where(~empty, out[other])
    out["_row"] = df["_row"].to_numpy()
    _validate(schema, out, present, bad_cells)
    problems.extend(_cell_problems(rt.name, out, df, sources, bad_cells, rt.letters))
    used = {sources[f] for f in present}
    formulas = tuple(f for f in rt.formulas if f.has_value and f.column in used)
    return SourceTable(rt.name, out, frozenset(present), rt.letters, sources, rows_read=rt.rows_read,
                       rows_left_out=rt.rows_left_out, formulas=formulas)


def _ambiguous(problems: list, table: str, column: str) -> bool:
    # Two source columns for one carnet column: already an EC00-01 naming both.
    return any(code == "EC00-01" and v.kind == "ambiguous_column" and v.table == table and v.column == column
               for code, v in problems)


def _validate(schema, out: pd.DataFrame, present: set[str], bad_cells: dict) -> None:
    """Pandera's lazy failure cases → bad cells (set to <NA> so no rule uses them).

    The parsers already gave every column its declared dtype, so pandera runs
    on a copy of the schema without dtypes, and only when the table may fail:
    a table that certainly passes (the usual case) is not handed to it."""
    if _certainly_valid(schema, out):
        return
    import pandera.pandas as pandera   # only for a table that may fail: its import is a quarter of a second

    try:
        _checking_schema(schema).validate(out, lazy=True)
        return
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
    if schema.checks or schema.unique:
        return False
    for name, column in schema.columns.items():
        if name not in out.columns or column.unique or getattr(column, "regex", False):
            return False
        values = out[name]
        na = values.isna().to_numpy()
        if na.any() and not column.nullable:
            return False
        for check in column.checks:
            if not check.ignore_na:
                return False
            present = values[~na] if na.any() else values
            stats = check.statistics
            if check.name == "isin":
                ok = present.isin(stats["allowed_values"]).all()
            elif check.name == "greater_than_or_equal_to" and pd.api.types.is_integer_dtype(values.dtype):
                ok = (present.to_numpy(dtype=np.int64) >= stats["min_value"]).all()
            else:
                return False
            if not ok:
                return False
    return True


def _cell_problems(name: str, out: pd.DataFrame, raw_df: pd.DataFrame, sources: dict, bad_cells: dict,
                   letters: dict[str, str] | None = None):
    """One EC00-02 per bad cell, located by séance/coup/rang where the row has them."""
    for (field, pos), kind in sorted(bad_cells.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        source = sources[field]
        raw = str(raw_df[source].iat[pos]) if source in raw_df.columns else ""
        where = {k: py(out[k].iat[pos]) if k in out.columns and k != field else None
                 for k in ("seance", "coup", "rang")}
        row = int(out["_row"].iat[pos])
        cell = f"{letters[source]}{row}" if letters and source in letters else ""
        yield ("EC00-02", Violation(
            table=name, row=row, column=source, kind=kind, found=raw, **where,
            params={"table": name, "column": source, "raw": raw, "cell": cell}))
