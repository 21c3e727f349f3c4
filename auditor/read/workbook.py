"""Workbooks (.xlsx/.xlsm, .xlsb, .xls, .ods), read with calamine (fast, no formulas run).

Every cell becomes text here: numbers at Excel's own precision of 15
significant digits (so a computed 0.30000000000000004 reads `0.3`), dates as
ISO text. Typing happens once, in normalisation, for every container.

The container is told by the file's content (a `.xls` that is really an
`.xlsx` is read as what it is); each container has its own guard
(workbook_guard for .xlsx, container_guard for the others) before calamine
sees a byte. A sheet is built column by column: its header row is found
among the first rows (columns.find_header), rows above it are a title, and
trailing totals rows are left out, every one listed in the reading notes.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import os
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import python_calamine

from auditor.discover import SUFFIXES
from auditor.limits import DEFAULT_LIMITS, Limits, size_text
from auditor.read.columns import ColumnMap, ambiguity_problems, find_header, is_totals_label
from auditor.read.raw import (RawCarnet, RawFormula, RawTable, ReadProblem, SourceColumn, canonical_name,
                              column_letter, empty_frame, sha256_of, file_digest)
from auditor.read.workbook_guard import FormulaCell, check_workbook
from auditor.zippkg import Refused
from auditor.names import shown_name


@contextlib.contextmanager
def panic_text_kept_out():
    """calamine turns a Rust panic on a damaged workbook into an exception,
    which the reader reports (an EC00-01 with its reason); but Rust's panic
    hook first prints the panic, and under RUST_BACKTRACE a backtrace, on
    the process's standard error: lines no inspector can act on, around the
    one-line messages. While calamine reads, file descriptor 2 goes to the
    null device (Python's own sys.stderr is flushed either side)."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):   # no descriptor 2 (a windowed process): nothing printed anyway
        yield
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        try:
            sys.stderr.flush()
        except (OSError, ValueError, AttributeError):
            pass
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


# Suffix → container; what decides is the content (see `container_of`).
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


def container_of(data: bytes, suffix: str) -> str:
    """The container a workbook really is, from its first bytes and zip members."""
    if data.startswith(b"\xd0\xcf\x11\xe0"):
        return "xls"
    if data.startswith(b"PK"):
        head = data[-65536:] + data[:4096]   # the central directory sits at the end
        if b"content.xml" in head and b"xl/" not in head:
            return "ods"
        if b"xl/workbook.bin" in head:
            return "xlsb"
        if b"xl/workbook.xml" in head:
            return "xlsx"
    return SUFFIXES.get(suffix.lower(), "xlsx")


def read_workbook(path: Path, limits: Limits = DEFAULT_LIMITS, tables=None,
                  columns: ColumnMap | None = None) -> RawCarnet:
    """Read the sheets whose canonical name is in `tables` (all when None).

    The workbook is checked first (its container's guard): only a workbook
    and sheets that passed are handed to calamine.
    """
    fmt = SUFFIXES.get(path.suffix.lower(), "xlsx")
    try:
        size = path.stat().st_size
        if size > limits.max_file_bytes:
            return _unreadable(path, (file_digest(path) or b"").hex(), "file_too_large",
                               {"file": path.name, "size": size_text(size),
                                "limit": size_text(limits.max_file_bytes)}, fmt)
        with path.open("rb") as fh:
            data = fh.read(limits.max_file_bytes + 1)
    except OSError as exc:
        return _unreadable(path, "", "unreadable", {"reason": f"{exc.strerror or exc}"}, fmt)
    if len(data) > limits.max_file_bytes:   # grew while we looked
        return _unreadable(path, sha256_of([("", data)]), "file_too_large",
                           {"file": path.name, "size": size_text(len(data)),
                            "limit": size_text(limits.max_file_bytes)}, fmt)
    fmt = container_of(data, path.suffix)
    carnet = RawCarnet(path=shown_name(str(path)), format=fmt, sha256=sha256_of([("", data)]))

    def wanted(sheet_name: str) -> bool:
        return tables is None or canonical_name(sheet_name) in tables

    try:
        scans, refused_sheets, data = _guard(fmt, data, wanted, limits)
    except Refused as exc:
        carnet.unreadable = True
        carnet.problems.append(ReadProblem("EC00-01", exc.kind, params=_limit_params(exc.params)))
        return carnet
    try:
        with panic_text_kept_out():
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
        refused = refused_sheets.get(sheet_name)
        scan = scans.get(sheet_name)
        if refused is None and scan is None:
            # calamine found a sheet the check could not match to a part: not read blind.
            refused = Refused("unreadable_table", reason="sheet part not found")
        if refused is not None:
            params = {"table": table, **_limit_params(refused.params)}
            carnet.problems.append(ReadProblem("EC00-01", refused.kind, table=table, params=params))
            continue
        try:
            with panic_text_kept_out():
                sheet = book.get_sheet_by_name(sheet_name)
                rows = sheet.to_python(skip_empty_area=False)
        except BaseException as exc:
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            carnet.problems.append(ReadProblem("EC00-01", "unreadable_table", table=table,
                                               params={"table": table, "reason": _reason(exc)}))
            continue
        rows = with_errors(rows, scan.errors)
        carnet.tables[table] = sheet_table(table, rows, scan.formulas, columns, carnet.problems, sheet_name)
    return carnet


def sheet_values(path: Path, tables) -> list[tuple[str, list[list]]]:
    """(sheet name, rows from A1) of the sheets that are carnet tables, for a
    workbook the reader already accepted (its guard passed): the annotated
    copy of a container openpyxl cannot open. Nothing on a failure."""
    try:
        with panic_text_kept_out():
            book = python_calamine.CalamineWorkbook.from_path(str(path))
            out, seen = [], set()
            for name in book.sheet_names:
                table = canonical_name(name)
                if table in tables and table not in seen:
                    seen.add(table)
                    out.append((name, book.get_sheet_by_name(name).to_python(skip_empty_area=False)))
        return out
    except BaseException as exc:
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return []


def with_errors(rows: list[list], errors) -> list[list]:
    """The grid with each error cell's text put back where calamine left it
    empty (an error value is unreadable, never empty: format v1.2). The
    guard placed every error cell within the sheet's checked extent."""
    if not errors:
        return rows
    rows = list(rows)
    for e in errors:
        while len(rows) < e.row:
            rows.append([])
        row = rows[e.row - 1] = list(rows[e.row - 1])
        if len(row) <= e.col:
            row.extend([""] * (e.col + 1 - len(row)))
        row[e.col] = e.text
    width = max(len(r) for r in rows)   # calamine's grid is rectangular: so stays this one
    return [r if len(r) == width else list(r) + [""] * (width - len(r)) for r in rows]


def _guard(fmt: str, data: bytes, wanted, limits: Limits):
    """(sheet name → scan, sheet name → Refused, the bytes calamine is to read) from the container's guard."""
    if fmt == "xlsx":
        check = check_workbook(data, wanted, limits)
        return check.scans, check.refused_sheets, data
    from auditor.read import container_guard

    check = {"ods": container_guard.check_ods, "xls": container_guard.check_xls,
             "xlsb": container_guard.check_xlsb}[fmt](data, limits)
    if getattr(check, "content", None) is not None:
        from auditor.read.ods_layout import with_content

        data = with_content(data, check.content)   # the same cells, without the whitespace calamine refuses
    if getattr(check, "workbook", None) is not None:
        data = check.workbook   # the same cells, each sheet's declared grid cut to them
    return check.scans, {}, data


def _limit_params(params: dict) -> dict:
    # Counts are shown with thousands separators in both languages' messages.
    return {k: (f"{v:,}".replace(",", "\u202f") if isinstance(v, int) and not isinstance(v, bool) else v)
            for k, v in params.items()}


# How far up from the last data row totals rows are looked for.
_TOTALS_LOOKBACK = 20


def sheet_table(name: str, rows: list[list], formulas: list[FormulaCell] = (), mapping: ColumnMap | None = None,
                problems: list | None = None, sheet: str = "") -> RawTable:
    """One sheet's grid (calamine's rows from A1) → a RawTable, column by column."""
    problems = problems if problems is not None else []
    found = find_header(name, [[cell_text(v) for v in r] for r in rows[:20]], mapping)
    if found is None:
        return RawTable(name, empty_frame([]), letters={}, rows_read=0, sheet=sheet)
    h, match = found
    header = [cell_text(v) for v in rows[h]]
    width = max(len(header), max((len(r) for r in rows), default=0))
    body = rows[h + 1:]
    first_row = h + 2
    n = len(body)
    kept = {**match.keep, **match.extra}   # other named columns stay, as text, under their own name
    by_index = {i: col for col, i in kept.items()}
    # A row whose only content is a formula without saved value is still a
    # row of the carnet (its cells are unreadable, not empty).
    unsaved_rows = {f.row for f in formulas if not f.has_value and f.row >= first_row and f.col in by_index}
    if unsaved_rows:
        # calamine's grid ends at the last cell with a value: extend it to them.
        missing = max(unsaved_rows) - first_row + 1 - n
        body = body + [[""] * width for _ in range(max(missing, 0))]
        n = len(body)
    texts: dict[int, pa.Array] = {}
    nonempty = np.zeros(n, dtype=bool)
    columns = list(zip(*body)) if n else [() for _ in range(width)]
    for i in range(min(width, len(columns))):
        values = columns[i]
        if i in by_index:
            arr = pa.array(list(map(cell_text, values)), type=pa.string())
            texts[i] = arr
            nonempty |= pc.not_equal(pc.utf8_trim_whitespace(arr), "").to_numpy(zero_copy_only=False)
        else:
            nonempty |= np.fromiter((v is not None and v != "" and (type(v) is not str or v.strip() != "")
                                     for v in values), dtype=bool, count=n)
    if unsaved_rows:
        nonempty[[r - first_row for r in unsaved_rows if 0 <= r - first_row < n]] = True
    totals = _totals_rows(body, nonempty)
    keep = nonempty.copy()
    keep[totals] = False
    positions = np.flatnonzero(keep)
    take = pa.array(positions)
    # Handed on as Arrow (normalisation parses it as it is; RawTable.df builds the frame on demand).
    df = pa.table({**{col: texts[i].take(take) for col, i in kept.items()},
                   "_row": pa.array((positions + first_row).astype("int64"))})
    letters = {col: column_letter(i) for col, i in kept.items()}
    data_rows = set((positions + first_row).tolist())   # a formula in a totals row is not the carnet's
    cells = [RawFormula(by_index[f.col], f.row, f"{column_letter(f.col)}{f.row}", f.has_value)
             for f in formulas if f.row in data_rows and f.col in by_index]
    problems.extend(ambiguity_problems(name, header, match, h + 1))
    source_columns = [SourceColumn(header[i], column_letter(i), by_index.get(i) if i in match.keep.values() else None,
                                   match.how.get(by_index.get(i), ""))
                      for i in sorted(set(match.keep.values()) | set(match.ignored)
                                      | {i for ix in match.ambiguous.values() for i in ix})]
    title = [r + 1 for r in range(h) if any(str(v).strip() for v in rows[r] if v is not None)]
    return RawTable(name, df, letters=letters, rows_read=len(positions) + len(totals), header_row=h + 1,
                    formulas=cells, sheet=sheet, source_columns=source_columns, title_rows=title,
                    totals_rows=[int(t) + first_row for t in totals])


def _totals_rows(body: list, nonempty: np.ndarray) -> list[int]:
    """Positions of the trailing totals rows: from the last non-empty row up,
    each whose first non-empty cell says Total / Totaux / Sous-total."""
    out: list[int] = []
    for pos in np.flatnonzero(nonempty)[::-1][:_TOTALS_LOOKBACK]:
        first = next((v for v in body[pos] if v is not None and str(v).strip()), None)
        if first is None or not isinstance(first, str) or not is_totals_label(first):
            break
        out.append(int(pos))
    return sorted(out)


def _reason(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]


def _unreadable(path: Path, sha: str, kind: str, params: dict, fmt: str = "xlsx") -> RawCarnet:
    carnet = RawCarnet(path=shown_name(str(path)), format=fmt, sha256=sha, unreadable=True)
    carnet.problems.append(ReadProblem("EC00-01", kind, params=params))
    return carnet
