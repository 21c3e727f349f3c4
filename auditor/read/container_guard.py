"""The workbook guards for the other containers: .ods, .xls and .xlsb.

calamine allocates a sheet's whole grid, from A1 to its farthest cell,
before a value is handed over (an `.xls` or `.ods` with one cell at IV65536
costs a gigabyte), and it reads every sheet of an `.ods` or `.xls` when the
file is opened. So each container is checked here, in its own way, before
calamine sees it:

- `.ods` is a zip: the zip checks of `workbook_guard` (members, sizes,
  ratio, CRC, DTDs) apply, then `content.xml` is scanned for each sheet's
  extent, counting `number-rows-repeated` / `number-columns-repeated` the way
  calamine expands them, and for formulas;
- `.xls` is an OLE compound file, not a zip: olefile opens it (a damaged
  sector chain is refused), then the BIFF records of every sheet are walked
  for the cells holding a value (calamine places no BLANK or MULBLANK
  cell); a DIMENSIONS record declaring more than those cells (a formatted
  far blank cell, or a lie) is rewritten to them in a copy of the file,
  since calamine reserves the declared grid before reading a cell;
- `.xlsb` is a zip of binary parts: the zip checks, then the records of
  every worksheet part are walked likewise (calamine places no BrtCellBlank,
  and reserves no more than 100,000 cells for a declared BrtWsDim grid, so
  neither is part of a sheet's size).

Every refusal is a `Refused(kind, params)` of the whole workbook.
"""

from __future__ import annotations

import html
import io
import re
import struct
from dataclasses import dataclass, field

from auditor.limits import Limits
from auditor.read.sheet_scan import ErrorCell
from auditor.read.workbook_guard import FormulaCell, SheetScan, check_extent, read_part
from auditor.zippkg import Refused, inflate, open_zip


@dataclass
class ContainerCheck:
    """What the guard found in an .ods, .xls or .xlsb workbook before calamine opens it."""

    scans: dict[str, SheetScan] = field(default_factory=dict)   # sheet name → scan (every sheet)
    # The .ods's content.xml without its layout whitespace, when it had some
    # (calamine refuses it otherwise): what calamine is given instead.
    content: bytes | None = None
    # The .xls with its DIMENSIONS records rewritten to the cells holding a
    # value, when one declared more: the whole file calamine is given instead.
    workbook: bytes | None = None


# -- .ods ----------------------------------------------------------------------------

# calamine matches these qualified names literally (prefix included), so does this scan.
_NAME = re.compile(rb'\stable:name="([^"]*)"')
_ROWS_REPEATED = re.compile(rb'\stable:number-rows-repeated="\s*([0-9]+)\s*"')
_COLS_REPEATED = re.compile(rb'\stable:number-columns-repeated="\s*([0-9]+)\s*"')
_ODS_VALUE = re.compile(rb"\soffice:(?:value|string-value|date-value|time-value|boolean-value)=")
_ODS_FORMULA = b"table:formula="
_REPEAT_CAP = 10 ** 9   # past any limit: a larger count is refused all the same


def _count(match) -> int:
    if match is None:
        return 1
    digits = match.group(1)
    return _REPEAT_CAP if len(digits) > 9 else max(int(digits), 0)


def check_ods(data: bytes, limits: Limits) -> ContainerCheck:
    """Guard an .ods workbook: its zip, its size unzipped, the extent of each sheet."""
    zf, members = open_zip(data, limits, required="content.xml", not_kind="not_ods")
    budget = [limits.max_unzipped_bytes]
    content = b""
    for key, info in sorted(members.items()):
        if info.filename.endswith("/") or not key.endswith((".xml", ".rdf")):
            continue
        if key == "content.xml":
            content = read_part(data, info, limits, budget)
        else:
            read_part(data, info, limits, budget, keep=False)
    from auditor.read.ods_layout import without_layout_whitespace

    return ContainerCheck(scan_ods_content(content, limits), without_layout_whitespace(content))


_TABLE_START = re.compile(rb"<table:table(?=[\s>/])([^>]*?)(/?)>")
_CELL_START = re.compile(rb"<table:(?:covered-)?table-cell(?=[\s/>])([^>]*?)(/?)>")


