""""The latest" in the history: what the `findings` view takes of a
finding's several observations (its values, its review, its séances), the
latest in the history's run order — the run's time, then, for two runs in
one second, the run id (docs/interpretations.md "Two runs in one second, in
one history") — and never whichever row DuckDB happens to meet first.

The first test is the controller's night (issue found by the defect hunt,
r4): a justification recorded between nights, one night unchanged, the cell
edited in place; the next night the justification is stale, and the history
says so, counts the money and shows it in the indicators — before and after
the run files are folded into the ledger. The others go over every place
that picks one of several rows, with chosen times and run ids, each state
read unfolded, folded as the runs came and folded at once."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import pytest

from auditor import history

# -- as controllers run it -----------------------------------------------------------


def _cli(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "auditor", *args], env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.slow
@pytest.mark.subprocess
# Night 3 alone unfolded (the ledger and the last run) is among the fold states of the systematic test below.
@pytest.mark.parametrize("unfolded", [(), (2, 3)], ids=["folded-each-night", "nights2-3-unfolded"])
def test_a_justification_gone_stale_no_longer_clears_in_the_history(tmp_path, unfolded):
    """`review … --status justifie` between nights; night 2 unchanged; the
    levy of the finding's coup edited in place (0,30 → 0,20 where 0,40 is
    due); night 3: stale in findings.json, and in the history's `findings`,
    money and indicators (0,20 €) — whether nights 2 and 3 are still run
    files (another run held the fold) or folded into the ledger."""
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    env["LANG"] = "fr_FR.UTF-8"
    carnet, hist = tmp_path / "carnets" / "b", tmp_path / "hist"
    p = _cli("generate", str(carnet), "--container", "csv", "--table", "2", "--casino", "Casino B",
             "--breaches", "EC66-01", "--seed", "4", env=env)
    assert p.returncode == 0, p.stderr
    ended = [-1]

    def night(n: int) -> None:
        while int(time.time()) <= ended[0]:   # each night in a second of its own, as real nights are
            time.sleep(0.05)
        args = ["audit", str(tmp_path / "carnets"), "--out", str(tmp_path / f"n{n}"), "--baseline",
                str(tmp_path / f"n{n - 1}"), "--history", str(hist), "--quiet", "--jobs", "1"]
        if n in unfolded:
            # Another run folding the history at that moment: this run leaves its file to the next.
            with history._lock(hist) as mine:
                assert mine
                p = _cli(*args, env=env)
        else:
            p = _cli(*args, env=env)
        assert p.returncode in (0, 1), p.stderr
        ended[0] = int(time.time())

    night(1)
    found = json.loads((tmp_path / "n1" / "b" / "findings.json").read_text(encoding="utf-8"))["findings"]
    f = next(f for f in found if f["code"] == "EC66-01")
    fp, row = f["fingerprint"], f["row"]
    assert (f["table"], f["column"], f["impact_cents"]) == ("coups", "prelevement", 10)
    time.sleep(0.3)
    p = _cli("review", str(tmp_path / "n1"), fp, "--status", "justifie", "--comment", "arrondi", "--by", "ctrl",
             env=env)
    assert p.returncode == 0, p.stderr
    night(2)   # nothing changed: the justification holds, the finding cleared
    assert _cli_history(hist, fp, env) == [("10", "justifie", "False")]
    # The inspector corrects the levy written — to a value still short: the finding changes.
    path = carnet / "coups.csv"
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    head = next(csv.reader(io.StringIO(lines[0].decode("utf-8").strip()), delimiter=";"))
    cells = lines[row - 1].decode("utf-8").rstrip("\r").split(";")
    col = head.index("prelevement")
    assert cells[col] == "0,30", cells
    cells[col] = "0,20"
    lines[row - 1] = (";".join(cells) + ("\r" if lines[row - 1].endswith(b"\r") else "")).encode("utf-8")
    path.write_bytes(b"\n".join(lines))
    night(3)
    review = next(f["review"] for f in json.loads((tmp_path / "n3" / "b" / "findings.json")
                                                  .read_text(encoding="utf-8"))["findings"]
                  if f["fingerprint"] == fp)
    assert (review["status"], review["stale"]) == ("justifie", True)
    assert len(list(hist.glob("run-*.parquet"))) == len(unfolded)

    def check() -> None:
        # The observations say it; the finding's latest review is its latest observation's.
        p = _cli("history", str(hist), "--sql", f"SELECT review_stale FROM observations WHERE fingerprint = '{fp}' "
                 "AND review_status IS NOT NULL ORDER BY run_at", "--lang", "en", env=env)
        assert p.returncode == 0, p.stderr
        assert [line.strip() for line in p.stdout.splitlines()[2:]] == ["False", "True"]
        assert _cli_history(hist, fp, env) == [("20", "justifie", "True")]
        # A stale justification no longer clears: 0,20 € at stake, in the summary and the indicators.
        p = _cli("history", str(hist), "--lang", "fr", env=env)
        assert p.returncode == 0, p.stderr
        money = p.stdout.split("## ")[1].replace("\u202f", " ").replace("\xa0", " ")
        assert "Casino B" in money and "0,20 €" in money, money
        assert fp in p.stdout.split("## ")[3]   # in the open list
        out = tmp_path / f"ind-{len(list(hist.glob('run-*.parquet')))}"
        p = _cli("history", str(hist), "--html", str(out), "--format", "csv", "--lang", "fr", env=env)
        assert p.returncode == 0, p.stderr
        rows = list(csv.reader(io.StringIO((out / "indicators.csv").read_text(encoding="utf-8")), delimiter=";"))
        impact = [r for r in rows if r[3] == "impact_cents"]
        assert [(r[0], r[1], r[4]) for r in impact] == [("Casino B", "2", "20")], impact

    check()
    if unfolded:
        assert history.compact(hist) is not None   # what the next night's run does first
        assert not list(hist.glob("run-*.parquet"))
        check()


def _cli_history(hist: Path, fp: str, env: dict) -> list[tuple[str, ...]]:
    p = _cli("history", str(hist), "--sql", "SELECT impact_cents, review_status, review_stale FROM findings "
             f"WHERE fingerprint = '{fp}'", "--lang", "en", env=env)
    assert p.returncode == 0, p.stderr
    return [tuple(c.replace("€", "").replace("0.", "").strip() for c in line.split())
            for line in p.stdout.splitlines()[2:]]


# -- every place that picks one of several rows -------------------------------------

def entry(cid: str, sha: str | None = None) -> dict:
    return {"id": cid, "path": f"archive/{cid}", "sha256": sha or f"sha-{cid}", "verdict": "error",
            "carnet": {"casino": "Casino B", "table": 2, "date_debut": "2026-03-02"},
            "period": {"first": "2026-03-02", "last": "2026-03-02"},
            "summary": {"errors": 1, "warnings": 0, "info": 0, "impact_cents": 10, "levy_expected_cents": 500,
                        "levy_recorded_cents": 490, "seances": 1, "coups": 10, "mises": 40}}


JUSTIFIED = {"status": "justifie", "by": "ctrl", "at": "2026-11-01T09:00:00Z", "justification": "arrondi"}


def finding(impact: int, review: dict | None = None, stale: bool | None = None, fp: str = "f1") -> dict:
    review = review or {}
    return {"fingerprint": fp, "code": "EC66-01", "severity": "error", "article": "66", "message": f"m{impact}",
            "seance": 1, "seance_date": "2026-03-02", "coup": 20, "rang": None, "row": 21, "cell": None,
            "expected": "0,40 €", "found": "0,30 €", "impact_cents": impact, "baseline_state": None,
            "review_status": review.get("status"), "review_by": review.get("by"), "review_at": review.get("at"),
            "review_justification": review.get("justification"),
            "review_stale": None if not review else bool(stale)}


def seance(mass: int) -> dict:
    return {"seance": 1, "seance_date": "2026-03-02", "coups": 10, "winning_mass_cents": mass,
            "levy_expected_cents": 500, "levy_recorded_cents": 490, "cagnotte_cents": 490, "tickets_face_cents": 490}


def write(folder: Path, runs: list[tuple], fold: str) -> None:
    """`runs`: (run id, time, carnets, reviews), written in this order;
    `fold`: "no" (run files only), "each" (as each run does), "last-not" (as
    each run does but the last, which found the fold taken: the ledger and a
    run file), "once" (all run files folded together afterwards)."""
    for i, (run_id, at, carnets, reviews) in enumerate(runs):
        record = {"run_id": run_id, "run_at": at, "tool_version": "0.1.0", "profile": "arrete-2007"}
        if fold == "each" or (fold == "last-not" and i < len(runs) - 1):
            history.append_run(folder, record, carnets, reviews)
        else:
            with mock.patch.object(history, "compact", lambda folder: None):
                history.append_run(folder, record, carnets, reviews)
    if fold == "once":
        assert history.compact(folder) is not None
    assert len(list(folder.glob("run-*.parquet"))) == {"no": len(runs), "last-not": 1}.get(fold, 0)


def latest(folder: Path, fp: str = "f1") -> tuple:
    con = history.connect(folder)
    try:
        return con.execute("SELECT carnet_id, impact_cents, review_status, review_at, review_stale FROM findings "
                           "WHERE fingerprint = ?", [fp]).fetchone()
    finally:
        con.close()


N1, N2, N3, N4 = (f"2026-11-0{d}T02:00:00Z" for d in range(1, 5))
SAME = "2026-11-05T02:00:00Z"   # two runs in one second


def _one_decision(flags: tuple[bool, ...]) -> tuple[list[tuple], tuple]:
    """One justification, applied night after night, stale or not as the
    finding's values leave and come back to those it was made on."""
    runs = [("r0", N1, [(entry("b"), [finding(10)], [seance(100)])], [])]
    for i, stale in enumerate(flags):
        runs.append((f"r{i + 1}", (N2, N3, N4)[i], [(entry("b"), [finding(20 if stale else 10, JUSTIFIED, stale)],
                                                     [seance(100)])], []))
    last = flags[-1]
    return runs, ("b", 20 if last else 10, "justifie", JUSTIFIED["at"], last)


