"""annotated.xlsx and the blank template, read back with openpyxl: a comment
and a fill on every finding's cell, a first sheet listing the findings with
links, no formula from the source, and a template that round-trips."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from openpyxl import load_workbook

import ecarte_schemas
from auditor.catalogue import load_profile
from auditor.synth.generate import COLUMNS, source_text, write_xlsx
from auditor.i18n import labels
from auditor.audit import audit_path
from auditor.read import read_carnet
from auditor.report.excel_report import anchor_of, write_annotated
from auditor.report.template_xlsx import template_columns, write_blank_template
from auditor.report.xlsx_io import FILLS
from report_fixtures import XSS, audited, breached_tables

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_carnets"
STAMP = "2026-01-01T00:00:00Z"
INJECTIONS = ['=HYPERLINK("http://example.invalid","x")', "+33 1 23 45", "-2+3", "@SUM(A1:A9)"]


def injected_tables() -> dict:
    """Breached tables whose text cells start like formulas."""
    t = breached_tables(XSS, seances=4)
    for row, text in zip(t["seances"], INJECTIONS):
        row["jeux"] = text
    t["carnet"][0]["casino"] = INJECTIONS[0]
    return t


@pytest.fixture(scope="module")
def from_xlsx(tmp_path_factory):
    folder = tmp_path_factory.mktemp("annot-xlsx")
    t = injected_tables()
    path = write_xlsx(t, folder / "carnet.xlsx")
    # Text that looks like a formula, stored as text (as a clerk's workbook may
    # hold it), and a real formula without a cached value.
    wb = load_workbook(path)
    for ws_name, ref, text in (("seances", "D2", INJECTIONS[0]), ("seances", "D3", INJECTIONS[1]),
                               ("carnet", "A2", INJECTIONS[0])):
        cell = wb[ws_name][ref]
        cell.value = text
        cell.data_type = "s"
    wb["coups"]["F30"] = "=G30"              # a total computed by Excel
    wb.save(path)
    result = audit_path(path, load_profile(), "fr")
    out = write_annotated(result, path, folder / "annotated.xlsx", generated_at=STAMP)
    return result, path, out


@pytest.fixture(scope="module")
def from_csv(tmp_path_factory):
    folder = tmp_path_factory.mktemp("annot-csv")
    result, path = audited(injected_tables(), folder, "csv")
    out = write_annotated(result, path, folder / "annotated.xlsx", generated_at=STAMP)
    return result, path, out


def _check_annotations(result, out: Path, lang: str = "fr"):
    wb = load_workbook(out)
    lab = labels(lang)
    first = wb.worksheets[0]
    assert first.title == lab["xlsx_findings_sheet"]
    rows = list(first.iter_rows(min_row=2, values_only=True))
    assert len(rows) == len(result.findings)
    # Every finding listed, in the findings' order, with its link.
    on_cell = defaultdict(list)
    for i, (row, f) in enumerate(zip(rows, result.findings), start=2):
        assert row[1] == f.code and row[7] == f.message
        link = first.cell(row=i, column=12).hyperlink
        if f.row is not None and f.table in [ws.title for ws in wb.worksheets]:
            assert link is not None and link.location
            sheet, ref = link.location.rsplit("!", 1)
            on_cell[(sheet.strip("'"), ref)].append(f)
        else:
            assert link is None
    assert on_cell, "some findings must be on cells"
    for (sheet, ref), found in on_cell.items():
        cell = wb[sheet][ref]
        assert cell.comment is not None, (sheet, ref)
        for f in found:
            assert f.code in cell.comment.text and f.message in cell.comment.text
        assert cell.comment.text.index(found[0].code) <= cell.comment.text.index(found[-1].code)
        worst = max(f.severity for f in found).label
        assert cell.fill.fgColor.rgb == FILLS[worst].fgColor.rgb
        if found[0].cell:
            assert ref == found[0].cell
    return wb


def _no_formula(wb):
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                assert cell.data_type != "f", (ws.title, cell.coordinate, cell.value)


def test_workbook_input_annotated(from_xlsx):
    result, source, out = from_xlsx
    wb = _check_annotations(result, out)
    _no_formula(wb)
    # Values untouched, formula-looking text kept as text.
    src = load_workbook(source)
    for ws in src.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                if cell.data_type == "f":
                    continue
                assert wb[ws.title][cell.coordinate].value == cell.value, (ws.title, cell.coordinate)
    assert wb["seances"]["D2"].value == INJECTIONS[0] and wb["seances"]["D2"].quotePrefix
    assert wb["carnet"]["A2"].value == INJECTIONS[0]
    # The formula without a cached value is kept as its text, never as a formula.
    assert wb["coups"]["F30"].value == "=G30" and wb["coups"]["F30"].data_type == "s"


def test_csv_input_annotated(from_csv):
    result, source, out = from_csv
    wb = _check_annotations(result, out)
    _no_formula(wb)
    raw = read_carnet(source)
    for table, rt in raw.tables.items():
        ws = wb[table]
        header = [c.value for c in ws[1]]
        for rec in rt.df.to_dict("records"):
            for name, value in rec.items():
                if name == "_row" or value == "":
                    continue
                col = header.index(name) + 1
                assert ws.cell(row=rec["_row"], column=col).value == value
    seances = wb["seances"]
    jeux = [c.value for c in seances["D"][1:5]]
    assert jeux == INJECTIONS
    assert all(c.quotePrefix and c.data_type == "s" for c in seances["D"][1:5])
    # CSV findings have no Excel cell: they sit under their column.
    f = next(f for f in result.findings if f.code == "EC66-01")
    assert anchor_of(f, {"coups": type("S", (), {"title": "coups", "letters": {"prelevement": "L"}})()}) == \
        ("coups", f"L{f.row}")
    assert wb["coups"][f"L{f.row}"].comment is not None


def test_annotated_is_deterministic(from_csv, tmp_path):
    result, source, out = from_csv
    again = write_annotated(result, source, tmp_path / "again.xlsx", generated_at=STAMP)
    assert again.read_bytes() == out.read_bytes()


def test_annotated_english(tmp_path):
    result, path = audited(breached_tables(), tmp_path, "xlsx", lang="en")
    out = write_annotated(result, path, tmp_path / "annotated.xlsx", generated_at=STAMP)
    _check_annotations(result, out, "en")


def test_unreadable_carnet_lists_its_findings(tmp_path):
    path = SAMPLES / "infractions" / "classeur-corrompu.xlsx"
    result = audit_path(path, load_profile(), "fr")
    wb = load_workbook(write_annotated(result, path, tmp_path / "annotated.xlsx", generated_at=STAMP))
    assert wb.sheetnames == [labels("fr")["xlsx_findings_sheet"]]
    assert [r[1] for r in wb.worksheets[0].iter_rows(min_row=2, values_only=True)] == ["EC00-01"]


@pytest.mark.parametrize("sample", sorted(p for p in (SAMPLES / "infractions").iterdir()
                                          if p.name != "classeur-corrompu.xlsx"), ids=lambda p: p.name)
def test_breach_samples_annotated(sample, tmp_path):
    result = audit_path(sample, load_profile(), "fr")
    wb = _check_annotations(result, write_annotated(result, sample, tmp_path / "a.xlsx", generated_at=STAMP))
    _no_formula(wb)


# -- the blank template ----------------------------------------------------------------

@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return write_blank_template(tmp_path_factory.mktemp("tpl") / "carnet.xlsx", "fr", generated_at=STAMP)


def test_template_has_every_sheet_and_column(template):
    wb = load_workbook(template)
    lab = labels("fr")
    assert wb.sheetnames[0] == lab["tpl_sheet_instructions"]
    assert wb.sheetnames[1:] == list(ecarte_schemas.MODELS)
    for table, cols in template_columns().items():
        ws = wb[table]
        assert [c.value for c in ws[1]] == [c.name for c in cols]
        assert ws.max_row == 1                          # empty: headers only
        for cell, col in zip(ws[1], cols):
            assert cell.comment is not None and cell.comment.text.startswith(col.name)
            assert lab["coldoc"][table][col.name] in cell.comment.text
    # The spec's columns, all of them (generate.COLUMNS is written from the spec too).
    assert {t: [c.name for c in cols] for t, cols in template_columns().items()} == COLUMNS


def test_template_validations(template):
    wb = load_workbook(template)

    def lists(table):
        return {str(dv.sqref): dv.formula1 for dv in wb[table].data_validations.dataValidation if dv.type == "list"}

    assert lists("coups") == {"C2:C1048576": '"simple,chouette"', "J2:J1048576": '"adjudication,remise"',
                              "K2:K1048576": '"a,b"'}
    assert lists("mises") == {"E2:E1048576": '"a,b"'}
    assert lists("tickets") == {"C2:C1048576": '"avant,apres"', "D2:D1048576": '"0.1,1,10,100"'}
    assert lists("carnets_tickets") == {"A2:A1048576": '"0.1,1,10,100"', "D2:D1048576": '"oui,non"'}
    kinds = {dv.type for dv in wb["coups"].data_validations.dataValidation}
    assert {"whole", "decimal", "list"} <= kinds


def test_template_english(tmp_path):
    wb = load_workbook(write_blank_template(tmp_path / "t.xlsx", "en", generated_at=STAMP))
    assert wb.sheetnames[0] == "Instructions"
    assert "Side that won" in wb["coups"]["K1"].comment.text


def _fill(template: Path, out: Path, rows_by_table: dict[str, list[tuple[int, dict[str, str]]]]) -> Path:
    """The template filled as a clerk would: text under each header, at the
    given row; sheets of tables the carnet lacks are removed, and so are
    columns it lacks."""
    wb = load_workbook(template)
    for table in list(ecarte_schemas.MODELS):
        ws = wb[table]
        if table not in rows_by_table:
            wb.remove(ws)
            continue
        rows = rows_by_table[table]
        present = set().union(*(r.keys() for _, r in rows)) if rows else set()
        header = [c.value for c in ws[1]]
        for i in reversed(range(len(header))):
            if header[i] not in present:
                ws.delete_cols(i + 1)
        header = [c.value for c in ws[1]]
        for row_no, values in rows:
            for c, name in enumerate(header, start=1):
                if values.get(name, "") != "":
                    ws.cell(row=row_no, column=c, value=values[name]).data_type = "s"
    wb.save(out)
    return out


def _key(f, with_cell=True):
    return (f.code, f.seance, f.coup, f.rang, f.table, f.row, f.column, f.message, f.expected, f.found,
            f.impact_cents) + ((f.cell,) if with_cell else ())


def test_template_round_trips_a_generated_carnet(template, tmp_path):
    tables = breached_tables()
    sample = write_xlsx(tables, tmp_path / "sample.xlsx")
    rows = {t: [(i + 2, {c: source_text(c, r.get(c)) for c in COLUMNS[t]}) for i, r in enumerate(rs)]
            for t, rs in tables.items()}
    filled = _fill(template, tmp_path / "filled.xlsx", rows)
    profile = load_profile()
    want = audit_path(sample, profile, "fr")
    got = audit_path(filled, profile, "fr")
    assert want.findings, "the sample must have findings for the comparison to mean something"
    assert [_key(f) for f in got.findings] == [_key(f) for f in want.findings]


@pytest.mark.parametrize("sample", sorted(p for d in ("compliant", "infractions") for p in (SAMPLES / d).iterdir()
                                          if p.name != "classeur-corrompu.xlsx"), ids=lambda p: p.name)
def test_template_round_trips_the_samples(sample, template, tmp_path):
    raw = read_carnet(sample)
    rows = {t: [(int(r["_row"]), {k: str(v) for k, v in r.items() if k != "_row"}) for r in rt.df.to_dict("records")]
            for t, rt in raw.tables.items() if t in ecarte_schemas.MODELS}
    filled = _fill(template, tmp_path / "filled.xlsx", rows)
    profile = load_profile()
    want = audit_path(sample, profile, "fr")
    got = audit_path(filled, profile, "fr")
    assert [_key(f, with_cell=False) for f in got.findings] == [_key(f, with_cell=False) for f in want.findings]
