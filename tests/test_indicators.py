"""Indicators per table and month (outputs.md v1.2 "Indicators", issue 28):
a casino's generated archive, four tables audited with --history on the real
clock, table 3's stakes written short for October (its levy stays 5 % of
what is written, its masses fall far below the other tables'): that
table-month, and no other, is "à examiner"; the page's and the CSV's numbers
are those of SQL over the same history; the page opens in Chromium, offline,
in French and in English."""

from __future__ import annotations

import csv
import io
import os
from decimal import Decimal
from pathlib import Path

import pytest

from auditor import history
from auditor.cli import main
from auditor.indicators import BANDED, CSV_COLUMNS, INDICATORS, Cell, Table, band_of, bands
from indicator_fixtures import CASINO, SHORT_MONTH, SHORT_TABLE, TABLES, write_casino
from test_browser import Page, browser  # noqa: F401  (the real Chromium, as test_browser drives it)


@pytest.fixture
def browser_page(browser):  # noqa: F811
    return lambda path: Page(browser, path)


@pytest.fixture(scope="module")
def casino(tmp_path_factory):
    """The archive audited as a nightly run would (--history, real clock), and the indicators written."""
    os.environ.pop("SOURCE_DATE_EPOCH", None)
    root = tmp_path_factory.mktemp("casino")
    write_casino(root / "archive")
    assert main(["audit", str(root / "archive"), "--out", str(root / "night"), "--quiet", "--jobs", "2",
                 "--history", str(root / "H")]) == 1   # EC83-04 at table 1 is an error
    for lang in ("fr", "en"):
        assert main(["history", str(root / "H"), "--html", str(root / f"dash-{lang}"), "--format", "html,csv",
                     "--lang", lang]) == 0
    return root


def read_csv(path: Path, lang: str) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(text), delimiter=";" if lang == "fr" else ","))
    return rows


def value(text: str, lang: str):
    if text == "":
        return None
    return Decimal(text.replace(",", ".")) if lang == "fr" else Decimal(text)


def sql(folder: Path, query: str) -> list[tuple]:
    con = history.connect(folder)
    history.select(con)
    return con.execute(query).fetchall()


def expected(folder: Path) -> dict[tuple[int, str, str], Decimal]:
    """The indicators, asked of the history in plain SQL."""
    out = {}
    for table_no, month, n, coups, mass, levy, cag in sql(folder, """
            SELECT table_no, strftime(seance_date, '%Y-%m'), count(*), sum(coups), sum(winning_mass_cents),
                   sum(levy_recorded_cents), sum(cagnotte_cents - tickets_face_cents)
            FROM seances GROUP BY ALL"""):
        out.update({(table_no, month, "seances"): n, (table_no, month, "coups"): coups,
                    (table_no, month, "winning_mass_cents"): mass, (table_no, month, "levy_recorded_cents"): levy,
                    (table_no, month, "levy_rate"): (Decimal(levy) / Decimal(mass)).quantize(Decimal("0.0001")),
                    (table_no, month, "cagnotte_vs_tickets_cents"): cag})
    for table_no, month, err, warn, info, opened in sql(folder, """
            SELECT table_no, strftime(seance_date, '%Y-%m'), count(*) FILTER (WHERE severity = 'error'),
                   count(*) FILTER (WHERE severity = 'warning'), count(*) FILTER (WHERE severity = 'info'),
                   count(*) FILTER (WHERE open)
            FROM findings WHERE seance_date IS NOT NULL GROUP BY ALL"""):
        out.update({(table_no, month, "findings_error"): err, (table_no, month, "findings_warning"): warn,
                    (table_no, month, "findings_info"): info, (table_no, month, "impact_cents"): 0,
                    (table_no, month, "open_findings"): opened})
    # The money: open, unjustified findings, a lost ticket once per carnet and séance (the larger of
    # its levy without tickets and its missing numbers; docs/interpretations.md "Money at stake").
    levy, numbers = {"EC661-01"}, {"EC83-01", "EC83-04"}
    sides: dict[tuple, list[int]] = {}
    for table_no, month, carnet, seance_no, code, cents in sql(folder, """
            SELECT table_no, strftime(seance_date, '%Y-%m'), carnet_id, seance, code, impact_cents
            FROM findings WHERE seance_date IS NOT NULL AND impact_cents > 0 AND open
                 AND coalesce(review_status, '') NOT IN ('justifie', 'faux_positif')"""):
        if code in levy | numbers:
            sides.setdefault((table_no, month, carnet, seance_no), [0, 0])[code in numbers] += cents
        else:
            out[table_no, month, "impact_cents"] += cents
    for (table_no, month, _, _), pair in sides.items():
        out[table_no, month, "impact_cents"] += max(pair)
    return {k: Decimal(v) for k, v in out.items()}


