"""Real files as they come: workbooks saved by LibreOffice Calc (.ods, .xls,
re-saved .xlsx), title rows above the header, French column names, totals
rows, other systems' column names through a mapping file.

The workbooks of tests/fixtures/real/ were made by LibreOffice itself
(tests/fixtures/real/make_real.py); CI does not need LibreOffice.
"""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from openpyxl import load_workbook

from auditor.catalogue import load_profile
from auditor.cli import main
from auditor.audit import audit
from auditor.normalise import normalise
from auditor.read import discover, load_columns_file, read_carnet
from auditor.read.columns import ALIASES, fold, match_header, table_columns

REAL = Path(__file__).parent / "fixtures" / "real"
CONTAINERS = ["carnet.xlsx", "carnet-lo.xlsx", "carnet.ods", "carnet.xls"]
UNTIDY = ["untidy.xlsx", "untidy-lo.xlsx", "untidy.ods", "untidy.xls"]


def run(path: Path, columns=None):
    carnet = normalise(read_carnet(path, None, columns))
    return audit(carnet, load_profile())


def findings(result):
    return [(f.code, f.table, f.row, f.column, f.cell, f.seance, f.coup, f.rang, f.message, f.expected, f.found,
             f.impact_cents) for f in result.findings]


def accounting(result):
    return {k: v for k, v in result.summary.items() if k != "formulas"}


# -- the same carnet in every container ------------------------------------------------

@pytest.mark.slow
def test_a_carnet_saved_by_libreoffice_gives_identical_findings_and_cells_in_every_container():
    results = {name: run(REAL / name) for name in CONTAINERS}
    base = results["carnet.xlsx"]
    assert {f.code for f in base.findings} >= {"EC00-02", "EC64-01", "EC66-01"}
    assert all(f.cell for f in base.findings if f.row is not None and f.column)
    for name, result in results.items():
        assert findings(result) == findings(base), name
        assert accounting(result) == accounting(base), name
        assert result.carnet.source.format == name.rsplit(".", 1)[1]


def test_the_untidy_carnet_reads_like_the_tidy_one_in_every_container():
    tidy = run(REAL / "carnet.xlsx")
    shift = {"mises": 3, "coups": 2}   # title rows (and a blank one) above the header
    expected = [(code, table, row + shift.get(table, 0) if row is not None else None, column,
                 None if cell is None else f"{cell.rstrip('0123456789')}{int(cell[len(cell.rstrip('0123456789')):]) + shift.get(table, 0)}",
                 seance, coup, rang, expected_, found, impact)
                for code, table, row, column, cell, seance, coup, rang, _, expected_, found, impact in findings(tidy)]
    for name in UNTIDY:
        result = run(REAL / name)
        got = [(code, table, row, column, cell, seance, coup, rang, exp, found, impact)
               for code, table, row, column, cell, seance, coup, rang, _, exp, found, impact in findings(result)]
        assert got == expected, name
        assert not [f for f in result.findings if f.code == "EC00-01"], name


def test_title_rows_french_names_and_totals_rows_are_in_the_reading_notes():
    result = run(REAL / "untidy.ods")
    notes = {t["table"]: t for t in result.carnet.reading["tables"]}
    mises = notes["mises"]
    assert result.carnet.reading["container"] == "ods"
    assert mises["header_row"] == 4 and mises["title_rows"] == [1, 2]
    by_source = {c["source"]: (c["column"], c["letter"]) for c in mises["columns"]}
    assert by_source["N° coup"] == ("coup", "B") and by_source["Montant (€)"] == ("montant", "F")
    assert by_source["Côté"] == ("cote", "E") and by_source["N° fiche"] == ("fiche", "D")
    last = mises["totals_rows"]
    assert len(last) == 1 and mises["rows_left_out"] == 1
    assert notes["coups"]["totals_rows"] and notes["coups"]["title_rows"] == [1]
    # The totals row is not a stake: no finding on it, and it is counted apart.
    assert not [f for f in result.findings if f.table == "mises" and f.row in last]
    t = result.summary["tables"]["mises"]
    assert t["read"] == t["audited"] + t["rejected"] + t["left_out"] and t["left_out"] == 1
    assert result.summary["rows_left_out"] == 2
    # Formulas in the totals rows are not the carnet's.
    assert all(f.row not in last for f in result.carnet.tables["mises"].formulas)


