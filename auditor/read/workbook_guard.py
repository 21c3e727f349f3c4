"""Checks a workbook's zip and XML before calamine parses it.

calamine is fast but trusts its input: a cell at XFD1048576 makes it allocate
the whole grid (the process aborts, no exception), a huge `uniqueCount` in
sharedStrings.xml reserves memory likewise, and a deflate bomb or a member
lying about its size is inflated in full. So before calamine sees a byte:

- the zip directory is checked (member count, duplicate names, encryption,
  compression method, declared sizes and ratio), then every XML part is
  inflated here, chunk by chunk, counting the real bytes against the limits
  and checking the size and CRC it declares;
- the prolog of every XML part is read with defusedxml: a DOCTYPE or an
  entity declaration refuses the workbook (calamine would not expand
  entities, but such a part has no business in a workbook);
- each sheet that holds a carnet table is scanned for the cells it declares
  (grid extent, duplicates) and, only if it contains `<f`, for formulas
  and whether Excel saved their value.

Every refusal is a `Refused(kind, params)`, an EC00-01 message variant.
"""

from __future__ import annotations

import io
import re
import struct
import zlib
from dataclasses import dataclass, field

import numpy as np
from defusedxml import DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden
from defusedxml.ElementTree import DefusedXMLParser
from defusedxml.ElementTree import iterparse as safe_iterparse

import zipfile

from auditor.limits import Limits, size_text
from auditor.read.raw import column_letter

CHUNK = 1024 * 1024
XML_SUFFIXES = (".xml", ".rels")
REL_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


class Refused(Exception):
    """The workbook (table=None) or one of its tables cannot be read safely."""

    def __init__(self, kind: str, **params):
        super().__init__(kind)
        self.kind = kind
        self.params = params


@dataclass
class FormulaCell:
    """A formula cell of a sheet, and whether Excel saved its result."""

    row: int            # 1-based, as Excel shows it
    col: int            # 0-based
    has_value: bool     # Excel saved the formula's result


@dataclass
class SheetScan:
    """What one pass over a sheet's XML found: its extent and its formula cells."""

    max_row: int = 0                    # 1-based; 0 = no cell
    max_col: int = 0                    # 1-based; 0 = no cell
    formulas: list[FormulaCell] = field(default_factory=list)


@dataclass
class WorkbookCheck:
    """What the guard found in a workbook before calamine opens it: the sheets, their scans, and the sheets it
    refuses."""

    sheet_members: dict[str, str]       # sheet name → zip member (as calamine resolves it)
    scans: dict[str, SheetScan]         # sheet name → scan (sheets asked for only)
    refused_sheets: dict[str, Refused]  # sheet name → why it cannot be read


# -- zip -----------------------------------------------------------------------

