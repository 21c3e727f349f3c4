"""annotated.xlsx on the workbook's own zip parts.

The source workbook is not loaded: its members are copied as they are
(compressed bytes and all), and only what the annotations touch is rewritten:

- the sheets that get a comment or a fill (the cell's `s` attribute, a cell
  added where the finding's cell was empty, the `<legacyDrawing>` link), and
  the sheets holding formulas (each becomes the value Excel saved);
- the comments and their VML drawing (written by openpyxl's own comment
  writers, so they are what openpyxl would have written), the sheets'
  relationships, the styles (a clone of the cell's style with the severity
  fill), the content types, workbook.xml (the findings sheet first);
- the findings sheet itself, built by openpyxl in a workbook of its own and
  grafted with its styles renumbered.

So the time is that of the findings and of the touched sheets' XML (inflated,
edited at a few byte offsets, deflated), never a parse of every cell. Parts
are edited as bytes, not re-serialised: prefixes, `mc:Ignorable` lists and
extensions Excel relies on stay as they were.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

from defusedxml.ElementTree import fromstring as safe_fromstring

from auditor.report.xlsx_io import FORMULA_START
from auditor.zippkg import Package

REL_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PKG_REL_NS = "http://schemas.openxmlformats.org/package/2006/relationships"
MAIN_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
WORKSHEET_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"
COMMENTS_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.comments+xml"
VML_TYPE = "application/vnd.openxmlformats-officedocument.vmlDrawing"
WORKBOOK_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"
REL_COMMENTS = f"{REL_NS}/comments"
REL_VML = f"{REL_NS}/vmlDrawing"
REL_WORKSHEET = f"{REL_NS}/worksheet"
# Parts that make no sense once formulas, macros and external links are gone.
DROPPED_REL_TYPES = (f"{REL_NS}/calcChain", "http://schemas.microsoft.com/office/2006/relationships/vbaProject",
                     f"{REL_NS}/externalLink")
# Worksheet children that come after <legacyDrawing> (ECMA-376 CT_Worksheet order).
_AFTER_LEGACY = ("legacyDrawingHF", "drawingHF", "picture", "oleObjects", "controls", "webPublishItems",
                 "tableParts")


class NotAnnotatable(ValueError):
    """The workbook's parts are not laid out the way this writer edits them."""


# -- small XML helpers (bytes in, bytes out) --------------------------------------

def _prefix(xml: bytes, local: bytes) -> bytes:
    """The namespace prefix of the root element (`x:` or empty)."""
    m = re.search(rb"<(?:([A-Za-z_][\w.-]*):)?" + local + rb"[\s>/]", xml)
    if m is None:
        raise NotAnnotatable(f"no <{local.decode()}> root")
    return (m.group(1) + b":") if m.group(1) else b""


_ATTR = re.compile(rb'([\w:.-]+)\s*=\s*"([^"]*)"')


def _attrs(tag: bytes) -> dict[bytes, bytes]:
    return dict(_ATTR.findall(tag))


def _set_attr(tag: bytes, name: bytes, value: bytes | None) -> bytes:
    """`tag` (an opening or empty tag) with attribute `name` set (None: removed)."""
    pattern = re.compile(rb'\s' + re.escape(name) + rb'\s*=\s*"[^"]*"')
    tag = pattern.sub(b"", tag)
    if value is None:
        return tag
    end = len(tag) - (2 if tag.endswith(b"/>") else 1)
    return tag[:end] + b" " + name + b'="' + value + b'"' + tag[end:]


def _relationships(xml: bytes | None) -> list[dict[str, str]]:
    if not xml:
        return []
    root = safe_fromstring(xml)
    return [dict(el.attrib) for el in root if el.tag.endswith("Relationship")]


def _add_relationships(xml: bytes | None, rels: list[tuple[str, str, str]]) -> bytes:
    """`rels` ((id, type, target)) appended to a .rels part (created if None)."""
    if xml is None:
        xml = f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="{PKG_REL_NS}"></Relationships>'.encode()
    add = b"".join(f'<Relationship Id="{i}" Type="{t}" Target="{escape(g)}"/>'.encode() for i, t, g in rels)
    if xml.rstrip().endswith(b"/>") and b"</Relationships>" not in xml:
        xml = re.sub(rb"<Relationships([^>]*)/>", rb"<Relationships\1></Relationships>", xml)
    at = xml.rindex(b"</Relationships>")
    return xml[:at] + add + xml[at:]


def _drop_relationships(xml: bytes, ids: set[str]) -> bytes:
    for rid in ids:
        xml = re.sub(rb'<Relationship\b[^>]*\bId="' + re.escape(rid.encode()) + rb'"[^>]*/>', b"", xml)
    return xml


def _fresh_id(taken: set[str], base: str) -> str:
    n = 1
    while f"{base}{n}" in taken:
        n += 1
    taken.add(f"{base}{n}")
    return f"{base}{n}"


