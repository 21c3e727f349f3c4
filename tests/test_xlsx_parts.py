"""The part editor behind annotated.xlsx, on sheets of any layout: a fill or a
comment lands on its cell whether the cell, its row or both are missing,
every other cell reads back unchanged, formulas become their saved values,
and a workbook written with namespace prefixes or holding macros, a clerk's
comments or several selected tabs still opens with every note on its cell."""

from __future__ import annotations

import io
import re
import zipfile

import pytest
from hypothesis import given, settings, strategies as st
from openpyxl import Workbook, load_workbook
from openpyxl.comments import Comment
from openpyxl.styles import Font

from auditor.report.xlsx_io import FILLS
from auditor.report.xlsx_parts import Grafted, Note, annotate

STAMP = "2026-01-01T00:00:00Z"
WHEN = (2026, 1, 1, 0, 0, 0)


def _grafted(title: str = "Constats") -> Grafted:
    wb = Workbook()
    ws = wb.active
    ws.title = title
    ws["A1"] = "n°"
    ws["A1"].font = Font(bold=True)
    ws.auto_filter.ref = "A1:A2"
    buf = io.BytesIO()
    wb.save(buf)
    z = zipfile.ZipFile(buf)
    names = re.findall(rb"<definedName\b.*?</definedName>", z.read("xl/workbook.xml"), re.S)
    return Grafted(title, z.read("xl/worksheets/sheet1.xml"), z.read("xl/styles.xml"), names)


def _annotate(data: bytes, notes: dict) -> bytes:
    return annotate(data, notes, _grafted(), author="ecarte-auditor", generated_at=STAMP, date_time=WHEN)


def _note(label: str = "error") -> Note:
    return Note(f"a {label}", 360, 60, label)


def _book(cells: dict[tuple[int, int], object], empty_rows=()) -> bytes:
    wb = Workbook()
    ws = wb.active
    ws.title = "mises"
    for (r, c), v in cells.items():
        ws.cell(row=r, column=c, value=v)
    for r in empty_rows:
        ws.row_dimensions[r].height = 20      # a <row r="n"/> without cells
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


_CELL = st.tuples(st.integers(1, 12), st.integers(1, 8))


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(existing=st.dictionaries(_CELL, st.one_of(st.integers(0, 99), st.text("abc=+ ", min_size=1, max_size=4)),
                                max_size=25),
       targets=st.dictionaries(_CELL, st.sampled_from(sorted(FILLS)), min_size=1, max_size=10),
       empty_rows=st.sets(st.integers(1, 14), max_size=3))
def test_notes_land_on_their_cells_whatever_the_layout(existing, targets, empty_rows):
    from openpyxl.utils import get_column_letter

    data = _book(existing, empty_rows)
    notes = {"mises": {f"{get_column_letter(c)}{r}": _note(label) for (r, c), label in targets.items()}}
    wb = load_workbook(io.BytesIO(_annotate(data, notes)))
    assert wb.sheetnames == ["Constats", "mises"] and wb.index(wb.active) == 0
    ws = wb["mises"]
    for (r, c), v in existing.items():
        assert ws.cell(row=r, column=c).value == v
        if isinstance(v, str) and v.startswith(("=", "+", "-", "@")):
            assert ws.cell(row=r, column=c).quotePrefix
    for row in ws.iter_rows():
        for cell in row:
            label = targets.get((cell.row, cell.column))
            if label is None:
                assert cell.comment is None and cell.fill.fill_type is None, cell.coordinate
            else:
                assert cell.comment.text == f"a {label}" and cell.comment.author == "ecarte-auditor"
                assert cell.fill.fgColor.rgb == FILLS[label].fgColor.rgb
    for (r, c) in targets:
        assert ws.cell(row=r, column=c).comment is not None


def _rewrite(data: bytes, edit) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, edit(info.filename, zin.read(info.filename)))
        for name, body in getattr(edit, "extra", {}).items():
            zout.writestr(name, body)
    return out.getvalue()


