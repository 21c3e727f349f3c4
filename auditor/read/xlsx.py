"""Excel workbooks (.xlsx/.xlsm), read with calamine (fast, no formulas run).

Every cell becomes text here: numbers at Excel's own precision of 15
significant digits (so a computed 0.30000000000000004 reads `0.3`), dates as
ISO text. Typing happens once, in normalisation, for both containers.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import python_calamine

from auditor.read.raw import RawCarnet, RawTable, ReadProblem, canonical_name, column_letter, frame_from_rows, sha256_of


def cell_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        text = format(value, ".15g")
        return "0" if text == "-0" else text
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def read_workbook(path: Path) -> RawCarnet:
    try:
        data = path.read_bytes()
    except OSError as exc:
        return _unreadable(path, "", f"{exc.strerror or exc}")
    carnet = RawCarnet(path=str(path), format="xlsx", sha256=sha256_of([("", data)]))
    try:
        book = python_calamine.CalamineWorkbook.from_filelike(_bytes_io(data))
        names = list(book.sheet_names)
    except Exception as exc:  # calamine raises several types for damaged files
        carnet.unreadable = True
        carnet.problems.append(ReadProblem("EC00-01", "unreadable", params={"reason": _reason(exc)}))
        return carnet
    for sheet_name in names:
        table = canonical_name(sheet_name)
        if table in carnet.tables:
            continue  # two sheets with one canonical name: the first is the table
        try:
            sheet = book.get_sheet_by_name(sheet_name)
            rows = sheet.to_python(skip_empty_area=False)
        except Exception as exc:
            carnet.problems.append(ReadProblem("EC00-01", "unreadable_table", table=table,
                                               params={"table": table, "reason": _reason(exc)}))
            continue
        carnet.tables[table] = _table(table, rows)
    return carnet


def _table(name: str, rows: list[list]) -> RawTable:
    # Leading empty rows are skipped: the header is the first row with a value.
    start = 0
    while start < len(rows) and not any(str(v).strip() for v in rows[start] if v is not None):
        start += 1
    if start >= len(rows):
        df, keep = frame_from_rows([], [], 2)
        return RawTable(name, df, letters={}, rows_read=0)
    header = [cell_text(v) for v in rows[start]]
    body = [[cell_text(v) for v in row] for row in rows[start + 1:]]
    df, keep = frame_from_rows(header, body, first_row=start + 2)
    letters = {col: column_letter(i) for col, i in keep.items()}
    return RawTable(name, df, letters=letters, rows_read=len(df))


def _bytes_io(data: bytes):
    import io

    return io.BytesIO(data)


def _reason(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]


def _unreadable(path: Path, sha: str, reason: str) -> RawCarnet:
    carnet = RawCarnet(path=str(path), format="xlsx", sha256=sha, unreadable=True)
    carnet.problems.append(ReadProblem("EC00-01", "unreadable", params={"reason": reason}))
    return carnet
