"""Reading both containers in the dialects the format allows."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from openpyxl import Workbook

from auditor.catalogue import load_profile
from auditor.limits import DEFAULT_LIMITS
from auditor.audit import audit
from auditor.normalise import normalise
from auditor.read import discover, read_carnet
from auditor.read.csv_folder import DecodeError, decode, sniff_delimiter

COVER = "casino;table;date_debut\nCasino de Forges;3;02/03/2026\n"
SEANCES = "seance;date;timbre\n1;02/03/2026;02/03/2026\n"
COUPS = ("seance;coup;type;joueur_a;joueur_b;total_a;total_b;gagnant;prelevement\n"
         "1;1;simple;1;2;1 234,50 €;1 234,50 €;a;61,70\n")
MISES = "seance;coup;rang;fiche;cote;montant\n1;1;1;10;a;1 234,50 €\n1;1;2;11;b;1234.5\n"
TICKETS = "seance;coup;valeur;premier;dernier\n1;1;10;201;206\n1;1;1;1201;1201\n1;1;0,10;4801;4807\n"


def write_csv(folder: Path, tables: dict[str, str], encoding="utf-8", delimiter=";") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in tables.items():
        if delimiter != ";":
            text = text.replace(";", delimiter)
        data = text.encode("utf-8-sig" if encoding == "bom" else encoding)
        (folder / f"{name}.csv").write_bytes(data)
    return folder


def full(**over) -> dict[str, str]:
    tables = {"carnet": COVER, "seances": SEANCES, "coups": COUPS, "mises": MISES, "tickets": TICKETS}
    tables.update(over)
    return tables


def run(path: Path):
    carnet = normalise(read_carnet(path))
    return carnet, audit(carnet, load_profile())


def codes(result):
    """Error and warning codes (info, such as a ticket book in progress, is context)."""
    return sorted(f.code for f in result.findings if f.severity.label != "info")


def test_semicolon_decimal_comma_utf8(tmp_path):
    carnet, result = run(write_csv(tmp_path / "c", full()))
    assert codes(result) == []
    assert carnet.df("mises")["montant_cents"].tolist() == [123450, 123450]
    assert result.summary["levy_expected_cents"] == 6170


@pytest.mark.parametrize("encoding", ["bom", "utf-8", "cp1252"])
def test_encodings_are_detected(tmp_path, encoding):
    cover = "casino;table;date_debut\nCasino Barrière de Deauville;1;02/03/2026\n"
    carnet, result = run(write_csv(tmp_path / "c", full(carnet=cover), encoding=encoding))
    assert carnet.cover["casino"] == "Casino Barrière de Deauville"
    assert codes(result) == []
    # The header as the outputs quote it: the BOM is no part of its first name.
    raw = read_carnet(tmp_path / "c")
    assert [c.text for c in raw.tables["carnet"].source_columns][:1] == ["casino"]


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview, "arrow"])
def test_every_buffer_decodes_as_its_bytes(kind):
    import pyarrow as pa

    for data, expected in [(b"\xef\xbb\xbfcaf\xc3\xa9", ("café", "utf-8-sig")), (b"caf\xc3\xa9", ("café", "utf-8")),
                           (b"caf\xe9", ("café", "cp1252")), (b"", ("", "utf-8"))]:
        buffer = pa.py_buffer(data) if kind == "arrow" else kind(data)
        assert decode(buffer) == expected, (kind, data)


def test_undecodable_bytes_are_refused_not_guessed():
    with pytest.raises(DecodeError):
        decode(b"seance\n\x81\x8d\x8f\n")
    assert decode(b"caf\xe9")[1] == "cp1252"
    assert decode(b"\xef\xbb\xbfcaf\xc3\xa9") == ("café", "utf-8-sig")


def test_comma_delimiter_with_quoted_decimal_commas(tmp_path):
    tables = {k: v.replace(";", ",") for k, v in full().items()}
    tables["coups"] = ('seance,coup,type,joueur_a,joueur_b,total_a,total_b,gagnant,prelevement\n'
                      '1,1,simple,1,2,"1 234,50","1234.50",a,"61,70"\n')
    tables["mises"] = 'seance,coup,rang,fiche,cote,montant\n1,1,1,10,a,"1 234,50 €"\n1,1,2,11,b,1234.50\n'
    tables["tickets"] = 'seance,coup,valeur,premier,dernier\n1,1,10,201,206\n1,1,1,1201,\n1,1,"0,10",4801,4807\n'
    assert sniff_delimiter(tables["coups"]) == ","
    _, result = run(write_csv(tmp_path / "c", tables))
    assert codes(result) == []


def test_names_match_case_and_accent_insensitively(tmp_path):
    folder = write_csv(tmp_path / "c", full(
        seances="Séance;Date;TIMBRE;Remarque\n1;02/03/2026;2026-03-02;rien\n"))
    (folder / "seances.csv").rename(folder / "Séances.csv")
    (folder / "coups.csv").rename(folder / "COUPS.csv")
    carnet, result = run(folder)
    assert codes(result) == []
    assert discover(tmp_path) == [folder]


def test_source_rows_survive_blank_lines(tmp_path):
    mises = "seance;coup;rang;fiche;cote;montant\n1;1;1;10;a;1 234,50\n\n1;1;2;11;b;douze\n"
    carnet, result = run(write_csv(tmp_path / "c", full(mises=mises)))
    bad = [f for f in result.findings if f.code == "EC00-02"]
    assert [(f.row, f.column, f.found) for f in bad] == [(4, "montant", "douze")]
    assert carnet.tables["mises"].rows_read == 2


def test_row_longer_than_header_is_rejected_and_counted(tmp_path):
    mises = "seance;coup;rang;fiche;cote;montant\n1;1;1;10;a;1 234,50\n1;1;2;11;b;1234,5;surplus\n"
    _, result = run(write_csv(tmp_path / "c", full(mises=mises)))
    shape = [f for f in result.findings if f.code == "EC00-02"]
    assert [(f.table, f.row) for f in shape] == [("mises", 3)]
    assert result.summary["rows_rejected"] == 1
    assert result.summary["rows_read"] == 1 + 1 + 1 + 2 + 3


def _workbook(path: Path, sheets: dict[str, list[list]]) -> Path:
    wb = Workbook()
    wb.remove(wb.active)
    for name, rows in sheets.items():
        ws = wb.create_sheet(name)
        for r in rows:
            ws.append(r)
    wb.save(path)
    return path


def _sheets(mises_rows):
    d = dt.date(2026, 3, 2)
    return {
        "Carnet": [["Casino", "Table", "Date_debut"], ["Casino de Forges", 3, d]],
        "Séances": [["seance", "date", "timbre"], [1, d, d]],
        "Coups": [["seance", "coup", "type", "joueur_a", "joueur_b", "total_a", "total_b", "gagnant",
                   "prelevement"], [1, 1, "Simple", 1, 2, 0.3, 0.1 + 0.2, "A", 0]],
        "Mises": [["seance", "coup", "rang", "fiche", "cote", "montant"]] + mises_rows,
        "Tickets": [["seance", "coup", "valeur", "premier", "dernier"]],
        "Notes": [["anything"], ["ignored"]],
    }


def test_workbook_numbers_read_at_excel_precision(tmp_path):
    path = _workbook(tmp_path / "c.xlsx", _sheets([[1, 1, 1, 10, "a", 0.1 + 0.2], [1.0, 1.0, 2.0, 11, "b", "0,30"]]))
    carnet, result = run(path)
    assert codes(result) == []
    assert carnet.df("coups")["total_b_cents"].tolist() == [30]
    assert carnet.df("mises")["montant_cents"].tolist() == [30, 30]
    assert carnet.cover == {"casino": "Casino de Forges", "table": 3, "date_debut": "2026-03-02"}


def test_workbook_cell_with_three_decimals_is_a_cell_error(tmp_path):
    path = _workbook(tmp_path / "c.xlsx", _sheets([[1, 1, 1, 10, "a", 12.555], [1, 1, 2, 11, "b", 0.3]]))
    _, result = run(path)
    bad = [f for f in result.findings if f.code == "EC00-02"]
    assert [(f.row, f.cell, f.found) for f in bad] == [(2, "F2", "12.555")]


def test_workbook_header_below_empty_rows_keeps_excel_row_numbers(tmp_path):
    sheets = _sheets([[1, 1, 1, 10, "a", 0.3], [1, 1, 3, 11, "b", 0.3]])
    sheets["Mises"] = [[None], [None]] + sheets["Mises"]
    _, result = run(_workbook(tmp_path / "c.xlsx", sheets))
    gap = [f for f in result.findings if f.code == "EC64-02"]
    assert [(f.row, f.cell) for f in gap] == [(5, "C5")]


def test_random_bytes_named_xlsx_is_unreadable(tmp_path):
    path = tmp_path / "x.xlsx"
    path.write_bytes(b"\x00\x01not a zip at all" * 50)
    carnet, result = run(path)
    assert carnet.unreadable
    assert codes(result) == ["EC00-01"]
    assert all(r.status.value == "not_checked" for r in result.rules if r.code != "EC00-01")


def test_discover_finds_workbooks_and_csv_folders(tmp_path):
    write_csv(tmp_path / "a" / "t1", full())
    (tmp_path / "b").mkdir()
    _workbook(tmp_path / "b" / "t2.xlsx", _sheets([]))
    (tmp_path / "b" / "~$t2.xlsx").write_bytes(b"lock")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "notes.csv").write_text("x\n")
    assert [p.relative_to(tmp_path).as_posix() for p in discover(tmp_path)] == ["a/t1", "b/t2.xlsx"]


# The Arrow fast path and the pandas/csv-module paths must read any text the
# same way: same columns, same cells, same source rows, same rows_read.
_LINE_CELL = st.sampled_from(["1", "12,50", "", "  ", "a b", '"x;y"', '"2\n3"', "é"])
_TERMINATOR = st.sampled_from(["\n", "\r\n"])


@st.composite
def _csv_text(draw):
    width = draw(st.integers(min_value=2, max_value=4))
    end = draw(_TERMINATOR)
    lines = [";".join(f"h{i}" for i in range(width))]
    for _ in range(draw(st.integers(min_value=0, max_value=8))):
        kind = draw(st.sampled_from(["row", "row", "row", "blank", "spaces", "short"]))
        if kind == "row":
            lines.append(";".join(draw(_LINE_CELL) for _ in range(width)))
        elif kind == "blank":
            lines.append("")
        elif kind == "spaces":
            lines.append(";".join(" " for _ in range(width)))
        else:
            lines.append(draw(_LINE_CELL))
    return end.join(lines) + draw(st.sampled_from(["", end, end + end]))


def _shape(raw):
    table, problems = raw
    if table is None:
        return None, [(p.code, p.kind, p.row) for p in problems]
    df = table.df
    cells = {c: [str(v) for v in df[c].fillna("").tolist()] for c in df.columns}
    return (cells, table.rows_read), [(p.code, p.kind, p.row) for p in problems]


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(_csv_text())
def test_arrow_fast_path_reads_like_the_slow_paths(text):
    from auditor.read import csv_folder

    fast = csv_folder._parse_with_arrow("mises", text, ";", DEFAULT_LIMITS)
    if fast is None:
        return  # the slow path reads it: nothing to compare
    original = csv_folder._parse_with_arrow
    try:
        csv_folder._parse_with_arrow = lambda *a, **k: None
        slow = csv_folder.parse_csv_text("mises", text)
    finally:
        csv_folder._parse_with_arrow = original
    assert _shape(fast) == _shape(slow)


def test_blank_and_space_lines_keep_row_numbers_on_the_fast_path():
    from auditor.read import csv_folder

    text = "a;b\r\n1;2\r\n\r\n ; \r\n3;4\r\n\r\n"
    table, problems = csv_folder._parse_with_arrow("mises", text, ";", DEFAULT_LIMITS)
    assert problems == [] and table.rows_read == 2
    assert table.df["_row"].tolist() == [2, 5] and table.df["a"].tolist() == ["1", "3"]


def test_cell_text_is_the_same_the_second_time_and_the_cache_is_bounded(monkeypatch):
    from auditor.read import workbook as xlsx

    monkeypatch.setattr(xlsx, "_NUMBER_TEXT", {})
    monkeypatch.setattr(xlsx, "_NUMBER_TEXT_MAX", 3)
    values = [0.1 + 0.2, -0.0, 0.0, 50.0, 12.5, 1e20, True, 7, None, dt.date(2026, 3, 2),
              dt.datetime(2026, 3, 2, 10, 30), "x"]
    want = ["0.3", "0", "0", "50", "12.5", "1e+20", "TRUE", "7", "", "2026-03-02", "2026-03-02", "x"]
    assert [xlsx.cell_text(v) for v in values] == want
    assert [xlsx.cell_text(v) for v in values] == want
    assert len(xlsx._NUMBER_TEXT) == 3
