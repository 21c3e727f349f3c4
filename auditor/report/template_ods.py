"""The blank carnet as OpenDocument (`ecarte-audit template carnet.ods`), for
administrations that work in LibreOffice: the same sheets, columns, header
notes and instruction sheet as the .xlsx template (template_xlsx), written
with odfpy, the OpenDocument library pandas itself uses for `.ods`.

The file is deterministic: odfpy stamps the zip entries with the wall
clock, so the archive is rewritten with the report's one timestamp (the
`mimetype` member first and stored, as ODF requires).
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from odf.office import Annotation
from odf.opendocument import OpenDocumentSpreadsheet
from odf.style import Style, TableCellProperties, TableColumnProperties, TextProperties
from odf.table import Table, TableCell, TableColumn, TableRow
from odf.text import P

import ecarte_schemas
from auditor.catalogue import Profile
from auditor.report.template_xlsx import _describe, template_inputs
from auditor.report.xlsx_io import stamp_from


def _text_cell(text: str, style=None, note: str | None = None) -> TableCell:
    # office:value-type="string": text stays text (never a formula) when edited.
    cell = TableCell(valuetype="string", stylename=style) if style is not None else TableCell(valuetype="string")
    if note:
        ann = Annotation()
        for line in note.split("\n"):
            ann.addElement(P(text=line))
        cell.addElement(ann)
    cell.addElement(P(text=text))
    return cell


def write_blank_template(path: str | Path, lang: str = "fr", profile: Profile | None = None,
                         generated_at: str | None = None) -> Path:
    """Write the empty carnet workbook at `path` as .ods (labels in `lang`)."""
    from auditor.clock import generated_at as now

    lab, values, tables = template_inputs(lang, profile)
    doc = OpenDocumentSpreadsheet()
    required = Style(name="required", family="table-cell")
    required.addElement(TableCellProperties(backgroundcolor="#1f3864"))
    required.addElement(TextProperties(fontweight="bold", color="#ffffff"))
    optional = Style(name="optional", family="table-cell")
    optional.addElement(TableCellProperties(backgroundcolor="#b4c6e7"))
    optional.addElement(TextProperties(fontweight="bold", color="#1f1f1f"))
    title = Style(name="title", family="table-cell")
    title.addElement(TextProperties(fontweight="bold", fontsize="14pt"))
    wide = Style(name="wide", family="table-column")
    wide.addElement(TableColumnProperties(columnwidth="3.2cm"))
    for s in (required, optional, title):
        doc.automaticstyles.addElement(s)
    doc.automaticstyles.addElement(wide)

    guide = Table(name=lab["tpl_sheet_instructions"][:31])
    row = TableRow()
    row.addElement(_text_cell(lab["tpl_title"], title))
    guide.addElement(row)
    guide.addElement(TableRow())
    for n, step in enumerate(lab["tpl_steps"], start=1):
        row = TableRow()
        row.addElement(_text_cell(f"{n}."))
        row.addElement(_text_cell(step))
        guide.addElement(row)
    guide.addElement(TableRow())
    row = TableRow()
    for key in ("tpl_col_sheet", "tpl_col_status", "tpl_col_content", "tpl_col_columns"):
        row.addElement(_text_cell(lab[key], title))
    guide.addElement(row)
    for table, cols in tables.items():
        row = TableRow()
        req = table in ecarte_schemas.REQUIRED_TABLES
        for text in (table, lab["tpl_required_table" if req else "tpl_optional_table"], lab["tabledoc"][table],
                     ", ".join(c.name for c in cols)):
            row.addElement(_text_cell(text))
        guide.addElement(row)
    doc.spreadsheet.addElement(guide)

    for table, cols in tables.items():
        sheet = Table(name=table)
        for _ in cols:
            sheet.addElement(TableColumn(stylename=wide))
        row = TableRow()
        for col in cols:
            row.addElement(_text_cell(col.name, required if col.required else optional,
                                      _describe(col, lab, values)))
        sheet.addElement(row)
        doc.spreadsheet.addElement(sheet)
    buf = io.BytesIO()
    doc.write(buf)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(_deterministic(buf.getvalue(), generated_at or now()))
    return out


def _deterministic(data: bytes, generated_at: str) -> bytes:
    moment = stamp_from(generated_at)
    zip_time = (max(moment.year, 1980), moment.month, moment.day, moment.hour, moment.minute, moment.second)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as zin, zipfile.ZipFile(out, "w") as zout:
        names = sorted(zin.namelist(), key=lambda n: (n != "mimetype", n))
        for name in names:
            body = zin.read(name)
            if name == "meta.xml":
                body = _fixed_meta(body, moment.strftime("%Y-%m-%dT%H:%M:%S"))
            if name.endswith(".xml"):
                body = _fixed_namespaces(body)
            entry = zipfile.ZipInfo(name, date_time=zip_time)
            entry.compress_type = zipfile.ZIP_STORED if name == "mimetype" else zipfile.ZIP_DEFLATED
            entry.external_attr = 0o644 << 16
            zout.writestr(entry, body)
    return out.getvalue()


def _fixed_meta(body: bytes, stamp: str) -> bytes:
    import re

    body = re.sub(rb"<meta:creation-date>[^<]*</meta:creation-date>",
                  b"<meta:creation-date>" + stamp.encode() + b"</meta:creation-date>", body)
    return re.sub(rb"<dc:date>[^<]*</dc:date>", b"<dc:date>" + stamp.encode() + b"</dc:date>", body)


def _fixed_namespaces(body: bytes) -> bytes:
    """odfpy declares on the root element the namespaces the process has met
    so far (they accumulate from one document to the next): declare them all,
    in a fixed order, so the bytes do not depend on what was written before."""
    import re

    from odf.namespaces import nsdict

    root = re.search(rb"<([A-Za-z]+:[A-Za-z-]+)((?:\s+[^>]*?)?)(/?)>", body)
    if root is None or b"xmlns:" not in root.group(2):
        return body
    attrs = re.sub(rb'\s+xmlns:[A-Za-z0-9_.-]+="[^"]*"', b"", root.group(2))
    declared = "".join(f' xmlns:{prefix}="{uri}"' for uri, prefix in sorted(nsdict.items(), key=lambda kv: kv[1]))
    tag = b"<" + root.group(1) + declared.encode() + attrs + root.group(3) + b">"
    return body[:root.start()] + tag + body[root.end():]
