"""The baseline and reviews across runs: baselines, reviews carried forward, exit statuses, bad review files.

Run as users run them: the real clock (no SOURCE_DATE_EPOCH), the CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import html5lib
import pytest

from auditor.synth.breaches import inject
from batch_fixture import shuffled
from auditor.cli import main
from auditor.synth.generate import Spec, generate, write_csv_folder, write_xlsx
from auditor.reviews import load_reviews, record_review

SPEC = Spec(seances=2, coups=8, mises=4, seed=7)


@pytest.fixture(autouse=True)
def real_clock(monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)


def carnet_v1():
    t = generate(SPEC)
    inject(t, ["EC66-01", "EC63-01"], seed=7)
    return t


def doc(out: Path, cid: str = "c") -> dict:
    return json.loads((out / cid / "findings.json").read_text(encoding="utf-8"))


def one(d: dict, code: str) -> dict:
    found = [f for f in d["findings"] if f["code"] == code]
    assert len(found) == 1, (code, [f["code"] for f in d["findings"]])
    return found[0]


def by_fp(d: dict) -> dict:
    return {f["fingerprint"]: f for f in d["findings"]}


def audit(src: Path, out: Path, *extra) -> int:
    return main(["audit", str(src), "--out", str(out), "--quiet", "--jobs", "1", *extra])


def review(out: Path, fp: str, status: str, comment: str, by: str = "Mme Lefèvre", *extra) -> int:
    return main(["review", str(out), fp, "--status", status, "--comment", comment, "--by", by, *extra])


@pytest.mark.slow
@pytest.mark.subprocess
def test_three_run_story(tmp_path, capsys):
    src = tmp_path / "c"
    write_csv_folder(carnet_v1(), src)

    # 1. The first audit: no baseline, every state null, exit 1 (two errors).
    assert audit(src, tmp_path / "r1") == 1
    d1 = doc(tmp_path / "r1")
    assert {f["baseline_state"] for f in d1["findings"]} == {None}
    assert d1["absent"] == [] and all(f["review"] is None for f in d1["findings"])
    levy = one(d1, "EC66-01")
    stake = next(f for f in d1["findings"] if f["code"] == "EC63-01")   # the stake and its restitution: two

    # 2. Two findings reviewed (a prefix of the fingerprint is enough).
    assert review(tmp_path / "r1", levy["fingerprint"][:10], "justifie", "Erreur de report, voir PV n° 12") == 0
    assert review(tmp_path / "r1", stake["fingerprint"], "confirme", "Mise de 0,05 € non conforme", "M. Roux") == 0
    lines = (tmp_path / "r1" / "c" / "reviews.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(x)["status"] for x in lines] == ["justifie", "confirme"]

    # The same carnet against r1: all unchanged, reviews carried; the confirmed error still fails,
    # nothing is new so --fail-on-new passes.
    assert audit(src, tmp_path / "r2", "--baseline", str(tmp_path / "r1")) == 1
    d2 = doc(tmp_path / "r2")
    assert {f["baseline_state"] for f in d2["findings"]} == {"unchanged"}
    assert one(d2, "EC66-01")["review"]["status"] == "justifie"
    assert by_fp(d2)[stake["fingerprint"]]["review"]["by"] == "M. Roux"
    assert (tmp_path / "r2" / "c" / "reviews.jsonl").read_bytes() == (tmp_path / "r1" / "c" / "reviews.jsonl").read_bytes()
    assert audit(src, tmp_path / "r2b", "--baseline", str(tmp_path / "r1"), "--fail-on-new") == 0

    # A second decision on one finding is appended; a false positive no longer fails.
    for f in d2["findings"]:
        if f["code"] == "EC63-01":   # the stake and its restitution
            assert review(tmp_path / "r2", f["fingerprint"], "faux_positif", "Annulée au PV de séance") == 0
    assert audit(src, tmp_path / "r2c", "--baseline", str(tmp_path / "r2")) == 0
    r = by_fp(doc(tmp_path / "r2c"))[stake["fingerprint"]]["review"]
    assert r["status"] == "faux_positif" and [h["status"] for h in r["history"]] == ["confirme"]

    # 3. The carnet changes: the levy short by 0,10 € more (updated), the stake corrected
    # (absent), a coup missing (new).
    t = carnet_v1()
    coup = next(c for c in t["coups"] if (c["seance"], c["coup"]) == (levy["seance"], levy["coup"]))
    coup["prelevement"] -= 10
    bad = next(m for m in t["mises"] if m["montant"] % 10)
    bad["montant"] -= 5
    bad["restitue"] -= 5
    inject(t, ["EC64-01"], seed=99)
    write_csv_folder(t, src)
    assert audit(src, tmp_path / "r3", "--baseline", str(tmp_path / "r2c")) == 1
    d3 = doc(tmp_path / "r3")
    states = {f["fingerprint"]: f["baseline_state"] for f in d3["findings"]}
    assert states[levy["fingerprint"]] == "updated"
    assert one(d3, "EC66-01")["review"]["status"] == "justifie"      # carried through two runs
    assert "new" in {states[f["fingerprint"]] for f in d3["findings"] if f["code"] == "EC64-01"}
    absent = {a["fingerprint"]: a for a in d3["absent"]}
    assert absent[stake["fingerprint"]]["code"] == "EC63-01"
    assert absent[stake["fingerprint"]]["review"]["status"] == "faux_positif"
    counts = d3["baseline_counts"]
    assert counts["updated"] >= 1 and counts["new"] >= 1 and counts["absent"] >= 1
    assert audit(src, tmp_path / "r3b", "--baseline", str(tmp_path / "r2c"), "--fail-on-new") == 1

    # The report shows the states counted and new findings first, with the reviews and their history.
    html = (tmp_path / "r3" / "c" / "report.html").read_text(encoding="utf-8")
    section = html[html.index('id="series"'):html.index("</section>", html.index('id="series"'))]
    assert f'id="state-new">{counts["new"]}<' in section and f'id="state-absent">{counts["absent"]}<' in section
    order = [row.split('data-state="')[1].split('"')[0] for row in section.split("<tr ")[1:] if 'data-state="' in row]
    assert order == sorted(order, key=["new", "updated", "unchanged"].index) and order[0] == "new"
    assert "Erreur de report, voir PV n° 12" in section and "Annulée au PV de séance" in section
    html5lib.HTMLParser(strict=True).parse(html)


def two_carnets_one_changed(tmp_path: Path) -> Path:
    """Tables 3 and 4 audited into r1, then table 3 given a new EC64-01: the root."""
    root = tmp_path / "casino"
    write_csv_folder(carnet_v1(), root / "t3")
    write_csv_folder(generate(Spec(seances=1, coups=5, seed=2, table=4, ticket_start={10: 1, 100: 1, 1000: 1})),
                     root / "t4")
    audit(root, tmp_path / "r1")
    t = carnet_v1()
    inject(t, ["EC64-01"], seed=99)
    write_csv_folder(t, root / "t3")
    return root


@pytest.mark.slow
@pytest.mark.subprocess
def test_index_counts_states_and_lists_new_first(tmp_path):
    root = two_carnets_one_changed(tmp_path)
    audit(root, tmp_path / "r2", "--baseline", str(tmp_path / "r1"))
    index = (tmp_path / "r2" / "index.html").read_text(encoding="utf-8")
    html5lib.HTMLParser(strict=True).parse(index)
    section = index[index.index('id="series"'):]
    new = sum(c["baseline_counts"]["new"] for c in json.loads((tmp_path / "r2" / "summary.json").read_text())["carnets"])
    assert new >= 1 and f'id="state-new">{new}<' in section
    assert section.index("t3") < section.index('id="carnets"') if 'id="carnets"' in section else "t3" in section


def _resave_xlsx(path: Path) -> None:
    """Open and save again, as a spreadsheet program would (other bytes, same cells)."""
    from openpyxl import load_workbook

    wb = load_workbook(path)
    wb.properties.creator = "LibreOffice"
    wb.save(path)




@pytest.mark.subprocess
@pytest.mark.parametrize("change", ["resaved", "shuffled", "renamed-shared-file"])
def test_reviews_survive_a_resaved_or_reordered_carnet(tmp_path, change):
    t = carnet_v1()
    src = tmp_path / ("c.xlsx" if change == "resaved" else "c")
    (write_xlsx if change == "resaved" else write_csv_folder)(t, src)
    cid = src.name
    shared = tmp_path / "reviews.jsonl"
    extra = ["--reviews", str(shared)] if change == "renamed-shared-file" else []
    audit(src, tmp_path / "r1", *extra)
    d1 = doc(tmp_path / "r1", cid)
    for f in d1["findings"]:
        assert review(tmp_path / "r1", f["fingerprint"], "a_verifier", f"à revoir : {f['code']}", "X", *extra) == 0
    before = src.read_bytes() if src.is_file() else None
    if change == "resaved":
        _resave_xlsx(src)
        assert src.read_bytes() != before
    elif change == "shuffled":
        write_csv_folder(shuffled(t, 3), src, delimiter=",", decimal=".", date_style="iso")
    else:
        src = tmp_path / "renamed"
        write_csv_folder(shuffled(t, 5), src)
    audit(src, tmp_path / "r2", "--baseline", str(tmp_path / "r1"), *extra)
    d2 = doc(tmp_path / "r2", src.name)
    assert sorted(f["fingerprint"] for f in d2["findings"]) == sorted(f["fingerprint"] for f in d1["findings"])
    assert all(f["review"] and f["review"]["justification"] == f"à revoir : {f['code']}" for f in d2["findings"])
    if change != "renamed-shared-file":
        assert {f["baseline_state"] for f in d2["findings"]} == {"unchanged"}


@pytest.mark.subprocess
def test_orphan_reviews_are_listed(tmp_path):
    src = tmp_path / "c"
    write_csv_folder(carnet_v1(), src)
    audit(src, tmp_path / "r1")
    record_review(tmp_path / "r1" / "c" / "reviews.jsonl", "0123456789abcdef0123", "confirme", "ancien constat",
                  "Y", carnet="c", finding={"code": "EC64-02", "seance": 1, "coup": 3})
    audit(src, tmp_path / "r2", "--baseline", str(tmp_path / "r1"))
    d = doc(tmp_path / "r2")
    assert [o["fingerprint"] for o in d["orphan_reviews"]] == ["0123456789abcdef0123"]
    assert "0123456789abcdef0123" in (tmp_path / "r2" / "c" / "report.html").read_text(encoding="utf-8")


@pytest.mark.subprocess
def test_bad_review_files_give_clear_messages_and_lose_nothing(tmp_path, capsys):
    src = tmp_path / "c"
    write_csv_folder(carnet_v1(), src)
    audit(src, tmp_path / "r1")
    fp = one(doc(tmp_path / "r1"), "EC66-01")["fingerprint"]
    file = tmp_path / "r1" / "c" / "reviews.jsonl"
    assert review(tmp_path / "r1", fp, "justifie", "vu") == 0
    # Broken by hand: a cut line, a bad status, not JSON at all, no trailing newline.
    good = file.read_bytes()
    file.write_bytes(good + b'{"fingerprint": "' + fp.encode() + b'", "status": "peut-etre", "by": "Z", '
                     b'"justification": "?", "at": "2026-01-01T00:00:00Z"}\nnot json\n{"fingerprint": "ab')
    capsys.readouterr()
    # Unknown fingerprint, too short, bad status: exit 2, one line, no traceback.
    assert review(tmp_path / "r1", "ffffffffffffffff", "confirme", "x") == 2
    assert review(tmp_path / "r1", "ab", "confirme", "x") == 2
    with pytest.raises(SystemExit) as exc:
        review(tmp_path / "r1", fp, "peut-etre", "x")
    assert exc.value.code == 2
    assert review(tmp_path / "r1", fp, "justifie", "   ") == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "no finding with fingerprint 'ffffffffffffffff'" in err
    # A decision appended after the broken lines keeps them all.
    before = file.read_bytes()
    assert review(tmp_path / "r1", fp, "confirme", "revu") == 0
    after = file.read_bytes()
    assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 2   # the cut line ended, one more
    loaded = load_reviews(file)
    assert [e["status"] for e in loaded.entries] == ["justifie", "confirme"]
    assert len(loaded.problems) == 3 and "line 2" in loaded.problems[0] and "peut-etre" in loaded.problems[0]
    # An audit with this baseline says which lines were left out, carries the file whole, exits as usual.
    capsys.readouterr()
    assert audit(src, tmp_path / "r2", "--baseline", str(tmp_path / "r1")) == 1
    err = capsys.readouterr().err
    assert "line 3: not a JSON line" in err and "Traceback" not in err
    assert (tmp_path / "r2" / "c" / "reviews.jsonl").read_bytes().rstrip(b"\n") == after.rstrip(b"\n")
    assert one(doc(tmp_path / "r2"), "EC66-01")["review"]["status"] == "confirme"
    # A shared file that is a folder, a baseline that is not one: usage errors.
    assert audit(src, tmp_path / "r3", "--reviews", str(tmp_path)) == 2
    assert audit(src, tmp_path / "r3", "--baseline", str(src / "coups.csv")) == 2
    assert audit(src, tmp_path / "r3", "--fail-on-new") == 2


@pytest.mark.subprocess
def test_reviews_hold_only_what_was_typed_or_in_the_carnet(tmp_path):
    src = tmp_path / "c"
    write_csv_folder(carnet_v1(), src)
    audit(src, tmp_path / "r1")
    f = one(doc(tmp_path / "r1"), "EC66-01")
    review(tmp_path / "r1", f["fingerprint"], "justifie", "vu au PV", "Mme Lefèvre")
    entry = json.loads((tmp_path / "r1" / "c" / "reviews.jsonl").read_text(encoding="utf-8"))
    assert set(entry) == {"fingerprint", "status", "justification", "by", "at", "carnet", "code", "seance", "coup",
                          "impact_cents", "expected", "found"}
    assert (entry["code"], entry["seance"], entry["coup"]) == (f["code"], f["seance"], f["coup"])
    # The values the decision was made on: what makes it stale when the finding changes.
    assert (entry["impact_cents"], entry["expected"], entry["found"]) == (f["impact_cents"], f["expected"], f["found"])
    assert (entry["justification"], entry["by"], entry["carnet"]) == ("vu au PV", "Mme Lefèvre", "c")


@pytest.mark.subprocess
def test_cached_run_with_a_baseline_hits_and_keeps_states(tmp_path, capsys):
    src = tmp_path / "c"
    write_csv_folder(carnet_v1(), src)
    cache = ["--cache", str(tmp_path / "cache")]
    audit(src, tmp_path / "r1", *cache)
    audit(src, tmp_path / "r2", "--baseline", str(tmp_path / "r1"), *cache)
    capsys.readouterr()
    main(["audit", str(src), "--out", str(tmp_path / "r3"), "--jobs", "1", "--baseline", str(tmp_path / "r1"), *cache])
    assert "(1 from the cache)" in capsys.readouterr().err
    d2, d3 = doc(tmp_path / "r2"), doc(tmp_path / "r3")
    assert [f["baseline_state"] for f in d3["findings"]] == [f["baseline_state"] for f in d2["findings"]]
    # A review recorded in the baseline is applied after the cache: still a hit, and the review shows.
    fp = d2["findings"][0]["fingerprint"]
    review(tmp_path / "r1", fp, "confirme", "vu")
    capsys.readouterr()
    main(["audit", str(src), "--out", str(tmp_path / "r4"), "--jobs", "1", "--baseline", str(tmp_path / "r1"), *cache])
    assert "(1 from the cache)" in capsys.readouterr().err
    assert doc(tmp_path / "r4")["findings"][0]["review"]["status"] == "confirme"


# -- v1.2: the baseline follows findings; a review holds for what was reviewed ------------------

def _finding(code="EC66-01", seance=1, coup=3, impact=10, found="0,20 €", fp="f" * 20):
    from auditor.model import Finding, Severity

    return Finding(code=code, severity=Severity.ERROR, article="66", message="m", seance=seance, coup=coup, rang=None,
                   table="coups", row=4, column="prelevement", cell=None,
                   expected="0,30 €", found=found, impact_cents=impact, fingerprint=fp)


def test_a_review_goes_stale_when_the_values_it_was_made_on_change():
    from auditor.baseline import CarnetBaseline, apply
    from auditor.reviews import make_entry

    made = make_entry("f" * 20, "justifie", "vu au PV", "X", at="2026-11-01T00:00:00Z",
                      finding=_finding().as_json())
    same = apply([_finding()], CarnetBaseline((), (made,)))
    assert same.reviews["f" * 20]["stale"] is False
    assert not same.blocking(_finding(), only_new=False)            # justified: clears the exit status
    grown = _finding(impact=100, found="0,10 €")
    now = apply([grown], CarnetBaseline((), (made,)))
    assert now.reviews["f" * 20]["stale"] is True
    assert now.blocking(grown, only_new=False)                      # stale: no longer clears
    # Under --fail-on-new a finding whose review is stale counts as new, even when not new.
    before = ({**{k: grown.as_json()[k] for k in ("fingerprint", "code", "severity", "expected", "found",
                                                  "impact_cents")}},)
    against = apply([grown], CarnetBaseline(before, (made,)))
    assert against.state(grown) == "unchanged" and against.blocking(grown, only_new=True)
    # A decision recorded before the values were kept cannot be judged: not stale.
    old = {k: v for k, v in made.items() if k not in ("impact_cents", "expected", "found")}
    assert apply([grown], CarnetBaseline((), (old,))).reviews["f" * 20]["stale"] is False


def test_carnets_are_matched_by_id_cover_or_findings_and_the_rest_vanish():
    from auditor.baseline import PreviousRun, match

    prev = PreviousRun(
        findings={fp: {"fingerprint": fp} for fp in ("a1", "a2", "b1", "c1", "d1")},
        carnets={"same": {"path": "same", "cover": ("C", "1", "1", "2026-01-01"), "fps": ("a1",)},
                 "old-name": {"path": "old", "cover": ("C", "2", "1", "2026-01-02"), "fps": ("b1",)},
                 "no-cover": {"path": "nc", "cover": None, "fps": ("c1", "a2")},
                 "gone": {"path": "gone", "cover": ("C", "4", "1", "2026-01-04"), "fps": ("d1",)}})
    for c in prev.carnets.values():
        c["findings"] = {fp: prev.findings[fp] for fp in c["fps"]}
    m = match(prev, [("same", ("C", "1", "1", "2026-01-01"), frozenset({"a1"})),
                     ("new-name", ("C", "2", "1", "2026-01-02"), frozenset()),
                     ("moved", None, frozenset({"c1", "x"})),
                     ("fresh", ("C", "9", "1", "2026-01-09"), frozenset({"y"}))])
    assert m.predecessor == {"same": "same", "new-name": "old-name", "moved": "no-cover"}
    assert m.renamed == [{"from": "old-name", "to": "new-name"}, {"from": "no-cover", "to": "moved"}]
    assert m.vanished == ["gone"] and m.matched == 3 and m.total == 4


@pytest.mark.subprocess
def test_a_baseline_of_another_root_or_an_empty_folder_is_said(tmp_path, capsys):
    src = tmp_path / "c"
    write_csv_folder(carnet_v1(), src)
    other = tmp_path / "other"
    write_csv_folder(generate(Spec(seances=1, coups=5, seed=3, table=9, casino="Autre casino")), other / "x")
    write_csv_folder(generate(Spec(seances=1, coups=5, seed=4, table=8, casino="Autre casino")), other / "y")
    audit(other, tmp_path / "r-other")
    capsys.readouterr()
    assert audit(src, tmp_path / "r1", "--baseline", str(tmp_path / "r-other")) == 1
    err = capsys.readouterr().err
    assert "only 0 of 1 carnet(s) of this run are found in it" in err
    assert {f["baseline_state"] for f in doc(tmp_path / "r1")["findings"]} == {"new"}
    # An empty folder, or one that does not exist yet: a first night, said, never a usage error.
    (tmp_path / "empty").mkdir()
    for folder in ("empty", "not-yet"):
        assert audit(src, tmp_path / f"r-{folder}", "--baseline", str(tmp_path / folder), "--fail-on-new") == 1
        err = capsys.readouterr().err
        assert "no previous run in that folder" in err and "only" not in err
        changes = json.loads((tmp_path / f"r-{folder}" / "changes.json").read_text(encoding="utf-8"))
        assert changes["baseline"]["first_night"] is True
        assert changes["counts"]["new"] == len(doc(tmp_path / f"r-{folder}")["findings"])


@pytest.mark.parametrize("cache", [False, True], ids=["alone", "cached"])
def test_a_carnet_audited_alone_is_recognised_renamed_by_its_cover(tmp_path, cache):
    """A carnet audited alone against last night's batch, under a new name,
    with none of its findings as they were (it was written again): its cover
    (casino, table, first séance and date) says it is last night's carnet.
    The same with or without a cache, as on a Dask cluster (a helper's hunt)."""
    src, extra = tmp_path / "in", (["--cache", str(tmp_path / "cache")] if cache else [])
    for i in range(2):
        write_csv_folder(generate(Spec(seances=1, coups=4, seed=i, table=1 + i, casino="Casino A")), src / f"c{i}")
    audit(src, tmp_path / "n1", *extra)
    shutil.rmtree(src / "c0")
    write_csv_folder(generate(Spec(seances=1, coups=6, seed=7, table=1, casino="Casino A")), src / "c0-renamed")
    audit(src / "c0-renamed", tmp_path / "n2", "--baseline", str(tmp_path / "n1"), *extra)
    changes = json.loads((tmp_path / "n2" / "changes.json").read_text(encoding="utf-8"))
    assert [(r["from"], r["to"]) for r in changes["baseline"]["renamed"]] == [("c0", "c0-renamed")], changes["baseline"]


def test_a_damaged_summary_of_the_baseline_is_said_as_a_summary(tmp_path, capsys):
    """Last night's summary.json cut short: said for what it is (its findings
    across carnets, its covers), not as a carnet's findings.json; each
    carnet's own findings still match."""
    src = tmp_path / "in"
    write_csv_folder(carnet_v1(), src / "c")
    write_csv_folder(generate(Spec(seances=1, coups=5, seed=3, table=9)), src / "d")
    audit(src, tmp_path / "r1")
    summary = tmp_path / "r1" / "summary.json"
    summary.write_bytes(summary.read_bytes()[:200])
    capsys.readouterr()
    audit(src, tmp_path / "r2", "--baseline", str(tmp_path / "r1"))
    err = capsys.readouterr().err
    assert f"{summary}: not a summary.json of this tool" in err and "findings.json" not in err
    states = {f["baseline_state"] for f in doc(tmp_path / "r2", "c")["findings"]}
    assert states and "new" not in states


@pytest.mark.subprocess
def test_changes_are_deterministic_and_speak_the_reports_language(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    root = two_carnets_one_changed(tmp_path)
    for name in ("a", "b"):
        audit(root, tmp_path / name, "--baseline", str(tmp_path / "r1"))
    audit(root, tmp_path / "en", "--baseline", str(tmp_path / "r1"), "--lang", "en")
    for file in ("changes.json", "changes.txt"):
        assert (tmp_path / "a" / file).read_bytes() == (tmp_path / "b" / file).read_bytes()
    changes = json.loads((tmp_path / "a" / "changes.json").read_text(encoding="utf-8"))
    assert changes["counts"]["new"] >= 1 and {x["carnet"] for x in changes["new"]} == {"t3"}
    assert all(x["message"] and "impact_cents" in x for x in changes["new"])
    fr = (tmp_path / "a" / "changes.txt").read_text(encoding="utf-8")
    en = (tmp_path / "en" / "changes.txt").read_text(encoding="utf-8")
    assert fr.startswith("Ce qui a changé depuis l'audit précédent") and "Constats nouveaux" in fr
    assert en.startswith("What changed since the previous audit") and "New findings" in en
    index = (tmp_path / "a" / "index.html").read_text(encoding="utf-8")
    html5lib.HTMLParser(strict=True).parse(index)
    assert 'href="changes.txt"' in index and 'href="changes.json"' in index
    # Every field written is documented (docs/changes.md), so a field added undocumented fails here.
    documented = (Path(__file__).resolve().parent.parent / "docs" / "changes.md").read_text(encoding="utf-8")
    written = set(changes) | set(changes["baseline"]) | set(changes["counts"])
    written |= {k for x in changes["new"] + changes["across"] for k in x}
    assert not {k for k in written if f"`{k}`" not in documented}
    # Without --baseline, no changes file.
    audit(root, tmp_path / "plain")
    assert not (tmp_path / "plain" / "changes.json").exists()


def test_two_carnets_sharing_a_fingerprint_are_each_compared_with_their_own(tmp_path):
    """Overlapping carnets (same casino, table, séance and date) give the same fingerprint to
    alike findings: each carnet's finding is compared with its own baseline carnet's."""
    from auditor.baseline import Baseline

    fp = "ab" * 10
    for cid, found in (("a", "4"), ("b", "409")):
        (tmp_path / "r" / cid).mkdir(parents=True)
        (tmp_path / "r" / cid / "findings.json").write_text(json.dumps({"findings": [
            {"fingerprint": fp, "code": "EC83-02", "severity": "info", "expected": "5000", "found": found,
             "impact_cents": 0}]}), encoding="utf-8")
    b = Baseline(tmp_path / "r")
    assert b.match([("a", None, frozenset({fp})), ("b", None, frozenset({fp}))]) == []
    assert [x["found"] for x in b.context("a", {fp}).baseline] == ["4"]
    assert [x["found"] for x in b.context("b", {fp}).baseline] == ["409"]
