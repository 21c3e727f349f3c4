"""report.html and index.html in a real headless Chromium with JavaScript on:
no console error, nothing fetched, filters hide rows, sorting reorders them,
a screenshot and a printed PDF saved in the test's temp folder.

Chromium is Debian's (`apt-get install chromium`, done by .ci/run), driven
by Playwright's Python package; no browser is ever downloaded. Without
Chromium the tests are skipped, except in CI (CI=true) where they fail.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from auditor.catalogue import load_profile
from auditor.audit import audit_path
from auditor.report.html_report import render_index, render_report
from auditor.report.report_view import verdict
from report_fixtures import XSS, audited, breached_tables

CHROMIUM = Path("/usr/bin/chromium")
# This machine has no network: without these flags Chromium waits on connections.
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
STAMP = "2026-01-01T00:00:00Z"
SAMPLES = Path(__file__).resolve().parent.parent / "sample_carnets"


def _unavailable(reason: str):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI must run the browser tests: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright Python package is not installed (pip install -e '.[test]')")
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} not found (Debian: apt-get install -y chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        yield b
        b.close()


class Page:
    """A page with every console message, page error, dialog and request recorded."""

    def __init__(self, browser, path: Path):
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.console: list[tuple[str, str]] = []
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.console.append((m.type, m.text)))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.url = path.resolve().as_uri()
        self.page.goto(self.url)
        self.page.wait_for_load_state("load")

    def assert_clean(self):
        assert self.errors == []
        assert [m for m in self.console if m[0] in ("error", "warning")] == []
        assert self.dialogs == []                 # the casino's <script> never ran
        assert [u for u in self.requests if u != self.url and not u.startswith("data:")] == []


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("browser")
    result, _ = audited(breached_tables(XSS), folder, "xlsx")
    out = folder / "out"
    out.mkdir()
    (out / "report.html").write_text(render_report(result, "carnet.xlsx", STAMP), encoding="utf-8")
    return result, out / "report.html"


def visible_rows(page, selector="#findings details.group tbody tr"):
    return page.locator(selector).evaluate_all(
        "rows => rows.filter(r => !r.hidden).map(r => r.getAttribute('data-severity'))")


@pytest.mark.browser
def test_report_opens_without_error_and_filters(browser, report, tmp_path):
    result, path = report
    p = Page(browser, path)
    page = p.page
    assert page.locator("#filters").is_visible()         # the script showed the filters
    assert page.locator("h1").inner_text().startswith(XSS)
    before = visible_rows(page)
    assert sorted(before) == sorted(f.severity.label for f in result.findings)
    assert {"error", "warning", "info"} <= set(before)
    # A click on "Erreur" hides every error row and nothing else.
    first_error_row = page.locator("#findings tr[data-severity=error]").first
    assert first_error_row.is_visible()
    page.locator("#filters input[value=error]").click()
    after = visible_rows(page)
    assert "error" not in after and sorted(after) == sorted(s for s in before if s != "error")
    assert first_error_row.is_hidden()
    assert page.locator("#rule-EC66-01").is_hidden()      # a group left without rows goes too
    status = page.locator("#filter-status").inner_text()
    assert str(len(after)) in status
    page.locator("#filters input[value=error]").click()
    assert sorted(visible_rows(page)) == sorted(before)
    # Séance filter, search, reset.
    page.locator("#filter-seance").select_option("2")
    assert set(page.locator("#findings tbody tr:not([hidden])").evaluate_all(
        "rows => rows.map(r => r.getAttribute('data-seance'))")) == {"2"}
    page.locator("#filter-reset").click()
    page.locator("#filter-search").fill("sans aucune mise")
    assert visible_rows(page) == ["warning"]
    page.locator("#filter-reset").click()
    page.locator("#filter-rule").select_option("EC66-01")
    shown = page.locator("#findings details.group:not([hidden])").evaluate_all(
        "gs => gs.map(g => g.getAttribute('data-code'))")
    assert shown == ["EC66-01"]
    page.locator("#filter-reset").click()
    shot = tmp_path / "report.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    p.assert_clean()
    page.close()


@pytest.mark.browser
def test_sorting_by_column(browser, report):
    result, path = report
    p = Page(browser, path)
    page = p.page
    group = page.locator("#rule-EC66-01")
    if group.get_attribute("open") is None:
        group.locator("summary").click()
    coups = lambda: group.locator("tbody tr td:nth-child(2)").all_inner_texts()  # noqa: E731
    natural = [int(c) for c in coups()]
    header = group.locator("thead tr:last-child th").nth(1).locator("button.sort")
    header.click()
    assert [int(c) for c in coups()] == sorted(natural)
    header.click()
    assert [int(c) for c in coups()] == sorted(natural, reverse=True)
    assert group.locator("thead tr:last-child th").nth(1).get_attribute("aria-sort") == "descending"
    # Impact sorts by cents, not by the formatted text.
    impact = group.locator("thead tr:last-child th").nth(7).locator("button.sort")
    impact.click()
    values = group.locator("tbody tr td:nth-child(8)").evaluate_all("tds => tds.map(td => +td.dataset.v)")
    assert values == sorted(values)
    p.assert_clean()
    page.close()


@pytest.mark.browser
def test_seance_button_narrows_findings(browser, report):
    result, path = report
    p = Page(browser, path)
    page = p.page
    page.locator("#by-seance button.show-seance[data-seance='1']").click()
    assert page.locator("#filter-seance").input_value() == "1"
    seances = page.locator("#findings tbody tr:not([hidden])").evaluate_all(
        "rows => rows.map(r => r.getAttribute('data-seance'))")
    assert set(seances) == {"1"} and len(seances) == sum(f.seance == 1 for f in result.findings)
    p.assert_clean()
    page.close()


@pytest.mark.browser
@pytest.mark.subprocess
def test_print_gives_a_paginated_pdf(browser, report, tmp_path):
    result, path = report
    p = Page(browser, path)
    page = p.page
    page.emulate_media(media="print")
    assert page.locator("#filters").is_hidden()
    pdf = tmp_path / "report.pdf"
    page.pdf(path=str(pdf), format="A4")
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF")
    pages = len(re.findall(rb"/Type\s*/Page(?!s)", data))
    assert pages >= 2
    if shutil.which("pdftotext"):   # poppler-utils, when present: the identity line on every page
        import subprocess

        text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True).stdout
        heads = [pg for pg in text.split("\f") if pg.strip()]
        assert len(heads) == pages
        assert all(f"{XSS} — Table 3 — 02/03/2026" in pg for pg in heads)
    p.assert_clean()
    page.close()


@pytest.mark.browser
def test_index_sorts_and_links(browser, tmp_path):
    entries = []
    for sample in sorted(p for d in ("compliant", "infractions") for p in (SAMPLES / d).iterdir()):
        r = audit_path(sample, load_profile(), "fr")
        entries.append({"id": sample.name, "path": sample.name, "verdict": verdict(r), "carnet": r.carnet.cover,
                        "summary": r.summary, "report": f"{sample.name}/report.html"})
    totals = {k: sum(e["summary"][k] for e in entries)
              for k in ("errors", "warnings", "info", "impact_cents", "rows_read", "rows_rejected")}
    doc = {"schema_version": 1, "generated_at": STAMP, "carnets": entries, "totals": totals,
           "cross_carnet_findings": []}
    index = tmp_path / "index.html"
    index.write_text(render_index(doc, "fr"), encoding="utf-8")
    p = Page(browser, index)
    page = p.page
    errors_col = page.locator("#carnets thead th").nth(5).locator("button.sort")
    errors_col.click()
    errors_col.click()   # descending: the worst carnet first
    first = page.locator("#carnets tbody tr").first.get_attribute("data-id")
    worst = max(entries, key=lambda e: e["summary"]["errors"])
    assert first == worst["id"]
    assert page.locator("#total-errors").inner_text() == str(totals["errors"])
    assert page.locator("#carnets tbody tr").last.get_attribute("data-id") != first
    page.screenshot(path=str(tmp_path / "index.png"), full_page=True)
    p.assert_clean()
    page.close()