def test_findings_json_has_the_reading_section_and_the_report_shows_it(tmp_path):
    # A user's real conditions: no SOURCE_DATE_EPOCH, a file as LibreOffice saved it.
    os.environ.pop("SOURCE_DATE_EPOCH", None)
    code = main(["audit", str(REAL / "untidy.xls"), "--out", str(tmp_path), "--quiet",
                 "--format", "html,json,xlsx"])
    assert code == 1
    doc = json.loads((tmp_path / "untidy.xls" / "findings.json").read_text(encoding="utf-8"))
    assert doc["source"]["format"] == "xls"
    reading = doc["reading"]
    assert reading["container"] == "xls" and reading["columns_file"] is None
    assert [t["table"] for t in reading["tables"]] == sorted(t["table"] for t in reading["tables"])
    mises = next(t for t in reading["tables"] if t["table"] == "mises")
    assert mises["sheet"] == "mises" and mises["header_row"] == 4
    html = (tmp_path / "untidy.xls" / "report.html").read_text(encoding="utf-8")
    assert 'id="reading"' in html and "Montant (€)" in html and "format .xlsx" in html
    # The annotated carnet of an .xls is an .xlsx, each finding on its own cell.
    wb = load_workbook(tmp_path / "untidy.xls" / "annotated.xlsx")
    for f in doc["findings"]:
        if f["cell"] and f["table"] == "mises":
            assert wb["mises"][f["cell"]].comment is not None, f
    assert wb["mises"]["A1"].value == "Carnet spécial — détail des mises"


def test_a_batch_finds_every_container(tmp_path):
    for name in CONTAINERS + ["untidy.xlsb"]:
        (tmp_path / name).write_bytes((REAL / name).read_bytes() if (REAL / name).exists() else b"")
    (tmp_path / ".~lock.carnet.ods#").write_text("lock")
    found = [p.name for p in discover(tmp_path)]
    assert found == sorted(CONTAINERS + ["untidy.xlsb"])


def test_a_workbook_is_read_as_what_it_is_whatever_its_suffix(tmp_path):
    disguised = tmp_path / "carnet.xls"
    disguised.write_bytes((REAL / "carnet.ods").read_bytes())
    result = run(disguised)
    assert result.carnet.source.format == "ods"
    assert findings(result) == findings(run(REAL / "carnet.xlsx"))


# -- hostile .ods and .xls ------------------------------------------------------------------