def scan_ods_content(body: bytes, limits: Limits) -> dict[str, SheetScan]:
    """Each sheet's extent (rows and columns up to its last non-empty cell,
    repeats expanded) and formulas, from content.xml.

    Row by row with byte searches (no per-cell Python for the usual row): a
    row's width is the cells up to its last non-empty one, each counted with
    its `number-columns-repeated`; a cell is non-empty when it has a value,
    a formula or content (calamine's reading, on the safe side)."""
    scans: dict[str, SheetScan] = {}
    starts = [m for m in _TABLE_START.finditer(body) if not m.group(2)]
    for k, m in enumerate(starts):
        end = body.find(b"</table:table>", m.end())
        if k + 1 < len(starts) and (end == -1 or end > starts[k + 1].start()):
            continue   # a table inside a cell, or a damaged one: the next start is the sheet
        segment = body[m.end():end if end != -1 else len(body)]
        found = _NAME.search(m.group(1))
        name = html.unescape(found.group(1).decode("utf-8", "replace")) if found else ""
        scan = SheetScan()
        try:
            _scan_ods_rows(segment, scan, limits)
        except Refused as exc:
            raise Refused(exc.kind, table=name, **exc.params) from None
        _finish(scans, name, scan, limits)
    return scans


def _scan_ods_rows(segment: bytes, scan: SheetScan, limits: Limits) -> None:
    row = 1
    for chunk in segment.split(b"<table:table-row")[1:]:
        close = chunk.find(b">")
        if close == -1 or chunk[:1] not in (b" ", b">", b"\t", b"\n", b"\r", b"/"):
            continue   # `<table:table-rows>` and the like, or a cut tag
        if chunk[close - 1:close] == b"/":
            continue   # calamine only counts rows that open and close
        repeats = _count(_ROWS_REPEATED.search(chunk, 0, close)) if b"rows-repeated" in chunk[:close] else 1
        end = chunk.rfind(b"</table:table-row>")
        end = len(chunk) if end == -1 else end
        # The last closing cell tag ends the last cell with content; what follows
        # is the row's empty filler, unless it holds a value or a formula.
        marker = chunk.rfind(b"</table:", close, end)
        tail = chunk[max(marker, close):end]
        if b"office:" in tail or _ODS_FORMULA in tail or _ODS_FORMULA in chunk:
            width = _ods_row_cells(chunk[close + 1:end], row, scan)
        elif marker == -1:
            width = 0
        else:
            width = chunk.count(b"<table:table-cell", close, marker) + \
                chunk.count(b"<table:covered-table-cell", close, marker)
            if chunk.find(b"columns-repeated", close, marker) != -1:
                counts = _COLS_REPEATED.findall(chunk, close, marker)
                width += sum(int(c) if len(c) <= 9 else _REPEAT_CAP for c in counts) - len(counts)
        if width:
            if width > scan.max_col:
                scan.max_col = width
                if width > limits.max_columns:
                    raise Refused("too_many_columns", columns=width, limit=limits.max_columns)
            scan.max_row = row + repeats - 1
        row += repeats
        if width and row > limits.max_rows + 2:
            raise Refused("too_many_rows", rows=row - 1, limit=limits.max_rows)


def _ods_row_cells(content: bytes, row: int, scan: SheetScan) -> int:
    """A row with formulas, cell by cell: its width and its formula cells."""
    col, width = 1, 0
    for m in _CELL_START.finditer(content):
        attrs, closed = m.group(1), m.group(2)
        repeats = _count(_COLS_REPEATED.search(attrs))
        formula = _ODS_FORMULA in attrs
        if formula or not closed or _ODS_VALUE.search(attrs):
            width = col + repeats - 1
            if formula:
                saved = _ODS_VALUE.search(attrs) is not None
                for c in range(col, min(width, col + 256) + 1):
                    scan.formulas.append(FormulaCell(row, c - 1, saved))
            if _ODS_ERROR in attrs and not closed:
                # LibreOffice stores an error result as an empty string value
                # (what calamine reads) and shows its text in the paragraph.
                text = _ods_cell_text(content, m.end())
                for c in range(col, min(width, col + 256) + 1):
                    scan.errors.append(ErrorCell(row, c - 1, text))
        col += repeats
    return width


