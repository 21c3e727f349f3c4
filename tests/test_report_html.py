"""report.html and index.html, read back through an HTML5 parser (never by
string matching): validity, content, escaping, language, size at scale."""

from __future__ import annotations

import dataclasses
import re
import time
from collections import Counter
from pathlib import Path

import pytest

from auditor.catalogue import load_catalogue, load_profile
from auditor.i18n import labels
from auditor.money import format_cents
from auditor.audit import audit_path
from auditor.report import report_view as view_module
from auditor.report.html_report import render_index, render_report
from report_fixtures import XSS, audited, breached_tables, parse_strict, text, with_many_findings

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_carnets"
TEMPLATES = ROOT / "auditor" / "templates"
STAMP = "2026-01-01T00:00:00Z"


@pytest.fixture(scope="module")
def breached(tmp_path_factory):
    return audited(breached_tables(XSS), tmp_path_factory.mktemp("breached"), "xlsx")


def report_dom(result, source="carnet.xlsx", findings_file="findings.json"):
    html = render_report(result, source, STAMP, findings_file)
    return parse_strict(html), html


def cells(tr) -> list[str]:
    return [text(td) for td in tr.findall("td")]


# -- validity and self-containment ---------------------------------------------------

def sample_paths():
    return sorted([p for p in (SAMPLES / "compliant").iterdir()] + [p for p in (SAMPLES / "infractions").iterdir()])


@pytest.mark.parametrize("lang", ["fr", "en"])
@pytest.mark.parametrize("sample", sample_paths(), ids=lambda p: p.name)
def test_sample_reports_are_valid_html5(sample, lang):
    result = audit_path(sample, load_profile(), lang)
    dom, html = report_dom(result, sample.name)   # strict parsing raises on any parse error
    assert dom.get("lang") == lang
    assert dom.find(".//p[@id='verdict']") is not None


def test_nothing_is_fetched(breached):
    dom, html = report_dom(breached[0])
    for el in dom.iter():
        for attr in ("src", "href", "action", "srcset", "data", "poster"):
            value = el.get(attr)
            if value is not None:
                assert value.startswith(("#", "data:")) or value == "findings.json", (el.tag, attr, value)
    scripts = dom.findall(".//script")
    assert all(s.get("src") is None for s in scripts)
    assert not re.search(r"https?://", html)
    csp = [m.get("content") for m in dom.findall(".//meta") if m.get("http-equiv") == "Content-Security-Policy"]
    assert csp and csp[0].startswith("default-src 'none'")


