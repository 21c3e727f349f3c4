"""A finding across carnets (EC82-03 across the tables of one casino) is a
finding like any other (outputs.md v1.2): in the findings.json, verdict,
counts, report and index row of each carnet it involves, with one
fingerprint, once in the totals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.cli import main
from auditor.synth.generate import Spec, generate, write_csv_folder, write_xlsx
from auditor.i18n import labels
from report_fixtures import parse_strict, text


@pytest.fixture(scope="module")
def batch(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cross") / "casino"
    # Same ticket numbers at tables 1 and 2 of one casino (generated alike); table 9 is another casino's.
    write_csv_folder(generate(Spec(seances=1, coups=5, seed=1, table=1)), root / "t1")
    write_xlsx(generate(Spec(seances=1, coups=5, seed=2, table=2)), root / "t2.xlsx")
    write_csv_folder(generate(Spec(seances=1, coups=5, seed=3, table=9, casino="Autre casino")), root / "t9")
    out = root.parent / "out"
    assert main(["audit", str(root), "--out", str(out), "--quiet", "--format", "html,json"]) == 1
    return out


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


def _involves(f: dict, cid: str) -> bool:
    return cid in {p["carnet"] for p in f["across"]}


@pytest.mark.slow
@pytest.mark.subprocess
def test_summary_rows_count_the_cross_findings_and_totals_count_them_once(batch):
    s = _summary(batch)
    cross = s["cross_carnet_findings"]
    assert cross
    rows = {e["id"]: e for e in s["carnets"]}
    for cid in ("t1", "t2.xlsx"):
        e = rows[cid]
        mine = [k for k, f in enumerate(cross) if _involves(f, cid)]
        assert e["summary"]["errors"] == len(mine)            # its findings across carnets, counted
        assert e["verdict"] == "error"                        # not "en ordre"
        assert e["cross_carnet"]["findings"] == mine
        assert e["cross_carnet"]["errors"] == sum(cross[k]["severity"] == "error" for k in mine)
    assert rows["t9"]["verdict"] == "ok" and rows["t9"]["cross_carnet"]["findings"] == []
    own = sum(e["summary"]["errors"] - e["cross_carnet"]["errors"] for e in s["carnets"])
    assert s["totals"]["errors"] == own + sum(f["severity"] == "error" for f in cross)
    assert s["totals"]["impact_cents"] == sum(e["summary"]["impact_cents"] - e["cross_carnet"]["impact_cents"]
                                              for e in s["carnets"]) + sum(f["impact_cents"] for f in cross)


@pytest.mark.slow
@pytest.mark.subprocess
def test_findings_json_of_each_carnet_holds_the_finding_with_one_fingerprint(batch):
    s = _summary(batch)
    docs = {cid: json.loads((batch / cid / "findings.json").read_text(encoding="utf-8")) for cid in ("t1", "t2.xlsx")}
    for f in s["cross_carnet_findings"]:
        seen = {}
        for cid, doc in docs.items():
            mine = [g for g in doc["findings"] if g["fingerprint"] == f["fingerprint"]]
            assert len(mine) == 1, cid
            g = mine[0]
            assert g["code"] == "EC82-03" and g["across"][0]["carnet"] == cid      # this carnet's place first
            assert {p["carnet"] for p in g["across"]} == {"t1", "t2.xlsx"}
            assert g["table"] == "tickets" and g["row"] == g["across"][0]["row"]
            other = next(e["path"] for e in s["carnets"] if e["id"] != cid and _involves(f, e["id"]))
            assert other in g["message"]                                          # names the other carnet
            seen[cid] = g
        assert len({g["fingerprint"] for g in seen.values()}) == 1
    for cid, doc in docs.items():
        n = sum(1 for f in s["cross_carnet_findings"] if _involves(f, cid))
        assert doc["summary"]["errors"] == n


@pytest.mark.slow
@pytest.mark.subprocess
def test_each_report_shows_its_cross_findings_with_a_link_to_the_other(batch):
    s = _summary(batch)
    fr = labels("fr")
    for here, other in (("t1", "t2.xlsx"), ("t2.xlsx", "t1")):
        dom = parse_strict((batch / here / "report.html").read_text(encoding="utf-8"))
        verdict = text(dom.find(".//p[@id='verdict']"))
        assert verdict.startswith(fr["verdict_error"]) and fr["verdict_ok"] not in verdict
        n = len([f for f in s["cross_carnet_findings"] if _involves(f, here)])
        assert text(dom.find(".//div[@id='count-error']")) == str(n)
        section = dom.find(".//section[@id='cross']")
        rows = section.findall(".//tbody/tr")
        assert len(rows) == n
        other_path = next(e["path"] for e in s["carnets"] if e["id"] == other)
        for r in rows:
            cells = r.findall("td")
            assert other_path in text(cells[2])                  # the message names the other carnet
            link = cells[4].find("a")
            assert link is not None and link.get("href") == f"../{other}/report.html"
            assert (batch / here / link.get("href")).resolve() == (batch / other / "report.html").resolve()
    dom = parse_strict((batch / "t9" / "report.html").read_text(encoding="utf-8"))
    assert dom.find(".//section[@id='cross']") is None
    assert text(dom.find(".//p[@id='verdict']")).startswith(fr["verdict_ok"])


@pytest.mark.slow
@pytest.mark.subprocess
def test_index_rows_count_them(batch):
    s = _summary(batch)
    dom = parse_strict((batch / "index.html").read_text(encoding="utf-8"))
    rows = {r.get("data-id"): r for r in dom.findall(".//table[@id='carnets']/tbody/tr")}
    for e in s["carnets"]:
        cells = rows[e["id"]].findall("td")
        n = e["summary"]["errors"]   # its own findings and those across carnets
        assert text(cells[5]).split()[0] == str(n)
        assert e["verdict"] in rows[e["id"]].get("class")
    assert text(dom.find(".//td[@id='total-errors']")) == str(s["totals"]["errors"])
    assert text(dom.find(".//div[@id='verdict-ok']")) == "1"
    assert text(dom.find(".//div[@id='verdict-error']")) == "2"