_ODS_ERROR = b'calcext:value-type="error"'
_TAG = re.compile(rb"<[^>]*>")


def _ods_cell_text(content: bytes, start: int) -> str:
    """The shown text of the cell whose start tag ends at `start`."""
    end = content.find(b"</table:table-cell>", start)
    inner = content[start:end if end != -1 else len(content)][:1000]
    text = html.unescape(_TAG.sub(b"", inner).decode("utf-8", "replace")).strip()
    return text or "#ERREUR!"


def _finish(scans: dict, name: str, scan: SheetScan, limits: Limits) -> None:
    try:
        check_extent(scan, limits)
    except Refused as exc:
        raise Refused(exc.kind, table=name, **exc.params) from None
    scans.setdefault(name, scan)


# -- .xls (BIFF in an OLE compound file) --------------------------------------------------

# The error codes of BIFF and of .xlsb cells, as Excel shows them.
_ERROR_CODES = {0x00: "#NULL!", 0x07: "#DIV/0!", 0x0F: "#VALUE!", 0x17: "#REF!", 0x1D: "#NAME?",
                0x24: "#NUM!", 0x2A: "#N/A", 0x2B: "#GETTING_DATA"}


def error_text(code: int) -> str:
    """An error code's text; an unknown code still reads as an error value."""
    return _ERROR_CODES.get(code, f"#ERROR{code}!")


_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
# Records whose first two fields are the cell's row and column (BIFF8).
_XLS_CELLS = frozenset({0x0203, 0x0204, 0x00D6, 0x0205, 0x027E, 0x00FD, 0x0006})
_XLS_MULTI = frozenset({0x00BD, 0x00BE})   # MULRK, MULBLANK: row, first column … last column
# BLANK and MULBLANK only format a cell: calamine places neither, so they are
# no part of a sheet's size (format v1.2), however far they are.
_XLS_FORMAT_ONLY = frozenset({0x0201, 0x00BE})
_XLS_DIMENSIONS = 0x0200
_XLS_BOUNDSHEET = 0x0085
_XLS_BOF, _XLS_EOF = 0x0809, 0x000A


def check_xls(data: bytes, limits: Limits) -> ContainerCheck:
    """Guard an .xls workbook: its streams and the extent of each sheet.

    A sheet's extent is its cells holding a value, checked against the
    limits. Where a DIMENSIONS record declares a larger grid, the workbook
    stream is rewritten (same size, so every offset stays) with the real
    extent declared, and that copy of the file is what calamine reads: the
    declared grid would otherwise be reserved before a cell is read."""
    stream, name_of_stream = _xls_stream(data)
    sheets = _xls_sheets(stream)
    scans: dict[str, SheetScan] = {}
    oversized: list[tuple[int, int, int]] = []   # (DIMENSIONS offset, rows, columns) to declare
    declared_over: list[tuple[int, int]] = []
    for name, offset in sheets:
        try:
            scan, dimensions = _scan_xls_sheet(stream, offset, limits)
            check_extent(scan, limits)
        except Refused as exc:
            raise Refused(exc.kind, table=name, **exc.params) from None
        for at, rows, cols in dimensions:
            if rows > scan.max_row or cols > scan.max_col:
                oversized.append((at, scan.max_row, scan.max_col))
                declared_over.append((rows, cols))
        scans.setdefault(name, scan)
    workbook = None
    if oversized:
        patched = bytearray(stream)
        for at, rows, cols in oversized:
            struct.pack_into("<IIHH", patched, at, 0, rows, 0, cols)
        workbook = _with_stream(data, name_of_stream, bytes(patched))
        if workbook is None:
            # The copy could not be written (a stream in the OLE mini-stream):
            # the declared grid is what calamine would reserve, so it is judged.
            for rows, cols in declared_over:
                _check_declared(rows, cols, limits)
    return ContainerCheck(scans, workbook=workbook)


def _with_stream(data: bytes, name: str, stream: bytes) -> bytes | None:
    """The OLE file with its stream `name` replaced by `stream` (same size); None when olefile cannot."""
    import olefile

    buf = io.BytesIO(data)
    try:
        ole = olefile.OleFileIO(buf, write_mode=True)
        try:
            ole.write_stream(name, stream)
        finally:
            ole.close()
    except Exception:   # NotImplementedError for a mini-stream, or a damaged file olefile read but cannot write
        return None
    return buf.getvalue()


