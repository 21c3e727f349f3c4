"""The formula guard in every text cell of every sheet of annotated.xlsx.

A hostile carnet holds, in every column of every table (and in a column
name of its own), text that a spreadsheet would run as a formula once the
cell is edited: `=HYPERLINK(…)`, `=cmd|…`, `@SUM(1)`, `+…`, `-…`, and the
tab and carriage return OWASP counts as formula starts. Its findings quote
them (found values, messages). The annotated workbook is opened and every
cell of every sheet is scanned: no formula, and every text starting like
one stored as text with Excel's quote prefix (so editing the cell keeps it
text). The carnet comes as a CSV folder, as a workbook of inline strings and
formulas (as openpyxl writes it), as one of shared rich-text strings (as
Excel writes it), and through the real command line.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from xml.sax.saxutils import escape

import pytest
from openpyxl import load_workbook

from auditor.audit import audit_path
from auditor.catalogue import load_profile
from auditor.report.excel_report import write_annotated
from auditor.report.xlsx_io import FORMULA_START
from auditor.report.xlsx_parts import starts_like_formula
from auditor.synth.generate import COLUMNS, write_csv_folder, write_xlsx
from report_fixtures import breached_tables

ROOT = Path(__file__).resolve().parent.parent
STAMP = "2026-01-01T00:00:00Z"
HOSTILE = ['=HYPERLINK("http://example.invalid/?x","clic")', "=cmd|' /C calc'!A0", "@SUM(1)", "+1+1",
           "-1+1", "\t=1+1", "\r=2+2"]
EXTRA = HOSTILE[1]             # a column of the carnet's own, named like a formula
OWASP = ("=", "+", "-", "@", "\t", "\r")


def test_the_guard_counts_what_owasp_lists():
    assert set(FORMULA_START) == set(OWASP)
    for text, expected in [(b"=A1", True), (b"&#9;x", True), (b"&#x0D;x", True), (b"_x000D_=1", True),
                           (b"_x0009_", True), (b"&#61;1", True), (b"\t", True), (b"\r", True), (b"abc", False),
                           (b"&amp;=", False), (b"", False), (b"_x0041_", False), (b"&#99999999;", False),
                           (b" =1", False)]:
        assert starts_like_formula(text) is expected, text


def hostile_tables() -> tuple[dict, dict]:
    """A breached carnet with a hostile text in every column of every table
    (each column its own row, every hostile text used), and a hostile column."""
    t = breached_tables(seances=3, coups=8)
    n = 0
    for table, rows in t.items():
        for column in COLUMNS[table]:
            rows[n % len(rows)][column] = HOSTILE[n % len(HOSTILE)]
            n += 1
        for i, row in enumerate(rows):
            row[EXTRA] = HOSTILE[i % len(HOSTILE)]
    columns = {table: [*cols, EXTRA] for table, cols in COLUMNS.items()}
    return t, columns


def shared_rich(path: Path) -> Path:
    """The workbook (openpyxl writes text inline, and `=…` as formulas) with
    every text, formulas' included, in the shared strings as rich text
    (`<si><r><rPr>…<t>…`): the way Excel itself stores text."""
    with zipfile.ZipFile(path) as zf:
        members = {i.filename: zf.read(i.filename) for i in zf.infolist()}
    strings: list[str] = []

    def shared(m: re.Match) -> str:
        text = m["text"] if m["text"] is not None else "=" + m["formula"]
        strings.append(text)
        return f'<c r="{m["r"]}"{m["s"] or ""} t="s"><v>{len(strings) - 1}</v></c>'

    cell = re.compile(r'<c r="(?P<r>[A-Z]+\d+)"(?P<s> s="\d+")?(?: t="inlineStr"><is><t[^>]*>(?P<text>.*?)</t></is>'
                      r'|><f>(?P<formula>.*?)</f><v\s*/>)</c>', re.S)
    for name in list(members):
        if name.startswith("xl/worksheets/sheet"):
            members[name] = cell.sub(shared, members[name].decode()).encode()
            assert b"inlineStr" not in members[name] and b"<f>" not in members[name]
    members["xl/sharedStrings.xml"] = (
        '<?xml version="1.0" encoding="UTF-8"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        + "".join(f'<si><r><rPr><b/></rPr><t xml:space="preserve">{t}</t></r></si>' for t in strings)
        + "</sst>").encode()
    rel = ('<Relationship Id="rIdShared" Target="sharedStrings.xml" '
           'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings"/>')
    members["xl/_rels/workbook.xml.rels"] = members["xl/_rels/workbook.xml.rels"].replace(
        b"</Relationships>", rel.encode() + b"</Relationships>")
    kind = ('<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.'
            'spreadsheetml.sharedStrings+xml"/>')
    members["[Content_Types].xml"] = members["[Content_Types].xml"].replace(b"</Types>", kind.encode() + b"</Types>")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    target = path.with_name("shared.xlsx")
    target.write_bytes(out.getvalue())
    return target


def scan(path: Path) -> dict[str, list[str]]:
    """Every cell of every sheet: no formula; text starting like a formula is
    text with the quote prefix. The guarded texts, by sheet."""
    wb = load_workbook(path)
    guarded: dict[str, list[str]] = {}
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                assert cell.data_type != "f", (ws.title, cell.coordinate, cell.value)
                if isinstance(cell.value, str) and cell.value.startswith(OWASP):
                    assert cell.data_type == "s" and cell.quotePrefix, (ws.title, cell.coordinate, cell.value)
                    guarded.setdefault(ws.title, []).append(cell.value)
    # The same, on the parts themselves: every cell showing such text has a
    # cell format with quotePrefix (openpyxl could hide an escape).
    with zipfile.ZipFile(path) as zf:
        styles = zf.read("xl/styles.xml")
        xfs = re.findall(rb"<(?:\w+:)?xf\b[^>]*>", re.search(rb"<(?:\w+:)?cellXfs.*?</(?:\w+:)?cellXfs>", styles,
                                                             re.S)[0])
        quoted = {i for i, xf in enumerate(xfs) if b'quotePrefix="1"' in xf}
        sst = zf.read("xl/sharedStrings.xml") if "xl/sharedStrings.xml" in zf.namelist() else b""
        shared = [m for m in re.findall(rb"<si>(.*?)</si>", sst, re.S)]
        for name in zf.namelist():
            if not name.startswith("xl/worksheets/"):
                continue
            for m in re.finditer(rb'<c r="([A-Z]+\d+)"([^>]*?)(?:/>|>(.*?)</c>)', zf.read(name), re.S):
                attrs, inner = m.group(2), m.group(3) or b""
                t = re.search(rb'\bt="(\w+)"', attrs)
                s = re.search(rb'\bs="(\d+)"', attrs)
                if t is None or t.group(1) not in (b"s", b"inlineStr", b"str"):
                    continue
                if t.group(1) == b"s":
                    text = re.sub(rb"<[^>]+>", b"", shared[int(re.search(rb"<v>(\d+)</v>", inner)[1])])
                else:
                    text = re.sub(rb"<[^>]+>", b"", inner)
                if starts_like_formula(text):
                    # A carriage return stored as such is read back as a line
                    # feed (XML's end-of-line rule), by openpyxl as by Excel:
                    # this scan of the parts is the one that sees it.
                    assert s is not None and int(s[1]) in quoted, (name, m.group(1), text[:40])
                    guarded.setdefault(name, []).append(text.decode("utf-8", "replace"))
    return guarded


def check(path: Path, carnet_sheets: set[str]):
    guarded = scan(path)
    findings_sheet = load_workbook(path, read_only=True).sheetnames[0]
    # The test sees what it is about: hostile texts in every table's sheet and
    # in the findings, each of them (tab and CR included) somewhere.
    assert carnet_sheets <= set(guarded), set(guarded)
    assert any(t.startswith("\r") for texts in guarded.values() for t in texts)
    assert findings_sheet in guarded
    every = [t for texts in guarded.values() for t in texts]
    for text in HOSTILE:
        assert any(t == text or t == text.replace("\r", "\n") for t in every), repr(text)


@pytest.fixture(scope="module")
def carnet(tmp_path_factory):
    folder = tmp_path_factory.mktemp("guard")
    tables, columns = hostile_tables()
    return folder, tables, columns


@pytest.mark.parametrize("container", ["csv", "xlsx", "shared"])
def test_every_cell_of_every_sheet_is_guarded(carnet, container, tmp_path):
    folder, tables, columns = carnet
    if container == "csv":
        source = write_csv_folder(tables, tmp_path / "carnet", columns=columns)
    else:
        source = write_xlsx(tables, tmp_path / "carnet.xlsx", columns=columns)
        if container == "shared":
            source = shared_rich(source)
    result = audit_path(source, load_profile(), "fr")
    assert not result.carnet.unreadable
    quoting = [f for f in result.findings if any(h.strip() in (f.message or "") for h in HOSTILE)]
    assert quoting, "some finding quotes a hostile text"
    out = write_annotated(result, source, tmp_path / "annotated.xlsx", generated_at=STAMP)
    check(out, set(tables))


def test_a_review_decision_starting_like_a_formula_is_guarded(carnet, tmp_path):
    """The review columns of the findings sheet (justification, by) too."""
    folder, tables, columns = carnet
    from auditor.report.excel_report import finish_workbook, workbook_draft

    source = write_csv_folder(tables, tmp_path / "carnet", columns=columns)
    result = audit_path(source, load_profile(), "fr")
    reviews = {f.fingerprint: {"status": "confirme", "justification": HOSTILE[0], "by": HOSTILE[2],
                               "at": "2026-03-02T10:00:00Z"} for f in result.findings}
    out = tmp_path / "annotated.xlsx"
    out.write_bytes(finish_workbook(workbook_draft(result, source), result.findings, STAMP, reviews))
    guarded = scan(out)
    first = load_workbook(out, read_only=True).sheetnames[0]
    assert HOSTILE[0] in guarded[first] and HOSTILE[2] in guarded[first]


@pytest.mark.subprocess
def test_the_command_lines_annotated_workbook_is_guarded(carnet, tmp_path):
    """`ecarte-audit audit` on the hostile workbook, as an inspector runs it."""
    folder, tables, columns = carnet
    source = write_xlsx(tables, tmp_path / "carnet hostile.xlsx", columns=columns)
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    done = subprocess.run([sys.executable, "-m", "auditor", "audit", str(source), "--out", str(tmp_path / "out"),
                           "--quiet", "--fail-on", "never", "--jobs", "1", "--format", "xlsx"], capture_output=True, text=True,
                          env={**env, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    [out] = (tmp_path / "out").rglob("annotated.xlsx")
    check(out, set(tables))


def test_escape_helper_matches_the_writer():
    # The scan's own reading of text: an escaped tab is still a tab.
    assert starts_like_formula(escape("\t=1").encode())
