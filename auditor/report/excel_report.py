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
from decimal import Decimal
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from openpyxl import Workbook, load_workbook
from openpyxl.comments import Comment
from openpyxl.styles import Alignment, Font
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.hyperlink import Hyperlink

from auditor.engine import AuditResult
from auditor.i18n import labels
from auditor.model import Finding
from auditor.money import format_cents
from auditor.read.csv_folder import decode, sniff_delimiter
from auditor.read.raw import canonical_name, column_letter
from auditor.report.view import VALUE_COLUMNS, article_text, value_text
from auditor.report.xlsx_io import FILLS, FORMULA_START, put_text, unique_sheet_title, workbook_bytes

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
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(annotated_bytes(result, source_path, lang, generated_at))
    return out


def annotated_bytes(result: AuditResult, source_path: str | Path, lang: str | None = None,
                    generated_at: str | None = None) -> bytes:
    """annotated.xlsx for one audited carnet, as bytes (batch workers return files).

    source_path: the carnet as audited (an .xlsx/.xlsm file or a CSV folder);
    lang: labels of the added sheet and comments (default: the result's; the
    findings' messages are already in the result's language);
    generated_at: the report timestamp (default: SOURCE_DATE_EPOCH or now).
    """
    from auditor.report.json_report import generated_at as now

    lang = lang or result.lang
    lab = labels(lang)
    source = Path(source_path)
    if result.carnet.unreadable or _refused_by_reader(result):
        # The reader refused it, or one of its sheets (damaged, too large, a zip
        # bomb, a cell a million columns away…): never open it again here.
        wb, sheets = _empty_workbook(), {}
    elif source.is_dir():
        wb, sheets = _workbook_from_csv(source, set(result.carnet.tables))
    else:
        wb, sheets = _workbook_copy(source)
    anchors = _annotate(wb, sheets, result.findings, lab, lang)
    _findings_sheet(wb, result.findings, anchors, lab, lang)
    return workbook_bytes(wb, generated_at or now())


# EC00-01 kinds that only say something is missing: the file itself is safe to open.
_STRUCTURAL = frozenset({"missing_table", "missing_column", "cover_rows"})


def _refused_by_reader(result: AuditResult) -> bool:
    return any(code == "EC00-01" and v.kind not in _STRUCTURAL for code, v in result.carnet.problems)


# -- the carnet as a workbook ---------------------------------------------------

def _workbook_copy(path: Path) -> tuple[Workbook, dict[str, SheetMap]]:
    try:
        wb = load_workbook(path, keep_vba=False, keep_links=False, rich_text=False)
        cached = load_workbook(path, data_only=True, keep_links=False)
    except Exception:  # an unreadable carnet (EC00-01) still gets its list of findings
        return _empty_workbook(), {}
    sheets: dict[str, SheetMap] = {}
    for ws in wb.worksheets:
        _drop_formulas(ws, cached[ws.title])
        # Same rule as the reader: the first sheet with a canonical name is the table.
        sheets.setdefault(canonical_name(ws.title), SheetMap(ws.title, {}))
    return wb, sheets


def _drop_formulas(ws, cached_ws) -> None:
    """A formula becomes the value Excel last computed (what the auditor read);
    without one, its text, as plain text, so nothing silently disappears."""
    for row in ws.iter_rows():
        for cell in row:
            if cell.data_type == "s" and isinstance(cell.value, str) and cell.value.startswith(FORMULA_START):
                cell.quotePrefix = True   # text stays text even when someone edits the cell
                continue
            if cell.data_type != "f":
                continue
            value = cached_ws[cell.coordinate].value
            formula = cell.value if isinstance(cell.value, str) else getattr(cell.value, "text", None)
            if value is None:
                put_text(cell, formula)
            elif isinstance(value, str):
                put_text(cell, value)
            else:
                cell.value = value


def _empty_workbook() -> Workbook:
    wb = Workbook()
    wb.remove(wb.active)
    return wb


def _workbook_from_csv(folder: Path, tables: set[str]) -> tuple[Workbook, dict[str, SheetMap]]:
    """The tables the reader accepted (a file it refused, too large say, is not
    read again), each rebuilt from its file as text."""
    wb = _empty_workbook()
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
            records = list(csv.reader(io.StringIO(text), delimiter=sniff_delimiter(text)))
        except (OSError, ValueError, csv.Error):
            continue  # the reader reported it (EC00-01); the list of findings says so
        ws = wb.create_sheet(unique_sheet_title(wb.sheetnames, table))
        letters: dict[str, str] = {}
        # Record i of the file is source row i + 1, as the reader numbers rows.
        for r, record in enumerate(records, start=1):
            for c, value in enumerate(record, start=1):
                if value != "":
                    put_text(ws.cell(row=r, column=c), value)
        if records:
            for c, name in enumerate(records[0]):
                letters.setdefault(canonical_name(name), column_letter(c))
                ws.cell(row=1, column=c + 1).font = bold
            ws.freeze_panes = "A2"
        sheets[table] = SheetMap(ws.title, letters)
    return wb, sheets


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
    lines = [f"{f.code} ({article_text(f.article, lab)}) — {f.message}"]
    expected = None if f.expected is None else value_text(f.expected, lab)
    found = None if f.found is None else value_text(f.found, lab)
    if f.code in VALUE_COLUMNS:      # information: what it shows instead of expected / found
        key, value = VALUE_COLUMNS[f.code]
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


