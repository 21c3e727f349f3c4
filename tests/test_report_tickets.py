"""report.html's ticket section: per value, the series drawn book by
book with its marks (missing EC83-01, detached twice EC82-03, outside the
register EC561-01), what the casino owes for missing tickets, and the levy
chart's third series; read back through an HTML5 parser."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from auditor.synth.breaches.tables import ticket_rows
from auditor.catalogue import load_profile
from auditor.cli import main
from auditor.synth.generate import Spec, generate, write_csv_folder
from auditor.i18n import labels
from auditor.money import format_cents
from auditor.audit import audit_path
from auditor.report import tickets_view
from auditor.report.charts import WIDTH
from auditor.report.html_report import render_report
from report_fixtures import audited, parse_strict, text

SVG = "{http://www.w3.org/2000/svg}"
STAMP = "2026-01-01T00:00:00Z"
TEMPLATES = Path(__file__).resolve().parent.parent / "auditor" / "templates"
PLOT_W = WIDTH - tickets_view.LABEL_W - tickets_view.COUNT_W


def marked_tables() -> dict:
    """A generated carnet (books registered) with each mark: 0,10 € skips
    4812-4814 (EC83-01, 0,30 €), 1 € detaches 1202 twice (EC82-03) and later
    skips two numbers (EC83-01, 2,00 €), the last 0,10 € run moves to
    9001-9006, outside every registered book (EC561-01)."""
    t = generate(Spec(seances=3, coups=12))
    dimes = ticket_rows(t, 10)
    assert (dimes[0]["premier"], dimes[4]["premier"]) == (4801, 4812)   # what the numbers below assume
    for r in dimes[4:-1]:
        r["premier"] += 3
        r["dernier"] += 3
    last = dimes[-1]
    last["premier"], last["dernier"] = 9001, 9001 + last["dernier"] - last["premier"]
    ones = ticket_rows(t, 100)
    assert ones[2]["premier"] == 1203                   # shifted back by one: 1202 again
    for r in ones[2:]:
        r["premier"] -= 1
        r["dernier"] -= 1
    for r in ones[6:]:
        r["premier"] += 2
        r["dernier"] += 2
    return t


@pytest.fixture(scope="module")
def marked(tmp_path_factory):
    """The carnet audited by the command line: findings.json and report.html as written."""
    folder = tmp_path_factory.mktemp("marked")
    path = write_csv_folder(marked_tables(), folder / "carnet")
    out = folder / "out"
    assert main(["audit", str(path), "--out", str(out), "--quiet", "--jobs", "1", "--fail-on", "never"]) == 0
    doc = json.loads((out / "carnet" / "findings.json").read_text(encoding="utf-8"))
    html = (out / "carnet" / "report.html").read_text(encoding="utf-8")
    return doc, parse_strict(html), html


def section(dom):
    return dom.find(".//section[@id='tickets']")


def table_rows(sec) -> dict[str, list[str]]:
    """Value → the cells of its row in the section's table."""
    out = {}
    for tr in sec.findall(".//table[@id='tickets-table']/tbody/tr"):
        out[tr.get("data-valeur")] = [text(c) for c in tr if c.tag in ("th", "td")]
    return out


def figure(sec, valeur: int):
    return sec.find(f".//figure[@id='tickets-{valeur}']")


def paths(fig, cls: str) -> list:
    return [p for p in fig.iter(f"{SVG}path") if p.get("class") == cls]


def rects_of(path) -> list[tuple[float, float]]:
    """(x, width) of each rectangle of a mark path (`M x y h w v h h -w z` …)."""
    return [(float(x), float(w)) for x, w in re.findall(r"M([\d.]+) [\d.-]+h([\d.]+)", path.get("d"))]


def title(el) -> str:
    return text(el.find(f"{SVG}title"))


def _norm(s: str) -> str:
    return " ".join(s.replace("\u00a0", " ").replace("\u202f", " ").split())


# -- a carnet with a gap, a duplicate and a ticket outside the register -------------------------