def _xls_stream(data: bytes) -> tuple[bytes, str]:
    import olefile

    if not data.startswith(_OLE_MAGIC):
        raise Refused("not_xls")
    try:
        ole = olefile.OleFileIO(io.BytesIO(data))
        try:
            for name in ("Workbook", "Book"):
                if ole.exists(name):
                    size = ole.get_size(name)
                    if size > len(data) * 2 + 4096:
                        raise Refused("not_xls")   # a stream larger than the file: a damaged chain
                    return ole.openstream(name).read(), name
        finally:
            ole.close()
    except Refused:
        raise
    except Exception:   # olefile raises several types on a damaged file
        raise Refused("not_xls") from None
    if _looks_encrypted(data):
        raise Refused("zip_encrypted")
    raise Refused("not_xls")


def _looks_encrypted(data: bytes) -> bool:
    return b"E\x00n\x00c\x00r\x00y\x00p\x00t\x00e\x00d\x00P\x00a\x00c\x00k\x00a\x00g\x00e" in data


def _records(stream: bytes, pos: int):
    n = len(stream)
    unpack = struct.unpack_from
    while pos + 4 <= n:
        typ, size = unpack("<HH", stream, pos)
        yield typ, pos + 4, size
        pos += 4 + size


def _xls_sheets(stream: bytes) -> list[tuple[str, int]]:
    """(sheet name, offset of its BOF) from the globals' BOUNDSHEET records."""
    out: list[tuple[str, int]] = []
    for typ, at, size in _records(stream, 0):
        if typ == _XLS_EOF:
            break
        if typ == 0x002F:
            raise Refused("zip_encrypted")   # FILEPASS: the workbook is encrypted
        if typ != _XLS_BOUNDSHEET or size < 8:
            continue
        offset, = struct.unpack_from("<I", stream, at)
        cch = stream[at + 6]
        flags = stream[at + 7] if size > 7 else 0
        raw = stream[at + 8:at + size]
        name = (raw[:cch * 2].decode("utf-16-le", "replace") if flags & 1
                else raw[:cch].decode("latin-1"))
        if offset < len(stream):   # every kind of sheet: calamine reads them all
            out.append((name, offset))
    return out


def scan_xls_sheet(stream: bytes, offset: int, limits: Limits) -> SheetScan:
    """The extent (cells holding a value) and formula cells of one .xls sheet."""
    return _scan_xls_sheet(stream, offset, limits)[0]


def _scan_xls_sheet(stream: bytes, offset: int, limits: Limits):
    """(the sheet's scan, [(DIMENSIONS record offset, declared rows, declared columns)])."""
    scan = SheetScan()
    unpack = struct.unpack_from
    depth = 0
    max_row = max_col = 0
    dimensions: list[tuple[int, int, int]] = []
    for typ, at, size in _records(stream, offset):
        if typ == _XLS_BOF:
            depth += 1
            continue
        if typ == _XLS_EOF:
            depth -= 1
            if depth <= 0:
                break
            continue
        if depth != 1 or typ in _XLS_FORMAT_ONLY:
            continue   # an embedded chart's records (calamine skips them too), or a cell's format only
        if typ in _XLS_CELLS:
            if size < 4:
                continue
            r, c = unpack("<HH", stream, at)
            if r >= max_row:
                max_row = r + 1
            if c >= max_col:
                max_col = c + 1
            if typ == 0x0006:
                scan.formulas.append(FormulaCell(r + 1, c, True))   # a BIFF formula always carries its result
                # Its result is an error when the value's last two bytes are 0xFFFF and its first is 2.
                if size >= 14 and stream[at + 12:at + 14] == b"\xff\xff" and stream[at + 6] == 2:
                    scan.errors.append(ErrorCell(r + 1, c, error_text(stream[at + 8])))
            elif typ == 0x0205 and size >= 8 and stream[at + 7] == 1:   # BOOLERR holding an error
                scan.errors.append(ErrorCell(r + 1, c, error_text(stream[at + 6])))
        elif typ in _XLS_MULTI:
            if size < 6:
                continue
            r, = unpack("<H", stream, at)
            last, = unpack("<H", stream, at + size - 2)
            max_row = max(max_row, r + 1)
            max_col = max(max_col, last + 1)
        elif typ == _XLS_DIMENSIONS and size >= 14:
            # calamine reserves the declared grid: kept to be rewritten when it is larger than the cells.
            first_row, last_row, first_col, last_col = unpack("<IIHH", stream, at)
            dimensions.append((at, max(last_row - first_row, 0), max(last_col - first_col, 0)))
    scan.max_row, scan.max_col = max_row, max_col
    return scan, dimensions