def _resolve(base_part: str, target: str) -> str:
    """A relationship target as a zip member name."""
    if target.startswith("/"):
        return target[1:]
    folder = base_part.rsplit("/", 1)[0] if "/" in base_part else ""
    parts = (folder.split("/") if folder else []) + target.split("/")
    out: list[str] = []
    for p in parts:
        if p == "..":
            if out:
                out.pop()
        elif p and p != ".":
            out.append(p)
    return "/".join(out)


def _rels_name(part: str) -> str:
    folder, _, name = part.rpartition("/")
    return f"{folder}/_rels/{name}.rels" if folder else f"_rels/{name}.rels"


# -- the workbook -------------------------------------------------------------------

@dataclass
class SheetPart:
    """One sheet of the workbook: its title, its zip member, whether it is a worksheet."""

    title: str
    part: str                   # zip member
    is_worksheet: bool


@dataclass
class Note:
    """What one cell gets: a comment, a fill."""

    text: str
    width: int
    height: int
    fill: str                   # severity label, a key of xlsx_io.FILLS


@dataclass
class Grafted:
    """The findings sheet, as openpyxl wrote it in a workbook of its own."""

    title: str
    sheet_xml: bytes
    styles_xml: bytes
    defined_names: list[bytes] = field(default_factory=list)


def sheet_parts(pkg: Package) -> tuple[str, list[SheetPart]]:
    """The workbook part and its sheets in tab order."""
    root_rels = _relationships(pkg.read("_rels/.rels") if "_rels/.rels" in pkg else None)
    wb_part = next((_resolve("", r["Target"]) for r in root_rels if r.get("Type", "").endswith("/officeDocument")),
                   "xl/workbook.xml")
    if wb_part not in pkg:
        raise NotAnnotatable("no workbook part")
    rels = {r["Id"]: r for r in _relationships(pkg.read(_rels_name(wb_part)) if _rels_name(wb_part) in pkg
                                                 else None)}
    root = safe_fromstring(pkg.read(wb_part))
    sheets: list[SheetPart] = []
    for el in root.iter():
        if el.tag.endswith("}sheet") or el.tag == "sheet":
            rel = rels.get(el.get(f"{{{REL_NS}}}id") or "")
            if rel is None or el.get("name") is None:
                continue
            sheets.append(SheetPart(el.get("name"), _resolve(wb_part, rel["Target"]),
                                    rel.get("Type") == REL_WORKSHEET))
    return wb_part, sheets


class Styles:
    """styles.xml, grown with the fills and cell formats the annotations need."""

    def __init__(self, xml: bytes):
        self.xml = xml
        self.p = _prefix(xml, b"styleSheet")
        self.added: dict[bytes, list[bytes]] = {}     # section → elements appended
        self.counts: dict[bytes, int] = {}
        self.clones: dict[tuple, int] = {}
        self.fills: dict[str, int] = {}
        self.cell_xfs = self._elements(b"cellXfs", b"xf")

    def _section(self, name: bytes, xml: bytes | None = None) -> re.Match | None:
        p = re.escape(self.p)
        return re.search(rb"<" + p + name + rb"\b[^>]*?(?:/>|>.*?</" + p + name + rb">)",
                         self.xml if xml is None else xml, re.S)

    def _elements(self, section: bytes, tag: bytes) -> list[bytes]:
        m = self._section(section)
        if m is None:
            return []
        p = re.escape(self.p)
        return re.findall(rb"<" + p + tag + rb"\b[^>]*?(?:/>|>.*?</" + p + tag + rb">)", m.group(0), re.S)

    def count(self, section: bytes, tag: bytes) -> int:
        """How many elements `tag` the section holds, added ones included."""
        if section not in self.counts:
            self.counts[section] = len(self._elements(section, tag))
        return self.counts[section] + len(self.added.get(section, []))

    def append(self, section: bytes, tag: bytes, element: bytes) -> int:
        """Add an element to a section; its index."""
        index = self.count(section, tag)
        self.added.setdefault(section, []).append(element)
        return index

    def fill(self, label: str, rgb: str) -> int:
        """The index of the solid fill of colour `rgb` (added once per label)."""
        if label not in self.fills:
            p = self.p.decode()
            self.fills[label] = self.append(b"fills", b"fill", (
                f'<{p}fill><{p}patternFill patternType="solid"><{p}fgColor rgb="{rgb}"/>'
                f'<{p}bgColor indexed="64"/></{p}patternFill></{p}fill>').encode())
        return self.fills[label]

    def xf(self, base: int, fill: int | None = None, quote: bool = False) -> int:
        """A cell format like `base` with `fill` and/or Excel's quote prefix."""
        key = (base, fill, quote)
        if key not in self.clones:
            xf = self.cell_xfs[base] if base < len(self.cell_xfs) else (
                b"<" + self.p + b'xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>')
            tag_end = xf.index(b">") + 1
            tag, rest = xf[:tag_end], xf[tag_end:]
            if fill is not None:
                tag = _set_attr(_set_attr(tag, b"fillId", str(fill).encode()), b"applyFill", b"1")
            if quote:
                tag = _set_attr(tag, b"quotePrefix", b"1")
            self.clones[key] = self.append(b"cellXfs", b"xf", tag + rest)
        return self.clones[key]

    def to_bytes(self) -> bytes:
        """The styles part with the added elements."""
        xml = self.xml
        for section, elements in self.added.items():
            m = self._section(section, xml)
            p = self.p
            total = str(self.count(section, b"")).encode()
            if m is None:
                raise NotAnnotatable(f"styles.xml has no <{section.decode()}>")
            block = m.group(0)
            if block.endswith(b"/>"):
                opening = block[:-2] + b">"
                body, closing = b"", b"</" + p + section + b">"
            else:
                opening = block[:block.index(b">") + 1]
                closing = b"</" + p + section + b">"
                body = block[len(opening):-len(closing)]
            opening = _set_attr(opening, b"count", total)
            xml = xml[:m.start()] + opening + body + b"".join(elements) + closing + xml[m.end():]
        return xml


