"""The report as an inspector reads it: the ticket table counts every EC561-01
finding, and an amount that could not be computed never reads 0."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from auditor.cli import main
from auditor.i18n import labels
from auditor.money import format_cents
from report_fixtures import parse_strict, text

SAMPLES = Path(__file__).resolve().parent.parent / "sample_carnets"


def _norm(s: str) -> str:
    return " ".join(s.replace("\u00a0", " ").replace("\u202f", " ").split())


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    """Every sample carnet audited by the command line, in both languages."""
    outs = {}
    for lang in ("fr", "en"):
        out = tmp_path_factory.mktemp(f"samples-{lang}")
        main(["audit", str(SAMPLES), "--out", str(out), "--quiet", "--lang", lang, "--format", "html,json,xlsx",
              "--fail-on", "never"])
        outs[lang] = out
    return outs


def _reports(out: Path):
    s = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    for e in s["carnets"]:
        doc = json.loads((out / e["id"] / "findings.json").read_text(encoding="utf-8"))
        yield e, doc, parse_strict((out / e["id"] / "report.html").read_text(encoding="utf-8"))


@pytest.mark.subprocess
@pytest.mark.slow
def test_ticket_table_counts_every_ec561_01_finding_of_its_value(samples):
    seen = 0
    for e, doc, dom in _reports(samples["fr"]):
        rows = dom.findall(".//table[@id='tickets-table']/tbody/tr")
        if not rows:
            continue
        per_value = Counter()
        for r in rows:
            cells = r.findall("td")
            outside_runs = cells[6].find("span")
            runs = int(text(outside_runs).split()[1]) if outside_runs is not None else 0
            early = int(text(cells[7]))
            per_value[r.get("data-valeur")] = runs + early
        n = sum(1 for f in doc["findings"] if f["code"] == "EC561-01")
        # Every EC561-01 finding counted in one of the two columns of its value.
        assert sum(per_value.values()) == n, e["id"]
        seen += n
    assert seen >= 1          # the sample infractions/tickets has a book used before its service date


@pytest.mark.subprocess
@pytest.mark.slow
def test_book_used_before_its_service_date_is_counted(samples):
    dom = parse_strict((samples["fr"] / "infractions__tickets" / "report.html").read_text(encoding="utf-8"))
    doc = json.loads((samples["fr"] / "infractions__tickets" / "findings.json").read_text(encoding="utf-8"))
    early = [f for f in doc["findings"] if f["code"] == "EC561-01" and f["expected"]]
    assert early                                   # "détaché avant la mise en service"
    cells = [text(r.findall("td")[7]) for r in dom.findall(".//table[@id='tickets-table']/tbody/tr")]
    assert sum(int(c) for c in cells) == len(early)


@pytest.mark.subprocess
@pytest.mark.slow
@pytest.mark.parametrize("lang", ["fr", "en"])
def test_unreadable_carnet_money_is_not_verified_never_zero(samples, lang):
    lab = labels(lang)
    out = samples[lang]
    dom = parse_strict((out / "infractions__classeur-corrompu.xlsx" / "report.html").read_text(encoding="utf-8"))
    zero = _norm(format_cents(0, lang))
    money = {dd.get("id"): _norm(text(dd)) for dd in dom.findall(".//dl[@class='money']/dd")}
    assert money and all(v == lab["unverified"] for v in money.values()), money
    verdict = _norm(text(dom.find(".//p[@id='verdict']")))
    assert zero not in verdict and lab["unverified"] in verdict
    index = parse_strict((out / "index.html").read_text(encoding="utf-8"))
    row = index.find(".//table[@id='carnets']/tbody/tr[@data-id='infractions__classeur-corrompu.xlsx']")
    # The index's column is the amount ("montant … non vérifié", agreed with it).
    assert zero not in _norm(text(row)) and lab["unverified"] in _norm(text(row))


@pytest.mark.subprocess
@pytest.mark.slow
def test_every_readable_sample_shows_figures(samples):
    """The reverse: where the amounts are known they are figures, not "not verified"."""
    lab = labels("fr")
    for e, doc, dom in _reports(samples["fr"]):
        if e["verdict"] == "unreadable":
            continue
        total = _norm(text(dom.find(".//dd[@id='money-impact']")))
        assert total == _norm(format_cents(doc["summary"]["impact_cents"], "fr")), e["id"]
        assert _norm(text(dom.find(".//dd[@id='money-levy_expected']"))) != lab["not_checked"]


@pytest.mark.subprocess
@pytest.mark.slow
def test_annotated_findings_sheet_prints_as_a_document(samples):
    """CSV source (amounts are text in the carnet): the list's amounts are numbers
    in euros Excel can sum; messages wrap; landscape, fit to width, header repeated."""
    import openpyxl

    from decimal import Decimal

    book = samples["fr"] / "infractions__tickets" / "annotated.xlsx"
    doc = json.loads((samples["fr"] / "infractions__tickets" / "findings.json").read_text(encoding="utf-8"))
    ws = openpyxl.load_workbook(book).worksheets[0]
    assert ws.page_setup.orientation == "landscape"
    assert ws.sheet_properties.pageSetUpPr.fitToPage and ws.page_setup.fitToWidth == 1
    assert ws.page_setup.fitToHeight == 0                     # as many pages down as needed
    assert ws.print_title_rows == "$1:$1"
    impacts = [f["impact_cents"] for f in doc["findings"]]
    cells = [ws.cell(row=i + 2, column=15) for i in range(len(impacts))]
    for cents, cell in zip(impacts, cells):
        if cents:
            assert isinstance(cell.value, (int, float)) and Decimal(str(cell.value)) * 100 == cents
            assert "€" in cell.number_format and "0.00" in cell.number_format
        else:
            assert cell.value is None
    assert any(impacts)
    assert all(ws.cell(row=i + 2, column=8).alignment.wrap_text for i in range(len(impacts)))