def _review_rows_and_sightings() -> tuple[list[tuple], tuple]:
    """In one run, the finding seen in carnet c (its justification stale)
    and its decision an orphan of carnet b, where it was made (not stale: a
    decision on a finding the carnet no longer has): the sighting is the
    finding's state."""
    orphan = {"row_kind": "review", "fingerprint": "f1", "review_status": "justifie", "review_by": "ctrl",
              "review_at": JUSTIFIED["at"], "review_justification": "arrondi", "review_stale": False}
    runs = [("r0", N1, [(entry("b"), [finding(10, JUSTIFIED, False)], [seance(100)])], []),
            ("r1", N2, [(entry("b"), [orphan], [seance(100)]),
                        (entry("c"), [finding(20, JUSTIFIED, True)], [seance(100)])], [])]
    return runs, ("c", 20, "justifie", JUSTIFIED["at"], True)


def _one_second(written: tuple[str, str], stale_id: str, moved: bool) -> tuple[list[tuple], tuple]:
    """Two runs of one second (ids s1 and s2, written in this order), the
    justification stale in run `stale_id`'s observation; `moved`: the other
    run has the finding in carnet a (a copy, its values not changed), not b.
    The later in run order is s2, whichever was written first."""
    other = "s1" if stale_id == "s2" else "s2"
    pre = [("r0", N1, [(entry("b"), [finding(10)], [seance(100)])], [])]
    runs = {stale_id: (stale_id, SAME, [(entry("b"), [finding(20, JUSTIFIED, True)], [seance(100)])], []),
            other: (other, SAME, [(entry("a" if moved else "b"), [finding(10, JUSTIFIED, False)], [seance(100)])],
                    [])}
    expect = (("b", 20, "justifie", JUSTIFIED["at"], True) if stale_id == "s2"
              else ("a" if moved else "b", 10, "justifie", JUSTIFIED["at"], False))
    return pre + [runs[i] for i in written], expect