def _check_declared(rows: int, cols: int, limits: Limits) -> None:
    """A declared grid (calamine reserves it before reading a cell) against the limits."""
    if rows > limits.max_rows + 1:
        raise Refused("too_many_rows", rows=rows - 1, limit=limits.max_rows)
    if cols > limits.max_columns:
        raise Refused("too_many_columns", columns=cols, limit=limits.max_columns)
    if rows * cols > limits.max_cells:
        raise Refused("too_many_cells", cells=rows * cols, limit=limits.max_cells)


# -- .xlsb (binary parts in a zip) ----------------------------------------------------------

_XLSB_ROW = 0x0000
# The cells holding a value: BrtCellRk … BrtFmlaError, and BrtCellRString (which
# calamine 0.37 skips: counting it is on the safe side). BrtCellBlank (0x0001)
# only formats a cell: calamine places none, so it is no part of a sheet's
# size (format v1.2), however far it is (Excel writes one at Ctrl+End).
_XLSB_CELLS = frozenset(range(0x0002, 0x000C)) | {0x003E}
_XLSB_FORMULAS = frozenset({0x0008, 0x0009, 0x000A, 0x000B})
# calamine stops reading a sheet at a BrtRowHdr past this row: the rows after
# it would be lost without a word, so such a sheet is refused.
_XLSB_LAST_ROW = 0x0010_0000


def check_xlsb(data: bytes, limits: Limits) -> ContainerCheck:
    """Guard an .xlsb workbook: its zip, its size unzipped, the extent of each sheet."""
    zf, members = open_zip(data, limits, required="xl/workbook.bin", not_kind="not_xlsb")
    budget = [limits.max_unzipped_bytes]
    parts: dict[str, bytes] = {}
    for key, info in sorted(members.items()):
        if info.filename.endswith("/"):
            continue
        if key.endswith((".xml", ".rels")):
            read_part(data, info, limits, budget, keep=False)
        elif key.endswith(".bin"):
            parts[key] = b"".join(inflate(data, info, limits, budget))
    sheets = _xlsb_sheet_parts(parts.get("xl/workbook.bin", b""), data, members, limits)
    scans: dict[str, SheetScan] = {}
    for name, member in sheets:
        body = parts.get(member.lower())
        if body is None:
            continue
        try:
            scan = scan_xlsb_sheet(body, limits)
            check_extent(scan, limits)
        except Refused as exc:
            raise Refused(exc.kind, table=name, **exc.params) from None
        scans.setdefault(name, scan)
    # A worksheet part no sheet names is still checked: calamine may find it another way.
    named = {m.lower() for _, m in sheets}
    for key, body in parts.items():
        if key.startswith("xl/worksheets/") and key not in named:
            check_extent(scan_xlsb_sheet(body, limits), limits)
    return ContainerCheck(scans)


def _xlsb_records(body: bytes):
    pos, n = 0, len(body)
    while pos < n:
        typ = body[pos]
        pos += 1
        if typ & 0x80:
            if pos >= n:
                return
            typ = (typ & 0x7F) | ((body[pos] & 0x7F) << 7)
            pos += 1
        size, shift = 0, 0
        for _ in range(4):
            if pos >= n:
                return
            b = body[pos]
            pos += 1
            size |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        if pos + size > n:
            return   # a record cut by the end of the part: calamine fails there, and so reads nothing after it
        yield typ, pos, size
        pos += size


