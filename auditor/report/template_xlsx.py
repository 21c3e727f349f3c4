"""The blank carnet workbook (`ecarte-audit template carnet.xlsx`): every
sheet and column of the interchange format, a comment on each header saying
what goes there, data validation on the enumerated and numeric columns, and
an instruction sheet, so a casino records in the right format from day one.

Tables, columns, types, enumerations and ranges are read from the pandera
schemas (`ecarte_schemas`), ticket values from the regulation profile, words
from the label catalogue: the template cannot drift from what the auditor reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from openpyxl import Workbook
from openpyxl.comments import Comment
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.hyperlink import Hyperlink

import ecarte_schemas
from auditor.catalogue import Profile, load_profile
from auditor.i18n import labels
from auditor.money import format_plain
from auditor.read.raw import column_letter
from auditor.report.xlsx_io import put_text, save_deterministic

AUTHOR = "ecarte-auditor"
LAST_ROW = 1048576                    # validations cover the whole column below the header
REQUIRED_FILL = PatternFill(fill_type="solid", fgColor="FF1F3864")
OPTIONAL_FILL = PatternFill(fill_type="solid", fgColor="FFB4C6E7")
NUMBER_FORMATS = {"date": "DD/MM/YYYY", "amount": "#,##0.00", "int": "0", "text": "@"}
WIDTHS = {"date": 12, "amount": 12, "int": 9, "text": 24, "enum": 13}


@dataclass(frozen=True)
class ColumnSpec:
    """One column of the blank template: its table, header, kind, and what it allows."""

    table: str
    name: str                 # the source column name, as the header must read
    kind: str                 # int / amount / date / text / enum
    required: bool            # the column must exist
    allowed: tuple[str, ...]  # enumerations
    minimum: int | None       # whole numbers with a lower bound


def template_columns() -> dict[str, list[ColumnSpec]]:
    """Every table of the format with its columns, in the schemas' order."""
    out: dict[str, list[ColumnSpec]] = {}
    for table, model in ecarte_schemas.MODELS.items():
        cols = []
        for field, column in model.columns.items():
            meta = column.metadata or {}
            allowed: tuple[str, ...] = ()
            minimum = None
            for chk in column.checks:
                stats = chk.statistics or {}
                if "allowed_values" in stats:
                    allowed = tuple(str(v) for v in stats["allowed_values"])
                if "min_value" in stats:
                    minimum = int(stats["min_value"])
            cols.append(ColumnSpec(table, meta.get("source") or field, meta["kind"], bool(meta.get("required")),
                                   allowed, minimum))
        out[table] = cols
    return out


def _ticket_values(profile: Profile) -> list[str]:
    # Excel list items use `.` whatever the locale; it displays them localised.
    return [format_plain(v).rstrip("0").rstrip(".") for v in profile.ticket_values_cents]


def _describe(col: ColumnSpec, lab: dict, ticket_values: list[str]) -> str:
    doc = lab["coldoc"][col.table][col.name]
    if col.name == "valeur":
        kind = lab["tpl_kind_ticket_value"].format(values=", ".join(ticket_values))
    elif col.kind == "enum":
        kind = lab["tpl_kind_enum"].format(values=", ".join(col.allowed))
    elif col.kind == "int" and col.minimum is not None:
        kind = lab["tpl_kind_int_min"].format(min=col.minimum)
    else:
        kind = lab[f"tpl_kind_{col.kind}"]
    need = lab["tpl_required_column"] if col.required else lab["tpl_optional_column"]
    return f"{col.name} — {doc}\n{kind}\n{need}"


def _validation(col: ColumnSpec, lab: dict, ticket_values: list[str], message: str) -> DataValidation | None:
    if col.name == "valeur":
        dv = DataValidation(type="list", formula1='"' + ",".join(ticket_values) + '"', allow_blank=True)
    elif col.kind == "enum":
        dv = DataValidation(type="list", formula1='"' + ",".join(col.allowed) + '"', allow_blank=True)
    elif col.kind == "int":
        dv = DataValidation(type="whole", operator="greaterThanOrEqual", formula1=str(col.minimum or 0),
                            allow_blank=True)
    elif col.kind == "amount":
        dv = DataValidation(type="decimal", operator="greaterThanOrEqual", formula1="0", allow_blank=True)
    elif col.kind == "date":
        dv = DataValidation(type="date", operator="greaterThan", formula1="36526", allow_blank=True)  # 2000-01-01
    else:
        return None
    # Lists refuse anything else; numbers and dates only warn, so that a clerk
    # may still type `12,50 €` as text (the auditor reads it like a CSV cell).
    dv.errorStyle = "stop" if dv.type == "list" else "warning"
    dv.showErrorMessage = True
    dv.errorTitle = lab["tpl_invalid_title"][:32]
    dv.error = message[:255]
    return dv


