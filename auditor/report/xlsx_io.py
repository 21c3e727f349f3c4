"""What the two workbook writers (annotated.xlsx, the blank template) share:
text that can never become a formula, severity fills, deterministic saving."""

from __future__ import annotations

import io
import re
from datetime import datetime, timezone
from pathlib import Path

from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
from openpyxl.styles import PatternFill

from auditor.zippkg import restamp

# Excel would treat these leading characters as the start of a formula when
# the cell is edited (CSV/formula injection); tab and carriage return too, as
# OWASP lists them: a program that trims them leaves the formula behind.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
MAX_CELL_TEXT = 32767
SHEET_NAME_BAD = re.compile(r"[\[\]:*?/\\]")

FILLS = {
    "error": PatternFill(fill_type="solid", fgColor="FFF4C7C3"),
    "warning": PatternFill(fill_type="solid", fgColor="FFFCE8B2"),
    "info": PatternFill(fill_type="solid", fgColor="FFD9E7F5"),
}


def put_text(cell, value) -> None:
    """Write `value` as plain text: never a formula, whatever it starts with.

    openpyxl turns a string starting with `=` into a formula; resetting the
    type to `s` stores it as a string, and quotePrefix keeps Excel from
    re-reading it as a formula when someone edits the cell. Set the cell's
    other style (fill, font, alignment) *before*: a style copied onto the cell
    afterwards would take the quote prefix away.
    """
    if value is None:
        cell.value = None
        return
    text = ILLEGAL_CHARACTERS_RE.sub("\ufffd", str(value))[:MAX_CELL_TEXT]
    cell.value = text
    cell.data_type = "s"
    if text.startswith(FORMULA_START):
        cell.quotePrefix = True


def unique_sheet_title(existing: list[str], wanted: str) -> str:
    """A valid sheet name (≤ 31 characters, no []:*?/\\) not already taken;
    Excel compares sheet names case-insensitively."""
    base = SHEET_NAME_BAD.sub("_", wanted).strip("'")[:31] or "_"
    taken = {t.casefold() for t in existing}
    title, n = base, 1
    while title.casefold() in taken:
        n += 1
        suffix = f" ({n})"
        title = base[:31 - len(suffix)] + suffix
    return title


def stamp_from(generated_at: str) -> datetime:
    """The report's one timestamp (`2026-01-01T00:00:00Z`) as a naive UTC datetime."""
    return datetime.strptime(generated_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).replace(tzinfo=None)


def save_deterministic(wb, path: Path, generated_at: str) -> Path:
    """Write the workbook to `path`, stamped `generated_at` (byte-identical for the same input)."""
    path = Path(path)
    from auditor.atomic import make_folder, write_atomic

    make_folder(path.parent)
    write_atomic(path, workbook_bytes(wb, generated_at))
    return path


def workbook_bytes(wb, generated_at: str) -> bytes:
    """The workbook's file, the same bytes for the same workbook: openpyxl
    stamps docProps/core.xml and every zip entry with the wall clock."""
    moment = stamp_from(generated_at)
    wb.properties.creator = "ecarte-auditor"
    wb.properties.lastModifiedBy = "ecarte-auditor"
    wb.properties.created = moment
    buf = io.BytesIO()
    wb.save(buf)
    return restamp(buf.getvalue(), moment)