def _peak_mb_of_audit(path: Path, tmp_path: Path) -> tuple[int, dict]:
    """Audit in a fresh process; its peak memory (MB) and findings.json."""
    out = tmp_path / "out"
    code = ("import resource, sys\n"
            "from auditor.cli import main\n"
            f"rc = main(['audit', {str(path)!r}, '--out', {str(out)!r}, '--quiet', '--format', 'json'])\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)\n"
            "sys.exit(rc)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(next(out.glob("*/findings.json")).read_text(encoding="utf-8"))
    return int(proc.stdout.strip().splitlines()[-1]), doc


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("name", ["far.xls", "far.ods"])
def test_a_sheet_with_a_cell_at_iv65536_is_refused_without_a_memory_blow_up(name, tmp_path):
    # calamine alone would allocate the 16-million-cell grid (over 1 GB).
    peak, doc = _peak_mb_of_audit(REAL / name, tmp_path)
    assert [f["code"] for f in doc["findings"]] == ["EC00-01"]
    assert "colonnes" in doc["findings"][0]["message"]
    assert peak < 600, f"peak memory {peak} MB"


def _lying_dimensions(data: bytes) -> bytes:
    """carnet.xls with its first sheet's DIMENSIONS record claiming 65,536 × 256 cells."""
    at = data.index(b"\x00\x02\x0e\x00", 4096)
    return data[:at + 4] + (0).to_bytes(4, "little") + (65536).to_bytes(4, "little") + \
        (0).to_bytes(2, "little") + (256).to_bytes(2, "little") + data[at + 16:]


def test_an_xls_whose_dimensions_lie_is_read_as_its_cells_say(tmp_path):
    # A table's size is what holds a value (format v1.2): the declared grid is
    # rewritten to the cells before calamine reserves it.
    bad = tmp_path / "dims.xls"
    bad.write_bytes(_lying_dimensions((REAL / "carnet.xls").read_bytes()))
    result, base = run(bad), run(REAL / "carnet.xls")
    assert not result.carnet.unreadable
    assert sorted(f.fingerprint for f in result.findings) == sorted(f.fingerprint for f in base.findings)


@pytest.mark.slow
@pytest.mark.subprocess
def test_an_xls_whose_dimensions_lie_costs_no_gigabyte(tmp_path):
    bad = tmp_path / "dims.xls"
    bad.write_bytes(_lying_dimensions((REAL / "carnet.xls").read_bytes()))
    peak, doc = _peak_mb_of_audit(bad, tmp_path)
    assert "EC00-01" not in [f["code"] for f in doc["findings"]]
    assert peak < 600, f"peak memory {peak} MB"


def _ods_bomb() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.spreadsheet")
        z.writestr("content.xml", b"<office:document-content>" + b" " * (200 * 1024 * 1024))
    return buf.getvalue()


def _hostile_cases():
    ods = (REAL / "carnet.ods").read_bytes()
    xls = (REAL / "carnet.xls").read_bytes()
    rng = random.Random()   # a new draw every run: any bytes must do
    return {
        "truncated.ods": ods[:len(ods) // 2],
        "truncated.xls": xls[:len(xls) // 2],
        "random.ods": rng.randbytes(20_000),
        "random.xls": b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + rng.randbytes(20_000),
        "bomb.ods": _ods_bomb(),
        "empty.xls": b"",
        "garbled.xls": xls[:4096] + rng.randbytes(len(xls) - 4096),
        "garbled.ods": ods[:2000] + rng.randbytes(len(ods) - 2000),
    }


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(_hostile_cases()))
def test_hostile_ods_and_xls_files_are_an_ec00_01_never_a_traceback(name, tmp_path):
    path = tmp_path / name
    path.write_bytes(_hostile_cases()[name])
    result = run(path)
    codes = {f.code for f in result.findings}
    assert "EC00-01" in codes, [f.message for f in result.findings]


@pytest.mark.slow
def test_the_ods_zip_bomb_is_refused_for_its_ratio(tmp_path):
    path = tmp_path / "bomb.ods"
    path.write_bytes(_ods_bomb())
    raw = read_carnet(path)
    assert raw.unreadable and raw.problems[0].kind in ("zip_ratio", "zip_too_large")


# -- column names ----------------------------------------------------------------------------

def _variants():
    for table, columns in ALIASES.items():
        for column, names in columns.items():
            for name in names:
                yield table, column, name


@pytest.mark.parametrize("table,column,name", list(_variants()))
def test_every_built_in_variant_reaches_its_column_however_it_is_typed(table, column, name):
    spec = table_columns(table)
    assert column in spec.columns
    for typed in (name, name.upper(), f"  {name} ", name.replace(" ", "_"), name + " :"):
        match = match_header(table, [typed])
        assert match.keep == {column: 0}, typed


def test_no_variant_is_claimed_by_two_columns_of_one_table():
    for table, columns in ALIASES.items():
        seen: dict[str, str] = {}
        for column, names in columns.items():
            for name in names + [column]:
                key = fold(name)
                assert seen.setdefault(key, column) == column, (table, name)


@pytest.mark.parametrize("header,column", [
    ("Montant (€)", "montant"), ("MONTANT EN EUROS", "montant"), ("Montant [EUR]", "montant"),
    ("Montant €", "montant"), ("N° coup", "coup"), ("Nº coup", "coup"), ("No. coup", "coup"),
    ("Numéro du coup", "coup"), ("Côté", "cote"), ("COTE", "cote"), ("N° fiche", "fiche"),
    ("Restitué (€)", "restitue")])
def test_folding_case_accents_punctuation_and_units(header, column):
    assert match_header("mises", [header]).keep == {column: 0}


def test_an_amount_column_in_cents_is_not_read_as_euros():
    assert match_header("mises", ["Montant (cts)"]).keep == {}


from tests.test_read import _workbook as _xlsx  # noqa: E402  (one writer of test workbooks)


def _carnet_tables(mises_header=None, mises_rows=None):
    return {
        "carnet": [["casino", "table", "date_debut"], ["Casino de Forges", 3, "02/03/2026"]],
        "seances": [["seance", "date", "timbre"], [1, "02/03/2026", "02/03/2026"]],
        "coups": [["seance", "coup", "type", "joueur_a", "joueur_b", "total_a", "total_b", "gagnant", "prelevement"],
                  [1, 1, "simple", 1, 2, 10, 10, "a", 1]],
        "mises": [mises_header or ["seance", "coup", "rang", "fiche", "cote", "montant"],
                  *(mises_rows or [[1, 1, 1, 10, "a", 10], [1, 1, 2, 11, "b", 10]])],
        "tickets": [["seance", "coup", "valeur", "premier", "dernier"], [1, 1, 1, 1, 1]],
    }


def test_two_source_columns_for_one_carnet_column_is_an_ec00_01_naming_both(tmp_path):
    path = _xlsx(tmp_path / "c.xlsx", _carnet_tables(
        ["seance", "coup", "rang", "fiche", "cote", "Montant (€)", "Mise"],
        [[1, 1, 1, 10, "a", 10, 10], [1, 1, 2, 11, "b", 10, 10]]))
    result = run(path)
    ec = [f for f in result.findings if f.code == "EC00-01"]
    assert len(ec) == 1 and ec[0].table == "mises" and ec[0].column == "montant"
    assert "« Montant (€) » (F)" in ec[0].message and "« Mise » (G)" in ec[0].message
    assert not result.carnet.has("mises.montant")   # never a guess


MAPPING = """# Export of the casino's own system
[mises]
"Mt" = "montant"
"Sens" = "cote"
"Num joueur" = "fiche"
"""


def test_a_mapping_file_reads_another_systems_export(tmp_path):
    export = _xlsx(tmp_path / "export.xlsx", _carnet_tables(
        ["seance", "coup", "rang", "Num joueur", "Sens", "Mt"]))
    tidy = _xlsx(tmp_path / "tidy.xlsx", _carnet_tables())
    without = run(export)
    # `Sens` is a built-in variant of cote; the other two are the system's own words.
    assert {f.column for f in without.findings if f.code == "EC00-01"} == {"fiche", "montant"}
    (tmp_path / "systeme.toml").write_text(MAPPING, encoding="utf-8")
    mapping = load_columns_file(tmp_path / "systeme.toml")
    with_map = run(export, mapping)
    assert findings(with_map) == findings(run(tidy))
    notes = next(t for t in with_map.carnet.reading["tables"] if t["table"] == "mises")
    assert {c["source"]: c["how"] for c in notes["columns"]}["Mt"] == "mapping"
    assert with_map.carnet.reading["columns_file"]["tables"] == {
        "mises": {"Mt": "montant", "Sens": "cote", "Num joueur": "fiche"}}


def test_the_mapping_file_is_echoed_in_findings_json_and_is_in_the_cache_key(tmp_path):
    from auditor.batch import Cache, Options
    from auditor.batch.plan import CarnetJob

    export = _xlsx(tmp_path / "export.xlsx", _carnet_tables(["seance", "coup", "rang", "Num joueur", "Sens", "Mt"]))
    (tmp_path / "a.toml").write_text(MAPPING, encoding="utf-8")
    (tmp_path / "b.toml").write_text(MAPPING.replace('"Mt" = "montant"', '"Mt" = "restitue"'), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["audit", str(export), "--out", str(out), "--quiet", "--format", "json",
                 "--columns", str(tmp_path / "a.toml"), "--fail-on", "never"]) == 0
    doc = json.loads((out / "export.xlsx" / "findings.json").read_text(encoding="utf-8"))
    cf = doc["reading"]["columns_file"]
    assert cf["file"] == "a.toml" and len(cf["sha256"]) == 64
    job = CarnetJob(export, str(export), "export.xlsx")
    keys = {Cache(tmp_path, Options(columns=load_columns_file(tmp_path / n))).key(job) for n in ("a.toml", "b.toml")}
    keys.add(Cache(tmp_path, Options()).key(job))
    assert len(keys) == 3


@pytest.mark.parametrize("text,says", [
    ("[mises]\nMt = 3\n", "not a column"), ("[nope]\nMt = 'montant'\n", "unknown table"),
    ("[mises\n", "TOML"), ("[mises]\nMt = 'montant_cents'\n", "not a column")])
def test_a_bad_mapping_file_is_a_usage_error(text, says, tmp_path, capsys):
    (tmp_path / "m.toml").write_text(text, encoding="utf-8")
    assert main(["audit", str(REAL / "carnet.xlsx"), "--out", str(tmp_path / "o"), "--quiet",
                 "--columns", str(tmp_path / "m.toml")]) == 2
    assert says in capsys.readouterr().err


def test_the_columns_command_prints_how_each_sheet_and_column_was_understood(capsys):
    assert main(["columns", str(REAL / "untidy.ods"), "--lang", "fr"]) == 0
    out = capsys.readouterr().out
    assert "conteneur ods" in out
    assert "mises ← « mises », ligne d'en-tête 4" in out
    assert "F : « Montant (€) » → montant" in out and "B : « N° coup » → coup (variante connue)" in out
    assert "lignes de titre : 1, 2" in out and "lignes de totaux laissées de côté : 57" in out


@pytest.mark.parametrize("lang, says", [
    ("fr", "problème de lecture : Ce fichier n'est pas un classeur Excel .xlsx"),
    ("en", "reading problem: This file is not an Excel .xlsx workbook")])
def test_the_columns_command_says_why_a_workbook_cannot_be_read_in_words(lang, says, capsys):
    damaged = Path(__file__).resolve().parent.parent / "sample_carnets" / "infractions" / "classeur-corrompu.xlsx"
    assert main(["columns", str(damaged), "--lang", lang]) == 0
    out = capsys.readouterr().out
    assert says in out and "not_xlsx" not in out, out


# -- CSV: the same header and totals rules -----------------------------------------------------

def test_a_csv_carnet_with_a_title_french_names_and_a_totals_row(tmp_path):
    from tests.test_read import full, write_csv

    mises = ("Carnet spécial — détail des mises\n\nSéance;N° coup;Rang;N° fiche;Côté;Montant (€)\n"
             "1;1;1;10;a;1 234,50 €\n1;1;2;11;b;1234.5\nTotal;;;;;2469\n")
    clean = run(write_csv(tmp_path / "clean", full()))
    untidy = run(write_csv(tmp_path / "untidy", full(mises=mises)))
    assert [f.code for f in untidy.findings] == [f.code for f in clean.findings]
    t = untidy.carnet.tables["mises"]
    assert t.df["_row"].tolist() == [4, 5]
    notes = next(n for n in untidy.carnet.reading["tables"] if n["table"] == "mises")
    assert notes["header_row"] == 3 and notes["title_rows"] == [1] and notes["totals_rows"] == [6]
    assert notes["sheet"] == "mises.csv"
    s = untidy.summary["tables"]["mises"]
    assert s["read"] == 3 and s["left_out"] == 1 and s["audited"] == 2


def test_a_totals_row_in_the_middle_is_not_left_out(tmp_path):
    path = _xlsx(tmp_path / "c.xlsx", _carnet_tables(
        None, [[1, 1, 1, 10, "a", 10], ["Sous-total", None, None, None, None, 10], [1, 1, 2, 11, "b", 10]]))
    result = run(path)
    notes = next(n for n in result.carnet.reading["tables"] if n["table"] == "mises")
    assert notes["totals_rows"] == []
    assert any(f.code == "EC00-02" and f.row == 3 for f in result.findings)


# -- the .ods template -------------------------------------------------------------------------

def test_the_template_can_be_written_as_ods_and_reads_back_as_a_blank_carnet(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    assert main(["template", str(tmp_path / "a.ods")]) == 0
    assert main(["template", str(tmp_path / "b.ods")]) == 0
    assert (tmp_path / "a.ods").read_bytes() == (tmp_path / "b.ods").read_bytes()
    with zipfile.ZipFile(tmp_path / "a.ods") as z:
        first = z.infolist()[0]
        assert first.filename == "mimetype" and first.compress_type == zipfile.ZIP_STORED
    assert main(["template", str(tmp_path / "a.xlsx")]) == 0
    ods, xlsx = read_carnet(tmp_path / "a.ods"), read_carnet(tmp_path / "a.xlsx")
    assert ods.format == "ods" and not ods.problems
    assert {n: t.columns for n, t in ods.tables.items()} == {n: t.columns for n, t in xlsx.tables.items()}
    assert all(t.rows_read == 0 for t in ods.tables.values())


def test_the_template_refuses_another_suffix(tmp_path):
    assert main(["template", str(tmp_path / "a.csv")]) == 2


# -- .xlsb ---------------------------------------------------------------------------------

XLSB = REAL / "calamine-issues.xlsb"


def test_an_xlsb_saved_by_excel_is_read_through_calamine_and_guarded(tmp_path):
    from auditor.limits import DEFAULT_LIMITS
    from auditor.read.container_guard import check_xlsb
    from auditor.read.workbook import read_workbook

    scans = check_xlsb(XLSB.read_bytes(), DEFAULT_LIMITS).scans
    assert scans["issue2"].max_row == 3 and scans["issue2"].max_col == 2
    raw = read_workbook(XLSB, DEFAULT_LIMITS, None)
    assert raw.format == "xlsb" and not raw.unreadable
    assert raw.tables["issue2"].df.to_dict("list") == {"1": ["2", "3"], "a": ["b", "c"], "_row": [2, 3]}
    # As a carnet it lacks every table: EC00-01s, never a traceback.
    result = run(XLSB)
    assert {f.code for f in result.findings} == {"EC00-01"}


def test_an_xlsb_wider_than_the_limits_or_cut_is_refused(tmp_path):
    data = XLSB.read_bytes()
    cut = tmp_path / "cut.xlsb"
    cut.write_bytes(data[:len(data) // 2])
    assert read_carnet(cut).unreadable
    from auditor.limits import Limits
    from auditor.read.workbook import read_workbook

    small = Limits(max_columns=1)   # issue2 is two columns wide
    raw = read_workbook(XLSB, small, None)
    assert raw.unreadable and raw.problems[0].kind == "too_many_columns"
