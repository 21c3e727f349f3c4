"""annotated.xlsx: the carnet with each finding as a comment on its cell, the
cell filled in its severity's colour, and a first sheet listing every finding
with a link to its cell.

A workbook carnet is copied (values untouched; a formula is replaced by the
value the auditor read, see docs/interpretations.md); a CSV carnet is rebuilt
as a workbook from its files, every cell as the text of the source, at the
same row numbers. Nothing from the source is ever written as a formula.
"""

from __future__ import annotations

import csv
import io
from copy import copy
from decimal import Decimal
import re
import zipfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from xml.etree.ElementTree import ParseError

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
from openpyxl.styles import Alignment, Font
from openpyxl.worksheet.worksheet import Worksheet
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.hyperlink import Hyperlink

from auditor.model import AuditResult
from auditor.i18n import format_day, labels
from auditor.model import Finding
from auditor.money import format_cents
from auditor.read.csv_folder import decode, sniff_delimiter
from auditor.read.raw import canonical_name, column_letter
from auditor.report.page import article_text
from auditor.report.report_view import value_columns, value_text
from auditor.report.xlsx_io import (FILLS, FORMULA_START, MAX_CELL_TEXT, put_text, stamp_from, unique_sheet_title,
                                    workbook_bytes)
from auditor.report.xlsx_parts import Grafted, NotAnnotatable, Note, annotate, sheet_parts
from auditor.zippkg import Package

AUTHOR = "ecarte-auditor"
COMMENT_WIDTH = 360  # points; wide enough for a message on two or three lines


@dataclass
class SheetMap:
    """Where a carnet table lives in the output workbook."""

    title: str
    letters: dict[str, str]     # canonical column name → letter


def write_annotated(result: AuditResult, source_path: str | Path, out_path: str | Path,
                    lang: str | None = None, generated_at: str | None = None) -> Path:
    """Write annotated.xlsx for one audited carnet (see `annotated_bytes`)."""
    out = Path(out_path)
    from auditor.atomic import make_folder, write_atomic

    make_folder(out.parent)
    write_atomic(out, annotated_bytes(result, source_path, lang, generated_at))
    return out


def annotated_bytes(result: AuditResult, source_path: str | Path, lang: str | None = None,
                    generated_at: str | None = None) -> bytes:
    """annotated.xlsx for one carnet audited alone, as bytes (`workbook_draft`,
    then `finish_workbook` with its own findings).

    source_path: the carnet as audited (an .xlsx/.xlsm file or a CSV folder);
    lang: labels of the added sheet and comments (default: the result's; the
    findings' messages are already in the result's language);
    generated_at: the report timestamp (default: SOURCE_DATE_EPOCH or now).
    """
    from auditor.clock import generated_at as now

    return finish_workbook(workbook_draft(result, source_path, lang), result.findings, generated_at or now())


@dataclass
class WorkbookDraft:
    """The annotated workbook as far as the carnet alone decides it: the
    carnet as a workbook (its own zip parts, or rebuilt from the values the
    reader read) and where each table lives in it. The findings, comments and
    findings sheet are added once the run is known (`finish_workbook`)."""

    base: bytes | None            # None: the list of findings alone (an unreadable carnet)
    sheets: dict[str, SheetMap]
    lang: str


def workbook_draft(result: AuditResult, source_path: str | Path, lang: str | None = None) -> WorkbookDraft:
    """The carnet as a workbook, read where it is audited (the worker): the
    carnet's workbook is never loaded, its zip parts are copied."""
    lang = lang or result.lang
    source = Path(source_path)
    base, sheets = None, {}
    if result.carnet.unreadable or _refused_by_reader(result):
        # The reader refused it, or one of its sheets (damaged, too large, a zip
        # bomb, a cell a million columns away…): never open it again here.
        pass
    elif source.is_dir():
        base, sheets = _workbook_from_csv(source, set(result.carnet.tables))
    elif result.carnet.source.format != "xlsx":
        # .ods, .xls, .xlsb: their parts are not OOXML; the carnet is rebuilt
        # as .xlsx from the values the reader read, at the same cells.
        base, sheets = _workbook_from_values(source, set(result.carnet.tables))
    else:
        base, sheets = _workbook_copy(source)
    return WorkbookDraft(base, sheets, lang)