def open_zip(data: bytes, limits: Limits, required: str = "xl/workbook.xml",
             not_kind: str = "not_xlsx") -> tuple[zipfile.ZipFile, dict[str, zipfile.ZipInfo]]:
    """Open a workbook's zip within the limits, refusing what is not one (EC00-01 of kind `not_kind`)."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError, struct.error,
            NotImplementedError, UnicodeDecodeError):
        raise Refused(not_kind) from None
    if len(infos) > limits.max_zip_members:
        raise Refused("zip_members", count=len(infos), limit=limits.max_zip_members)
    members: dict[str, zipfile.ZipInfo] = {}
    total = 0
    for info in infos:
        key = info.filename.lower()   # calamine finds parts case-insensitively
        if key in members:
            raise Refused("zip_duplicate", member=info.filename)
        members[key] = info
        if info.filename.endswith("/"):
            continue
        if info.flag_bits & 0x1:
            raise Refused("zip_encrypted")
        total += info.file_size
        if info.file_size > limits.max_unzipped_bytes or total > limits.max_unzipped_bytes:
            raise Refused("zip_too_large", member=info.filename, size=size_text(max(info.file_size, total)),
                          limit=size_text(limits.max_unzipped_bytes))
        _check_ratio(info.filename, info.file_size, info.compress_size, limits)
    if required not in members:
        raise Refused(not_kind)
    return zf, members


def _check_ratio(name: str, inflated: int, compressed: int, limits: Limits) -> None:
    if inflated > limits.zip_ratio_grace_bytes and inflated > limits.max_zip_ratio * max(compressed, 1):
        raise Refused("zip_ratio", member=name, ratio=inflated // max(compressed, 1), limit=limits.max_zip_ratio)


def _raw_member(data: bytes, info: zipfile.ZipInfo) -> bytes:
    """The compressed bytes of a member, located from its local header."""
    start = info.header_offset
    if data[start:start + 4] != b"PK\x03\x04":
        raise Refused("zip_damaged", member=info.filename)
    name_len, extra_len = struct.unpack("<HH", data[start + 26:start + 30])
    begin = start + 30 + name_len + extra_len
    raw = data[begin:begin + info.compress_size]
    if len(raw) != info.compress_size:
        raise Refused("zip_damaged", member=info.filename)
    return raw


def inflate(data: bytes, info: zipfile.ZipInfo, limits: Limits, budget: list[int]):
    """Yield a member's bytes chunk by chunk, counting what really comes out.

    `budget` holds the bytes still allowed for the whole workbook. The real
    size must match the declared one (so calamine, which reads the same
    member, gets exactly what was checked) and so must the CRC.
    """
    raw = _raw_member(data, info)
    if info.compress_type == zipfile.ZIP_STORED:
        chunks = (raw[i:i + CHUNK] for i in range(0, len(raw), CHUNK))
        decomp = None
    elif info.compress_type == zipfile.ZIP_DEFLATED:
        decomp = zlib.decompressobj(-15)
        chunks = None
    else:
        raise Refused("zip_method", member=info.filename, method=info.compress_type)
    out_size, crc = 0, 0

    def account(piece: bytes) -> None:
        nonlocal out_size, crc
        out_size += len(piece)
        crc = zlib.crc32(piece, crc)
        if out_size > info.file_size:
            raise Refused("zip_mismatch", member=info.filename)
        if out_size > budget[0]:
            raise Refused("zip_too_large", member=info.filename, size=f"> {size_text(out_size)}",
                          limit=size_text(limits.max_unzipped_bytes))
        _check_ratio(info.filename, out_size, info.compress_size, limits)

    try:
        if decomp is None:
            for piece in chunks:
                account(piece)
                yield piece
        else:
            pending = raw
            while not decomp.eof:
                piece = decomp.decompress(pending, CHUNK)
                pending = decomp.unconsumed_tail
                if piece:
                    account(piece)
                    yield piece
                elif not pending:
                    break   # input exhausted before the end of the deflate stream
            if not decomp.eof:
                raise Refused("zip_damaged", member=info.filename)
    except zlib.error:
        raise Refused("zip_damaged", member=info.filename) from None
    if out_size != info.file_size or (crc & 0xFFFFFFFF) != info.CRC:
        raise Refused("zip_mismatch", member=info.filename)
    budget[0] -= out_size


# -- XML prolog -------------------------------------------------------------------

class _RootSeen(Exception):
    pass


class _Prolog:
    """A parser target that stops at the root element, keeping its attributes."""

    def __init__(self):
        self.root: tuple[str, dict] | None = None

    def start(self, tag, attrs):
        self.root = (tag, dict(attrs))
        raise _RootSeen

    def end(self, tag):
        pass

    def data(self, text):
        pass

    def close(self):
        return None


class PrologReader:
    """Feeds a part's first bytes to defusedxml until the root element opens:
    any DOCTYPE or entity declaration comes before it, so nothing later can
    declare one."""

    def __init__(self, member: str):
        self.member = member
        self.target = _Prolog()
        self.parser = DefusedXMLParser(target=self.target, forbid_dtd=True, forbid_entities=True,
                                       forbid_external=True)
        self.done = False
        self.seen = b""

    def feed(self, piece: bytes) -> None:
        """Parse the next piece of the XML, until its root element has been seen."""
        if self.done:
            return
        try:
            self.parser.feed(piece)
        except _RootSeen:
            self.done = True
        except (DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden):
            raise Refused("xml_dtd", member=self.member) from None
        except Exception:
            # Malformed XML: calamine reports it, or ignores a part it does not
            # read; a declaration hidden behind the damage is still refused.
            self.done = True
            head = (self.seen + piece)[:65536].lower()
            if b"<!doctype" in head or b"<!entity" in head:
                raise Refused("xml_dtd", member=self.member) from None
        self.seen = (self.seen + piece)[:65536] if len(self.seen) < 65536 else self.seen

    @property
    def root(self) -> tuple[str, dict] | None:
        """The root element's name and attributes, once seen (else None)."""
        return self.target.root


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