def _one_run_two_carnets(order: tuple[str, ...]) -> tuple[list[tuple], tuple]:
    """A carnet and its copy (other values) in one run, listed in this order:
    the finding is held once, under the first carnet by id."""
    runs = [("r0", N1, [(entry(c), [finding(10 if c == "a" else 20)], [seance(100)]) for c in order], [])]
    return runs, ("a", 10, None, None, False)


# c: the justification holds (the values it was made on), S: stale.
CASES = {
    "one-decision-cS": _one_decision((False, True)),
    "one-decision-Sc": _one_decision((True, False)),
    "one-decision-cSS": _one_decision((False, True, True)),
    "sighting-beats-orphan-row": _review_rows_and_sightings(),
    "one-second-s1-first-s2-stale": _one_second(("s1", "s2"), "s2", moved=False),
    "one-second-s2-first-s1-stale": _one_second(("s2", "s1"), "s1", moved=False),
    "one-second-moved-s1-first-s1-stale": _one_second(("s1", "s2"), "s1", moved=True),
    "one-second-moved-s2-first-s2-stale": _one_second(("s2", "s1"), "s2", moved=True),
    "one-run-two-carnets-ab": _one_run_two_carnets(("a", "b")),
    "one-run-two-carnets-ba": _one_run_two_carnets(("b", "a")),
}


@pytest.mark.parametrize("fold", ["no", "each", "last-not", "once"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_latest_observation_is_chosen_by_run_order_not_by_chance(tmp_path, case, fold):
    runs, expect = CASES[case]
    write(tmp_path, runs, fold)
    assert latest(tmp_path) == expect
    # The money follows: a stale justification, or no review, leaves the finding at stake.
    con = history.connect(tmp_path)
    history.select(con)
    money = con.execute(f"SELECT coalesce(sum(impact_cents), 0) FROM selected WHERE {history._AT_STAKE}").fetchone()[0]
    con.close()
    assert money == (expect[1] if expect[2] is None or expect[4] else 0)


@pytest.mark.parametrize("fold", ["no", "once"])
@pytest.mark.parametrize("written", [("s1", "s2"), ("s2", "s1")], ids=["s1-first", "s2-first"])
def test_the_seances_of_one_content_are_the_latest_runs(tmp_path, fold, written):
    """One carnet content (its SHA-256) audited by two runs of one second
    whose séances' totals differ (another tool version): the `seances` view
    shows those of the later in run order (run id s2), however written. (A
    history folded after each run keeps the first run's: a content's séances
    are kept once.)"""
    mass = {"s1": 200, "s2": 300}
    runs = [(i, SAME, [(entry("b", sha="same"), [], [seance(mass[i])])], []) for i in written]
    write(tmp_path, runs, fold)
    con = history.connect(tmp_path)
    got = con.execute("SELECT winning_mass_cents FROM seances").fetchall()
    con.close()
    assert got == [(300,)]