def finish_workbook(draft: WorkbookDraft, findings: list[Finding], stamp: str,
                    reviews: dict[str, dict] | None = None) -> bytes:
    """annotated.xlsx: the draft's workbook with every finding as a comment on
    its cell and the findings sheet, in time proportional to the findings and
    the sheets they touch (xlsx_parts). `reviews`: fingerprint → latest
    decision (baseline.BaselineComparison.reviews), shown in the findings sheet."""
    lang = draft.lang
    lab = labels(lang)
    anchors = [anchor_of(f, draft.sheets) for f in findings]
    findings_wb = Workbook(write_only=True)
    _findings_sheet(findings_wb, findings, anchors, lab, lang, reviews)
    if draft.base is not None:
        try:
            return _annotated_parts(draft.base, draft.sheets, findings, anchors, findings_wb, lab, lang, stamp)
        except (NotAnnotatable, zipfile.BadZipFile, KeyError, ValueError, ParseError):
            # Parts laid out in a way the part editor does not handle: the
            # list of findings alone, with its links to cells that are not
            # there, rather than no file (docs/interpretations.md).
            pass
    return workbook_bytes(findings_wb, stamp)


# EC00-01 kinds that only say something is missing: the file itself is safe to open.
_STRUCTURAL = frozenset({"missing_table", "missing_column", "cover_rows"})


def _refused_by_reader(result: AuditResult) -> bool:
    return any(code == "EC00-01" and v.kind not in _STRUCTURAL for code, v in result.carnet.problems)


def _annotated_parts(base: bytes, sheets: dict[str, SheetMap], findings: list[Finding], anchors, findings_wb,
                     lab: dict, lang: str, stamp: str) -> bytes:
    pkg_titles = [s.title for s in sheet_parts(Package(base))[1]]
    ws = findings_wb.worksheets[0]
    ws.title = unique_sheet_title(pkg_titles, ws.title)
    small = zipfile.ZipFile(io.BytesIO(workbook_bytes(findings_wb, stamp)))
    wb_xml = small.read("xl/workbook.xml")
    grafted = Grafted(ws.title, small.read("xl/worksheets/sheet1.xml"), small.read("xl/styles.xml"),
                      re.findall(rb"<definedName\b.*?</definedName>", wb_xml, re.S))
    moment = stamp_from(stamp)
    zip_time = (max(moment.year, 1980), moment.month, moment.day, moment.hour, moment.minute, moment.second)
    return annotate(base, _notes(findings, anchors, lab, lang), grafted, author=AUTHOR, generated_at=stamp,
                    date_time=zip_time)


# -- the carnet as a workbook ---------------------------------------------------

def _workbook_copy(path: Path) -> tuple[bytes | None, dict[str, SheetMap]]:
    try:
        data = path.read_bytes()
        _, parts = sheet_parts(Package(data))
    except (OSError, NotAnnotatable, zipfile.BadZipFile, KeyError, ValueError, ParseError):
        return None, {}   # an unreadable carnet (EC00-01) still gets its list of findings
    sheets: dict[str, SheetMap] = {}
    for part in parts:
        # Same rule as the reader: the first sheet with a canonical name is the table.
        if part.is_worksheet:
            sheets.setdefault(canonical_name(part.title), SheetMap(part.title, {}))
    return data, sheets


def _workbook_from_values(path: Path, tables: set[str]) -> tuple[bytes | None, dict[str, SheetMap]]:
    """The tables the reader accepted, each sheet's values at their own cells,
    written row by row with openpyxl's write-only (streaming) writer."""
    from auditor.read.workbook import sheet_values

    wb = Workbook(write_only=True)
    sheets: dict[str, SheetMap] = {}
    for name, rows in sheet_values(path, tables):
        ws = wb.create_sheet(unique_sheet_title(wb.sheetnames, name))
        for row in rows:
            ws.append([_text_cell(ws, v) if isinstance(v, str) else (None if v is None else v) for v in row])
        sheets.setdefault(canonical_name(name), SheetMap(ws.title, {}))
    if not sheets:
        return None, {}
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue(), sheets


