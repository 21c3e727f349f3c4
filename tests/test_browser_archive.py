"""The archive of each table in index.html, in a real Chromium (Debian's, by
Playwright): the section draws without a console error or a request, a
screenshot of it is made, hovering a carnet's bar gives its séances and
tickets, hovering the lacune's mark its missing tickets, a click on a bar
opens that carnet's report."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.cli import main
from auditor.money import format_cents
from test_browser import Page, browser  # noqa: F401  (the Chromium fixture)

ARCHIVES = Path(__file__).resolve().parent.parent / "sample_carnets" / "archives"

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("archive-browser") / "out"
    assert main(["audit", str(ARCHIVES), "--out", str(out), "--quiet", "--jobs", "1", "--fail-on", "never"]) == 0
    return out / "index.html"


def test_archive_section_draws_hovers_and_links(browser, index, tmp_path):  # noqa: F811
    p = Page(browser, index)
    page = p.page
    section = page.locator("#archive")
    section.scroll_into_view_if_needed()
    assert section.is_visible()
    figures = page.locator("#archive figure.archive-table")
    assert figures.count() == 2
    box = figures.nth(1).locator("svg").bounding_box()
    assert box["width"] > 400 and box["height"] > 80          # drawn, not collapsed
    shot = tmp_path / "archive.png"
    section.screenshot(path=str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 5000
    # The hover texts are the SVG <title>s the browser shows as tooltips.
    lacune = figures.nth(1)
    bar = lacune.locator("rect.bar").nth(2)
    bar.hover()
    hover = bar.locator("title").text_content()
    assert "2026-04-09.xlsx" in hover and "7–8" in hover and "400156" in hover
    mark = lacune.locator("g[data-code='EC83-04'] path.mark")
    assert mark.count() == 1
    mark.hover()
    assert "400107–400155" in mark.locator("title").text_content()
    money = lacune.locator("g[data-code='EC83-04'] text.money")
    assert money.evaluate("t => t.firstChild.textContent") == f"{format_cents(490, 'fr')} + {format_cents(100, 'fr')}"
    assert money.is_visible()
    p.assert_clean()
    # A click on a bar opens its carnet's report.
    bar.click()
    page.wait_for_load_state("load")
    assert page.url.endswith("etretat-table4-lacune__2026-04-09.xlsx/report.html")
    assert page.locator("h1").count() == 1
    page.close()
