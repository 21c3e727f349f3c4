"""The cells an .xlsx sheet declares, before calamine allocates its grid.

calamine allocates a sheet's grid from A1 to its farthest cell: a cell at
XFD1048576 holding a value would cost the whole grid (the process aborts, no
exception). So each sheet that holds a carnet table is scanned here for its
extent (checked against the limits), duplicate cells, and its formulas and
whether their value was saved. The scan is numpy over the bytes for the
plain layout every spreadsheet program writes, a streaming parse otherwise.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field

import numpy as np
from defusedxml import DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden
from defusedxml.ElementTree import iterparse as safe_iterparse

from auditor.limits import Limits
from auditor.read.raw import column_letter
from auditor.zippkg import Refused
from auditor.read.xml_prolog import _local


@dataclass
class FormulaCell:
    """A formula cell of a sheet, and whether Excel saved its result."""

    row: int            # 1-based, as Excel shows it
    col: int            # 0-based
    has_value: bool     # Excel saved the formula's result


@dataclass
class ErrorCell:
    """A cell holding a spreadsheet error value (`#REF!`, `Err:502`…).

    calamine hands such a cell over as an empty one (or, for an .ods, as the
    empty text LibreOffice stores beside it): the guard finds its text, which
    the reader puts back in the grid, so the cell is unreadable, never empty."""

    row: int            # 1-based, as the program shows it
    col: int            # 0-based
    text: str           # the error value as the program shows it


@dataclass
class SheetScan:
    """What one pass over a sheet's XML found: its extent (cells holding a
    value or a formula, not cells only formatted), formulas and error cells."""

    max_row: int = 0                    # 1-based; 0 = no cell
    max_col: int = 0                    # 1-based; 0 = no cell
    formulas: list[FormulaCell] = field(default_factory=list)
    errors: list[ErrorCell] = field(default_factory=list)


_CELL_REF = re.compile(r"([A-Za-z]*)([0-9]+)")
# A prefixed `c` or `f` element (`<x:c …>`): calamine matches local names, so
# such a sheet takes the exact scan. `:` is rare in a sheet, so this is quick.
_PREFIXED = re.compile(rb":[cf][\s/>]")
_AFTER_NAME = np.frombuffer(b" \t\r\n>/", dtype=np.uint8)   # what may follow an element name
_CANONICAL = np.frombuffer(b' r="', dtype=np.uint8)
_WINDOW = 11   # up to 3 letters, 7 digits and the closing quote


def scan_sheet(body: bytes, limits: Limits) -> SheetScan:
    """The cells a sheet declares: their extent against the limits, no
    duplicate, and its formulas. Fast (numpy) for the plain layout every
    spreadsheet program writes; exact (a streaming parse) for anything else
    and for sheets with formulas, so ordinary workbooks pay little."""
    scan = _scan_plain(body)
    if scan is None:
        scan = _scan_exact(body)
    check_extent(scan, limits)
    return scan


def check_extent(scan: SheetScan, limits: Limits) -> None:
    """A sheet's grid (the header row included) against the limits, whatever its container."""
    if scan.max_row > limits.max_rows + 1:
        raise Refused("too_many_rows", rows=scan.max_row - 1, limit=limits.max_rows)
    if scan.max_col > limits.max_columns:
        raise Refused("too_many_columns", columns=scan.max_col, limit=limits.max_columns)
    if scan.max_row * scan.max_col > limits.max_cells:
        raise Refused("too_many_cells", cells=scan.max_row * scan.max_col, limit=limits.max_cells)


def _scan_plain(body: bytes) -> SheetScan | None:
    """Read every cell reference at once with numpy, when every `c` element
    opens with `r="…"`, none is prefixed and there is no formula. None for
    anything else: the exact scan then decides."""
    if _PREFIXED.search(body):
        return None
    arr = np.frombuffer(body, dtype=np.uint8)
    if b"<c" in body[-32:] or b"<f" in body[-32:]:
        return None   # an element cut by the end of the part: let the parser judge
    if b"<f" in body or b't="e"' in body:
        return None   # formulas, error cells: the exact scan finds them and their values
    body_arr = arr[:-32]
    cells = np.flatnonzero((body_arr == ord("<")) & (arr[1:-31] == ord("c")))
    cells = cells[np.isin(arr[cells + 2], _AFTER_NAME)]
    if len(cells) == 0:
        return SheetScan()
    head = np.stack([arr[cells + 2 + i] for i in range(len(_CANONICAL))], axis=1)
    if not (head == _CANONICAL).all():
        return None
    w = np.stack([arr[cells + 6 + i] for i in range(_WINDOW)], axis=1)
    upper = (w >= ord("A")) & (w <= ord("Z"))
    digit = (w >= ord("0")) & (w <= ord("9"))
    quote = w == ord('"')
    if not quote.any(axis=1).all():
        return None
    q = quote.argmax(axis=1)
    n_letters = upper.argmin(axis=1)   # the quote ends every window, so a False exists
    idx = np.arange(_WINDOW)[None, :]
    letters_mask = idx < n_letters[:, None]
    ok = ((letters_mask & upper) | (~letters_mask & digit) | (idx >= q[:, None])).all(axis=1)
    n_digits = q - n_letters
    if not (ok & (n_letters >= 1) & (n_letters <= 3) & (n_digits >= 1) & (n_digits <= 7)).all():
        return None
    col = np.zeros(len(cells), dtype=np.int64)
    row = np.zeros(len(cells), dtype=np.int64)
    for j in range(_WINDOW):
        value = w[:, j].astype(np.int64)
        col = np.where(j < n_letters, col * 26 + (value - 64), col)
        row = np.where((j >= n_letters) & (j < q), row * 10 + (value - 48), row)
    if (row < 1).any():
        return None
    _check_duplicates(row, col)
    # A cell only formatted (`<c r="XFD1048576" s="3"/>`, what Excel leaves
    # at its "used range" end) holds nothing and calamine places nothing:
    # it is no part of the table's size (format v1.2).
    ends = np.flatnonzero(arr == ord(">"))
    gt = ends[np.searchsorted(ends, cells)]
    empty = arr[gt - 1] == ord("/")
    after = gt[~empty]
    if len(after):
        close = np.stack([arr[np.minimum(after + 1 + i, len(arr) - 1)] for i in range(4)], axis=1)
        empty[~empty] = (close == np.frombuffer(b"</c>", dtype=np.uint8)).all(axis=1)
    held = ~empty
    if not held.any():
        return SheetScan()
    return SheetScan(max_row=int(row[held].max()), max_col=int(col[held].max()))


