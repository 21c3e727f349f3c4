"""Real office files, part two (issue 29): systematic classes, not hand-picked cases.

- every spreadsheet error value in every typed column (CSV), and one in every
  typed column of a carnet saved by LibreOffice and Gnumeric (.ods, .xls,
  .xlsx): an EC00-02 quoting it, and every rule sees the cell exactly as any
  other unreadable cell (never empty, never 0);
- a far formatted cell in every table of a workbook: no part of its size;
- every French little word as a whole header, as a mapping source;
- a sample carnet through every real writer here (LibreOffice, Gnumeric,
  pandas with xlsxwriter and openpyxl): the original's findings, or a loud
  EC00-02 (xlsxwriter's formulas, never computed);
- month-first text dates (an office program's CSV export in an English locale);
- a far formatted cell saved by LibreOffice and Gnumeric, per container and table
  (and an .xlsb written by pyxlsbwriter, its far cell added as Excel leaves it);
- every workbook sample through LibreOffice's and Gnumeric's CSV export, in
  French and English locales: the original, a loud EC00-02, or a named
  silent reading where no cell tells the order of the dates.

The workbooks of tests/fixtures/office2/ and the files of office3/ were made
by that software (make_office2.py, make_office3.py, make_far_xlsb.py); CI does not need it.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from openpyxl import load_workbook
from openpyxl.styles import Font

import ecarte_schemas
from auditor.audit import audit
from auditor.catalogue import load_profile
from auditor.normalise import ERROR_VALUE, normalise
from auditor.read import load_columns_file, read_carnet
from auditor.read.columns import _LITTLE, fold_source, match_header

ROOT = Path(__file__).resolve().parents[1]
OFFICE = Path(__file__).parent / "fixtures" / "office2"
CSV_CARNET = ROOT / "sample_carnets" / "compliant" / "forges-table5"
XLSX_CARNET = ROOT / "sample_carnets" / "compliant" / "forges-table3.xlsx"
ERRORS = ["#N/A", "#REF!", "#VALUE!", "#DIV/0!", "#NAME?", "#NUM!", "#NULL!", "#SPILL!", "#CALC!", "Err:502",
          "#VALEUR!", "#NOM?"]


def run(path: Path, columns=None):
    return audit(normalise(read_carnet(path, None, columns)), load_profile())


def key(f):
    return (f.code, f.table, f.row, f.column, f.seance, f.coup, f.rang, f.expected, f.impact_cents)


def typed_columns(folder: Path):
    """(table, column) of every typed column the CSV carnet holds."""
    out = []
    for table, schema in ecarte_schemas.MODELS.items():
        path = folder / f"{table}.csv"
        if not path.exists():
            continue
        header = _read(path)[1][0]
        for field, column in schema.columns.items():
            source = (column.metadata or {}).get("source") or field
            if source in header:
                out.append((table, source))
    return out


def _read(path: Path):
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("cp1252")   # written back in UTF-8: the reader takes both
    delimiter = ";" if text.split("\n", 1)[0].count(";") else ","
    return delimiter, list(csv.reader(text.splitlines(), delimiter=delimiter))


def with_cell(src: Path, dst: Path, table: str, column: str, text: str, row: int = 2) -> None:
    shutil.copytree(src, dst)
    delimiter, rows = _read(dst / f"{table}.csv")
    rows[row - 1][rows[0].index(column)] = text
    with open(dst / f"{table}.csv", "w", encoding="utf-8", newline="") as fh:
        csv.writer(fh, delimiter=delimiter).writerows(rows)


def same_as_unreadable(with_error, with_junk, table, column, row, value):
    """The error value is quoted by its own EC00-02; everything else is what
    any unreadable cell there gives (for a text column, where no text is
    unreadable, what an empty cell gives)."""
    def at(f):
        return f.code == "EC00-02" and (f.table, f.column, f.row) == (table, column, row)
    mine = [f for f in with_error.findings if at(f)]
    assert len(mine) == 1 and value in mine[0].message and mine[0].found.strip() == value, (mine, value)
    assert sorted(key(f) for f in with_error.findings if not at(f)) == \
        sorted(key(f) for f in with_junk.findings if not at(f))


def junk_for(table, column):
    kind = (ecarte_schemas.MODELS[table].columns[_field(table, column)].metadata or {})["kind"]
    return "" if kind == "text" else "illisible?!"


def _field(table, column):
    for field, c in ecarte_schemas.MODELS[table].columns.items():
        if ((c.metadata or {}).get("source") or field) == column:
            return field


_junk_runs: dict[tuple[str, str], object] = {}


def junk_run(table: str, column: str, folder: Path):
    """The audit of the carnet with an unreadable cell where the error value
    goes: the same for every error value of that column, so made once (the
    twelve values of the sweep below would each audit it again)."""
    if (table, column) not in _junk_runs:
        with_cell(CSV_CARNET, folder, table, column, junk_for(table, column))
        _junk_runs[(table, column)] = run(folder)
    return _junk_runs[(table, column)]


@pytest.mark.parametrize("table,column", typed_columns(CSV_CARNET))
def test_an_error_value_in_every_typed_column_is_an_unreadable_cell(table, column, tmp_path):
    value = ERRORS[typed_columns(CSV_CARNET).index((table, column)) % len(ERRORS)]
    with_cell(CSV_CARNET, tmp_path / "err", table, column, value)
    same_as_unreadable(run(tmp_path / "err"), junk_run(table, column, tmp_path / "junk"), table, column, 2, value)


@pytest.mark.slow
@pytest.mark.parametrize("value", ERRORS)
@pytest.mark.parametrize("table,column", typed_columns(CSV_CARNET))
def test_every_error_value_in_every_typed_column(table, column, value, tmp_path):
    with_cell(CSV_CARNET, tmp_path / "err", table, column, f" {value} ")
    same_as_unreadable(run(tmp_path / "err"), junk_run(table, column, tmp_path / "junk"), table, column, 2, value)


def test_the_error_value_pattern_takes_every_listed_value_and_no_amount_or_text():
    import re

    pattern = re.compile(ERROR_VALUE.replace("(?i)", ""), re.I)
    assert all(pattern.match(v) for v in ERRORS)
    assert not any(pattern.match(v) for v in ("12,50", "#1", "R4411", "oui", "2026-03-02", "# REF", "Err:"))


@pytest.mark.parametrize("path", sorted(OFFICE.glob("errors-*")), ids=lambda p: p.name)
def test_error_values_saved_by_libreoffice_and_gnumeric_are_unreadable_cells_in_every_typed_column(path):
    result = run(path)
    quoted = [f for f in result.findings if f.code == "EC00-02" and f.row == 2]
    wb = load_workbook(XLSX_CARNET, read_only=True)
    expected = set()
    for ws in wb.worksheets:
        schema = ecarte_schemas.MODELS.get(ws.title)
        if schema is None:
            continue
        header = [c.value for c in next(ws.iter_rows(max_row=1))]
        names = {(c.metadata or {}).get("source") or f for f, c in schema.columns.items()}
        if ws.max_row >= 2:
            expected |= {(ws.title, h) for h in header if h in names}
    got = {(f.table, f.column) for f in quoted}
    assert got == expected
    import re

    assert all(re.match(ERROR_VALUE, f.found) for f in quoted), [f.found for f in quoted]
    assert not any(f.code == "EC00-01" for f in result.findings)


# -- a far formatted cell -------------------------------------------------------------------

@pytest.mark.parametrize("table", ["carnet", "seances", "fiches", "coups", "mises", "tickets", "carnets_tickets"])
def test_a_far_formatted_cell_in_any_table_is_no_part_of_it(table, tmp_path):
    wb = load_workbook(XLSX_CARNET)
    if table not in wb.sheetnames:
        pytest.skip(f"the sample has no {table}")
    wb[table]["XFD1048576"].font = Font(bold=True)   # what Excel leaves at Ctrl+End
    path = tmp_path / "far.xlsx"
    wb.save(path)
    assert sorted(map(key, run(path).findings)) == sorted(map(key, run(XLSX_CARNET).findings))


def test_a_far_cell_holding_a_value_is_still_refused(tmp_path):
    wb = load_workbook(XLSX_CARNET)
    wb["mises"]["XFD1048576"] = 1
    path = tmp_path / "far.xlsx"
    wb.save(path)
    assert any(f.code == "EC00-01" and f.table == "mises" for f in run(path).findings)


# -- French little words as whole headers -------------------------------------------------------

@pytest.mark.parametrize("word", sorted(_LITTLE | {"Du", "Au", "N°", "De", "La", "Le", "Les", "Des", "Aux", "À"}))
def test_every_french_little_word_is_a_valid_mapping_source(word, tmp_path):
    columns = tmp_path / "columns.toml"
    columns.write_text(f'[tickets]\n"{word}" = "premier"\n', encoding="utf-8")
    mapping = load_columns_file(columns)
    match = match_header("tickets", ["seance", "coup", "valeur", word], mapping)
    assert match.keep.get("premier") == 3 and match.how["premier"] == "mapping"
    assert fold_source(word.upper()) == fold_source(word)


def test_du_au_mapping_reads_a_ticket_range(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(ROOT / "sample_carnets" / "infractions" / "tickets", src)
    delimiter, rows = _read(src / "tickets.csv")
    rows[0] = ["Du" if h == "premier" else "Au" if h == "dernier" else h for h in rows[0]]
    with open(src / "tickets.csv", "w", encoding="utf-8", newline="") as fh:
        csv.writer(fh, delimiter=delimiter).writerows(rows)
    columns = tmp_path / "columns.toml"
    columns.write_text('[tickets]\nDu = "premier"\nAu = "dernier"\n', encoding="utf-8")
    got = run(src, load_columns_file(columns))
    base = run(ROOT / "sample_carnets" / "infractions" / "tickets")
    assert sorted(map(key, got.findings)) == sorted(map(key, base.findings))


def test_a_conflict_from_the_columns_file_names_it(tmp_path):
    columns = tmp_path / "columns.toml"
    columns.write_text('[mises]\n"Somme" = "montant"\n', encoding="utf-8")
    src = tmp_path / "src"
    with_cell(CSV_CARNET, src, "mises", "restitue", "0", row=2)
    delimiter, rows = _read(src / "mises.csv")
    rows[0] = [("Somme" if h == "restitue" else h) for h in rows[0]]
    with open(src / "mises.csv", "w", encoding="utf-8", newline="") as fh:
        csv.writer(fh, delimiter=delimiter).writerows(rows)
    found = [f for f in run(src, load_columns_file(columns)).findings if f.code == "EC00-01" and f.column == "montant"]
    assert len(found) == 1 and "--columns" in found[0].message and "corriger" in found[0].message


# -- every real writer ----------------------------------------------------------------------------

@pytest.mark.parametrize("path", sorted(OFFICE.glob("forges-*")), ids=lambda p: p.name)
def test_a_sample_carnet_through_every_real_writer_gives_the_original_findings(path):
    assert sorted(map(key, run(path).findings)) == sorted(map(key, run(XLSX_CARNET).findings))


def test_gnumeric_ods_has_layout_whitespace_and_is_read():
    import zipfile

    with zipfile.ZipFile(OFFICE / "forges-gnumeric.ods") as z:
        assert b"</table:table-cell>\n" in z.read("content.xml")
    assert not read_carnet(OFFICE / "forges-gnumeric.ods").unreadable


def test_formulas_xlsxwriter_never_computed_are_loud(tmp_path):
    result = run(OFFICE / "formulas-xlsxwriter.xlsx")
    loud = [f for f in result.findings if f.code == "EC00-02" and f.column == "total_a"]
    n = len(result.carnet.tables["coups"].df)
    assert len(loud) == n and all("non calculée" in f.message for f in loud)
    base = {key(f) for f in run(XLSX_CARNET).findings}
    # No breach is made up from the stored zeros: every other finding is the original's.
    assert {key(f) for f in result.findings if f.code != "EC00-02"} <= base


# -- month-first text dates -------------------------------------------------------------------------

def _date_columns(folder: Path):
    for table, schema in ecarte_schemas.MODELS.items():
        for field, column in schema.columns.items():
            if (column.metadata or {})["kind"] == "date" and (folder / f"{table}.csv").exists():
                yield table, (column.metadata or {}).get("source") or field


def _rewrite_dates(folder: Path, fmt) -> int:
    """Every date cell rewritten by `fmt(y, m, d)`; how many have a day above 12."""
    above = 0
    for table, column in _date_columns(folder):
        delimiter, rows = _read(folder / f"{table}.csv")
        if column not in rows[0]:
            continue
        i = rows[0].index(column)
        for r in rows[1:]:
            if i < len(r) and len(r[i]) == 10 and r[i][4] == "-":
                y, m, d = (int(x) for x in r[i].split("-"))
                above += d > 12
                r[i] = fmt(y, m, d)
        with open(folder / f"{table}.csv", "w", encoding="utf-8", newline="") as fh:
            csv.writer(fh, delimiter=delimiter).writerows(rows)
    return above


@pytest.mark.parametrize("carnet", ["compliant/forges-table5", "compliant/deauville-table1",
                                    "infractions/prelevements", "infractions/tickets"])
def test_month_first_csv_dates_are_read_so_when_a_cell_tells(carnet, tmp_path):
    src = ROOT / "sample_carnets" / carnet
    us = tmp_path / "us"
    shutil.copytree(src, us)
    above = _rewrite_dates(us, lambda y, m, d: f"{m:02d}/{d:02d}/{y}")
    got, base = run(us), run(src)
    if above:
        assert sorted(map(key, got.findings)) == sorted(map(key, base.findings))
        assert got.carnet.reading["dates"]["order"] == "month_first"
    else:
        # No cell can tell the order: the day-first reading stands (spec v1.2), silently different.
        assert "dates" not in (got.carnet.reading or {})


def test_a_mixed_carnet_gives_ec00_02_on_its_smaller_side(tmp_path):
    us = tmp_path / "us"
    shutil.copytree(CSV_CARNET, us)
    _rewrite_dates(us, lambda y, m, d: f"{m:02d}/{d:02d}/{y}")
    delimiter, rows = _read(us / "seances.csv")
    i = rows[0].index("date")
    rows[1][i] = "25/03/2026"   # only day-first
    rows[2][i] = "03/14/2026"   # only month-first
    rows[3][i] = "03/15/2026"
    with open(us / "seances.csv", "w", encoding="utf-8", newline="") as fh:
        csv.writer(fh, delimiter=delimiter).writerows(rows)
    result = run(us)
    order = [f for f in result.findings if f.code == "EC00-02" and f.found == "25/03/2026"]
    assert len(order) == 1 and order[0].table == "seances" and order[0].row == 2


# -- a far formatted cell saved by real software (tests/fixtures/office3/far) -------------------

FAR = Path(__file__).parent / "fixtures" / "office3" / "far"
TABLES = ["carnet", "seances", "fiches", "coups", "mises", "tickets", "carnets_tickets"]
# One per container; the .xlsb is pyxlsbwriter's, its far cell added record by record (make_far_xlsb.py).
FAR_FILES = ["far-openpyxl.xlsx", "far-lo.ods", "far-gnumeric.ods", "far-lo.xls", "far-gnumeric.xls",
             "far-pyxlsbwriter.xlsb"]


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("name", FAR_FILES)
def test_a_far_formatted_cell_saved_by_real_software_is_no_part_of_the_table(name, table):
    # Each container, each table: read as the original (same rows, columns, cells), no EC00-01.
    got = read_carnet(FAR / name)
    base = read_carnet(XLSX_CARNET)
    assert not got.unreadable and not [p for p in got.problems if p.code == "EC00-01"], got.problems
    a, b = got.tables[table], base.tables[table]
    assert a.rows_read == b.rows_read and list(a.df.columns) == list(b.df.columns)
    assert a.df.astype(str).values.tolist() == b.df.astype(str).values.tolist()


@pytest.mark.parametrize("name", FAR_FILES)
def test_a_far_formatted_cell_saved_by_real_software_keeps_the_findings(name):
    assert sorted(map(key, run(FAR / name).findings)) == sorted(map(key, run(XLSX_CARNET).findings))


def test_gnumeric_xls_holds_the_far_blank_and_declares_the_whole_grid():
    # What makes the fixture worth having: the BLANK at IV65536 and a DIMENSIONS
    # record of 65,536 × 256 in every sheet (calamine would reserve 16 million cells).
    import struct

    from auditor.read.container_guard import _records, _xls_sheets, _xls_stream

    stream, _ = _xls_stream((FAR / "far-gnumeric.xls").read_bytes())
    for _name, offset in _xls_sheets(stream):
        recs = {typ: stream[at:at + size] for typ, at, size in _records(stream, offset) if typ in (0x0200, 0x0201)}
        assert struct.unpack_from("<IIHH", recs[0x0200]) == (0, 65536, 0, 256)
        assert struct.unpack_from("<HH", recs[0x0201]) == (65535, 255)


def test_a_far_value_in_an_xls_is_a_real_giant_grid_and_refused():
    got = run(FAR / "farvalue-gnumeric.xls")
    assert [f.code for f in got.findings] == ["EC00-01"] and "256" in got.findings[0].message


def _xlsb_sheets(path: Path) -> dict[str, bytes]:
    import zipfile

    with zipfile.ZipFile(path) as zf:
        return {n: zf.read(n) for n in zf.namelist() if n.startswith("xl/worksheets/sheet")}


def test_the_xlsb_holds_the_far_blank_and_declares_the_whole_grid():
    # What makes the fixture worth having, as Excel leaves it: in every sheet a
    # BrtWsDim of A1:XFD1048576 and a formatted BrtCellBlank at XFD1048576.
    import struct

    from auditor.read.container_guard import _xlsb_records

    sheets = _xlsb_sheets(FAR / "far-pyxlsbwriter.xlsb")
    assert len(sheets) == len(TABLES)
    for body in sheets.values():
        recs = [(typ, body[at:at + size]) for typ, at, size in _xlsb_records(body)]
        dims = [b for t, b in recs if t == 0x0094]
        assert [struct.unpack("<IIII", b) for b in dims] == [(0, 1048575, 0, 16383)]
        rows = [struct.unpack_from("<I", b)[0] for t, b in recs if t == 0x0000]
        blanks = [struct.unpack_from("<II", b) for t, b in recs if t == 0x0001]
        assert rows[-1] == 1048575 and blanks == [(16383, 3)]


def test_a_far_value_in_an_xlsb_is_a_real_giant_grid_and_refused():
    got = run(FAR / "farvalue-pyxlsbwriter.xlsb")
    assert [f.code for f in got.findings] == ["EC00-01"] and got.carnet.unreadable
    assert "16\u202f384" in got.findings[0].message and "mises" in got.findings[0].message


def test_an_xlsb_row_header_alone_is_no_part_of_the_size_but_one_past_excel_s_last_row_is_refused():
    # A BrtRowHdr without a cell (a formatted or resized row) places nothing;
    # past row 1,048,577 calamine stops reading the sheet, the rows after it lost.
    import struct

    from auditor.limits import DEFAULT_LIMITS
    from auditor.read.container_guard import scan_xlsb_sheet
    from auditor.zippkg import Refused

    def row(n):
        return b"\x00\x19" + struct.pack("<IIHHBIII", n, 0, 0x12C, 0, 0, 1, 0, 0)

    cell = b"\x02\x0c" + struct.pack("<IIi", 1, 0, (7 << 2) | 2)   # BrtCellRk 7 in column B
    body = b"\x91\x01\x00" + row(3) + cell + row(1048575) + b"\x92\x01\x00"   # BrtBeginSheetData … BrtEndSheetData
    scan = scan_xlsb_sheet(body, DEFAULT_LIMITS)
    assert (scan.max_row, scan.max_col) == (4, 2)
    with pytest.raises(Refused) as exc:
        scan_xlsb_sheet(b"\x91\x01\x00" + row(0x100001) + row(3) + cell + b"\x92\x01\x00", DEFAULT_LIMITS)
    assert exc.value.kind == "too_many_rows"


def far_xlsb_with_carnet_sheet(change) -> bytes:
    """The far .xlsb fixture, its sheet `carnet` (sheet1.bin) given by `change(body)`."""
    import io
    import zipfile

    with zipfile.ZipFile(FAR / "far-pyxlsbwriter.xlsb") as zin:
        members = [(i, zin.read(i)) for i in zin.infolist()]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        for info, body in members:
            zout.writestr(info, change(body) if info.filename == "xl/worksheets/sheet1.bin" else body)
    return out.getvalue()


def test_an_xlsb_record_shorter_than_its_fields_is_read_as_calamine_reads_it(tmp_path):
    # calamine reads a record's fields from its one buffer, never cleared: a
    # cell record cut to nothing takes its column from the record before it
    # (here a far formatted blank), and calamine places a value there. The
    # guard reads it the same way (a row taken so could cost gigabytes).
    import io
    import struct

    import python_calamine

    from auditor.limits import DEFAULT_LIMITS
    from auditor.read.container_guard import check_xlsb, scan_xlsb_sheet
    from auditor.zippkg import Refused

    row = b"\x00\x19" + struct.pack("<IIHHBIII", 2, 0, 0x12C, 0, 0, 1, 0, 0)
    blank = b"\x01\x08" + struct.pack("<II", 16383, 3)   # BrtCellBlank at column XFD
    cut = b"\x02\x00"                                    # BrtCellRk of no byte
    def change(body: bytes) -> bytes:
        first_row = body.index(b"\x00\x19\x00\x00\x00\x00")   # its first BrtRowHdr
        body = body[:first_row] + row + blank + cut + body[first_row:]
        with pytest.raises(Refused) as exc:
            scan_xlsb_sheet(body, DEFAULT_LIMITS)
        assert exc.value.kind == "too_many_columns" and exc.value.params["columns"] == 16384
        return body

    data = far_xlsb_with_carnet_sheet(change)
    with pytest.raises(Refused):
        check_xlsb(data, DEFAULT_LIMITS)
    # What calamine itself makes of it: a value in column XFD (16,384 columns).
    rows = python_calamine.CalamineWorkbook.from_filelike(io.BytesIO(data)).get_sheet_by_name("carnet").to_python()
    assert max(len(r) for r in rows) == 16384


def test_an_xlsb_sheet_cut_inside_a_record_is_no_traceback(tmp_path):
    # A worksheet part that ends inside a cell record (a damaged copy): calamine
    # fails at that record; the guard stops there too, with no exception.
    import zipfile

    src = tmp_path / "cut.xlsb"
    with zipfile.ZipFile(FAR / "far-pyxlsbwriter.xlsb") as zin, zipfile.ZipFile(src, "w") as zout:
        for info in zin.infolist():
            body = zin.read(info)
            if info.filename == "xl/worksheets/sheet5.bin":   # the sheet `mises`
                body = body[:body.index(b"\x00\x19\x05\x00\x00\x00")] + b"\x02\x0c\x01\x00"   # BrtCellRk cut
            zout.writestr(info, body)
    got = run(src)
    assert [f.table for f in got.findings if f.code == "EC00-01"] == ["mises"]   # the other tables still read
    assert "coups" in got.carnet.tables


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_user_audits_an_xlsb_with_a_far_formatted_cell(tmp_path):
    # As a user would: the command, the real clock, the file renamed; the
    # findings of the carnet, and the declared 17-billion-cell grid costs nothing.
    import json
    import os
    import subprocess
    import sys

    src = tmp_path / "Carnet table 3 (copie).xlsb"
    shutil.copyfile(FAR / "far-pyxlsbwriter.xlsb", src)
    out = tmp_path / "out"
    code = ("import resource, sys\n"
            "from auditor.cli import main\n"
            f"rc = main(['audit', {str(src)!r}, '--out', {str(out)!r}, '--quiet', '--format', 'json'])\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)\n"
            "sys.exit(rc)\n")
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert "Traceback" not in proc.stderr and proc.returncode == 0, proc.stderr   # a compliant carnet
    doc = json.loads(next(out.glob("*/findings.json")).read_text(encoding="utf-8"))
    assert doc["source"]["format"] == "xlsb" and doc["reading"]["container"] == "xlsb"
    assert sorted(f["code"] for f in doc["findings"]) == sorted(f.code for f in run(XLSX_CARNET).findings)
    assert int(proc.stdout.split()[-1]) < 600


def test_an_xls_declared_grid_is_cut_to_its_cells_for_calamine():
    from auditor.limits import DEFAULT_LIMITS
    from auditor.read.container_guard import _records, _xls_sheets, _xls_stream, check_xls

    check = check_xls((FAR / "far-gnumeric.xls").read_bytes(), DEFAULT_LIMITS)
    assert check.workbook is not None
    import struct

    stream, _ = _xls_stream(check.workbook)
    for name, offset in _xls_sheets(stream):
        dims = [stream[at:at + size] for typ, at, size in _records(stream, offset) if typ == 0x0200][0]
        scan = check.scans[name]
        assert struct.unpack_from("<IIHH", dims) == (0, scan.max_row, 0, scan.max_col) and scan.max_col < 20
    # A workbook whose declared grids are its cells is handed over as it is.
    assert check_xls((FAR / "far-lo.xls").read_bytes(), DEFAULT_LIMITS).workbook is None


# -- each office program's CSV export, French and English locales (tests/fixtures/office3/csv) ------

OFFICE3 = Path(__file__).parent / "fixtures" / "office3"
CSV_EXPORTS = sorted(p for p in (OFFICE3 / "csv").iterdir() if p.is_dir())
CSV_SOURCES = [ROOT / "sample_carnets" / "compliant" / "forges-table3.xlsx",
               ROOT / "sample_carnets" / "infractions" / "couverture-et-seances.xlsx",
               ROOT / "sample_carnets" / "infractions" / "numerotation-et-mises.xlsx",
               OFFICE3 / "sources" / "couverture-et-seances-late.xlsx"]
_WHY_SILENT = ("LibreOffice's CSV export not 'as shown' in en_US writes its short date month-first "
               "(03/02/2026 for 2 March) and every date of this carnet has a day of 12 or less: "
               "no cell can tell the order, so the day-first reading stands (format v1.2)")
# Where the reading differs without a word, and why: nowhere else.
SILENT = {"forges-table3-lo-raw-en": _WHY_SILENT,
          "couverture-et-seances-lo-raw-en": _WHY_SILENT,
          "numerotation-et-mises-lo-raw-en": _WHY_SILENT}
# Gnumeric's default CSV format writes dates year-first with slashes
# (2026/03/02), not a date of the format, and a computed amount with all its
# binary digits (9,199999999999999: more than 2 decimals in a CSV cell): each
# such cell an EC00-02 quoting it.
LOUD = {p.name for p in CSV_EXPORTS if "-gnumeric-" in p.name and "-preserve-" not in p.name}


def _source_of(folder: Path) -> Path:
    return max((s for s in CSV_SOURCES if folder.name.startswith(s.stem + "-")), key=lambda s: len(s.stem))


def _tables(result) -> dict:
    return {name: t.df.astype(str).values.tolist() for name, t in result.carnet.tables.items()}


def _text_dates(folder: Path):
    """Every a/b/YYYY text cell of a date column in the CSV folder: (a, b)."""
    import re

    for table, column in _date_columns(folder):
        _, rows = _read(folder / f"{table}.csv")
        if column in rows[0]:
            i = rows[0].index(column)
            for r in rows[1:]:
                m = re.fullmatch(r"(\d{1,2})/(\d{1,2})/\d{4}", r[i].strip()) if i < len(r) else None
                if m:
                    yield int(m.group(1)), int(m.group(2))


def test_every_exporter_locale_and_sample_is_there():
    names = {p.name for p in CSV_EXPORTS}
    for src in CSV_SOURCES:
        for exporter in ("lo", "lo-raw", "gnumeric", "gnumeric-preserve"):
            for locale in ("fr", "en"):
                folder = OFFICE3 / "csv" / f"{src.stem}-{exporter}-{locale}"
                assert folder.name in names
                assert {p.name for p in folder.iterdir()} == {f"{t}.csv" for t in TABLES}


@pytest.mark.parametrize("folder", CSV_EXPORTS, ids=lambda p: p.name)
def test_a_workbook_sample_through_every_csv_export_and_locale(folder):
    source = _source_of(folder)
    got, base = run(folder), run(source)
    assert not got.carnet.unreadable
    mine, theirs = sorted(map(key, got.findings)), sorted(map(key, base.findings))
    if folder.name in SILENT:
        # Nothing in the carnet tells the order of its dates ...
        dates = list(_text_dates(folder))
        assert dates and all(a <= 12 and b <= 12 for a, b in dates)
        assert "dates" not in (got.carnet.reading or {})
        # ... and the order of its dates is the only difference: read month-first, it is the original.
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            iso = Path(tmp) / folder.name
            shutil.copytree(folder, iso)
            for table, column in _date_columns(iso):
                delimiter, rows = _read(iso / f"{table}.csv")
                if column in rows[0]:
                    i = rows[0].index(column)
                    for r in rows[1:]:
                        if i < len(r) and r[i].count("/") == 2:
                            m, d, y = r[i].split("/")
                            r[i] = f"{y}-{int(m):02d}-{int(d):02d}"
                    with open(iso / f"{table}.csv", "w", encoding="utf-8", newline="") as fh:
                        csv.writer(fh, delimiter=delimiter).writerows(rows)
            fixed = run(iso)
            assert sorted(map(key, fixed.findings)) == theirs
            assert _tables(fixed) == _tables(base)
        return
    if folder.name in LOUD:
        assert mine != theirs
        extra = [f for f in got.findings if key(f) not in set(theirs)]
        missing = [f for f in base.findings if key(f) not in set(mine)]
        assert extra and all(f.code == "EC00-02" for f in extra), [f for f in extra if f.code != "EC00-02"]
        for f in extra:   # each quotes its cell as the export wrote it
            _, rows = _read(folder / f"{f.table}.csv")
            assert rows[f.row - 1][rows[0].index(f.column)] == f.found, (f.table, f.row, f.column, f.found)
        assert {f.column for f in extra} & {c for _, c in _date_columns(folder)}
        loud_rows = {(f.table, f.row) for f in extra}
        # A finding of the original lost only where its own row is an EC00-02.
        assert all((f.table, f.row) in loud_rows for f in missing), missing
        return
    assert mine == theirs
    assert _tables(got) == _tables(base)


def test_a_month_first_export_is_recognised_from_a_day_above_12():
    got = run(OFFICE3 / "csv" / "couverture-et-seances-late-lo-raw-en")
    assert got.carnet.reading["dates"]["order"] == "month_first"
    assert any(b > 12 for _, b in _text_dates(OFFICE3 / "csv" / "couverture-et-seances-late-lo-raw-en"))


def test_an_xls_copy_olefile_cannot_write_falls_back_to_judging_the_declared_grid(monkeypatch):
    # A workbook stream in the OLE mini-stream cannot be rewritten by olefile:
    # calamine would reserve the declared grid, so the limits judge it (loud).
    from auditor.read import container_guard

    monkeypatch.setattr(container_guard, "_with_stream", lambda *a: None)
    got = run(FAR / "far-gnumeric.xls")
    assert [f.code for f in got.findings] == ["EC00-01"] and got.carnet.unreadable


@pytest.mark.subprocess
def test_a_calamine_panic_is_one_finding_and_no_rust_text_on_stderr(tmp_path):
    # A damaged .xlsb whose shared-string index points past the strings:
    # calamine panics in Rust. The inspector gets the table's EC00-01 with
    # the reason, and on the terminal only the command's own lines: not
    # Rust's panic message, nor its backtrace (RUST_BACKTRACE set, as here).
    import json
    import os
    import struct
    import subprocess
    import sys

    from auditor.read.container_guard import _xlsb_records

    def change(body: bytes) -> bytes:
        typ, at, size = next(r for r in _xlsb_records(body) if r[0] == 0x07)   # a BrtCellIsst
        return body[:at + 8] + struct.pack("<I", 0x7FFFFFF0) + body[at + 12:]   # its string index, past them all

    src = tmp_path / "abîmé.xlsb"
    src.write_bytes(far_xlsb_with_carnet_sheet(change))
    env = {**os.environ, "RUST_BACKTRACE": "1", "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    env.pop("SOURCE_DATE_EPOCH", None)
    proc = subprocess.run([sys.executable, "-m", "auditor", "audit", str(src), "--out", str(tmp_path / "out"),
                           "--format", "json", "--lang", "en"], capture_output=True, text=True, env=env)
    assert proc.returncode == 1, proc.stderr
    [line] = proc.stderr.strip().splitlines()   # the command's own line for the carnet, nothing of Rust's
    assert line.startswith(f"{src}: 1 error(s)") and "panicked" not in proc.stderr, proc.stderr
    doc = json.loads(next((tmp_path / "out").glob("*/findings.json")).read_text(encoding="utf-8"))
    [unreadable] = [f for f in doc["findings"] if f["code"] == "EC00-01"]
    assert "carnet" in unreadable["message"] and "index out of bounds" in unreadable["message"]
    assert {"mises", "coups"} <= {t["table"] for t in doc["reading"]["tables"]}   # the other tables read