def _workbook_from_csv(folder: Path, tables: set[str]) -> tuple[bytes, dict[str, SheetMap]]:
    """The tables the reader accepted (a file it refused, too large say, is not
    read again), each rebuilt from its file as text, row by row with
    openpyxl's write-only (streaming) writer: no grid of cells is held."""
    wb = Workbook(write_only=True)
    sheets: dict[str, SheetMap] = {}
    files: dict[str, Path] = {}
    try:
        entries = sorted(folder.iterdir(), key=lambda p: p.name)
    except OSError:
        entries = []
    for p in entries:
        if p.is_file() and p.suffix.lower() == ".csv":
            files.setdefault(canonical_name(p.stem), p)   # the reader's choice of file
    files = {t: p for t, p in files.items() if t in tables}
    bold = Font(bold=True)
    for table, p in sorted(files.items()):
        try:
            text, _ = decode(p.read_bytes())
            records = csv.reader(io.StringIO(text), delimiter=sniff_delimiter(text))
            header = next(records, None)
        except (OSError, ValueError, csv.Error):
            continue  # the reader reported it (EC00-01); the list of findings says so
        ws = wb.create_sheet(unique_sheet_title(wb.sheetnames, table))
        letters: dict[str, str] = {}
        if header is not None:
            ws.freeze_panes = "A2"
            cells = []
            for c, name in enumerate(header):
                letters.setdefault(canonical_name(name), column_letter(c))
                cell = WriteOnlyCell(ws)
                if name != "":
                    put_text(cell, name)
                cell.font = bold
                cells.append(cell)
            ws.append(cells)
        # Record i of the file is source row i + 1, as the reader numbers rows.
        try:
            for record in records:
                ws.append([_text_cell(ws, v) for v in record])
        except csv.Error:
            pass  # the reader reported it; the rows before it are kept
        sheets[table] = SheetMap(ws.title, letters)
    if not files:
        return None, {}
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue(), sheets


EURO_FORMAT = '#,##0.00\\ "€";-#,##0.00\\ "€"'
WRAP = Alignment(wrap_text=True, vertical="top")


def _print_setup(ws) -> None:
    """The list of findings prints as a document: landscape A4, every column on
    the page width, the header row repeated on each page, gridlines shown."""
    ws.page_setup.orientation = "landscape"
    ws.page_setup.paperSize = Worksheet.PAPERSIZE_A4
    ws.page_setup.fitToWidth = 1
    ws.page_setup.fitToHeight = 0
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    ws.print_title_rows = "1:1"
    ws.print_options.gridLines = True
    ws.page_margins.left = ws.page_margins.right = 0.4
    ws.page_margins.top = ws.page_margins.bottom = 0.5


def _text_cell(ws, value: str | None):
    """Text as a cell: plain text as it is; text that could read as a
    formula, or holds characters a workbook cannot, through put_text."""
    if value is None or value == "":
        return None
    value = str(value)
    if value.startswith(FORMULA_START) or len(value) > MAX_CELL_TEXT or ILLEGAL_CHARACTERS_RE.search(value):
        cell = WriteOnlyCell(ws)
        put_text(cell, value)
        return cell
    return value


# -- annotations -------------------------------------------------------------------

def anchor_of(f: Finding, sheets: dict[str, SheetMap]) -> tuple[str, str] | None:
    """(sheet title, cell) a finding is attached to: its cell; for a CSV carnet
    the cell under its column; else the first cell of its row; None when the
    finding has no row or its table is not in the workbook."""
    if not f.table or f.row is None or f.table not in sheets:
        return None
    sheet = sheets[f.table]
    if f.cell:
        return sheet.title, f.cell
    letter = sheet.letters.get(canonical_name(f.column)) if f.column else None
    return sheet.title, f"{letter or 'A'}{f.row}"


def comment_line(f: Finding, lab: dict, lang: str) -> str:
    """A finding as the annotated workbook's comment says it."""
    lines = [f"{f.code} ({article_text(f.article, lab)}) — {f.message}"]
    expected = None if f.expected is None else value_text(f.expected, lab)
    found = None if f.found is None else value_text(f.found, lab)
    special = value_columns().get(f.code)
    if special:      # information: what it shows instead of expected / found
        key, value = special
        lines.append(f"{lab[key]} : {value(f)}" if lang == "fr" else f"{lab[key]}: {value(f)}")
    elif expected is not None and found is not None:
        lines.append(lab["xlsx_expected_found"].format(expected=expected, found=found))
    elif expected is not None:
        lines.append(lab["xlsx_expected"].format(expected=expected))
    elif found is not None:
        lines.append(lab["xlsx_found"].format(found=found))
    if f.impact_cents:
        lines.append(lab["xlsx_impact"].format(impact=format_cents(f.impact_cents, lang)))
    return "\n".join(lines)


def _notes(findings: list[Finding], anchors, lab: dict, lang: str) -> dict[str, dict[str, Note]]:
    """Sheet title → cell → its comment and fill. Several findings on one cell
    share one comment, in the findings' order; the fill is the worst severity's."""
    found: dict[tuple[str, str], list[Finding]] = defaultdict(list)
    for f, where in zip(findings, anchors):
        if where is not None:
            found[where].append(f)
    notes: dict[str, dict[str, Note]] = defaultdict(dict)
    for (title, ref), group in found.items():
        text = "\n\n".join(comment_line(f, lab, lang) for f in group)
        lines = text.count("\n") + 1 + len(text) // 60
        notes[title][ref] = Note(text, COMMENT_WIDTH, min(16 * lines + 20, 600),
                                 max(f.severity for f in group).label)
    return dict(notes)