_ENTITY = re.compile(rb"&#(x[0-9A-Fa-f]+|[0-9]+);|_x([0-9A-Fa-f]{4})_")
_STARTS = frozenset(FORMULA_START)


def starts_like_formula(text: bytes) -> bool:
    """Whether XML text (as stored in a part: `&#9;`, `&#x3D;` and OOXML's
    `_x000D_` escapes undone) starts with a character Excel would read as the
    start of a formula when the cell is edited."""
    if not text:
        return False
    m = _ENTITY.match(text)
    if m is None:
        return chr(text[0]) in _STARTS
    try:
        if m.group(2) is not None:
            code = int(m.group(2), 16)
        else:
            code = int(m.group(1)[1:], 16) if m.group(1)[:1] in (b"x", b"X") else int(m.group(1))
    except ValueError:
        return False
    return chr(code) in _STARTS if code < 0x110000 else False


def _texts_start(block: bytes, p: bytes) -> bytes:
    """The start of the text an `<si>` or `<is>` block shows: its `<t>` runs
    (rich text included) in order, the phonetic runs left out."""
    block = re.sub(rb"<" + p + rb"rPh\b.*?</" + p + rb"rPh>", b"", block, flags=re.S)
    for m in re.finditer(rb"<" + p + rb"t\b[^>]*?(?:/>|>(.*?)</" + p + rb"t>)", block, re.S):
        if m.group(1):
            return m.group(1)[:16]
    return b""


# What a text part holds when some text in it may start like a formula.
_MAYBE_FORMULA = tuple(b">" + c.encode() for c in FORMULA_START) + (b">&#", b">_x")


def _shared_formula_like(pkg: Package, wb_part: str) -> set[int]:
    """Indices of the shared strings that start like a formula (`=`, `+`, `-`, `@`, tab, CR)."""
    rels = _relationships(pkg.read(_rels_name(wb_part)) if _rels_name(wb_part) in pkg else None)
    part = next((_resolve(wb_part, r["Target"]) for r in rels if r.get("Type", "").endswith("/sharedStrings")), None)
    if part is None or part not in pkg:
        return set()
    xml = pkg.read(part)
    if not any(s in xml for s in _MAYBE_FORMULA):
        return set()
    p = re.escape(_prefix(xml, b"sst"))
    out = set()
    items = re.finditer(rb"<" + p + rb"si\b[^>]*?(?:/>|>(.*?)</" + p + rb"si>)", xml, re.S)
    for i, m in enumerate(items):
        if starts_like_formula(_texts_start(m.group(1) or b"", p)):
            out.add(i)
    return out


# -- one sheet ---------------------------------------------------------------------

_REF = re.compile(rb"([A-Z]{1,3})(\d+)$")


def _col_number(letters: bytes) -> int:
    n = 0
    for ch in letters:
        n = n * 26 + ch - 64
    return n


