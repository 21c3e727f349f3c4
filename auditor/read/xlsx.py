"""Excel workbooks (.xlsx/.xlsm), read with calamine (fast, no formulas run).

Every cell becomes text here: numbers at Excel's own precision of 15
significant digits (so a computed 0.30000000000000004 reads `0.3`), dates as
ISO text. Typing happens once, in normalisation, for both containers.
"""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path

import python_calamine

from auditor.limits import DEFAULT_LIMITS, Limits, size_text
from auditor.read.raw import (RawCarnet, RawFormula, RawTable, ReadProblem, canonical_name, column_letter,
                              frame_from_rows, sha256_of, file_digest)
from auditor.read.workbook_guard import FormulaCell, Refused, check_workbook


# Carnets repeat the same numbers (stakes, séance and coup numbers): their
# text is formatted once. Bounded, so a hostile sheet cannot grow it forever.
_NUMBER_TEXT: dict[float, str] = {}
_NUMBER_TEXT_MAX = 100_000


def cell_text(value) -> str:
    """A workbook cell's value as the text the normaliser parses (numbers at Excel's 15-digit precision)."""
    kind = type(value)
    if kind is float:
        text = _NUMBER_TEXT.get(value)
        if text is None:
            text = format(value, ".15g")
            text = "0" if text == "-0" else text
            if len(_NUMBER_TEXT) < _NUMBER_TEXT_MAX:
                _NUMBER_TEXT[value] = text
        return text
    if kind is int:
        return str(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return cell_text(float(value))
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def read_workbook(path: Path, limits: Limits = DEFAULT_LIMITS, tables=None) -> RawCarnet:
    """Read the sheets whose canonical name is in `tables` (all when None).

    The workbook is checked first (workbook_guard): only a workbook and
    sheets that passed are handed to calamine.
    """
    try:
        size = path.stat().st_size
        if size > limits.max_file_bytes:
            return _unreadable(path, (file_digest(path) or b"").hex(), "file_too_large",
                               {"file": path.name, "size": size_text(size),
                                "limit": size_text(limits.max_file_bytes)})
        with path.open("rb") as fh:
            data = fh.read(limits.max_file_bytes + 1)
    except OSError as exc:
        return _unreadable(path, "", "unreadable", {"reason": f"{exc.strerror or exc}"})
    if len(data) > limits.max_file_bytes:   # grew while we looked
        return _unreadable(path, sha256_of([("", data)]), "file_too_large",
                           {"file": path.name, "size": size_text(len(data)),
                            "limit": size_text(limits.max_file_bytes)})
    carnet = RawCarnet(path=str(path), format="xlsx", sha256=sha256_of([("", data)]))

    def wanted(sheet_name: str) -> bool:
        return tables is None or canonical_name(sheet_name) in tables

    try:
        check = check_workbook(data, wanted, limits)
    except Refused as exc:
        carnet.unreadable = True
        carnet.problems.append(ReadProblem("EC00-01", exc.kind, params=_limit_params(exc.params)))
        return carnet
    try:
        book = python_calamine.CalamineWorkbook.from_filelike(io.BytesIO(data))
        names = list(book.sheet_names)
    except BaseException as exc:  # calamine raises several types, a Rust panic among them
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        carnet.unreadable = True
        carnet.problems.append(ReadProblem("EC00-01", "unreadable", params={"reason": _reason(exc)}))
        return carnet
    for sheet_name in names:
        table = canonical_name(sheet_name)
        if table in carnet.tables or not wanted(sheet_name) or any(p.table == table for p in carnet.problems):
            continue  # two sheets with one canonical name: the first is the table
        refused = check.refused_sheets.get(sheet_name)
        scan = check.scans.get(sheet_name)
        if refused is None and scan is None:
            # calamine found a sheet the check could not match to a part: not read blind.
            refused = Refused("unreadable_table", reason="sheet part not found")
        if refused is not None:
            params = {"table": table, **_limit_params(refused.params)}
            carnet.problems.append(ReadProblem("EC00-01", refused.kind if refused.kind != "unreadable_table"
                                               else "unreadable_table", table=table, params=params))
            continue
        try:
            sheet = book.get_sheet_by_name(sheet_name)
            rows = sheet.to_python(skip_empty_area=False)
        except BaseException as exc:
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            carnet.problems.append(ReadProblem("EC00-01", "unreadable_table", table=table,
                                               params={"table": table, "reason": _reason(exc)}))
            continue
        carnet.tables[table] = _table(table, rows, scan.formulas)
    return carnet


def _limit_params(params: dict) -> dict:
    # Counts are shown with thousands separators in both languages' messages.
    return {k: (f"{v:,}".replace(",", "\u202f") if isinstance(v, int) and not isinstance(v, bool) else v)
            for k, v in params.items()}


def _table(name: str, rows: list[list], formulas: list[FormulaCell] = ()) -> RawTable:
    # Leading empty rows are skipped: the header is the first row with a value.
    start = 0
    while start < len(rows) and not any(str(v).strip() for v in rows[start] if v is not None):
        start += 1
    if start >= len(rows):
        df, keep = frame_from_rows([], [], 2)
        return RawTable(name, df, letters={}, rows_read=0)
    header = [cell_text(v) for v in rows[start]]
    body = [[cell_text(v) for v in row] for row in rows[start + 1:]]
    first_row = start + 2
    # A row whose only content is a formula without saved value is still a
    # row of the carnet (its cells are unreadable, not empty).
    unsaved_rows = {f.row for f in formulas if not f.has_value and f.row >= first_row
                    and f.col < len(header) and str(header[f.col]).strip()}
    if unsaved_rows:
        # calamine's grid ends at the last cell with a value: extend it to them.
        missing = max(unsaved_rows) - first_row + 1 - len(body)
        body.extend([] for _ in range(max(missing, 0)))
    df, keep = frame_from_rows(header, body, first_row=first_row, keep_rows=unsaved_rows)
    letters = {col: column_letter(i) for col, i in keep.items()}
    by_index = {i: col for col, i in keep.items()}
    cells = [RawFormula(by_index[f.col], f.row, f"{column_letter(f.col)}{f.row}", f.has_value)
             for f in formulas if f.row >= first_row and f.col in by_index]
    return RawTable(name, df, letters=letters, rows_read=len(df), header_row=start + 1, formulas=cells)


def _reason(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]


def _unreadable(path: Path, sha: str, kind: str, params: dict) -> RawCarnet:
    carnet = RawCarnet(path=str(path), format="xlsx", sha256=sha, unreadable=True)
    carnet.problems.append(ReadProblem("EC00-01", kind, params=params))
    return carnet