pytestmark = [pytest.mark.slow, pytest.mark.subprocess]


def test_the_table_month_written_short_is_flagged_and_no_other(casino):
    rows = read_csv(casino / "dash-fr" / "indicators.csv", "fr")
    flagged = {(int(r["table_no"]), r["month"]) for r in rows if r["flagged"] == "true"}
    assert flagged == {(SHORT_TABLE, SHORT_MONTH)}
    why = {r["indicator"] for r in rows if r["flagged"] == "true"}
    assert "winning_mass_cents" in why and why <= set(BANDED)
    # Its levy stays at the rate on what is written: the rate is not what gives it away.
    rate = next(r for r in rows if (int(r["table_no"]), r["month"], r["indicator"])
                == (SHORT_TABLE, SHORT_MONTH, "levy_rate"))
    assert rate["flagged"] == "false" and Decimal("0.045") < value(rate["value"], "fr") < Decimal("0.06")
    # The masses: far below the band drawn from the other three tables.
    mass = next(r for r in rows if (int(r["table_no"]), r["month"], r["indicator"])
                == (SHORT_TABLE, SHORT_MONTH, "winning_mass_cents"))
    assert value(mass["value"], "fr") < value(mass["band_low"], "fr")


def test_the_csv_has_the_spec_columns_in_either_convention(casino):
    fr = (casino / "dash-fr" / "indicators.csv").read_text(encoding="utf-8")
    en = (casino / "dash-en" / "indicators.csv").read_text(encoding="utf-8")
    assert fr.splitlines()[0] == ";".join(CSV_COLUMNS) and en.splitlines()[0] == ",".join(CSV_COLUMNS)
    rates_fr = [r["value"] for r in read_csv(casino / "dash-fr" / "indicators.csv", "fr") if r["indicator"] == "levy_rate"]
    rates_en = [r["value"] for r in read_csv(casino / "dash-en" / "indicators.csv", "en") if r["indicator"] == "levy_rate"]
    assert all("," in v and "." not in v for v in rates_fr) and all("." in v for v in rates_en)
    assert [v.replace(",", ".") for v in rates_fr] == rates_en
    rows = read_csv(casino / "dash-en" / "indicators.csv", "en")
    assert {r["casino"] for r in rows} == {CASINO} and {int(r["table_no"]) for r in rows} == set(TABLES)
    assert len(rows) == len(TABLES) * 2 * len(INDICATORS)   # four tables × September, October
    assert {r["indicator"] for r in rows} >= {"findings_error", "findings_warning", "impact_cents", "open_findings",
                                              "winning_mass_cents", "levy_rate", "cagnotte_vs_tickets_cents"}


def test_the_csv_numbers_are_the_sql_over_the_history(casino):
    want = expected(casino / "H")
    rows = read_csv(casino / "dash-fr" / "indicators.csv", "fr")
    seen = 0
    for r in rows:
        key = (int(r["table_no"]), r["month"], r["indicator"])
        if key in want:
            assert value(r["value"], "fr") == want[key], key
            seen += 1
    assert seen >= len(TABLES) * 2 * 11
    # The archive's finding (tickets missing between two carnets at table 1) is on its time line.
    archive = [r for r in rows if r["indicator"] == "archive_findings" and r["value"] != "0"]
    assert [(int(r["table_no"]), r["value"]) for r in archive] == [(1, "1")]