@pytest.mark.subprocess
def test_owed_for_missing_tickets_matches_findings_json(marked):
    doc, dom, _ = marked
    impacts = [f["impact_cents"] for f in doc["findings"] if f["code"] == "EC83-01"]
    assert sorted(impacts) == [30, 200]         # 4812-4814: three 0,10 € tickets; two 1 € tickets
    sec = section(dom)
    owed = sec.find(".//strong[@id='tickets-owed']")
    assert int(owed.get("data-v")) == sum(impacts)
    assert _norm(text(owed)) == _norm(format_cents(sum(impacts), "fr"))
    total = sec.find(".//td[@id='tickets-owed-total']")
    assert int(total.get("data-v")) == 230 and _norm(text(total)) == _norm(format_cents(230, "fr"))
    assert text(sec.find(".//td[@id='tickets-missing-total']")) == "5"
    # Per value, each finding counted with the value of its tickets.
    assert [int(td.get("data-v")) for td in sec.findall(".//table[@id='tickets-table']/tbody/tr/td[5]")] == [30, 200]
    # The money panel's line says the same.
    assert _norm(text(dom.find(".//dd[@id='money-missing_tickets']"))) == _norm(format_cents(230, "fr"))


@pytest.mark.subprocess
def test_table_counts_each_mark_per_value(marked):
    doc, dom, _ = marked
    codes = Counter(f["code"] for f in doc["findings"])
    rows = table_rows(section(dom))
    assert list(rows) == ["10", "100"]
    lab = labels("fr")
    dimes, ones = rows["10"], rows["100"]
    # value, books opened, tickets used, séances, missing, owed, detached twice, outside, used early
    assert dimes[0] == _norm(format_cents(10, "fr")) or _norm(dimes[0]) == _norm(format_cents(10, "fr"))
    assert dimes[1] == "1" and dimes[3] == "1 → 3 (3)"
    assert dimes[4] == f"3 {lab['tk_in_runs'].format(n=1)}" and codes["EC83-01"] == 2
    assert _norm(dimes[5]) == _norm(format_cents(30, "fr"))
    assert dimes[6] == "0"
    outside = [f for f in doc["findings"] if f["code"] == "EC561-01"]
    assert [f["found"] for f in outside] == ["9001-9006"]
    assert dimes[7] == f"6 {lab['tk_in_runs'].format(n=1)}"
    assert dimes[8] == "0"          # no book used before its service date: every EC561-01 is counted once
    assert ones[4] == f"2 {lab['tk_in_runs'].format(n=1)}" and _norm(ones[5]) == _norm(format_cents(200, "fr"))
    assert ones[6] == f"1 {lab['tk_in_runs'].format(n=codes['EC82-03'])}" and codes["EC82-03"] == 1
    assert ones[7] == "0"
    # Tickets used: distinct numbers detached (the repeated 1202 counts once).
    used = {v: sum(r["dernier"] - r["premier"] + 1 for r in ticket_rows(marked_tables(), v)) for v in (10, 100)}
    assert int(dimes[2]) == used[10] and int(ones[2]) == used[100] - 1


@pytest.mark.subprocess
def test_picture_marks_the_gap_the_duplicate_and_the_outside_run(marked):
    _, dom, _ = marked
    sec = section(dom)
    dimes = figure(sec, 10)
    tracks = [r for r in dimes.iter(f"{SVG}rect") if r.get("class") in ("tk-track", "tk-track-out")]
    assert [(r.get("class"), title(r).split(" (")[0]) for r in tracks] == [
        ("tk-track", "Carnet 4801–5000"), ("tk-track-out", "Hors registre, numéros 9001–9200")]
    [gap] = paths(dimes, "tk-missing")
    assert "4812–4814" in title(gap) and "3 ticket(s)" in title(gap)
    # Numbers 12 to 14 of the book 4801-5000: x from the 12th slot, three slots wide.
    [(x, w)] = rects_of(gap)
    slot = PLOT_W / 200
    assert x == pytest.approx(tickets_view.LABEL_W + 11 * slot, abs=0.1) and w == pytest.approx(3 * slot, abs=0.1)
    [out] = paths(dimes, "tk-outside")
    assert "9001–9006" in title(out)
    assert rects_of(out)[0][1] == pytest.approx(6 * slot, abs=0.1)
    assert not paths(dimes, "tk-dup")
    ones = figure(sec, 100)
    [dup] = paths(ones, "tk-dup")
    assert "1202" in title(dup) and "1 ticket(s)" in title(dup)
    [gap] = paths(ones, "tk-missing")
    assert "2 ticket(s)" in title(gap) and not paths(ones, "tk-outside")
    # Each séance's tickets drawn, alternating shades: séances 1, 2, 3 of the 0,10 € book.
    used = [p for p in dimes.iter(f"{SVG}path") if p.get("class", "").startswith("tk-used")]
    assert [(p.get("class"), title(p).split(" :")[0]) for p in used] == [
        ("tk-used", "Séance 1"), ("tk-used alt", "Séance 2"), ("tk-used", "Séance 3")]
    assert "4801–4811, 4815–" in title(used[0])          # the hole splits séance 1's stretch
    # A text alternative: every picture is named and described.
    svg = dimes.find(f".//{SVG}svg")
    assert svg.get("role") == "img" and svg.get("aria-label") == labels("fr")["tk_chart"].format(
        valeur=format_cents(10, "fr"))
    desc = text(svg.find(f"{SVG}desc"))
    assert "3 manquant(s)" in desc and "6 hors registre" in desc