def template_inputs(lang: str, profile: Profile | None = None) -> tuple[dict, list[str], dict[str, list[ColumnSpec]]]:
    """What every template writer (.xlsx, .ods) shows: labels, ticket values, tables."""
    lab = labels(lang)
    return lab, _ticket_values(profile or load_profile()), template_columns()


def write_blank_template(path: str | Path, lang: str = "fr", profile: Profile | None = None,
                         generated_at: str | None = None) -> Path:
    """Write the empty carnet workbook at `path` (labels in `lang`)."""
    from auditor.clock import generated_at as now

    lab, values, tables = template_inputs(lang, profile)
    wb = Workbook()
    guide = wb.active
    guide.title = lab["tpl_sheet_instructions"][:31]
    _instructions(guide, tables, lab)
    header_font = {True: Font(bold=True, color="FFFFFFFF"), False: Font(bold=True, color="FF1F1F1F")}
    for table, cols in tables.items():
        ws = wb.create_sheet(table)
        for i, col in enumerate(cols):
            letter = column_letter(i)
            cell = ws.cell(row=1, column=i + 1)
            put_text(cell, col.name)
            cell.font = header_font[col.required]
            cell.fill = REQUIRED_FILL if col.required else OPTIONAL_FILL
            text = _describe(col, lab, values)
            cell.comment = Comment(text, AUTHOR, width=320, height=130)
            dim = ws.column_dimensions[letter]
            dim.width = max(WIDTHS.get(col.kind, 12), len(col.name) + 3)
            dim.number_format = NUMBER_FORMATS.get(col.kind, "General")
            dv = _validation(col, lab, values, text)
            if dv is not None:
                dv.add(f"{letter}2:{letter}{LAST_ROW}")
                ws.add_data_validation(dv)
        ws.freeze_panes = "A2"
    wb.active = 0
    return save_deterministic(wb, Path(path), generated_at or now())


def _instructions(ws, tables: dict[str, list[ColumnSpec]], lab: dict) -> None:
    wrap = Alignment(wrap_text=True, vertical="top")
    ws.column_dimensions["A"].width = 18
    ws.column_dimensions["B"].width = 13
    ws.column_dimensions["C"].width = 45
    ws.column_dimensions["D"].width = 70
    put_text(ws["A1"], lab["tpl_title"])
    ws["A1"].font = Font(bold=True, size=14)
    row = 3
    for step in lab["tpl_steps"]:
        put_text(ws.cell(row=row, column=1), f"{row - 2}.")
        put_text(ws.cell(row=row, column=2), step)
        ws.merge_cells(start_row=row, start_column=2, end_row=row, end_column=4)
        ws.cell(row=row, column=2).alignment = wrap
        ws.row_dimensions[row].height = 30
        row += 1
    row += 1
    put_text(ws.cell(row=row, column=1), lab["tpl_tables_head"])
    ws.cell(row=row, column=1).font = Font(bold=True, size=12)
    row += 1
    for c, key in enumerate(("tpl_col_sheet", "tpl_col_status", "tpl_col_content", "tpl_col_columns"), start=1):
        put_text(ws.cell(row=row, column=c), lab[key])
        ws.cell(row=row, column=c).font = Font(bold=True)
    for table, cols in tables.items():
        row += 1
        required = table in ecarte_schemas.REQUIRED_TABLES
        put_text(ws.cell(row=row, column=1), table)
        link = ws.cell(row=row, column=1)
        link.hyperlink = Hyperlink(ref=link.coordinate, location=f"'{table}'!A1")
        put_text(ws.cell(row=row, column=2), lab["tpl_required_table" if required else "tpl_optional_table"])
        put_text(ws.cell(row=row, column=3), lab["tabledoc"][table])
        put_text(ws.cell(row=row, column=4), ", ".join(c.name for c in cols))
        for c in range(1, 5):
            ws.cell(row=row, column=c).alignment = wrap