class SheetEdit:
    """Edits of one worksheet's XML, applied in one pass at their offsets."""

    def __init__(self, xml: bytes, styles: Styles):
        self.xml = xml
        self.styles = styles
        self.p = _prefix(xml, b"worksheet")
        self.cells: dict[int, tuple[int, dict]] = {}     # cell start → (end, changes)
        self.inserts: dict[int, list[tuple[int, bytes]]] = {}   # offset → [(column, xml)]
        self.new_rows: dict[int, dict[int, bytes]] = {}         # row → column → cell xml
        self.replaced: list[tuple[int, int, bytes]] = []        # (start, end, text)
        self._rows: list[tuple[int, int]] | None = None
        self._checked = False

    def _check_references(self) -> None:
        """Cells are found by their reference: every row and cell must carry one."""
        if self._checked:
            return
        p, xml = self.p, self.xml
        if xml.count(b"<" + p + b"row") != xml.count(b"<" + p + b'row r="') or \
                xml.count(b"<" + p + b"c ") + xml.count(b"<" + p + b"c>") != xml.count(b"<" + p + b'c r="'):
            raise NotAnnotatable("rows or cells without their reference")
        self._checked = True

    def needed(self, formulas: bool, quoted: set[int], selected: bool) -> bool:
        """Whether the sheet changes at all without notes (then it is copied as it is)."""
        if formulas:
            self.drop_formulas()
        self.quote_shared(quoted)
        self.quote_inline()
        if selected:
            self.untab()
        return bool(self.cells or self.replaced)

    # locating
    def _cell_end(self, start: int) -> int:
        tag_end = self.xml.index(b">", start)
        if self.xml[tag_end - 1:tag_end] == b"/":
            return tag_end + 1
        return self.xml.index(b"</" + self.p + b"c>", tag_end) + len(self.p) + 4

    def _cell_start(self, pos: int) -> int:
        return self.xml.rindex(b"<" + self.p + b"c ", 0, pos + 1)

    def _row_index(self) -> list[tuple[int, int]]:
        if self._rows is None:
            pattern = re.compile(rb"<" + re.escape(self.p) + rb'row r="(\d+)"')
            self._rows = sorted((int(m.group(1)), m.start()) for m in pattern.finditer(self.xml))
        return self._rows

    def _change(self, start: int, **changes) -> None:
        end, known = self.cells.setdefault(start, (self._cell_end(start), {}))
        known.update(changes)

    # what the annotations ask
    def fill(self, ref: str, label: str, rgb: str) -> None:
        """The cell `ref` filled (created, and its row, where missing); found
        through the row index, so many notes cost one pass, not one each."""
        self._check_references()
        fill = self.styles.fill(label, rgb)
        p = self.p
        col_letters, row = _REF.match(ref.encode()).groups()
        row, col = int(row), _col_number(col_letters)
        cell = (b"<" + p + b'c r="' + ref.encode() + b'" s="' + str(self.styles.xf(0, fill)).encode() + b'"/>')
        rows = self._row_index()
        i = bisect.bisect_left(rows, (row, -1))
        if i == len(rows) or rows[i][0] != row:
            self.new_rows.setdefault(row, {})[col] = cell
            return
        row_at = rows[i][1]
        tag_end = self.xml.index(b">", row_at)
        if self.xml[tag_end - 1:tag_end] == b"/":       # <row r="5"/>: opened to take the cell
            self.inserts.setdefault(row_at, []).append((col, cell))
            return
        row_end = self.xml.index(b"</" + p + b"row>", tag_end)
        start = self.xml.find(b"<" + p + b'c r="' + ref.encode() + b'"', tag_end, row_end)
        if start >= 0:
            self._change(start, fill=fill)
            return
        at = row_end
        for m in re.finditer(rb"<" + re.escape(p) + rb'c r="([A-Z]+)\d+"', self.xml[tag_end:row_end]):
            if _col_number(m.group(1)) > col:
                at = tag_end + m.start()
                break
        self.inserts.setdefault(at, []).append((col, cell))

    def drop_formulas(self) -> None:
        """Replace every formula by the value Excel saved."""
        p = self.p
        for tag in (b"<" + p + b"f>", b"<" + p + b"f "):
            pos = self.xml.find(tag)
            while pos >= 0:
                self._change(self._cell_start(pos), formula=True)
                pos = self.xml.find(tag, pos + 1)
        pos = self.xml.find(b"<" + p + b"f/>")
        while pos >= 0:
            self._change(self._cell_start(pos), formula=True)
            pos = self.xml.find(b"<" + p + b"f/>", pos + 1)

    def quote_shared(self, indices: set[int]) -> None:
        """Mark the shared strings `indices` as text (quote prefix) where cells use them."""
        if not indices:
            return
        p = re.escape(self.p)
        pattern = re.compile(rb"<" + p + rb"v>(" + b"|".join(str(i).encode() for i in sorted(indices)) +
                             rb")</" + p + rb"v>")
        for m in pattern.finditer(self.xml):
            start = self._cell_start(m.start())
            tag = self.xml[start:self.xml.index(b">", start)]
            if _attrs(tag).get(b"t") == b"s":
                self._change(start, quote=True)

    def quote_inline(self) -> None:
        """Mark inline strings (rich text included) and text values without a
        formula (`t="str"`) that look like formulas as text (quote prefix)."""
        p = re.escape(self.p)
        for m in re.finditer(rb"<" + p + rb"c\b[^>]*?\bt=\"(inlineStr|str)\"[^>]*?>", self.xml):
            if m.group(0).endswith(b"/>"):
                continue
            start = m.start()
            end = self._cell_end(start)
            inner = self.xml[m.end():end]
            if m.group(1) == b"inlineStr":
                text = _texts_start(inner, p)
            else:
                if re.search(rb"<" + p + rb"f[\s>/]", inner):
                    continue   # a formula: drop_formulas makes it its value, quoted if need be
                v = re.search(rb"<" + p + rb"v>(.*?)</" + p + rb"v>", inner, re.S)
                text = v.group(1) if v else b""
            if starts_like_formula(text):
                self._change(start, quote=True)

    def legacy_drawing(self, rid: str) -> None:
        """Point the sheet at its comments' drawing `rid`."""
        p = self.p
        end_data = self.xml.rfind(b"</" + p + b"sheetData>")
        if end_data < 0:
            end_data = self.xml.rfind(b"<" + p + b"sheetData")
        tail_start = max(end_data, 0)
        tail = self.xml[tail_start:]
        at = None
        for name in _AFTER_LEGACY:
            i = tail.find(b"<" + p + name.encode())
            if i >= 0 and (at is None or i < at):
                at = i
        if at is None:
            # The worksheet's own <extLst> is its last child; an <extLst> inside
            # conditional formatting comes before the formats end.
            after = max(tail.rfind(b"</" + p + b"conditionalFormatting>"), 0)
            i = tail.find(b"<" + p + b"extLst", after)
            at = i if i >= 0 else tail.rindex(b"</" + p + b"worksheet>")
        element = (f'<{p.decode()}legacyDrawing xmlns:r="{REL_NS}" r:id="{rid}"/>').encode()
        self.inserts.setdefault(tail_start + at, []).append((0, element))

    def untab(self) -> None:
        """No longer the selected tab: the findings sheet is."""
        for m in re.finditer(rb"<" + re.escape(self.p) + rb"sheetView\b[^>]*>", self.xml[:1 << 16]):
            if b"tabSelected" in m.group(0):
                self.replaced.append((m.start(), m.end(), _set_attr(m.group(0), b"tabSelected", None)))

    # writing
    def _rewrite_cell(self, start: int, end: int, changes: dict) -> bytes:
        cell = self.xml[start:end]
        tag_end = cell.index(b">") + 1
        tag, inner = cell[:tag_end], cell[tag_end:]
        attrs = _attrs(tag)
        p = self.p
        quote = changes.get("quote", False)
        if changes.get("formula"):
            f = re.search(rb"<" + re.escape(p) + rb"f\b[^>]*?(?:/>|>(.*?)</" + re.escape(p) + rb"f>)", inner, re.S)
            v = re.search(rb"<" + re.escape(p) + rb"v>(.*?)</" + re.escape(p) + rb"v>", inner, re.S)
            kind = attrs.get(b"t", b"n")
            if v is not None and v.group(1) != b"" and kind not in (b"str", b"e"):
                inner = inner[:f.start()] + inner[f.end():] if f else inner
            else:
                # A text result, or no saved result at all (then the formula's
                # own text): plain text, never a formula again.
                text = v.group(1) if v is not None and v.group(1) != b"" else b"=" + ((f.group(1) or b"") if f else b"")
                tag = _set_attr(tag, b"t", b"inlineStr")
                inner = (b"<" + p + b'is><' + p + b't xml:space="preserve">' + text + b"</" + p + b"t></" + p +
                         b"is></" + p + b"c>")
                quote = quote or starts_like_formula(text)
                if tag.endswith(b"/>"):
                    tag = tag[:-2] + b">"
        base = int(attrs.get(b"s", b"0"))
        fill = changes.get("fill")
        if fill is not None or quote:
            tag = _set_attr(tag, b"s", str(self.styles.xf(base, fill, quote)).encode())
        return tag + inner

    def to_bytes(self) -> bytes:
        """The sheet's XML with every edit applied."""
        edits: list[tuple[int, int, bytes]] = []
        for start, (end, changes) in self.cells.items():
            edits.append((start, end, self._rewrite_cell(start, end, changes)))
        edits.extend(self.replaced)
        for at, items in self.inserts.items():
            row_tag = self.xml[at:self.xml.index(b">", at) + 1]
            if row_tag.startswith(b"<" + self.p + b"row") and row_tag.endswith(b"/>"):
                cells = b"".join(x for _, x in sorted(items))
                edits.append((at, at + len(row_tag), _set_attr(row_tag[:-2] + b">", b"spans", None) + cells +
                              b"</" + self.p + b"row>"))
            else:
                edits.append((at, at, b"".join(x for _, x in sorted(items, key=lambda i: i[0]))))
        edits.extend(self._row_edits())
        edits.sort(key=lambda e: (e[0], e[1]))
        out, pos = [], 0
        for start, end, text in edits:
            if start < pos:
                raise NotAnnotatable("overlapping edits")
            out.append(self.xml[pos:start])
            out.append(text)
            pos = end
        out.append(self.xml[pos:])
        return b"".join(out)

    def _row_edits(self) -> list[tuple[int, int, bytes]]:
        """Rows that did not exist, each before the first row after it."""
        if not self.new_rows:
            return []
        p = self.p
        rows = self._row_index()
        numbers = [r for r, _ in rows]
        sheet_end = self.xml.find(b"</" + p + b"sheetData>")
        at_offset: dict[int, list[bytes]] = {}
        for row, cells in sorted(self.new_rows.items()):
            body = b"".join(cells[c] for c in sorted(cells))
            element = b"<" + p + b'row r="' + str(row).encode() + b'">' + body + b"</" + p + b"row>"
            i = bisect.bisect_right(numbers, row)
            at_offset.setdefault(rows[i][1] if i < len(rows) else sheet_end, []).append(element)
        edits = [(at, at, b"".join(elements)) for at, elements in at_offset.items() if at >= 0]
        if -1 in at_offset:
            empty = re.search(rb"<" + re.escape(p) + rb"sheetData\s*/>", self.xml)
            if empty is None:
                raise NotAnnotatable("no sheetData")
            edits.append((empty.start(), empty.end(), b"<" + p + b"sheetData>" + b"".join(at_offset[-1]) +
                          b"</" + p + b"sheetData>"))
        return edits