def scan_xlsb_sheet(body: bytes, limits: Limits) -> SheetScan:
    """The extent (cells holding a value) and formula cells of one .xlsb sheet.

    A row header (BrtRowHdr) alone, a formatted blank cell (BrtCellBlank) and
    the declared grid (BrtWsDim) are no part of it: Excel declares the whole
    used range, to a formatted cell at XFD1048576, and calamine reserves at
    most 100,000 cells for that declaration before placing only the cells
    holding a value (calamine 0.37, `worksheet_range_ref`).

    Rows and columns are read as calamine reads them: from its one record
    buffer, which grows to the longest record met and is otherwise only
    overwritten from its start, so a record shorter than its fields (a cut or
    forged one) takes them from the records before it. Reading only the
    record's own bytes would miss a cell calamine places anywhere (a grid of
    gigabytes)."""
    scan = SheetScan()
    row = 0
    unpack = struct.unpack_from
    # The first bytes of calamine's buffer (every field read here is in them):
    # at `base` in the body when one record wrote them all (the usual case,
    # nothing copied), else `head`; `held`: the buffer's length.
    base, head, held = -1, b"", 0
    for typ, at, size in _xlsb_records(body):
        if size >= _HEAD:
            base, held = at, max(held, size)
        elif size > held:
            base, head, held = -1, body[at:at + size], size   # a new zeroed buffer, filled by the record
        elif size:
            head = body[at:at + size] + (body[base + size:base + _HEAD] if base >= 0 else head[size:])
            base = -1
        if typ == _XLSB_ROW:
            if base >= 0:
                row, = unpack("<I", body, base)
            elif len(head) >= 4:
                row, = unpack("<I", head)
            else:
                continue   # calamine fails on it: nothing is placed
            if row > _XLSB_LAST_ROW:
                raise Refused("too_many_rows", rows=row, limit=limits.max_rows)
        elif typ in _XLSB_CELLS and (base >= 0 or len(head) >= 4):
            col, = unpack("<I", body, base) if base >= 0 else unpack("<I", head)
            if row + 1 > scan.max_row:
                scan.max_row = row + 1
                if row > limits.max_rows + 1:
                    raise Refused("too_many_rows", rows=row, limit=limits.max_rows)
            if col + 1 > scan.max_col:
                scan.max_col = col + 1
                if col + 1 > limits.max_columns:
                    raise Refused("too_many_columns", columns=col + 1, limit=limits.max_columns)
            if typ in _XLSB_FORMULAS:
                scan.formulas.append(FormulaCell(row + 1, col, True))
            if typ in (0x0003, 0x000B) and (base >= 0 or len(head) >= 9):   # BrtCellError, BrtFmlaError
                scan.errors.append(ErrorCell(row + 1, col, error_text(body[base + 8] if base >= 0 else head[8])))
    return scan


_HEAD = 9   # a cell's column (bytes 0-3) and an error cell's code (byte 8)


_BUNDLE_SH = 0x009C


def _xlsb_sheet_parts(workbook: bytes, data: bytes, members, limits) -> list[tuple[str, str]]:
    """(sheet name, part) from workbook.bin's BrtBundleSh records and the rels."""
    import defusedxml.ElementTree as ET

    rels: dict[str, str] = {}
    info = members.get("xl/_rels/workbook.bin.rels")
    if info is not None:
        try:
            root = ET.fromstring(read_part(data, info, limits, [limits.max_unzipped_bytes]))
            for elem in root:
                if elem.get("Id") is not None:
                    target = elem.get("Target") or ""
                    rels[elem.get("Id")] = target[1:] if target.startswith("/") else (
                        target if target.startswith("xl/") else f"xl/{target}")
        except Refused:
            raise
        except Exception:
            pass
    out: list[tuple[str, str]] = []
    for typ, at, size in _xlsb_records(workbook):
        if typ != _BUNDLE_SH or size < 12:
            continue
        try:
            pos = at + 8
            n, = struct.unpack_from("<I", workbook, pos)
            rid = workbook[pos + 4:pos + 4 + 2 * n].decode("utf-16-le")
            pos += 4 + 2 * n
            m, = struct.unpack_from("<I", workbook, pos)
            name = workbook[pos + 4:pos + 4 + 2 * m].decode("utf-16-le")
        except (struct.error, UnicodeDecodeError):
            continue
        if rid in rels:
            out.append((name, rels[rid]))
    return out
