"""The report and the index as an inspector uses them, in headless Chromium:
filters that tell the truth past what the page holds, an index for hundreds of
carnets, and a report that prints as a document (PDF read back with pypdf)."""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from pathlib import Path

import pytest

from auditor.cli import main
from auditor.i18n import labels
from auditor.report.html_report import render_report
from auditor.report.report_view import MAX_ROWS_PER_GROUP
from report_fixtures import audited, breached_tables, with_many_findings
from test_browser import Page, browser  # noqa: F401  (the Chromium fixture)

STAMP = "2026-01-01T00:00:00Z"
SAMPLES = Path(__file__).resolve().parent.parent / "sample_carnets"


@pytest.fixture(scope="module")
def carnet(tmp_path_factory):
    folder = tmp_path_factory.mktemp("inspector")
    result, _ = audited(breached_tables(), folder, "xlsx")
    return result, folder


# -- filters past 200 findings a rule ---------------------------------------------------------

@pytest.fixture(scope="module")
def big_report(carnet):
    result, folder = carnet
    # 39 codes × 300 findings spread over three séances: every group holds more than the page shows.
    big = with_many_findings(result, 39 * 300)
    path = folder / "big" / "report.html"
    path.parent.mkdir()
    path.write_text(render_report(big, "carnet.xlsx", STAMP, annotated_file="annotated.xlsx"), encoding="utf-8")
    return big, path


@pytest.mark.browser
def test_seance_filter_counts_every_finding_and_points_to_the_workbook(browser, big_report):
    big, path = big_report
    p = Page(browser, path)
    page = p.page
    lab = labels("fr")
    per_code = Counter((f.code, f.seance) for f in big.findings)
    assert max(Counter(f.code for f in big.findings).values()) > MAX_ROWS_PER_GROUP
    seance = 3
    page.locator(f"#by-seance button.show-seance[data-seance='{seance}']").click()
    status = page.locator("#filter-status").inner_text()
    total = sum(1 for f in big.findings if f.seance == seance)
    shown = len(page.locator("#findings tbody tr:not([hidden])").all())
    assert shown < total                                  # the page cannot hold them all …
    assert f"{shown} " in status and f" {total} " in status        # … and says exactly how many match
    assert f"{total - shown} " in status and "annotated.xlsx" in status and lab["xlsx_findings_sheet"] in status
    # No group reads "0 affiché(s)" while it has findings of that séance: it says "n of m".
    for g in page.locator("#findings details.group:not([hidden])").all():
        code = g.get_attribute("data-code")
        m = per_code[(code, seance)]
        n = len(g.locator("tbody tr:not([hidden])").all())
        label = g.locator("summary .shown").inner_text()
        assert m > 0
        expected = (lab["js_shown_of"].format(n=n, m=m) if m > n else lab["js_shown_in_group"].format(n=n))
        assert label == expected, code
    # The note at the top names the workbook too.
    assert "annotated.xlsx" in page.locator("#rendered-note").inner_text()
    p.assert_clean()
    page.close()


@pytest.mark.browser
def test_filters_without_truncation_count_exactly(browser, carnet, tmp_path):
    result, _ = carnet
    path = tmp_path / "report.html"
    path.write_text(render_report(result, "carnet.xlsx", STAMP), encoding="utf-8")
    p = Page(browser, path)
    page = p.page
    page.locator("#filter-seance").select_option("1")
    n = sum(f.seance == 1 for f in result.findings)
    assert page.locator("#filter-status").inner_text() == labels("fr")["js_filter_exact"].format(shown=n, total=n)
    p.assert_clean()
    page.close()


# -- the index of a big batch -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    out = tmp_path_factory.mktemp("index") / "out"
    main(["audit", str(SAMPLES), "--out", str(out), "--quiet", "--fail-on", "never", "--format", "html,json"])
    return out, json.loads((out / "summary.json").read_text(encoding="utf-8"))


def _rows(page):
    return page.locator("#carnets tbody tr").evaluate_all(
        "rs => rs.filter(r => !r.hidden).map(r => r.getAttribute('data-id'))")


@pytest.mark.browser
def test_index_worst_first_relative_paths_and_named_links(browser, batch):
    out, s = batch
    p = Page(browser, out / "index.html")
    page = p.page
    rank = {"ok": 0, "warning": 1, "error": 2, "unreadable": 3}
    ids = _rows(page)
    by_id = {e["id"]: e for e in s["carnets"]}
    ranks = [rank[by_id[i]["verdict"]] for i in ids]
    assert ranks == sorted(ranks, reverse=True)           # worst first, without a click
    for row in page.locator("#carnets tbody tr").all():
        e = by_id[row.get_attribute("data-id")]
        link = row.locator("td.path a")
        rel = e["path"].removeprefix(str(SAMPLES) + "/")
        assert link.inner_text() == rel and not rel.startswith("/")
        assert link.get_attribute("href") == e["report"]
        first, last = e["period"]["first"], e["period"]["last"]
        if first:
            shown = row.locator("td").nth(3).inner_text()
            assert first[8:10] + "/" + first[5:7] in shown and last[:4] in shown
    assert page.locator("#audited-root").inner_text() == str(SAMPLES)
    p.assert_clean()
    page.close()