@pytest.mark.subprocess
def test_levy_chart_shows_the_tickets_face_value(marked):
    _, dom, _ = marked
    levy = section(dom).find(".//figure[@id='chart-levy']")       # in the ticket section
    bars = [r for r in levy.iter(f"{SVG}rect") if r.get("class") == "tickets"]
    assert len(bars) == 3
    t = marked_tables()["tickets"]
    for seance, bar in enumerate(bars, start=1):
        face = sum(r["valeur"] * (r["dernier"] - r["premier"] + 1) for r in t if r["seance"] == seance)
        assert _norm(title(bar)).endswith(_norm(format_cents(face, "fr")))
    assert labels("fr")["levy_tickets"] in text(levy.find(".//p[@class='legend']"))


@pytest.mark.subprocess
def test_same_carnet_same_section(marked, tmp_path):
    _, _, html = marked
    again = audit_path(write_csv_folder(marked_tables(), tmp_path / "carnet"), load_profile(), "fr")
    mine = re.search(r'<section id="tickets".*?</section>', html, re.S).group(0)
    other = re.search(r'<section id="tickets".*?</section>', render_report(again, "x", STAMP), re.S).group(0)
    assert mine == other


# -- compliant, English, absent -----------------------------------------------------------------------

def test_compliant_carnet_has_no_marks(tmp_path):
    result, _ = audited(generate(Spec(seances=3, coups=12)), tmp_path, "xlsx")
    dom = parse_strict(render_report(result, "x", STAMP))
    sec = section(dom)
    assert sec is not None and not [f for f in result.findings if f.code in ("EC83-01", "EC82-03", "EC561-01")]
    assert int(sec.find(".//strong[@id='tickets-owed']").get("data-v")) == 0
    rows = table_rows(sec)
    assert list(rows) == ["10", "100"]
    for cells in rows.values():
        assert cells[4] == "0" and cells[6] == "0" and cells[7] == "0"
    figures = sec.findall(".//figure[@class='ticket-series']")
    assert [f.get("data-valeur") for f in figures] == ["10", "100"]
    for fig in figures:
        classes = {p.get("class") for p in fig.iter(f"{SVG}path")} | {r.get("class") for r in fig.iter(f"{SVG}rect")}
        assert classes <= {"tk-used", "tk-used alt", "tk-track", "tk-full"}
        assert "tk-used" in classes
        assert fig.find(".//p[@class='note']") is None


def test_english_labels(tmp_path):
    result, _ = audited(marked_tables(), tmp_path, "csv", lang="en")
    dom = parse_strict(render_report(result, "x", STAMP))
    en = labels("en")
    sec = section(dom)
    assert text(sec.find("h2")) == en["tickets_section"]
    assert text(sec.find(".//p[@class='owed']")).startswith(en["tk_owed"])
    assert text(sec.find(".//strong[@id='tickets-owed']")) == "€2.30"
    assert [text(th) for th in sec.findall(".//table[@id='tickets-table']/thead/tr/th")][4] == en["tk_col_missing"]
    assert text(figure(sec, 10).find("figcaption")) == en["tk_chart"].format(valeur="€0.10")
    [gap] = paths(figure(sec, 10), "tk-missing")
    assert title(gap).startswith("Missing (EC83-01): 4812–4814")
    assert "Séries" not in text(sec) and "manquant" not in text(sec)


def test_without_tickets_table_the_section_says_why(tmp_path):
    t = generate(Spec(seances=2, coups=6))
    del t["tickets"]
    result, _ = audited(t, tmp_path, "csv")
    dom = parse_strict(render_report(result, "x", STAMP))
    sec = section(dom)
    assert sec.find(".//figure[@class='ticket-series']") is None and sec.find(".//table") is None
    note = text(sec.find(".//p[@id='tickets-not-checked']"))
    assert note.startswith(labels("fr")["tk_not_checked"]) and "tickets" in note
    levy = sec.find(".//figure[@id='chart-levy']")            # still drawn: expected and recorded
    assert {r.get("class") for r in levy.iter(f"{SVG}rect")} == {"expected", "recorded"}