def test_the_batch_index_links_the_dashboard(casino):
    index = (casino / "night" / "index.html").read_text(encoding="utf-8")
    assert 'id="dashboard-link" href="dashboard/index.html"' in index and "Tableau de bord" in index
    page = (casino / "night" / "dashboard" / "index.html").read_text(encoding="utf-8")
    # Its recurring codes link the carnets' reports of the run beside it.
    assert page.count('<li data-month=') >= 1 and 'href="../table1__' in page
    assert "<script src" not in page and "http://" not in page.replace("http://www.w3.org/2000/svg", "")


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["fr", "en"])
def test_the_page_in_chromium_shows_the_sql_numbers(casino, browser_page, lang, tmp_path):
    page = browser_page(casino / f"dash-{lang}" / "index.html")
    shot = tmp_path / f"indicators-{lang}.png"
    page.page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    page.assert_clean()
    heading = page.page.inner_text("#h-review")
    assert heading == ("À examiner" if lang == "fr" else "To look at")
    assert page.page.get_attribute("html", "lang") == lang
    flags = page.page.eval_on_selector_all(
        "#flags tr.flag", "rows => rows.map(r => [r.dataset.table, r.dataset.month, r.dataset.indicator])")
    assert {(int(t), m) for t, m, _ in flags} == {(SHORT_TABLE, SHORT_MONTH)}
    cells = page.page.eval_on_selector_all(
        "td[data-indicator]", "cs => cs.map(c => [c.dataset.table, c.dataset.month, c.dataset.indicator, "
                              "c.dataset.value, c.dataset.flagged, c.textContent])")
    want = expected(casino / "H")
    checked = 0
    for table_no, month, indicator, raw, flagged, _text in cells:
        key = (int(table_no), month, indicator)
        if key in want and raw != "":
            assert Decimal(raw) == want[key], key
            checked += 1
        assert (flagged == "true") == ((int(table_no), month) == (SHORT_TABLE, SHORT_MONTH)
                                       and indicator in {f[2] for f in flags})
    assert checked >= len(TABLES) * 2 * 11
    # Every chart is an inline SVG, with words under it.
    figures = page.page.eval_on_selector_all("figure.ind", "fs => fs.map(f => [f.querySelector('svg') !== null, "
                                             "f.querySelector('p.words').textContent.length])")
    assert figures and all(words > 40 for _, words in figures)
    assert sum(has for has, _ in figures) >= len(TABLES) * 5


# -- the band, alone ---------------------------------------------------------------------

def test_the_band_is_median_and_mad_with_a_floor():
    assert band_of([100, 100, 100]) == (Decimal(75), Decimal(125))           # MAD 0: ± 25 % of the median
    low, high = band_of([100, 110, 90, 300])
    assert low < 105 < high and high < 300


def _table(no: int, values: dict[str, int]) -> Table:
    t = Table("C", no)
    for month, v in values.items():
        cells = {k: Cell(None) for k in INDICATORS}
        cells["winning_mass_cents"].value = v
        t.months[month] = cells
    return t


def test_with_too_few_peers_the_band_comes_from_the_tables_own_months():
    alone = _table(1, {"2026-01": 1000, "2026-02": 1010, "2026-03": 990, "2026-04": 400})
    bands([alone])
    cells = [alone.months[m]["winning_mass_cents"] for m in alone.months]
    assert [c.basis for c in cells] == [None, None, None, "own"]
    assert [c.flagged for c in cells] == [False, False, False, True]
    peers = [_table(n, {"2026-01": v}) for n, v in ((1, 1000), (2, 1050), (3, 980), (4, 300))]
    bands(peers)
    assert [t.months["2026-01"]["winning_mass_cents"].flagged for t in peers] == [False, False, False, True]
    assert all(t.months["2026-01"]["winning_mass_cents"].basis == "peers" for t in peers)


def test_bad_format_is_a_usage_error(tmp_path, capsys):
    from auditor.synth.generate import Spec, generate, write_csv_folder

    write_csv_folder(generate(Spec(seances=1, coups=4, mises=3)), tmp_path / "c")
    assert main(["audit", str(tmp_path / "c"), "--out", str(tmp_path / "o"), "--quiet", "--history",
                 str(tmp_path / "H")]) in (0, 1)
    capsys.readouterr()
    assert main(["history", str(tmp_path / "H"), "--html", str(tmp_path / "d"), "--format", "pdf",
                 "--lang", "fr"]) == 2
    err = capsys.readouterr().err
    assert "--format" in err and "Traceback" not in err
    assert main(["history", str(tmp_path / "H"), "--html", str(tmp_path / "d"), "--lang", "en"]) == 0
    assert (tmp_path / "d" / "index.html").is_file() and not (tmp_path / "d" / "indicators.csv").exists()
