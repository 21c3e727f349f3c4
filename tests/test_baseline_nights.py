"""Several nights as controllers run them: the command line, the real clock
(no SOURCE_DATE_EPOCH), reviews recorded with `ecarte-audit review` into each
carnet's reviews.jsonl (no --reviews file), carnets deleted, renamed, taken
out for a night and put back, one output folder reused night after night.

- a decision on a finding across carnets, whichever carnet's file holds it,
  reaches every carnet it involves, summary.json, changes.json, the history
  and the exit status; two carnets' files deciding differently: the latest
  recorded wins, in every carnet;
- the baseline is the previous run as its summary.json lists it, never the
  folders older runs left; a folder that is its own baseline does not keep
  the reports of carnets gone, and keeps their decisions;
- a vanished carnet's finding acknowledged `corrige` closes in the history;
  a carnet out for a night comes back with its reviews.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from auditor.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]


@pytest.fixture(autouse=True)
def real_clock(monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)


def generate(path: Path, table: int, casino: str, seed: int, *extra) -> None:
    assert main(["generate", str(path), "--table", str(table), "--casino", casino, "--seed", str(seed),
                 *extra]) == 0


def audit(src: Path, out: Path, *extra) -> int:
    return main(["audit", str(src), "--out", str(out), "--quiet", "--jobs", "2", *extra])


def review(out: Path, fp: str, status: str, comment: str, by: str = "ctrl") -> int:
    return main(["review", str(out), fp, "--status", status, "--comment", comment, "--by", by])


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def findings(out: Path, cid: str) -> list[dict]:
    return load(out / cid / "findings.json")["findings"]


def history(folder: Path, sql: str, *params) -> list[tuple]:
    from auditor.history import connect

    return connect(folder).execute(sql, list(params)).fetchall()


def next_second() -> None:
    """Reviews and runs are stamped to the second: a decision after a run is in a later second."""
    time.sleep(1.1)


def test_a_review_of_a_finding_across_carnets_reaches_every_carnet_and_document(tmp_path):
    from auditor.reviews import record_review

    root = tmp_path / "carnets"
    # Two tables of one casino that detached the same tickets: EC82-03 across them, their only errors.
    generate(root / "a.xlsx", 1, "Casino X", 3, "--coups", "5", "--seances", "1")
    generate(root / "b.xlsx", 2, "Casino X", 4, "--coups", "5", "--seances", "1")
    n1, n2, n3, hist = (tmp_path / n for n in ("n1", "n2", "n3", "hist"))
    assert audit(root, n1) == 1
    across = [f for f in findings(n1, "a.xlsx") if f["code"] == "EC82-03"]
    assert across and all(f["severity"] != "error" or f["code"] == "EC82-03"
                          for cid in ("a.xlsx", "b.xlsx") for f in findings(n1, cid))
    fps = sorted(f["fingerprint"] for f in across)
    # Some of them are first placed in b.xlsx: summary.json and changes.json list them under b.
    assert {f["across"][0]["carnet"] for f in load(n1 / "summary.json")["cross_carnet"]} == {"a.xlsx", "b.xlsx"}
    next_second()
    for fp in fps:
        assert review(n1, fp, "justifie", "tickets partagés, vu") == 0
    # `review` wrote each decision once, in one carnet's file.
    assert not (n1 / "b.xlsx" / "reviews.jsonl").exists()
    assert audit(root, n2, "--baseline", str(n1), "--history", str(hist)) == 0   # every error justified
    for cid in ("a.xlsx", "b.xlsx"):
        seen = {f["fingerprint"]: f for f in findings(n2, cid) if f["code"] == "EC82-03"}
        assert sorted(seen) == fps
        assert {f["review"]["status"] for f in seen.values()} == {"justifie"}, cid
    assert {f["review"]["status"] for f in load(n2 / "summary.json")["cross_carnet"]} == {"justifie"}
    changes = load(n2 / "changes.json")
    assert sorted(f["fingerprint"] for f in changes["across"]) == fps
    assert {f["review"]["status"] for f in changes["across"]} == {"justifie"}
    assert history(hist, "select fingerprint, review_status from findings where code = 'EC82-03' order by 1") \
        == [(fp, "justifie") for fp in fps]
    # The reviews files stay as they were: a's carried, nothing written into b's.
    assert not (n2 / "b.xlsx" / "reviews.jsonl").exists()
    assert len((n2 / "a.xlsx" / "reviews.jsonl").read_text(encoding="utf-8").splitlines()) == len(fps)

    # A later decision on one of them recorded in b's file (another front end, the
    # other carnet's folder): the latest recorded is the decision, in both carnets.
    next_second()
    fp = fps[0]
    finding = next(f for f in findings(n2, "b.xlsx") if f["fingerprint"] == fp)
    record_review(n2 / "b.xlsx" / "reviews.jsonl", fp, "confirme", "pas le même ticket", "inspecteur",
                  carnet="b.xlsx", finding=finding)
    assert audit(root, n3, "--baseline", str(n2), "--history", str(hist)) == 1
    for cid in ("a.xlsx", "b.xlsx"):
        f = next(f for f in findings(n3, cid) if f["fingerprint"] == fp)
        assert f["review"]["status"] == "confirme" and f["review"]["by"] == "inspecteur", cid
        assert [h["status"] for h in f["review"]["history"]] == ["justifie"]
    listed = {f["fingerprint"]: f for f in load(n3 / "summary.json")["cross_carnet"]}
    assert listed[fp]["review"]["status"] == "confirme"
    assert {listed[x]["review"]["status"] for x in fps[1:]} == {"justifie"}
    assert history(hist, "select review_status from findings where fingerprint = ?", fp) == [("confirme",)]


def test_decisions_of_two_files_on_one_fingerprint_take_the_latest_then_the_files_order(tmp_path):
    from auditor.baseline import pooled_reviews
    from auditor.reviews import latest, record_review

    for cid, status, at in (("b.xlsx", "justifie", "2026-03-02T10:00:00Z"), ("a.xlsx", "confirme", "2026-03-02T09:00:00Z"),
                            ("c.xlsx", "faux_positif", "2026-03-01T09:00:00Z")):
        record_review(tmp_path / cid / "reviews.jsonl", "f" * 20, status, "vu", "ctrl", at=at, carnet=cid)
    # The same second in two files: the later file's id decides, whoever reads it.
    record_review(tmp_path / "a.xlsx" / "reviews.jsonl", "e" * 20, "confirme", "vu", "ctrl",
                  at="2026-03-02T10:00:00Z", carnet="a.xlsx")
    record_review(tmp_path / "b.xlsx" / "reviews.jsonl", "e" * 20, "justifie", "vu", "ctrl",
                  at="2026-03-02T10:00:00Z", carnet="b.xlsx")
    entries, files = pooled_reviews(tmp_path, [])
    decided = latest(entries)
    assert decided["f" * 20]["status"] == "justifie"
    assert [h["status"] for h in decided["f" * 20]["history"]] == ["faux_positif", "confirme"]
    assert decided["e" * 20]["status"] == "justifie"
    assert len(files) == len(entries) == 5


@pytest.mark.parametrize("later_at", ["2026-03-02T10:00:00Z", "2026-03-02T12:00:00+02:00"], ids=["utc", "offset"])
def test_the_latest_decision_is_the_latest_moment_whatever_else_the_files_hold(tmp_path, later_at):
    """A file whose lines are not in time order (a line recorded on another
    machine, a clock set back, a hand edit) and times written with an offset:
    the decision recorded last, as a moment, holds — whatever other lines come first."""
    from auditor.baseline import pooled_reviews
    from auditor.reviews import latest, record_review

    record_review(tmp_path / "a.xlsx" / "reviews.jsonl", "9" * 20, "confirme", "vu", "ctrl",
                  at="2026-03-05T09:00:00Z", carnet="a.xlsx")        # unrelated, and later than both below
    record_review(tmp_path / "a.xlsx" / "reviews.jsonl", "f" * 20, "justifie", "vu", "ctrl",
                  at="2026-03-02T09:00:00Z", carnet="a.xlsx")
    record_review(tmp_path / "b.xlsx" / "reviews.jsonl", "f" * 20, "confirme", "vu", "ctrl",
                  at=later_at, carnet="b.xlsx")
    assert latest(pooled_reviews(tmp_path, [])[0])["f" * 20]["status"] == "confirme"


def test_one_folder_night_after_night_forgets_carnets_deleted_or_renamed(tmp_path):
    root, reports, cache = tmp_path / "carnets", tmp_path / "reports", tmp_path / "cache"
    for name, table, seed in (("a.xlsx", 1, 3), ("b.xlsx", 2, 4), ("c.xlsx", 3, 5)):
        generate(root / name, table, f"Casino {name[0].upper()}", seed, "--breaches", "EC66-01")
    nightly = ("--baseline", str(reports), "--cache", str(cache))
    assert audit(root, reports, *nightly) == 1
    b_fps = [f["fingerprint"] for f in findings(reports, "b.xlsx")]
    (reports / "b.xlsx" / "notes.txt").write_text("à revoir avec le directeur\n", encoding="utf-8")
    (root / "b.xlsx").unlink()                            # b deleted
    (root / "c.xlsx").rename(root / "c-renamed.xlsx")     # c saved under another name
    next_second()
    assert audit(root, reports, *nightly, "--fail-on-new") == 0
    changes = load(reports / "changes.json")
    assert changes["baseline"]["vanished"] == ["b.xlsx"]
    assert changes["baseline"]["renamed"] == [{"from": "c.xlsx", "to": "c-renamed.xlsx"}]
    assert sorted(f["fingerprint"] for v in changes["vanished"] for f in v["findings"]) == sorted(b_fps)
    # The reports of the carnets gone are left as they are (never deleted), outside this night's summary.
    assert sorted(p.name for p in (reports / "b.xlsx").iterdir()) == ["findings.json", "notes.txt", "report.html"]
    assert (reports / "c.xlsx" / "findings.json").is_file()
    assert [c["id"] for c in load(reports / "summary.json")["carnets"]] == ["a.xlsx", "c-renamed.xlsx"]
    # The morning after: the vanished carnet's finding acknowledged from this night's folder.
    next_second()
    assert review(reports, b_fps[0], "corrige", "carnet retiré, régularisé") == 0
    for night in (3, 4):
        next_second()
        assert audit(root, reports, *nightly, "--fail-on-new") == 0, night
        changes = load(reports / "changes.json")
        assert changes["baseline"]["vanished"] == [] and changes["baseline"]["renamed"] == [], night
        assert changes["counts"]["vanished"] == changes["counts"]["renamed"] == 0
        assert changes["baseline"]["matched_carnets"] == 2
        assert [c["id"] for c in load(reports / "summary.json")["carnets"]] == ["a.xlsx", "c-renamed.xlsx"]
        # The decision and the user's file are kept, the old reports untouched.
        assert sorted(p.name for p in (reports / "b.xlsx").iterdir()) == [
            "findings.json", "notes.txt", "report.html", "reviews.jsonl"]


def test_a_baseline_is_the_run_its_summary_lists_not_the_folders_left_beside_it(tmp_path):
    root = tmp_path / "carnets"
    for name, table, seed in (("a.xlsx", 1, 3), ("b.xlsx", 2, 4)):
        generate(root / name, table, "Casino A", seed, "--breaches", "EC66-01")
    reports = tmp_path / "reports"
    assert audit(root, reports) == 1
    (root / "b.xlsx").unlink()
    next_second()
    assert audit(root, reports) == 1        # no baseline: reports/b.xlsx stays as it was written
    assert (reports / "b.xlsx" / "findings.json").exists()
    next_second()
    audit(root, tmp_path / "n3", "--baseline", str(reports))
    s = load(tmp_path / "n3" / "summary.json")
    assert s["baseline"]["vanished"] == [] and s["baseline"]["matched_carnets"] == 1
    assert load(tmp_path / "n3" / "changes.json")["counts"]["vanished_findings"] == 0


def test_a_carnet_alone_in_its_own_folder_renamed_is_said_renamed_and_its_old_reports_kept(tmp_path):
    src, reports = tmp_path / "carnets", tmp_path / "reports"
    generate(src / "table1.xlsx", 1, "Casino A", 3, "--breaches", "EC66-01")
    assert audit(src / "table1.xlsx", reports, "--baseline", str(reports)) == 1
    (src / "table1.xlsx").rename(src / "table1 (2).xlsx")
    next_second()
    assert audit(src / "table1 (2).xlsx", reports, "--baseline", str(reports), "--fail-on-new") == 0
    assert load(reports / "changes.json")["baseline"]["renamed"] == [{"from": "table1.xlsx", "to": "table1__2_.xlsx"}]
    assert (reports / "table1.xlsx" / "findings.json").is_file()   # never deleted


def test_a_vanished_carnets_finding_acknowledged_closes_and_a_carnet_back_keeps_its_reviews(tmp_path):
    root, hist = tmp_path / "carnets", tmp_path / "hist"
    generate(root / "a.xlsx", 1, "Casino A", 3)
    generate(root / "b.xlsx", 2, "Casino B", 4, "--breaches", "EC66-01")
    generate(root / "c.xlsx", 3, "Casino C", 5, "--breaches", "EC66-01")
    n = [tmp_path / f"n{i}" for i in range(6)]
    assert audit(root, n[1], "--baseline", str(n[0]), "--history", str(hist)) == 1
    b_fp = next(f["fingerprint"] for f in findings(n[1], "b.xlsx") if f["code"] == "EC66-01")
    c_fp = next(f["fingerprint"] for f in findings(n[1], "c.xlsx") if f["code"] == "EC66-01")
    next_second()
    assert review(n[1], c_fp, "justifie", "arrondi admis") == 0
    aside = tmp_path / "aside"
    aside.mkdir()
    (root / "b.xlsx").rename(aside / "b.xlsx")   # b withdrawn for good
    (root / "c.xlsx").rename(aside / "c.xlsx")   # c out for one night, re-exported
    next_second()
    audit(root, n[2], "--baseline", str(n[1]), "--history", str(hist), "--fail-on-new")
    assert load(n[2] / "changes.json")["baseline"]["vanished"] == ["b.xlsx", "c.xlsx"]
    next_second()
    assert review(n[2], b_fp, "corrige", "régularisé") == 0
    (aside / "c.xlsx").rename(root / "c.xlsx")
    next_second()
    # c is back unchanged: new against last night, its justification holds.
    assert audit(root, n[3], "--baseline", str(n[2]), "--history", str(hist), "--fail-on-new") == 0
    f = next(f for f in findings(n[3], "c.xlsx") if f["fingerprint"] == c_fp)
    assert f["baseline_state"] == "new" and f["review"]["status"] == "justifie"
    for i in (4, 5):
        next_second()
        assert audit(root, n[i], "--baseline", str(n[i - 1]), "--history", str(hist), "--fail-on-new") == 0
        assert (n[i] / "b.xlsx" / "reviews.jsonl").is_file()   # the decision goes on with the series
    (closed_at, is_open, status), = history(hist, "select closed_at, open, review_status from findings "
                                                  "where fingerprint = ?", b_fp)
    assert closed_at is not None and is_open is False and status == "corrige"
    assert history(hist, "select open, review_status from findings where fingerprint = ?", c_fp) \
        == [(True, "justifie")]


def test_a_carnet_audited_alone_into_the_nightly_folder_leaves_the_others_reports(tmp_path):
    root, reports = tmp_path / "carnets", tmp_path / "reports"
    for name, table, seed in (("a.xlsx", 1, 3), ("b.xlsx", 2, 4)):
        generate(root / name, table, "Casino A", seed, "--breaches", "EC66-01")
    assert audit(root, reports, "--baseline", str(reports)) == 1
    next_second()
    audit(root / "a.xlsx", reports, "--baseline", str(reports))
    assert sorted(p.name for p in (reports / "b.xlsx").iterdir()) == ["findings.json", "report.html"]
    next_second()
    assert audit(root, reports, "--baseline", str(reports), "--fail-on-new") == 0
    assert load(reports / "changes.json")["baseline"]["vanished"] == []


def test_no_report_is_ever_deleted_in_a_folder_that_is_its_own_baseline(tmp_path):
    """A copy the user made of a carnet's folder (its signed procès-verbal
    kept), the reports of carnets this run does not audit, a carnet that
    only shares findings with another (a rename guessed from fingerprints):
    all left as they are, byte for byte."""
    import shutil

    root, reports = tmp_path / "carnets", tmp_path / "reports"
    for name, table, seed in (("a.xlsx", 1, 3), ("b.xlsx", 2, 4), ("c.xlsx", 3, 5)):
        generate(root / name, table, "Casino A", seed, "--breaches", "EC66-01")
    assert audit(root, reports, "--baseline", str(reports)) == 1
    shutil.copytree(reports / "b.xlsx", reports / "b-copie-signee")
    before = {p.relative_to(reports).as_posix(): p.read_bytes() for p in reports.rglob("*")
              if p.is_file() and p.parent != reports and not p.parent.name.startswith(("a.", "dashboard"))}
    next_second()
    main(["audit", str(root / "a.xlsx"), str(root / "c.xlsx"), "--out", str(reports), "--quiet",
          "--baseline", str(reports)])                                            # a batch of part of the folder
    next_second()
    audit(root / "a.xlsx", reports, "--baseline", str(reports))                    # one carnet alone
    after = {k: (reports / k).read_bytes() for k in before if (reports / k).is_file()}
    assert {k for k in before if not k.startswith("c.xlsx/")} <= set(after)
    assert all(after[k] == before[k] for k in after if k.startswith(("b.xlsx/", "b-copie-signee/")))