def test_formulas_become_their_saved_values():
    data = _book({(1, 1): 2, (1, 2): 3, (2, 1): "x"})

    def edit(name, body):
        if name == "xl/worksheets/sheet1.xml":
            body = body.replace(b'<c r="B1" t="n"><v>3</v></c>', b'<c r="B1"><f>A1+1</f><v>3</v></c>'
                                b'<c r="C1" t="str"><f>"=x"&amp;A1</f><v>=x2</v></c>'
                                b'<c r="D1" t="e"><f>1/0</f><v>#DIV/0!</v></c><c r="E1"><f>A1*2</f></c>')
        return body

    source = _rewrite(data, edit)
    assert b"<f>" in zipfile.ZipFile(io.BytesIO(source)).read("xl/worksheets/sheet1.xml")
    wb = load_workbook(io.BytesIO(_annotate(source, {"mises": {"A2": _note()}})))
    ws = wb["mises"]
    assert [(c.value, c.data_type) for c in ws[1]] == [(2, "n"), (3, "n"), ("=x2", "s"), ("#DIV/0!", "s"),
                                                       ("=A1*2", "s")]
    assert ws["C1"].quotePrefix and ws["E1"].quotePrefix
    assert ws["A2"].comment is not None


def test_prefixed_namespaces_macros_and_a_clerks_comment():
    wb = Workbook()
    ws = wb.active
    ws.title = "mises"
    ws["A1"], ws["B2"], ws["C3"] = "seance", 12, "x"
    ws["B2"].comment = Comment("note du croupier", "clerc")
    ws["C3"].comment = Comment("autre note", "clerc")
    other = wb.create_sheet("coups")
    other["A1"] = "coup"
    other.sheet_view.tabSelected = True
    buf = io.BytesIO()
    wb.save(buf)
    main = b"http://schemas.openxmlformats.org/spreadsheetml/2006/main"

    def edit(name, body):
        if name.startswith("xl/worksheets/sheet") or name in ("xl/workbook.xml", "xl/styles.xml"):
            # The same XML with the main namespace on a prefix, as some writers do.
            body = body.replace(b'xmlns="' + main + b'"', b'xmlns:x="' + main + b'"')
            body = re.sub(rb"<(/?)(?!\?)([A-Za-z]+)(?=[\s>/])", lambda m: b"<" + m.group(1) + b"x:" + m.group(2),
                          body)
        if name == "[Content_Types].xml":
            body = body.replace(b"spreadsheetml.sheet.main+xml", b"PLACEHOLDER").replace(
                b"PLACEHOLDER", b"spreadsheetml.sheet.main+xml").replace(
                b"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml",
                b"application/vnd.ms-excel.sheet.macroEnabled.main+xml")
            body = body.replace(b"</Types>", b'<Default Extension="bin" ContentType="application/'
                                b'vnd.ms-office.vbaProject"/></Types>')
        if name == "xl/_rels/workbook.xml.rels":
            body = body.replace(b"</Relationships>", b'<Relationship Id="rIdVba" Type="http://schemas.microsoft.com/'
                                b'office/2006/relationships/vbaProject" Target="vbaProject.bin"/></Relationships>')
        return body

    edit.extra = {"xl/vbaProject.bin": b"not really a macro"}
    source = _rewrite(buf.getvalue(), edit)
    assert b"<x:sheetData>" in zipfile.ZipFile(io.BytesIO(source)).read("xl/worksheets/sheet1.xml")
    out = _annotate(source, {"mises": {"B2": _note("warning"), "D9": _note("info")}})
    z = zipfile.ZipFile(io.BytesIO(out))
    assert "xl/vbaProject.bin" not in z.namelist()
    assert b"macroEnabled" not in z.read("[Content_Types].xml") and b"vbaProject" not in z.read(
        "xl/_rels/workbook.xml.rels")
    wb = load_workbook(io.BytesIO(out))
    ws = wb["mises"]
    assert ws["B2"].value == 12 and ws["B2"].comment.text == "note du croupier\n\na warning"
    assert ws["C3"].comment.text == "autre note" and ws["C3"].comment.author == "clerc"
    assert ws["D9"].comment.text == "a info" and ws["D9"].fill.fgColor.rgb == FILLS["info"].fgColor.rgb
    assert [bool(w.sheet_view.tabSelected) for w in wb.worksheets] == [True, False, False]


def test_same_input_same_bytes():
    data = _book({(1, 1): "seance", (2, 2): 5})
    notes = {"mises": {"B2": _note(), "C4": _note("info")}}
    assert _annotate(data, notes) == _annotate(data, notes)
