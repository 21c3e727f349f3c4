"""The archive of each table in index.html (issue 24, point 4), on the sample
archives, in French and English: one line per table, a bar per carnet linking
to its report with its séances and tickets on hover, the lacune's gap marked
with its money (4,90 € + 1,00 €), the table's real open books listed once,
the EC83-02 the next carnet continues not shown as open books."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.checks.archive import archive_codes
from auditor.cli import main
from auditor.i18n import labels
from auditor.money import format_cents
from report_fixtures import parse_strict, text

ARCHIVES = Path(__file__).resolve().parent.parent / "sample_carnets" / "archives"
SVG = "{http://www.w3.org/2000/svg}"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=["fr", "en"])
def audited(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(f"archive-{request.param}") / "out"
    assert main(["audit", str(ARCHIVES), "--out", str(out), "--quiet", "--jobs", "1", "--lang", request.param,
                 "--fail-on", "never"]) == 0
    html = (out / "index.html").read_text(encoding="utf-8")
    return request.param, out, parse_strict(html), json.loads((out / "summary.json").read_text(encoding="utf-8"))


def _tag(el, name: str) -> bool:
    return el.tag in (name, SVG + name)


def _all(root, name: str) -> list:
    return [el for el in root.iter() if _tag(el, name)]


def _section(tree):
    return next(el for el in tree.iter() if el.get("id") == "archive")


def _title(el) -> str:
    return next(("".join(t.itertext()) for t in el if _tag(t, "title")), "")


def test_one_line_per_table_a_bar_per_carnet_linking_to_its_report(audited):
    lang, out, tree, summary = audited
    sec = _section(tree)
    lab = labels(lang)
    assert text(next(el for el in sec if _tag(el, "h2"))) == lab["archive_title"]
    figures = [el for el in sec if _tag(el, "figure")]
    assert [f.get("data-table") for f in figures] == ["Casino d'Étretat|2", "Casino d'Étretat|4"]
    for fig, table in zip(figures, summary["tables"]):
        links = [a for a in _all(fig, "a")]
        hrefs = [a.get("href") for a in links]
        assert hrefs == [f"{cid}/report.html" for cid in table["carnets"]]
        assert all((out / h).is_file() for h in hrefs)
        for a, c in zip(links, table["timeline"]):
            rect = next(r for r in a if _tag(r, "rect"))
            hover = _title(rect)
            # Hover: path, séances, ticket ranges per value.
            assert c["path"] in hover
            s = c["seances"]
            assert f"{s['first']}–{s['last']}" in hover
            for t in c["tickets"]:
                assert str(t["first"]) in hover and str(t["last"]) in hover
                assert format_cents(t["valeur_cents"], lang) in hover
        # Every rule across carnets has its lane, checked.
        lanes = [g for g in _all(fig, "g") if g.get("data-code")]
        assert [g.get("data-code") for g in lanes] == sorted(      # EC64-10, EC64-11, EC83-04, EC561-04
            archive_codes(), key=lambda c: tuple(int(x) for x in c[2:].split("-")))
        assert {g.get("data-status") for g in lanes} == {"checked"}


def test_the_lacune_is_marked_with_its_money_and_its_seances(audited):
    lang, out, tree, summary = audited
    sec = _section(tree)
    fig2, fig4 = [el for el in sec if _tag(el, "figure")]
    # The continuing table: no mark at all.
    assert _all(fig2, "path") == []
    lanes = {g.get("data-code"): g for g in _all(fig4, "g") if g.get("data-code")}
    money = f"{format_cents(490, lang)} + {format_cents(100, lang)}"
    tickets = lanes["EC83-04"]
    assert [m.get("class") for m in _all(tickets, "path")] == ["mark error"]
    assert [t.text for t in _all(tickets, "text") if t.get("class") == "money"] == [money]
    assert "400107" in _title(_all(tickets, "path")[0]) and "400155" in _title(_all(tickets, "path")[0])
    seances = lanes["EC64-11"]
    assert [m.get("class") for m in _all(seances, "path")] == ["mark warning"]
    assert "5–6" in _title(_all(seances, "path")[0])
    assert _all(lanes["EC64-10"], "path") == [] and _all(lanes["EC561-04"], "path") == []
    # The mark lies between the bars of 2026-04-07 and 2026-04-09 (the missing day).
    bars = [r for r in _all(fig4, "rect") if (r.get("class") or "").startswith("bar")]
    end_07 = float(bars[1].get("x")) + float(bars[1].get("width"))
    start_09 = float(bars[2].get("x"))
    x = float(_all(tickets, "path")[0].get("d")[1:].split()[0])
    assert end_07 < x < start_09
    # The same money in words under the picture.
    books = [el for el in sec.iter() if el.get("class") == "archive-books"]
    assert [text(g) for g in _all(books[1], "strong")] == [" ".join(money.split())]
    assert _all(books[0], "strong") == []


def test_open_books_listed_once_per_table_and_continued_ones_not(audited):
    lang, out, tree, summary = audited
    lab = labels(lang)
    sec = _section(tree)
    books = [el for el in sec.iter() if el.get("class") == "archive-books"]
    for div, table in zip(books, summary["tables"]):
        last = table["carnets"][-1]
        items = [li for ul in _all(div, "ul") if ul.get("class") == "open-books" for li in ul]
        # The table's real open books: those of its last carnet, one per value, linked to its report.
        assert len(items) == len(table["open_books"]) == 2
        assert {a.get("href") for li in items for a in li} == {f"{last}/report.html"}
        assert [b["carnet"] for b in table["open_books"]] == [last, last]
        # The three earlier carnets' six EC83-02 are continued by the next carnet.
        assert all(b["continued_by"] == table["carnets"][k + 1]
                   for k, c in enumerate(table["timeline"][:-1]) for b in c["open_books"])
        assert text(next(p for p in div if p.get("class") == "continued")) == lab["archive_continued"].format(n=6)
        assert not [ul for ul in _all(div, "ul") if ul.get("class") == "left-open"]
    # findings.json keeps every EC83-02: information, as rules.md says.
    for e in summary["carnets"]:
        doc = json.loads((out / e["id"] / "findings.json").read_text(encoding="utf-8"))
        assert sum(f["code"] == "EC83-02" for f in doc["findings"]) == 2
    # The carnets' table says which information is a continued book, never on a table's last carnet.
    notes = {tr.get("data-id"): text(tr) for tr in tree.iter() if tr.tag == "tr" and tr.get("data-id")}
    note = lab["archive_row_continued"].format(n=2)
    lasts = {t["carnets"][-1] for t in summary["tables"]}
    assert {cid for cid, row in notes.items() if note in row} == set(notes) - lasts