# -- the whole workbook ---------------------------------------------------------------

CORE_XML = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
            '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" '
            'xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" '
            'xmlns:dcmitype="http://purl.org/dc/dcmitype/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
            '<dc:creator>{author}</dc:creator><cp:lastModifiedBy>{author}</cp:lastModifiedBy>'
            '<dcterms:created xsi:type="dcterms:W3CDTF">{iso}</dcterms:created>'
            '<dcterms:modified xsi:type="dcterms:W3CDTF">{iso}</dcterms:modified></cp:coreProperties>')


def _free_name(pkg: Package, pattern: str) -> str:
    n = 1
    while pattern.format(n) in pkg or pattern.format(n) in pkg.order:
        n += 1
    return pattern.format(n)


def _has_formula(xml: bytes, p: bytes) -> bool:
    return any(xml.find(b"<" + p + b"f" + end) >= 0 for end in (b">", b" ", b"/"))


def annotate(data: bytes, notes: dict[str, dict[str, Note]], grafted: Grafted, *, author: str,
             generated_at: str, date_time: tuple) -> bytes:
    """The workbook `data` with `notes` (sheet title → cell → Note) as
    comments and fills, formulas replaced by their saved values, macros and
    external links dropped, and the grafted findings sheet first."""
    from openpyxl.comments.comment_sheet import CommentRecord, CommentSheet
    from openpyxl.xml.functions import tostring

    from auditor.report.xlsx_io import FILLS

    pkg = Package(data)
    wb_part, sheets = sheet_parts(pkg)
    wb_rels_name = _rels_name(wb_part)
    wb_rels_xml = pkg.read(wb_rels_name)
    wb_rels = _relationships(wb_rels_xml)
    content_types = pkg.read("[Content_Types].xml")
    styles_part = next((_resolve(wb_part, r["Target"]) for r in wb_rels if r.get("Type", "").endswith("/styles")),
                       None)
    if styles_part is None or styles_part not in pkg:
        raise NotAnnotatable("no styles part")
    styles = Styles(pkg.read(styles_part))
    dropped_ids = set()
    for r in wb_rels:
        if r.get("Type") in DROPPED_REL_TYPES:
            target = _resolve(wb_part, r["Target"])
            for name in (target, _rels_name(target)):
                pkg.drop(name)
            dropped_ids.add(r["Id"])
    for name in list(pkg.order):
        if name.startswith("xl/externalLinks/") or name.lower().startswith("xl/vbaproject"):
            pkg.drop(name)
    quoted = _shared_formula_like(pkg, wb_part)
    overrides: list[tuple[str, str]] = []

    for sheet in sheets:
        if not sheet.is_worksheet or sheet.part not in pkg:
            continue
        xml = pkg.read(sheet.part)
        p = _prefix(xml, b"worksheet")
        cells = notes.get(sheet.title, {})
        formulas = _has_formula(xml, p)
        selected = b"tabSelected" in xml[:1 << 16]
        if not (cells or formulas or quoted or selected or b"<" + p + b"is>" in xml or b't="str"' in xml):
            continue
        edit = SheetEdit(xml, styles)
        if not cells and not edit.needed(formulas, quoted, selected):
            continue
        if cells:
            edit.needed(formulas, quoted, selected)
        for ref, note in cells.items():
            edit.fill(ref, note.fill, FILLS[note.fill].fgColor.rgb)
        if cells:
            rels_name = _rels_name(sheet.part)
            rels_xml = pkg.read(rels_name) if rels_name in pkg else None
            rels = _relationships(rels_xml)
            taken = {r["Id"] for r in rels}
            comments_part = next((_resolve(sheet.part, r["Target"]) for r in rels if r.get("Type") == REL_COMMENTS),
                                 None)
            vml_part = next((_resolve(sheet.part, r["Target"]) for r in rels if r.get("Type") == REL_VML), None)
            records: dict[str, CommentRecord] = {}
            if comments_part is not None and comments_part in pkg:
                # A comment already in the source stays, and first on its cell.
                for ref, comment in CommentSheet.from_tree(safe_fromstring(pkg.read(comments_part))).comments:
                    records[ref] = (comment.content, comment.author, comment.width, comment.height)
            for ref, note in cells.items():
                text = note.text
                if ref in records and records[ref][1] != author:
                    text = f"{records[ref][0]}\n\n{text}"
                records[ref] = (text[:32000], author, note.width, note.height)
            comment_list = []
            for ref, (text, who, width, height) in records.items():
                record = CommentRecord(ref=ref, author=who, width=width, height=height)
                record.text.t = text
                comment_list.append(record)
            cs = CommentSheet.from_comments(comment_list)
            new_rels = []
            if comments_part is None:
                comments_part = _free_name(pkg, "xl/comments{}.xml")
                new_rels.append((_fresh_id(taken, "rIdAudit"), REL_COMMENTS, "/" + comments_part))
                overrides.append(("/" + comments_part, COMMENTS_TYPE))
            pkg.write(comments_part, tostring(cs.to_tree()))
            vml_root = safe_fromstring(pkg.read(vml_part)) if vml_part is not None and vml_part in pkg else None
            if vml_part is None:
                vml_part = _free_name(pkg, "xl/drawings/vmlDrawingAudit{}.vml")
                rid = _fresh_id(taken, "rIdAudit")
                new_rels.append((rid, REL_VML, "/" + vml_part))
                edit.legacy_drawing(rid)
            pkg.write(vml_part, cs.write_shapes(vml_root))
            if new_rels:
                pkg.write(rels_name, _add_relationships(rels_xml, new_rels))
        pkg.write(sheet.part, edit.to_bytes())

    # The findings sheet, first.
    sheet_part = _free_name(pkg, "xl/worksheets/sheet{}.xml")
    pkg.write(sheet_part, _graft_styles(grafted, styles))
    overrides.append(("/" + sheet_part, WORKSHEET_TYPE))
    wb_taken = {r["Id"] for r in wb_rels}
    rid = _fresh_id(wb_taken, "rIdAudit")
    wb_rels_xml = _add_relationships(_drop_relationships(wb_rels_xml, dropped_ids),
                                     [(rid, REL_WORKSHEET, "/" + sheet_part)])
    pkg.write(wb_rels_name, wb_rels_xml)
    pkg.write(wb_part, _workbook_xml(pkg.read(wb_part), grafted, rid, dropped_ids))
    pkg.write(styles_part, styles.to_bytes())
    pkg.write("[Content_Types].xml", _content_types(content_types, overrides, pkg))
    core = next((_resolve("", r["Target"]) for r in _relationships(pkg.read("_rels/.rels"))
                 if r.get("Type", "").endswith("/core-properties")), None)
    if core is not None and core in pkg:
        pkg.write(core, CORE_XML.format(author=escape(author), iso=generated_at).encode())
    return pkg.save(date_time)