def _findings_sheet(wb: Workbook, findings: list[Finding], anchors, lab: dict, lang: str,
                    reviews: dict[str, dict] | None = None) -> None:
    """The list of findings, written row by row (`wb` is a write-only
    workbook): its cost is that of the findings, cell styles shared. The
    review columns are there only when some finding has a review, so a
    workbook without reviews stays byte for byte what it was."""
    from auditor.reviews import STATUS_TEXT

    reviewed = {f.fingerprint: reviews[f.fingerprint] for f in findings if reviews and f.fingerprint in reviews}
    ws = wb.create_sheet(unique_sheet_title(wb.sheetnames, lab["xlsx_findings_sheet"]))
    ws.sheet_view.tabSelected = True
    head = ["xlsx_col_no", "rule", "severity", "article", "seance", "coup", "rang", "message", "xlsx_col_table",
            "xlsx_col_row", "xlsx_col_column", "cell", "expected", "found", "impact"]
    widths = [6, 10, 11, 14, 8, 7, 6, 70, 12, 7, 14, 16, 16, 16, 14]
    if reviewed:
        head += ["xlsx_col_review", "xlsx_col_justification", "xlsx_col_by", "xlsx_col_review_date"]
        widths += [14, 50, 18, 12]
    bold = Font(bold=True)
    link = Font(color="FF0563C1", underline="single")
    for c, width in enumerate(widths, start=1):
        ws.column_dimensions[get_column_letter(c)].width = width
    ws.freeze_panes = "A2"
    ws.auto_filter.ref = f"A1:{get_column_letter(len(head))}{len(findings) + 1}"
    _print_setup(ws)
    header = []
    for key in head:
        cell = WriteOnlyCell(ws)
        put_text(cell, lab[key].capitalize())
        cell.font = bold
        header.append(cell)
    ws.append(header)
    fills = {}
    for label, fill in FILLS.items():   # one style per severity, copied onto each row's cell
        model = WriteOnlyCell(ws)
        model.fill = fill
        fills[label] = model._style
    wrapped = WriteOnlyCell(ws)
    wrapped.alignment = WRAP
    wrap_style = wrapped._style
    euro = WriteOnlyCell(ws)
    euro.number_format = EURO_FORMAT
    euro_style = euro._style

    def number(value):
        return None if value is None else int(value)

    def wrap(value):
        if value is None or value == "":
            return None
        # The wrapped style first, the text (and its quote prefix) after:
        # copying the style last would make `=HYPERLINK(…)` live again.
        cell = WriteOnlyCell(ws)
        cell._style = copy(wrap_style)
        put_text(cell, value)
        return cell

    def amount(cents):
        # A number Excel can sum, shown in euros: cents / 100 as an exact decimal (never a float).
        cell = WriteOnlyCell(ws, value=Decimal(int(cents)).scaleb(-2))
        cell._style = copy(euro_style)
        return cell

    def review_cells(f: Finding) -> list:
        if not reviewed:
            return []
        r = reviewed.get(f.fingerprint)
        if r is None:
            return [None] * 4
        return [_text_cell(ws, STATUS_TEXT[lang].get(r["status"], r["status"])), wrap(r.get("justification")),
                _text_cell(ws, r.get("by")), _text_cell(ws, format_day((r.get("at") or "")[:10], lang))]

    for i, (f, where) in enumerate(zip(findings, anchors), start=1):
        target = None
        if where is not None:
            title, ref = where
            target = WriteOnlyCell(ws)
            put_text(target, f"{title}!{ref}")
            quoted = title.replace("'", "''")
            target.hyperlink = Hyperlink(ref=f"L{i + 1}", location=f"'{quoted}'!{ref}")
            target.font = link
        sev = WriteOnlyCell(ws)
        sev._style = copy(fills[f.severity.label])
        put_text(sev, lab[f.severity.label])
        ws.append([i, _text_cell(ws, f.code), sev, _text_cell(ws, article_text(f.article, lab)),
                   number(f.seance), number(f.coup), number(f.rang), wrap(f.message),
                   _text_cell(ws, f.table), number(f.row), _text_cell(ws, f.column), target,
                   wrap(value_text(f.expected, lab) if f.expected is not None else None),
                   wrap(value_text(f.found, lab) if f.found is not None else None),
                   amount(f.impact_cents) if f.impact_cents else None, *review_cells(f)])