# -- the workbook ---------------------------------------------------------------------

def check_workbook(data: bytes, wanted, limits: Limits) -> WorkbookCheck:
    """Check the zip and every XML part; scan the sheets `wanted(name)` accepts.

    Raises Refused for the whole workbook; a sheet that alone is unsafe is
    listed in `refused_sheets` and the other tables are still read.
    """
    zf, members = open_zip(data, limits)
    budget = [limits.max_unzipped_bytes]
    parts: dict[str, bytes] = {}
    # The workbook and its relationships first: they say which member is which sheet.
    for key in ("xl/_rels/workbook.xml.rels", "xl/workbook.xml"):
        if key in members:
            parts[key] = read_part(data, members[key], limits, budget)
    sheet_members = _sheet_members(parts)
    wanted_members = {m.lower(): name for name, m in sheet_members.items() if wanted(name)}
    scans: dict[str, SheetScan] = {}
    refused: dict[str, Refused] = {}
    for key, info in sorted(members.items()):
        if key in parts or info.filename.endswith("/") or not key.endswith(XML_SUFFIXES):
            continue
        sheet = wanted_members.get(key)
        if sheet is None:
            prolog = read_part(data, info, limits, budget, keep=False)
            if key == "xl/sharedstrings.xml":
                _check_shared_strings(prolog, info, limits)
            continue
        body = read_part(data, info, limits, budget)
        try:
            scans[sheet] = scan_sheet(body, limits)
        except Refused as exc:
            refused[sheet] = exc
    return WorkbookCheck(sheet_members, scans, refused)


def read_part(data: bytes, info: zipfile.ZipInfo, limits: Limits, budget: list[int], keep: bool = True):
    """Inflate one XML part with every check; its bytes, or (keep=False) its root element."""
    prolog = PrologReader(info.filename)
    pieces = []
    for piece in inflate(data, info, limits, budget):
        prolog.feed(piece)
        if keep:
            pieces.append(piece)
    return b"".join(pieces) if keep else prolog.root


def _check_shared_strings(root, info: zipfile.ZipInfo, limits: Limits) -> None:
    # calamine reserves `uniqueCount` strings up front: a lie there is an
    # allocation of any size. A real count cannot exceed one per 5 bytes (`<si/>`).
    if root is None:
        return
    text = root[1].get("uniqueCount")
    if text is None:
        return
    try:
        count = int(text.strip())
    except ValueError:
        return
    if count > limits.max_cells or count > info.file_size // 5 + 1:
        raise Refused("shared_strings", member=info.filename, count=count)


def _sheet_members(parts: dict[str, bytes]) -> dict[str, str]:
    """Sheet name → zip member, resolved the way calamine resolves it."""
    rels: dict[str, str] = {}
    if "xl/_rels/workbook.xml.rels" in parts:
        for _, elem in _iter_small(parts["xl/_rels/workbook.xml.rels"]):
            if _local(elem.tag) == "Relationship" and elem.get("Id") is not None:
                rels[elem.get("Id")] = elem.get("Target") or ""
    out: dict[str, str] = {}
    if "xl/workbook.xml" not in parts:
        return out
    for _, elem in _iter_small(parts["xl/workbook.xml"]):
        if _local(elem.tag) != "sheet":
            continue
        rid = elem.get(f"{{{REL_NS}}}id")
        target = rels.get(rid or "")
        if target is None or elem.get("name") is None:
            continue
        if target.startswith("/xl/"):
            path = target[1:]
        elif target.startswith("xl/"):
            path = target
        else:
            path = f"xl/{target}"
        out.setdefault(elem.get("name"), path)
    return out


def _iter_small(part: bytes):
    try:
        yield from safe_iterparse(io.BytesIO(part), events=("end",), forbid_dtd=True)
    except Exception:
        return  # malformed: calamine will say so


# -- sheets -------------------------------------------------------------------------

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
    if b"<f" in body:
        return None   # formulas: the exact scan finds them and their saved values
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
    return SheetScan(max_row=int(row.max()), max_col=int(col.max()))


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
        scan.max_row, scan.max_col = int(r.max()), int(c.max())
        if scan.max_col < 1 << 15 and scan.max_row < 10 ** 12:
            _check_duplicates(r, c)
    return scan