def _reprefix(element: bytes, old: bytes, new: bytes) -> bytes:
    """An element moved from a part whose main namespace prefix is `old` to one where it is `new`."""
    if old == new:
        return element
    return re.sub(rb"<(/?)" + re.escape(old) + rb"(?=[A-Za-z])", lambda m: b"<" + m.group(1) + new, element)


def _graft_styles(grafted: Grafted, styles: Styles) -> bytes:
    """The findings sheet's XML with its cell formats appended to `styles`."""
    small = Styles(grafted.styles_xml)
    maps: dict[bytes, dict[int, int]] = {}
    for section, tag, attr in ((b"fonts", b"font", b"fontId"), (b"fills", b"fill", b"fillId"),
                               (b"borders", b"border", b"borderId")):
        maps[attr] = {i: styles.append(section, tag, _reprefix(el, small.p, styles.p))
                      for i, el in enumerate(small._elements(section, tag))}
    formats: dict[int, int] = {}
    taken = {int(i) for i in re.findall(rb'numFmtId="(\d+)"', styles.xml)} | {163}
    for el in small._elements(b"numFmts", b"numFmt"):
        old = int(_attrs(el)[b"numFmtId"])
        new = max(taken) + 1
        taken.add(new)
        formats[old] = new
        styles.append(b"numFmts", b"numFmt", _set_attr(el, b"numFmtId", str(new).encode()))
    xf_map = {}
    for i, xf in enumerate(small.cell_xfs):
        tag_end = xf.index(b">") + 1
        tag, rest = xf[:tag_end], xf[tag_end:]
        for attr, mapping in maps.items():
            value = _attrs(tag).get(attr)
            if value is not None:
                tag = _set_attr(tag, attr, str(mapping.get(int(value), 0)).encode())
        fmt = _attrs(tag).get(b"numFmtId")
        if fmt is not None and int(fmt) in formats:
            tag = _set_attr(tag, b"numFmtId", str(formats[int(fmt)]).encode())
        tag = _set_attr(tag, b"xfId", b"0")
        xf_map[i] = styles.append(b"cellXfs", b"xf", _reprefix(tag + rest, small.p, styles.p))
    dxf_map = {i: styles.append(b"dxfs", b"dxf", _reprefix(el, small.p, styles.p))
               for i, el in enumerate(small._elements(b"dxfs", b"dxf"))}

    def restyle(m: re.Match) -> bytes:
        return m.group(1) + str(xf_map.get(int(m.group(2)), 0)).encode() + b'"'

    xml = grafted.sheet_xml
    if b"tabSelected" not in xml:   # the findings sheet is the selected tab
        xml = re.sub(rb"<sheetView\b[^>]*?(?=/?>)", lambda m: m.group(0) + b' tabSelected="1"', xml, count=1)
    xml = re.sub(rb'(<(?:c|row)\b[^>]*?\bs=")(\d+)"', restyle, xml)
    xml = re.sub(rb'(<col\b[^>]*?\bstyle=")(\d+)"', restyle, xml)
    if dxf_map:
        xml = re.sub(rb'(\bdxfId=")(\d+)"', lambda m: m.group(1) + str(dxf_map.get(int(m.group(2)), 0)).encode()
                     + b'"', xml)
    return xml