def _annotate(wb: Workbook, sheets: dict[str, SheetMap], findings: list[Finding], lab: dict,
              lang: str) -> list[tuple[str, str] | None]:
    anchors = [anchor_of(f, sheets) for f in findings]
    notes: dict[tuple[str, str], list[Finding]] = defaultdict(list)
    for f, where in zip(findings, anchors):
        if where is not None:
            notes[where].append(f)
    # Several findings on one cell share one comment, in the findings' order.
    for (title, ref), found in notes.items():
        cell = wb[title][ref]
        text = "\n\n".join(comment_line(f, lab, lang) for f in found)
        if cell.comment is not None and cell.comment.author != AUTHOR:
            text = f"{cell.comment.text}\n\n{text}"   # the clerk's own note stays first
        lines = text.count("\n") + 1 + len(text) // 60
        cell.comment = Comment(text[:32000], AUTHOR, width=COMMENT_WIDTH, height=min(16 * lines + 20, 600))
        cell.fill = FILLS[max(f.severity for f in found).label]
    return anchors


def _findings_sheet(wb: Workbook, findings: list[Finding], anchors, lab: dict, lang: str) -> None:
    ws = wb.create_sheet(unique_sheet_title(wb.sheetnames, lab["xlsx_findings_sheet"]), 0)
    wb.active = 0
    for other in wb.worksheets[1:]:
        other.sheet_view.tabSelected = False
    head = ["xlsx_col_no", "rule", "severity", "article", "seance", "coup", "rang", "message", "xlsx_col_table",
            "xlsx_col_row", "xlsx_col_column", "cell", "expected", "found", "impact"]
    widths = [6, 10, 11, 14, 8, 7, 6, 70, 12, 7, 14, 16, 16, 16, 14]
    bold = Font(bold=True)
    link = Font(color="FF0563C1", underline="single")
    for c, (key, width) in enumerate(zip(head, widths), start=1):
        cell = ws.cell(row=1, column=c)
        put_text(cell, lab[key].capitalize())
        cell.font = bold
        ws.column_dimensions[get_column_letter(c)].width = width
    for i, (f, where) in enumerate(zip(findings, anchors), start=1):
        r = i + 1
        ws.cell(row=r, column=1, value=i)
        put_text(ws.cell(row=r, column=2), f.code)
        sev = ws.cell(row=r, column=3)
        put_text(sev, lab[f.severity.label])
        sev.fill = FILLS[f.severity.label]
        put_text(ws.cell(row=r, column=4), article_text(f.article, lab))
        for c, value in ((5, f.seance), (6, f.coup), (7, f.rang), (10, f.row)):
            if value is not None:
                ws.cell(row=r, column=c, value=int(value))
        put_text(ws.cell(row=r, column=8), f.message)
        put_text(ws.cell(row=r, column=9), f.table)
        put_text(ws.cell(row=r, column=11), f.column)
        if where is not None:
            title, ref = where
            target = ws.cell(row=r, column=12)
            put_text(target, f"{title}!{ref}")
            quoted = title.replace("'", "''")
            target.hyperlink = Hyperlink(ref=target.coordinate, location=f"'{quoted}'!{ref}")
            target.font = link
        put_text(ws.cell(row=r, column=13), value_text(f.expected, lab) if f.expected is not None else None)
        put_text(ws.cell(row=r, column=14), value_text(f.found, lab) if f.found is not None else None)
        if f.impact_cents:
            # A number Excel can sum, shown in euros: cents / 100 as an exact decimal (never a float).
            amount = ws.cell(row=r, column=15, value=Decimal(int(f.impact_cents)).scaleb(-2))
            amount.number_format = EURO_FORMAT
        for c in WRAPPED:
            ws.cell(row=r, column=c).alignment = WRAP
    ws.freeze_panes = "A2"
    ws.auto_filter.ref = f"A1:{get_column_letter(len(head))}{len(findings) + 1}"
    _print_setup(ws)


EURO_FORMAT = '#,##0.00\\ "€";-#,##0.00\\ "€"'
WRAP = Alignment(wrap_text=True, vertical="top")
WRAPPED = (8, 13, 14)          # message, expected, found


def _print_setup(ws) -> None:
    """The list of findings prints as a document: landscape A4, every column on
    the page width, the header row repeated on each page, gridlines shown."""
    ws.page_setup.orientation = "landscape"
    ws.page_setup.paperSize = ws.PAPERSIZE_A4
    ws.page_setup.fitToWidth = 1
    ws.page_setup.fitToHeight = 0
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    ws.print_title_rows = "1:1"
    ws.print_options.gridLines = True
    ws.page_margins.left = ws.page_margins.right = 0.4
    ws.page_margins.top = ws.page_margins.bottom = 0.5