@pytest.mark.browser
def test_index_filters(browser, batch):
    out, s = batch
    p = Page(browser, out / "index.html")
    page = p.page
    everyone = sorted(e["id"] for e in s["carnets"])
    page.locator("#filter-verdict").select_option("error")
    assert sorted(_rows(page)) == sorted(e["id"] for e in s["carnets"] if e["verdict"] == "error")
    status = page.locator("#index-status").inner_text()
    assert status == labels("fr")["js_index_status"].format(shown=len(_rows(page)), total=len(everyone))
    page.locator("#index-reset").click()
    assert sorted(_rows(page)) == everyone
    casino = next(e["carnet"]["casino"] for e in s["carnets"] if e["carnet"].get("casino"))
    page.locator("#filter-casino").select_option(casino)
    assert sorted(_rows(page)) == sorted(e["id"] for e in s["carnets"] if e["carnet"].get("casino") == casino)
    page.locator("#index-reset").click()
    table = str(next(e["carnet"]["table"] for e in s["carnets"] if e["carnet"].get("table")))
    page.locator("#filter-table").select_option(table)
    assert sorted(_rows(page)) == sorted(e["id"] for e in s["carnets"] if str(e["carnet"].get("table")) == table)
    page.locator("#index-reset").click()
    # Period: carnets whose séances overlap it.
    day = min(e["period"]["first"] for e in s["carnets"] if e["period"]["first"])
    page.locator("#filter-from").fill(day)
    page.locator("#filter-to").fill(day)
    want = sorted(e["id"] for e in s["carnets"] if e["period"]["first"] and e["period"]["first"] <= day
                  <= e["period"]["last"])
    assert want and sorted(_rows(page)) == want
    page.locator("#index-reset").click()
    page.locator("#filter-carnet").fill("TICKETS")
    assert _rows(page) == ["infractions__tickets"]
    p.assert_clean()
    page.close()


# -- print as a document ---------------------------------------------------------------------------

def _pdf_pages(browser, path: Path, pdf: Path) -> list[str]:
    from pypdf import PdfReader

    p = Page(browser, path)
    p.page.emulate_media(media="print")
    p.page.pdf(path=str(pdf), format="A4")
    p.assert_clean()
    p.page.close()
    # NFKC: the PDF's ligatures (ﬁ) back to letters.
    return [unicodedata.normalize("NFKC", pg.extract_text()) for pg in PdfReader(str(pdf)).pages]


@pytest.mark.browser
def test_printed_report_repeats_plain_headers_and_puts_date_and_sha_first(browser, carnet, big_report, tmp_path):
    result, _ = carnet
    lab = labels("fr")
    big = with_many_findings(result, 120)
    path = tmp_path / "report.html"
    path.write_text(render_report(big, "carnet.xlsx", STAMP), encoding="utf-8")
    pages = _pdf_pages(browser, path, tmp_path / "report.pdf")
    assert 8 <= len(pages) <= 40
    # Page 1: the audit date and the source's digest.
    assert result.carnet.source.sha256 in pages[0].replace("\n", "")
    assert "01/01/2026 à 00:00 UTC" in pages[0]
    # A page that continues a findings table starts it with its header text, never a blank band.
    head = " ".join([lab["seance"], lab["coup"], lab["rang"], lab["message"]])
    finding_pages = [t for t in pages if re.search(r"synthétique n° \d+", t)]
    assert len(finding_pages) >= 3
    for t in finding_pages[1:]:
        assert head in " ".join(t.split()), t[:300]
    # A group's heading is never left at the foot of a page: no page ends on one.
    heading = re.compile(rf"^EC\d+-\d\d\s+({lab['error']}|{lab['warning']}|{lab['info']})\b")
    for t in pages:
        lines = [ln for ln in t.split("\n") if ln.strip()]
        assert not heading.match(lines[-1]), lines[-1]
    # Each continued group says again which rule it is, at the top of the page.
    assert all(heading.match(t.split("\n")[2]) for t in finding_pages[1:])
    # Codes never wrap ("EC561-/01").
    assert not re.search(r"EC\d+-\s*\n\s*\d\d", "\n".join(pages))


@pytest.mark.browser
def test_printed_rules_appendix_lists_only_rules_with_findings_or_not_checked(browser, carnet, tmp_path):
    result, _ = carnet
    lab = labels("fr")
    path = tmp_path / "report.html"
    path.write_text(render_report(result, "carnet.xlsx", STAMP), encoding="utf-8")
    pages = _pdf_pages(browser, path, tmp_path / "report.pdf")
    appendix = "\n".join(pages[next(i for i, t in enumerate(pages) if lab["appendix"] in t):])
    listed = set(re.findall(r"^(EC\d+-\d\d)\s", appendix, re.M))
    wanted = {st.code for st in result.rules if st.findings or st.status.value != "checked"}
    assert listed == wanted
    quiet = sum(1 for st in result.rules if st.status.value == "checked" and not st.findings)
    assert " ".join(lab["rules_quiet"].format(n=quiet).split(";")[0].split()) in " ".join(appendix.split())
    # On screen the full list stays.
    p = Page(browser, path)
    assert p.page.locator("#rules tbody tr").count() == len(result.rules)
    assert p.page.locator("#rules tbody tr:visible").count() == len(result.rules)
    p.page.close()