def _workbook_xml(xml: bytes, grafted: Grafted, rid: str, dropped_ids: set[str]) -> bytes:
    p = _prefix(xml, b"workbook")
    pe = re.escape(p)
    ids = [int(i) for i in re.findall(rb"<" + pe + rb'sheet\b[^>]*?\bsheetId="(\d+)"', xml)]
    element = (f'<{p.decode()}sheet name="{escape(grafted.title, {chr(34): "&quot;"})}" '
               f'sheetId="{max(ids, default=0) + 1}" xmlns:r="{REL_NS}" r:id="{rid}"/>').encode()
    sheets = re.search(rb"<" + pe + rb"sheets\b[^>]*?(/?)>", xml)
    if sheets is None:
        raise NotAnnotatable("no <sheets>")
    if sheets.group(1):
        xml = xml[:sheets.start()] + b"<" + p + b"sheets>" + element + b"</" + p + b"sheets>" + xml[sheets.end():]
    else:
        xml = xml[:sheets.end()] + element + xml[sheets.end():]
    # Every sheet-local name moves one place right; the findings sheet is the active tab.
    xml = re.sub(rb'\blocalSheetId="(\d+)"', lambda m: b'localSheetId="' + str(int(m.group(1)) + 1).encode() + b'"',
                 xml)
    xml = re.sub(rb"<" + pe + rb"workbookView\b[^>]*>",
                 lambda m: _set_attr(_set_attr(m.group(0), b"activeTab", None), b"firstSheet", None), xml)
    xml = re.sub(rb"<" + pe + rb"externalReferences\b.*?</" + pe + rb"externalReferences>", b"", xml, flags=re.S)
    if grafted.defined_names:
        names = b"".join(n.replace(b"<definedName", b"<" + p + b"definedName")
                         .replace(b"</definedName>", b"</" + p + b"definedName>") for n in grafted.defined_names)
        existing = re.search(rb"<" + pe + rb"definedNames\b[^>]*?(/?)>", xml)
        if existing is not None and not existing.group(1):
            xml = xml[:existing.end()] + names + xml[existing.end():]
        else:
            block = b"<" + p + b"definedNames>" + names + b"</" + p + b"definedNames>"
            if existing is not None:
                xml = xml[:existing.start()] + block + xml[existing.end():]
            else:
                at = xml.index(b"</" + p + b"sheets>") + len(p) + 9
                xml = xml[:at] + block + xml[at:]
    return xml


def _content_types(xml: bytes, overrides: list[tuple[str, str]], pkg: Package) -> bytes:
    xml = xml.replace(b"application/vnd.ms-excel.sheet.macroEnabled.main+xml", WORKBOOK_TYPE.encode())

    def keep(m: re.Match) -> bytes:
        part = _attrs(m.group(0)).get(b"PartName", b"").decode()
        return m.group(0) if part.lstrip("/") in pkg else b""

    xml = re.sub(rb"<Override\b[^>]*/>", keep, xml)
    add = b"".join(f'<Override PartName="{escape(n)}" ContentType="{t}"/>'.encode() for n, t in overrides)
    if not re.search(rb'<Default\b[^>]*\bExtension="vml"', xml, re.I):
        add = f'<Default Extension="vml" ContentType="{VML_TYPE}"/>'.encode() + add
    at = xml.rindex(b"</Types>")
    return xml[:at] + add + xml[at:]