def test_template_never_marks_carnet_data_safe():
    source = (TEMPLATES / "_tickets.html.j2").read_text(encoding="utf-8")
    assert "|safe" not in source.replace(" ", "") and "autoescape" not in source


# -- scale: 200 000 tickets in 40 000 runs ------------------------------------------------------------

# Bytes of the ticket section for one value: MAX_SEGMENTS rectangles, their
# tooltips and at most 2 × MAX_DETAILED + 1 rows, whatever the carnet.
SECTION_BOUND = 150_000


def huge_tables(n_tickets=200_000, seances=40, coups=50, per_run=5) -> dict:
    """0,10 € tickets in runs of 5 over 2 000 coups: a number skipped after every
    7th run (EC83-01), one detached again at every 50th (EC82-03), and every
    20th book left out of the register (its tickets EC561-01)."""
    t = generate(Spec(seances=seances, coups=coups, mises=1))
    keys = [(c["seance"], c["coup"]) for c in t["coups"]]
    runs = n_tickets // per_run
    per_coup = -(-runs // len(keys))
    t["tickets"] = []
    nxt = 1
    for k in range(runs):
        s, c = keys[k // per_coup]
        if k and k % 7 == 0:
            nxt += 1
        first = nxt - 1 if k and k % 50 == 0 else nxt
        t["tickets"].append({"seance": s, "coup": c, "phase": "avant", "valeur": 10, "premier": first,
                             "dernier": first + per_run - 1})
        nxt = first + per_run
    day = t["seances"][0]["date"]
    t["carnets_tickets"] = [{"valeur": 10, "premier": b, "mise_en_service": day, "paraphe": "oui"}
                            for i, b in enumerate(range(1, nxt, 200)) if i % 20 != 7]
    return t


@pytest.mark.slow
def test_huge_ledger_stays_bounded(tmp_path):
    path = write_csv_folder(huge_tables(), tmp_path / "huge")
    result = audit_path(path, load_profile(), "fr")
    codes = Counter(f.code for f in result.findings)
    assert result.summary["tickets"] == 40_000
    assert codes["EC83-01"] > 5_000 and codes["EC82-03"] > 600 and codes["EC561-01"] > 300
    html = render_report(result, "huge", STAMP)
    dom = parse_strict(html)
    sec = section(dom)
    size = len(re.search(r'<section id="tickets".*?</section>', html, re.S).group(0).encode("utf-8"))
    print(f"\n200 000 tickets, {sum(codes.values())} findings: ticket section {size} bytes, "
          f"report.html {len(html.encode('utf-8'))} bytes")
    assert size < SECTION_BOUND
    fig = figure(sec, 10)
    tracks = [r for r in fig.iter(f"{SVG}rect") if r.get("class") in ("tk-track", "tk-track-out")]
    assert len(tracks) == tickets_view.MAX_DETAILED
    rects = sum(len(rects_of(p)) for p in fig.iter(f"{SVG}path"))
    assert rects <= tickets_view.MAX_SEGMENTS
    rows = [r for r in fig.iter(f"{SVG}rect") if r.get("class") in ("tk-track", "tk-track-out", "tk-full", "tk-left")]
    assert len(rows) <= 2 * tickets_view.MAX_DETAILED + 1
    # What is not drawn is said: drawn marks + marks left out = the findings.
    note = text(fig.find(".//p[@class='note']"))
    drawn_n, total, left, missing_left, dup_left, outside_left = map(int, re.findall(r"\d+", note)[:6])
    assert drawn_n == tickets_view.MAX_DETAILED and left == total - drawn_n
    missing_drawn = sum(len(rects_of(p)) for p in paths(fig, "tk-missing"))
    dup_drawn = sum(len(rects_of(p)) for p in paths(fig, "tk-dup"))
    assert missing_drawn + missing_left == codes["EC83-01"]     # single-ticket gaps, never across a book
    assert dup_drawn + dup_left == codes["EC82-03"]
    assert outside_left > 0
    # The amounts are never capped.
    owed = sum(f.impact_cents for f in result.findings if f.code == "EC83-01")
    assert owed == 10 * codes["EC83-01"]
    assert int(sec.find(".//strong[@id='tickets-owed']").get("data-v")) == owed
    assert table_rows(sec)["10"][4].startswith(f"{codes['EC83-01']} ")
