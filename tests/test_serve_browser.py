"""The local page in real headless Chromium (Debian's, through Playwright, as
tests/test_browser.py launches it) against a real `ecarte-audit serve`:
upload a carnet, follow the audit, read the verdict, filter the report's
findings, open a finding's cell, download the annotated workbook, print, run
a small batch, switch the language. Nothing is fetched from anywhere but the
server, and no console error appears (a CSP violation would be one).

`UPDATE_SCREENSHOT=1` also writes the README's picture, docs/serve.png.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import openpyxl
import pytest
from playwright.sync_api import expect

from auditor.i18n import labels
from serve_helpers import Server
from test_browser import browser  # noqa: F401  (the fixture: Debian's Chromium, no download)

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_carnets"
XLSX = SAMPLES / "infractions" / "numerotation-et-mises.xlsx"
CSV = SAMPLES / "infractions" / "prelevements"
SLOW = 240_000   # ms: an audit on a loaded 2-core machine


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("serve-browser") / "tmp", "--jobs", "1")
    yield s
    s.stop()


class Session:
    """A browser context that opened the printed address (token → cookie),
    recording console messages, page errors and every request."""

    def __init__(self, browser, server):
        self.context = browser.new_context(accept_downloads=True, viewport={"width": 1180, "height": 820})
        self.errors, self.console, self.requests = [], [], []
        self.context.on("request", lambda r: self.requests.append(r.url))
        self.page = self.new_page()
        self.origin = f"http://127.0.0.1:{server.port}/"
        self.page.goto(server.url)
        assert self.page.url == self.origin           # the token left the address bar

    def new_page(self):
        page = self.context.new_page()
        page.on("console", lambda m: self.console.append((m.type, m.text)))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        return page

    def assert_clean(self, refused: int | None = None):
        """No page error, no console error or warning (but the browser's note
        of a `refused` status the test asked for), nothing fetched elsewhere."""
        assert self.errors == []
        note = f"the server responded with a status of {refused}"
        assert [m for m in self.console if m[0] in ("error", "warning") and not (refused and note in m[1])] == []
        # (chrome-extension://… and chrome://resources/…: the browser's own PDF
        # viewer showing the procès-verbal, and the resources it loads from inside
        # the browser, when it had the time to load them; nothing on the network.)
        assert [u for u in self.requests if not u.startswith((self.origin, "data:", "about:", "chrome://resources/",
                                                               "chrome-extension://mhjfbmdgcfjbbpaeojofohoefgiehjai/"))] == []

    def close(self):
        self.context.close()


@pytest.mark.browser
@pytest.mark.subprocess
def test_upload_verdict_filter_cell_download_print(browser, server, tmp_path):
    s = Session(browser, server)
    page = s.page
    assert page.locator("h1").inner_text() == "Audit du carnet spécial d'écarté"     # French first
    page.set_input_files("#files", str(XLSX))
    page.wait_for_selector("#verdict.error", timeout=SLOW)
    assert page.locator("#verdict").inner_text() == f"{XLSX.name} — {labels('fr')['verdict_error']}"
    assert any("/api/runs/" in u for u in s.requests)                     # it followed the audit
    assert page.locator("#bar").evaluate("b => [b.value, b.max]") == [1, 1]
    assert page.locator("#progress").is_hidden()

    # The report itself, with its own filters.
    report = page.frame_locator("#report")
    report.locator("#filters").wait_for(state="visible")
    shot = tmp_path / "serve.png"
    page.screenshot(path=str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("UPDATE_SCREENSHOT") == "1":
        shutil.copy(shot, ROOT / "docs" / "serve.png")
    rows = report.locator("#findings details.group tbody tr:not([hidden])")
    before = rows.count()
    errors = report.locator("#findings details.group tbody tr[data-severity=error]").count()
    assert 0 < errors < before
    report.locator("#filters input[value=error]").click()
    assert rows.count() == before - errors
    report.locator("#filters input[value=error]").click()
    assert rows.count() == before

    # A finding's cell, shown in its carnet, from the report's own list.
    link = report.locator("#findings .cell-link").first
    link.wait_for()
    with s.context.expect_page() as opened:
        link.click()
    cell_page = opened.value
    cell_page.wait_for_load_state()
    assert cell_page.locator("h1").inner_text().startswith("Cellule ")
    assert cell_page.locator("#the-cell").count() == 1
    assert cell_page.locator("tr.here th").inner_text().isdigit()
    cell_page.close()

    # The annotated workbook, downloaded, is a workbook with the findings sheet.
    with page.expect_download() as download:
        page.click("#dl-xlsx")
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    assert saved.name == "numerotation-et-mises-annotated.xlsx"
    wb = openpyxl.load_workbook(saved)
    assert wb.sheetnames[0] == labels("fr")["xlsx_findings_sheet"]
    sheet = wb.worksheets[0]
    assert sheet.max_row - 1 == report.locator("#findings tr[data-fingerprint]").count()
    with page.expect_download() as download:
        page.click("#dl-json")
    assert download.value.suggested_filename == "numerotation-et-mises-findings.json"

    # Print gives the procès-verbal, never the page: the button, Ctrl+P, and the browser's own menu
    # (the print stylesheet leaves only a note saying to use the button).
    with s.context.expect_page() as opened:
        page.click("#print")
    assert "/carnet-1/proces-verbal.pdf" in opened.value.url
    opened.value.close()
    with s.context.expect_page() as opened:
        page.keyboard.press("Control+p")
    assert "/carnet-1/proces-verbal.pdf" in opened.value.url
    opened.value.close()
    page.emulate_media(media="print")
    assert page.locator("#result").is_hidden() and page.locator("header").is_hidden()
    assert page.locator("#print-note").is_visible()
    page.emulate_media(media="screen")

    s.assert_clean()
    s.close()


@pytest.mark.browser
@pytest.mark.subprocess
def test_a_small_batch_from_a_folder(browser, server):
    s = Session(browser, server)
    page = s.page
    page.fill("#folder", str(SAMPLES / "infractions"))
    page.click("#folder-go")
    page.wait_for_selector("#carnets tbody tr", timeout=SLOW)
    carnets = sorted(p.name for p in (SAMPLES / "infractions").iterdir() if not p.name.startswith("."))
    assert page.locator("#carnets tbody tr").count() == len(carnets)
    index = page.frame_locator("#report")
    links = index.locator("#carnets a[href$='report.html']")    # the carnets' table (the archive links them too)
    links.first.wait_for()
    assert links.count() == len(carnets)
    links.first.click()                                   # the index's own link opens that report
    index.locator("#findings").wait_for()
    second = page.locator("#carnets tbody tr").nth(1)
    second.locator("button.open-carnet").click()
    page.wait_for_selector("#dl-xlsx:not([hidden])")
    assert page.locator("#dl-xlsx").get_attribute("href").endswith(
        f"/{second.get_attribute('data-id')}/annotated.xlsx?download=1")
    assert page.locator("#verdict").inner_text().startswith(second.locator("td").first.inner_text())
    page.click("#show-index")
    index.locator("a[href$='report.html']").first.wait_for()
    # An address naming an audit that is not kept: the start, quietly.
    page.goto(s.origin + "?audit=0000000000000000")
    expect(page.locator("#start")).to_be_visible(timeout=SLOW)
    assert page.locator("#error").is_hidden() and "audit=" not in page.url
    s.assert_clean(refused=404)
    s.close()


@pytest.mark.browser
@pytest.mark.subprocess
def test_the_language_choice_and_csv_files(browser, server):
    s = Session(browser, server)
    page = s.page
    page.select_option("#lang", "en")
    page.wait_for_url("**/?lang=en")
    assert page.locator("h1").inner_text() == "Écarté carnet spécial audit"
    # A file that is no carnet: the page says which names a carnet's files have.
    page.set_input_files("#files", [{"name": "notes.txt", "mimeType": "text/plain", "buffer": b"x"}])
    page.wait_for_selector("#error:not([hidden])", timeout=SLOW)
    assert page.locator("#error").inner_text().startswith("No carnet in what was dropped.")
    assert "coups.csv, mises.csv" in page.locator("#error").inner_text()
    page.set_input_files("#files", sorted(str(p) for p in CSV.iterdir() if p.suffix == ".csv"))
    page.wait_for_selector("#verdict.error", timeout=SLOW)
    assert page.locator("#verdict").inner_text().endswith(labels("en")["verdict_error"])
    assert page.frame_locator("#report").locator("html").get_attribute("lang") == "en"
    page.goto(s.origin)                                   # the choice is remembered
    assert page.locator("html").get_attribute("lang") == "en"
    s.assert_clean(refused=400)
    s.close()


@pytest.mark.browser
@pytest.mark.subprocess
def test_an_oversized_file_says_so(browser, tmp_path_factory, tmp_path):
    small = Server(tmp_path_factory.mktemp("serve-small") / "tmp", "--max-file-mb", "1")
    try:
        s = Session(browser, small)
        big = tmp_path / "gros.xlsx"
        big.write_bytes(b"PK" + b"\0" * (2 * 1024 * 1024))
        s.page.set_input_files("#files", str(big))
        s.page.wait_for_selector("#error:not([hidden])", timeout=SLOW)
        assert s.page.locator("#error").inner_text() == \
            "Fichier « gros.xlsx » refusé : il dépasse la limite de 1 Mo par fichier."
        assert s.page.locator("#start").is_visible()
        s.assert_clean(refused=413)
        s.close()
    finally:
        small.stop()


@pytest.mark.browser
@pytest.mark.subprocess
@pytest.mark.slow
def test_drop_review_reload_the_record_and_a_second_visit(browser, tmp_path_factory, tmp_path):
    """The inspector's visit: settings filled once, a carnet dropped, a
    decision recorded in the report's own list, the page reloaded (and its
    language changed), the decision in the report, findings.json and the
    procès-verbal (read back); then the same table audited again: the page
    and the PV say what changed since the first visit, the decision carried."""
    import io

    import pypdf

    from auditor import reviews

    folder = tmp_path_factory.mktemp("serve-visit")
    server = Server(folder / "tmp", "--jobs", "1")
    try:
        s = Session(browser, server)
        page = s.page
        expect(page.locator("#settings")).to_have_attribute("open", "")      # asked once
        page.fill("#set-inspector", "Claire Dupont")
        page.fill("#set-grade", "Inspectrice des jeux")
        page.fill("#set-place", "Forges-les-Eaux")
        page.click("#settings-save")
        expect(page.locator("#settings-done")).to_contain_text("Réglages enregistrés.", timeout=SLOW)
        settings = json.loads((server.config / "ecarte-audit" / "settings.json").read_text(encoding="utf-8"))
        assert (settings["inspector"], settings["place"]) == ("Claire Dupont", "Forges-les-Eaux")

        page.set_input_files("#files", str(XLSX))
        page.wait_for_selector("#verdict.error", timeout=SLOW)
        assert "audit=" in page.url                                         # the address names what is shown
        expect(page.locator("#place")).to_contain_text("Casino de Forges-les-Eaux/Table 2/")
        expect(page.locator("#place")).to_contain_text("(heure de Paris)")
        expect(page.locator("#review-by")).to_have_value("Claire Dupont")
        report = page.frame_locator("#report")
        row = report.locator("#findings tr[data-fingerprint]").nth(1)
        row.locator("textarea.review-text").wait_for(timeout=SLOW)           # the review box is in the report
        fingerprint = row.get_attribute("data-fingerprint")
        row.locator("select.review-status").select_option("justifie")
        row.locator("textarea.review-text").fill("Vérifié avec le chef de table : erreur de saisie")
        row.locator("button.review-save").click()
        expect(page.locator("#review-state")).to_have_text("Enregistré", timeout=SLOW)   # files made again
        audit = server.workspace / json.loads(server.request("GET", "/api/audits")[2])["visits"][0]["audits"][0]["place"]
        [entry] = reviews.load_reviews(audit / "reviews.jsonl").entries
        assert (entry["fingerprint"], entry["status"], entry["by"]) == (fingerprint, "justifie", "Claire Dupont")

        # Reload, then another language: the same audit, its decision in the report's list.
        page.reload()
        page.wait_for_selector("#verdict.error", timeout=SLOW)
        page.select_option("#lang", "en")
        page.wait_for_selector("#verdict.error", timeout=SLOW)
        assert "lang=en" in page.url and "audit=" in page.url
        row = page.frame_locator("#report").locator(f"#findings tr[data-fingerprint='{fingerprint}']")
        row.locator("textarea.review-text").wait_for(timeout=SLOW)
        assert row.locator("select.review-status").input_value() == "justifie"
        assert row.locator("textarea.review-text").input_value() == "Vérifié avec le chef de table : erreur de saisie"
        assert page.locator("#visits .visit.today li").count() == 1            # the visit's audits listed

        doc = json.loads((audit / "out" / "carnet-1" / "findings.json").read_text(encoding="utf-8"))
        [decided] = [f for f in doc["findings"] if f["fingerprint"] == fingerprint]
        assert decided["review"]["justification"] == "Vérifié avec le chef de table : erreur de saisie"
        pv = (audit / "out" / "carnet-1" / "proces-verbal.pdf").read_bytes()
        text = " ".join(p.extract_text() for p in pypdf.PdfReader(io.BytesIO(pv)).pages)
        assert "Vérifié avec le chef de table" in " ".join(text.split())
        assert "Claire Dupont" in text and "Forges-les-Eaux" in text

        # The second visit of the same table (a renamed copy of the carnet).
        page.select_option("#lang", "fr")
        page.wait_for_selector("#verdict.error", timeout=SLOW)
        page.click("#again")
        second = tmp_path / "carnet-visite-2.xlsx"
        second.write_bytes(XLSX.read_bytes())
        page.set_input_files("#files", str(second))
        page.wait_for_selector("#verdict.error", timeout=SLOW)
        expect(page.locator("#verdict")).to_contain_text("carnet-visite-2.xlsx")
        expect(page.locator("#changes")).to_contain_text("Comparé à l'audit du")
        expect(page.locator("#changes")).to_contain_text("0 nouveau(x)")
        row = page.frame_locator("#report").locator(f"#findings tr[data-fingerprint='{fingerprint}']")
        row.locator("textarea.review-text").wait_for(timeout=SLOW)
        assert row.locator("select.review-status").input_value() == "justifie"      # the decision carried
        pv_link = page.locator("#open-pv").get_attribute("href").split("?")[0]
        status, _, pv = server.request("GET", "/" + pv_link)
        text = " ".join(" ".join(p.extract_text() for p in pypdf.PdfReader(io.BytesIO(pv)).pages).split())
        assert "Depuis le contrôle précédent" in text and "Vérifié avec le chef de table" in text
        assert page.locator("#visits .visit.today li").count() == 2
        s.assert_clean()
        s.close()
    finally:
        server.stop()


@pytest.mark.browser
@pytest.mark.subprocess
def test_a_file_name_that_reorders_text_is_shown_as_it_is(browser, server, tmp_path):
    """A carnet named with U+202E (shown backwards after it, "Trojan Source")
    reads with the control written as its code point in the page's own parts
    (the verdict) as in the report, never reordered."""
    named = tmp_path / "carnet\u202exslx.xlsx"
    shutil.copy(XLSX, named)
    s = Session(browser, server)
    page = s.page
    page.set_input_files("#files", str(named))
    page.wait_for_selector("#verdict.error", timeout=SLOW)
    verdict = page.locator("#verdict").inner_text()
    assert verdict.startswith("carnet<U+202E>xslx.xlsx — ") and "\u202e" not in verdict
    assert "\u202e" not in page.locator("body").inner_text()
    report = page.frame_locator("#report")
    report.locator("#findings").wait_for()
    assert "\u202e" not in report.locator("body").inner_text()
    s.assert_clean()
    s.close()