def test_same_input_same_bytes(breached, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    first = render_report(breached[0], "carnet.xlsx", STAMP)
    again = audit_path(breached[1], load_profile(), "fr")
    assert render_report(again, "carnet.xlsx", STAMP) == first
    footer = parse_strict(first).find(".//footer")
    assert footer.find("time").get("datetime") == STAMP
    assert "01/01/2026 à 00:00 UTC" in text(footer)       # the reader's way


# -- escaping ------------------------------------------------------------------------------

def test_casino_name_is_text_never_markup(breached):
    dom, html = report_dom(breached[0])
    scripts = dom.findall(".//script")
    assert len(scripts) == 2                     # the label catalogue and our own script, nothing else
    assert scripts[0].get("type") == "application/json"
    assert all("alert(1)" not in (s.text or "") for s in scripts)
    assert XSS in text(dom.find(".//h1"))
    identity = dict(zip([text(dt) for dt in dom.findall(".//dl[@class='identity']/dt")],
                        [text(dd) for dd in dom.findall(".//dl[@class='identity']/dd")]))
    assert identity["Casino"] == XSS
    assert XSS in text(dom.find(".//title"))
    # The printed page header carries it as a CSS string: escaped, no quote or < left.
    style = dom.get("style")
    assert style.startswith("--carnet-id: \"") and "<" not in style and "alert\\28 1\\29" in style


def test_escaping_in_findings_and_index(tmp_path):
    t = breached_tables("Casino \"&'<b>")
    t["seances"][0]["jeux"] = "<img src=x onerror=alert(1)>"
    result, path = audited(t, tmp_path, "csv")
    dom, _ = report_dom(result)
    assert not dom.findall(".//img") and not dom.findall(".//b")
    assert "Casino \"&'<b>" in text(dom.find(".//h1"))
    entry = {"id": "x", "path": "<i>x</i>", "verdict": "error", "carnet": {"casino": XSS, "table": 1},
             "summary": result.summary, "report": "x/report.html"}
    idx = parse_strict(render_index(_batch([entry]), "fr"))
    assert not idx.findall(".//i") and len(idx.findall(".//script")) == 2
    assert XSS in [text(td) for td in idx.findall(".//table[@id='carnets']/tbody/tr/td")]


# -- content ---------------------------------------------------------------------------------

def test_first_screen_answers_is_it_in_order(breached):
    result, _ = breached
    dom, _ = report_dom(result)
    lab = labels("fr")
    verdict = dom.find(".//p[@id='verdict']")
    assert "error" in verdict.get("class").split()
    assert text(verdict).startswith(lab["verdict_error"])
    s = result.summary
    for sev, key in (("error", "errors"), ("warning", "warnings"), ("info", "info")):
        assert text(dom.find(f".//div[@id='count-{sev}']")) == str(s[key])
    identity = dict(zip([text(dt) for dt in dom.findall(".//dl[@class='identity']/dt")],
                        [text(dd) for dd in dom.findall(".//dl[@class='identity']/dd")]))
    assert identity[lab["table"]] == "3"
    assert identity[lab["period"]] == "02/03/2026 → 04/03/2026"   # French dates in a French report
    assert identity[lab["seances"]] == "3" and identity[lab["coups"]] == "36"
    assert identity[lab["mises"]] == str(s["mises"])
    assert identity[lab["sha256"]] == result.carnet.source.sha256
    money = {dd.get("id"): text(dd) for dd in dom.findall(".//dl[@class='money']/dd")}
    assert _norm(money["money-levy_expected"]) == _norm(format_cents(s["levy_expected_cents"], "fr"))
    assert _norm(money["money-levy_recorded"]) == _norm(format_cents(s["levy_recorded_cents"], "fr"))
    levy = [f.impact_cents for f in result.findings if f.code in ("EC66-01", "EC66-02")]
    assert _norm(money["money-levy_shortfall"]) == _norm(format_cents(sum(x for x in levy if x > 0), "fr"))
    assert _norm(money["money-levy_excess"]) == _norm(format_cents(-sum(x for x in levy if x < 0), "fr"))
    assert _norm(money["money-impact"]) == _norm(format_cents(s["impact_cents"], "fr"))


def _norm(s: str) -> str:
    return " ".join(s.replace("\u00a0", " ").replace("\u202f", " ").split())


def test_findings_grouped_by_rule_with_every_field(breached):
    result, _ = breached
    dom, _ = report_dom(result)
    catalogue = load_catalogue()
    groups = dom.findall(".//section[@id='findings']/details")
    by_code = Counter(f.code for f in result.findings)
    assert [g.get("data-code") for g in groups] == [c for c in [st.code for st in result.rules] if c in by_code]
    for g in groups:
        code = g.get("data-code")
        summary = g.find("summary")
        assert text(summary.find("span[@class='code']")) == code
        assert text(summary.find("span[@class='title']")) == catalogue[code].title["fr"]
        assert text(summary.find("span[@class='count']")) == str(by_code[code])
        assert text(g.find("p[@class='explain']")) == " ".join(catalogue[code].explain["fr"].split())
        rows = g.findall("table/tbody/tr")
        mine = [f for f in result.findings if f.code == code]
        assert len(rows) == len(mine)
        for tr, f in zip(rows, mine):
            c = cells(tr)
            assert c[0:3] == [str(v) if v is not None else "" for v in (f.seance, f.coup, f.rang)]
            assert c[3] == " ".join(f.message.split())
            assert f.table in c[4] and str(f.row) in c[4] and (f.cell or "") in c[4]
            if code in view_module.value_columns():      # information: one column of its own instead
                assert c[5] == view_module.value_columns()[code][1](f)
                c = c[:6] + [""] + c[6:]
            else:
                assert _norm(c[5]) == _norm(f.expected or "") and _norm(c[6]) == _norm(f.found or "")
            assert _norm(c[7]) == (_norm(format_cents(f.impact_cents, "fr")) if f.impact_cents else "")
            assert tr.get("data-severity") == f.severity.label
    impacts = {g.get("data-code"): g.find("summary/span[@class='impact']") for g in groups}
    levy = sum(f.impact_cents for f in result.findings if f.code == "EC66-01" and f.impact_cents > 0)
    assert _norm(text(impacts["EC66-01"])) == _norm(format_cents(levy, "fr"))


def test_findings_by_seance(breached):
    result, _ = breached
    dom, _ = report_dom(result)
    rows = dom.findall(".//section[@id='by-seance']/table/tbody/tr")
    per = Counter(f.seance for f in result.findings)
    assert [int(r.get("data-seance")) for r in rows] == sorted(per)
    for r in rows:
        c = cells(r)
        n = per[int(r.get("data-seance"))]
        assert int(c[3]) + int(c[4]) + int(c[5]) == n


def test_filters_list_rules_and_seances(breached):
    result, _ = breached
    dom, _ = report_dom(result)
    form = dom.find(".//form[@id='filters']")
    assert form.get("hidden") is not None          # the script shows it; without JS it stays out of the way
    rules = [o.get("value") for o in form.findall(".//select[@id='filter-rule']/option")]
    assert rules[0] == "" and set(rules[1:]) == {f.code for f in result.findings}
    seances = [o.get("value") for o in form.findall(".//select[@id='filter-seance']/option")]
    assert seances[1:] == [str(s) for s in sorted({f.seance for f in result.findings})]
    assert [i.get("value") for i in form.findall(".//input[@name='severity']")] == ["error", "warning", "info"]


def test_rules_table_lists_every_code_with_status(breached):
    result, _ = breached
    dom, _ = report_dom(result)
    rows = dom.findall(".//section[@id='rules']/table/tbody/tr")
    assert [r.get("data-code") for r in rows] == [st.code for st in result.rules]
    lab = labels("fr")
    for r, st in zip(rows, result.rules):
        c = cells(r)
        if st.status.value == "checked":
            assert c[4] == lab["checked"] and c[5] == str(st.findings)
        else:
            assert c[4] == lab["not_checked"] and c[6] == (st.reason or result.notes.get(st.code, ""))


def test_charts_are_inline_svg(breached):
    result, _ = breached
    dom, _ = report_dom(result)
    svg = "{http://www.w3.org/2000/svg}"
    levy = dom.find(".//figure[@id='chart-levy']")
    bars = levy.findall(f".//{svg}rect")
    assert len(bars) == 3 * result.summary["seances"]
    assert [b.get("class") for b in bars[:3]] == ["expected", "recorded", "tickets"]
    rules = dom.find(".//figure[@id='chart-rules']").findall(f".//{svg}rect")
    assert len(rules) == len({f.code for f in result.findings})
    timeline = dom.find(".//figure[@id='chart-timeline']")
    tracks = [r for r in timeline.findall(f".//{svg}rect") if r.get("class") == "track"]
    assert len(tracks) == result.summary["seances"]
    marks = {p.get("class") for p in timeline.findall(f".//{svg}path")}
    assert marks == {f.severity.label for f in result.findings if f.coup is not None}


def test_levy_chart_adds_up_to_the_summary(breached):
    result, _ = breached
    view = view_module.report_view(result, "x", STAMP)
    titles = [b.title for b in view.charts.levy.bars]
    assert len(titles) == 9
    # Expected per séance = recorded + levy findings' impact; over the carnet
    # that is the engine's expected total (tie rounding "up").
    expected = sum(_cents(t) for t in titles[0::3])
    recorded = sum(_cents(t) for t in titles[1::3])
    assert (expected, recorded) == (result.summary["levy_expected_cents"], result.summary["levy_recorded_cents"])
    # Third series: the face value of the tickets detached in each séance.
    t = result.carnet.df("tickets")
    faces = (t["valeur_cents"] * (t["dernier"] - t["premier"] + 1)).groupby(t["seance"]).sum()
    assert [_cents(x) for x in titles[2::3]] == [int(v) for v in faces.sort_index()]


def _cents(title: str) -> int:
    amount = _norm(title).rsplit(": ", 1)[1].replace(" €", "").replace(" ", "")
    euros, cents = amount.split(",")
    return int(euros) * 100 + int(cents)


def test_english_report(tmp_path):
    result, _ = audited(breached_tables(), tmp_path, "csv", lang="en")
    dom, _ = report_dom(result)
    en = labels("en")
    assert dom.get("lang") == "en"
    assert text(dom.find(".//p[@id='verdict']")).startswith(en["verdict_error"])
    assert text(dom.find(".//h2[@id='h-findings']")).startswith(en["findings_by_rule"])
    first = dom.find(".//section[@id='findings']/details")
    assert text(first.find("summary/span[@class='title']")) == load_catalogue()[first.get("data-code")].title["en"]
    identity = dict(zip([text(dt) for dt in dom.findall(".//dl[@class='identity']/dt")],
                        [text(dd) for dd in dom.findall(".//dl[@class='identity']/dd")]))
    assert identity[en["period"]] == "2026-03-02 → 2026-03-04"   # ISO, unambiguous, in English


def test_compliant_carnet(tmp_path):
    result, _ = audited(generate_compliant(), tmp_path, "xlsx")
    dom, _ = report_dom(result)
    verdict = dom.find(".//p[@id='verdict']")
    assert "ok" in verdict.get("class").split()
    # Only context is left (ticket books in progress): info, never a warning or an error.
    groups = dom.findall(".//section[@id='findings']/details")
    assert {g.get("data-severity") for g in groups} <= {"info"}
    assert text(dom.find(".//div[@id='count-error']")) == text(dom.find(".//div[@id='count-warning']")) == "0"


def test_no_findings_at_all(breached):
    import dataclasses

    result = breached[0]
    clean = dataclasses.replace(result, findings=[], rules=[dataclasses.replace(st, findings=0) for st in result.rules],
                                summary={**result.summary, "errors": 0, "warnings": 0, "info": 0, "impact_cents": 0})
    dom, _ = report_dom(clean)
    assert "ok" in dom.find(".//p[@id='verdict']").get("class").split()
    assert dom.find(".//p[@id='no-findings']") is not None
    assert dom.find(".//form[@id='filters']") is None


def generate_compliant():
    from auditor.synth.generate import Spec, generate

    return generate(Spec(seances=2, coups=6))


def test_unreadable_carnet_still_reports():
    result = audit_path(SAMPLES / "infractions" / "classeur-corrompu.xlsx", load_profile(), "fr")
    dom, _ = report_dom(result)
    assert "unreadable" in dom.find(".//p[@id='verdict']").get("class").split()
    assert [g.get("data-code") for g in dom.findall(".//section[@id='findings']/details")] == ["EC00-01"]


# -- scale: 100 000 findings ---------------------------------------------------------------

SIZE_BOUND = 6 * 1024 * 1024   # bytes; see docs/interpretations.md ("Reports")


@pytest.mark.slow
def test_hundred_thousand_findings_stay_bounded(breached):
    big = with_many_findings(breached[0], 100_000)
    started = time.perf_counter()
    dom, html = report_dom(big)
    elapsed = time.perf_counter() - started
    size = len(html.encode("utf-8"))
    print(f"\n100 000 findings: report.html {size} bytes, rendered and parsed in {elapsed:.1f}s")
    assert size < SIZE_BOUND
    groups = dom.findall(".//section[@id='findings']/details")
    assert all(g.get("open") is None for g in groups)            # collapsed
    per = Counter(f.code for f in big.findings)
    for g in groups:
        rows = g.findall("table/tbody/tr")
        assert len(rows) == min(per[g.get("data-code")], view_module.MAX_ROWS_PER_GROUP)
        if per[g.get("data-code")] > view_module.MAX_ROWS_PER_GROUP:
            more = g.find("p[@class='more']")
            assert more.find("a").get("href") == "findings.json"
            assert str(per[g.get("data-code")]) in text(more)
    assert text(dom.find(".//div[@id='count-error']")) == str(big.summary["errors"])


def test_long_cell_text_is_clipped(breached):
    result = breached[0]
    long = dataclasses.replace(result.findings[0], found="y" * 40_000)
    dom, html = report_dom(dataclasses.replace(result, findings=[long]))
    assert len(html) < 200_000
    row = dom.find(".//section[@id='findings']/details/table/tbody/tr")
    assert len(cells(row)[6]) == view_module.MAX_VALUE


# -- the batch index ---------------------------------------------------------------------------

def _batch(entries: list[dict]) -> dict:
    totals = {k: sum(e["summary"][k] for e in entries)
              for k in ("errors", "warnings", "info", "impact_cents", "rows_read", "rows_rejected")}
    return {"schema_version": 1, "generated_at": STAMP, "carnets": entries, "totals": totals,
            "cross_carnet_findings": []}


@pytest.mark.slow
def test_index_one_row_per_carnet_with_totals():
    entries = []
    for p in sample_paths():
        r = audit_path(p, load_profile(), "fr")
        entries.append({"id": p.name, "path": f"sample_carnets/{p.name}", "verdict": view_module.verdict(r),
                        "carnet": r.carnet.cover, "summary": r.summary, "report": f"{p.name}/report.html"})
    dom = parse_strict(render_index(_batch(entries), "fr"))
    table = dom.find(".//table[@id='carnets']")
    assert "sortable" in table.get("class").split()
    rows = table.findall("tbody/tr")
    assert sorted(r.get("data-id") for r in rows) == sorted(e["id"] for e in entries)
    by_id = {e["id"]: e for e in entries}
    for r in rows:
        e = by_id[r.get("data-id")]
        c = cells(r)
        assert "sev" in r.findall("td")[4].get("class") and e["verdict"] in r.findall("td")[4].get("class")
        assert c[5:8] == [str(e["summary"][k]) for k in ("errors", "warnings", "info")]
        assert r.find(".//a").get("href") == e["report"]
        assert text(r.find(".//a")) == e["path"].removeprefix("sample_carnets/")   # names the carnet
    assert text(dom.find(".//td[@id='total-errors']")) == str(sum(e["summary"]["errors"] for e in entries))
    assert text(dom.find(".//div[@id='total-carnets']")) == str(len(entries))
    assert text(dom.find(".//div[@id='verdict-unreadable']")) == "1"


# -- one catalogue for every word ----------------------------------------------------------------

def test_fr_and_en_catalogues_have_the_same_keys():
    fr, en = labels("fr"), labels("en")
    assert set(fr) == set(en)
    for key in fr:
        if isinstance(fr[key], str):
            assert set(re.findall(r"\{(\w+)\}", fr[key])) == set(re.findall(r"\{(\w+)\}", en[key])), key


# Words a template may hold outside the catalogue: the product name and HTML/SVG plumbing.
ALLOWED_WORDS = {"ecarte", "auditor"}


@pytest.mark.parametrize("template", sorted(p.name for p in TEMPLATES.glob("*.html.j2")))
def test_no_text_outside_the_catalogue(template):
    source = (TEMPLATES / template).read_text(encoding="utf-8")
    stripped = re.sub(r"\{#.*?#\}|\{%.*?%\}|\{\{.*?\}\}", " ", source, flags=re.S)
    stripped = re.sub(r"<[^>]*>", " ", stripped)
    stripped = re.sub(r'[\w-]+="[^"]*"', " ", stripped)   # attributes given by a block
    words = {w.lower() for w in re.findall(r"[^\W\d_]{2,}", stripped)}
    assert words <= ALLOWED_WORDS, f"{template}: {sorted(words - ALLOWED_WORDS)} should come from i18n/*.toml"


def test_index_shows_cross_carnet_findings(breached):
    result = breached[0]
    entries = [{"id": cid, "path": f"lot/{cid}", "verdict": "error", "carnet": {"casino": XSS, "table": n},
                "summary": result.summary, "report": f"{cid}/report.html"} for n, cid in ((3, "t3"), (5, "t5"))]
    doc = _batch(entries)
    # The shape auditor.across.CrossFinding.as_json gives summary.json.
    doc["cross_carnet_findings"] = [{
        "code": "EC82-03", "severity": "error", "article": "82", "message": "Ticket <b>détaché</b> deux fois",
        "expected": None, "found": None, "impact_cents": 0, "fingerprint": "0" * 20,
        "across": [{"carnet": "t3", "path": "lot/t3", "table_no": 3, "seance": 1, "coup": 4, "table": "tickets",
                    "row": 9, "cell": None},
                   {"carnet": "t5", "path": "lot/t5", "table_no": 5, "seance": 2, "coup": 1, "table": "tickets",
                    "row": 3, "cell": None}]}]
    dom = parse_strict(render_index(doc, "fr"))
    rows = dom.findall(".//table[@id='cross']/tbody/tr")
    assert len(rows) == 1 and not dom.findall(".//b")
    c = cells(rows[0])
    assert c[0] == "EC82-03" and c[2] == "Ticket <b>détaché</b> deux fois"
    links = rows[0].findall(".//a")
    assert [a.get("href") for a in links] == ["t3/report.html", "t5/report.html"]
    assert text(links[0]) == "lot/t3 (table 3) : séance 1, coup 4, ligne 9"


def test_chouette_runs_are_capped_with_a_note(monkeypatch):
    sample = SAMPLES / "compliant" / "cabourg-table8-chouette.xlsx"
    result = audit_path(sample, load_profile())
    lab = labels("fr")
    from auditor.report.chouette_runs import run_stories

    total = len(run_stories(result.carnet, "fr"))
    assert total > 3
    monkeypatch.setattr(view_module, "MAX_CHOUETTE_RUNS", 3)
    dom, _ = report_dom(result)
    section = dom.find(".//section[@id='chouette']")
    assert len(section.findall(".//table/tbody/tr")) == 3
    assert text(section.find("h2")) == f"{lab['chouette_runs']} ({total})"
    assert text(section.find("p[@class='note']")) == lab["chouette_runs_more"].format(shown=3, left=total - 3)
    monkeypatch.setattr(view_module, "MAX_CHOUETTE_RUNS", total)
    dom, _ = report_dom(result)
    assert dom.find(".//section[@id='chouette']/p[@class='note']") is None