def _check_duplicates(row: np.ndarray, col: np.ndarray) -> None:
    key = row * 32768 + col
    if len(key) > 1 and not (np.diff(key) > 0).all():
        uniq, counts = np.unique(key, return_counts=True)
        dup = uniq[counts > 1]
        if len(dup):
            k = int(dup[0])
            raise Refused("duplicate_cell", cell=f"{column_letter(k % 32768 - 1)}{k // 32768}")


def _ref(text: str) -> tuple[int, int | None]:
    """calamine's reading of a reference: (row, column), 1-based; a reference
    it would reject is refused here too."""
    m = _CELL_REF.fullmatch(text)
    if not m or int(m.group(2)) < 1:
        raise Refused("bad_reference", cell=text[:20])
    col = 0
    for ch in m.group(1).upper():
        col = col * 26 + ord(ch) - 64
        if col > 1 << 20:
            break   # far past any limit; stop before the number grows
    return int(m.group(2)) if len(m.group(2)) <= 12 else 10 ** 12, (col or None)


def _scan_exact(body: bytes) -> SheetScan:
    """A streaming parse (defusedxml) that places cells the way calamine does:
    a cell's own `r`, else the current row and the next column. XML that
    does not parse is refused: calamine's parser is more lenient and could
    find cells past the point where this one stopped."""
    scan = SheetScan()
    rows: list[int] = []
    cols: list[int] = []
    held: list[bool] = []   # the cell holds a value, an inline string or a formula
    row_index, col_index = 1, 1
    stack: list = []
    cell = None   # [row, col, has formula, value text or None, type]
    try:
        for event, elem in safe_iterparse(io.BytesIO(body), events=("start", "end"), forbid_dtd=True):
            name = _local(elem.tag)
            if event == "start":
                if name == "row" and elem.get("r") is not None:
                    row_index = _ref(elem.get("r"))[0]
                elif name == "c" and cell is None:
                    r = elem.get("r")
                    if r is not None:
                        row, col = _ref(r)
                        if col is None:
                            raise Refused("bad_reference", cell=r[:20])
                        col_index = col
                        cell = [row, col, False, None, elem.get("t")]
                    else:
                        cell = [row_index, col_index, False, None, elem.get("t")]
                stack.append(elem)
                continue
            stack.pop()
            if cell is not None and name == "f":
                cell[2] = True
            elif cell is not None and name in ("v", "is"):
                cell[3] = "(inline)" if name == "is" else (elem.text or "")
            elif name == "c" and cell is not None:
                rows.append(cell[0])
                cols.append(cell[1])
                held.append(cell[2] or cell[3] is not None)
                if cell[4] == "e" and cell[3]:
                    scan.errors.append(ErrorCell(cell[0], cell[1] - 1, cell[3].strip()))
                if cell[2]:
                    # openpyxl writes `<f>…</f><v/>` for a formula never computed;
                    # a cached empty text is `t="str"` with an empty `<v>`.
                    saved = cell[3] is not None and (cell[3] != "" or cell[4] in ("str", "inlineStr"))
                    scan.formulas.append(FormulaCell(cell[0], cell[1] - 1, saved))
                cell = None
                col_index += 1
            elif name == "row":
                row_index += 1
                col_index = 1
            if stack:
                stack[-1].remove(elem)   # keep the tree empty: memory stays flat
    except Refused:
        raise
    except (DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden):
        raise Refused("xml_dtd", member="sheet") from None
    except Exception:
        raise Refused("bad_xml") from None
    if rows:
        r = np.asarray(rows, dtype=np.int64)
        c = np.asarray(cols, dtype=np.int64)
        if c.max() < 1 << 15 and r.max() < 10 ** 12:
            _check_duplicates(r, c)
        h = np.asarray(held, dtype=bool)
        if h.any():
            scan.max_row, scan.max_col = int(r[h].max()), int(c[h].max())
    return scan
