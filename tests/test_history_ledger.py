"""The history as a ledger (outputs.md v1.2 "The history is a ledger"):
each finding once with first_seen, last_seen, closed_at and open; one
observation per finding per run; runs, carnets, séances; money on open,
unjustified findings only; run files folded into a compact ledger that
answers the same; every view's columns documented (docs/history.md).

Most tests write runs through the history's own API (what `audit --history`
calls) with chosen times and values, so each state is exact; the last one
runs the command line over several nights on the real clock."""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from auditor import history
from auditor.cli import main

DOCS = Path(__file__).resolve().parent.parent / "docs" / "history.md"


def entry(cid: str, table: int = 1, first: int = 1, first_date: str = "2026-10-01", sha: str | None = None) -> dict:
    return {"id": cid, "path": f"archive/{cid}", "sha256": sha or f"sha-{cid}", "verdict": "error",
            "carnet": {"casino": "Casino d'Enghien", "table": table, "date_debut": first_date},
            "period": {"first": first_date, "last": first_date},
            "summary": {"errors": 1, "warnings": 0, "info": 0, "impact_cents": 10, "levy_expected_cents": 500,
                        "levy_recorded_cents": 490, "seances": 1, "coups": 10, "mises": 40}}


def finding(fp: str, code: str = "EC66-01", impact: int = 10, date: str = "2026-10-01", severity: str = "error",
            review: dict | None = None) -> dict:
    review = review or {}
    return {"fingerprint": fp, "code": code, "severity": severity, "article": "66", "message": f"{code} {impact}",
            "seance": 1, "seance_date": date, "coup": 3, "rang": None, "row": 7, "cell": "K7", "expected": "1,10 €",
            "found": "1,00 €", "impact_cents": impact, "baseline_state": None,
            "review_status": review.get("status"), "review_by": review.get("by"), "review_at": review.get("at"),
            "review_justification": review.get("justification"), "review_stale": review.get("stale")}


def seance(n: int = 1, date: str = "2026-10-01", mass: int = 10000, levy: int = 500) -> dict:
    return {"seance": n, "seance_date": date, "coups": 10, "winning_mass_cents": mass, "levy_expected_cents": levy,
            "levy_recorded_cents": levy, "cagnotte_cents": levy, "tickets_face_cents": levy}


def night(folder: Path, at: str, carnets: list[tuple], reviews: list[dict] = (), fold: bool = True) -> None:
    run = {"run_id": "r" + at[5:13].replace("-", "").replace("T", ""), "run_at": at, "tool_version": "0.1.0", "profile": "arrete-2007"}
    if fold:
        history.append_run(folder, run, carnets, reviews)
    else:
        from unittest import mock

        with mock.patch.object(history, "compact", lambda folder: None):
            history.append_run(folder, run, carnets, reviews)


def rows(folder: Path, query: str) -> list[tuple]:
    con = history.connect(folder)
    history.select(con)
    return con.execute(query).fetchall()


def one(folder: Path, fp: str) -> dict:
    con = history.connect(folder)
    rel = con.execute("SELECT * FROM findings WHERE fingerprint = ?", [fp])
    got = rel.fetchall()
    assert len(got) == 1, got
    return dict(zip([d[0] for d in rel.description], got[0]))


def at(text: str) -> dt.datetime:
    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)


N1, N2, N3, N4, N5 = (f"2026-11-0{d}T02:00:00Z" for d in range(1, 6))


# -- the documentation is complete ------------------------------------------------

def documented() -> dict[str, list[str]]:
    """Per view, the columns docs/history.md lists, in order."""
    text = DOCS.read_text(encoding="utf-8")
    out = {}
    for m in re.finditer(r"^### `(\w+)`[^\n]*\n(.*?)(?=^#|\Z)", text, flags=re.S | re.M):
        out[m.group(1)] = [line.split("|")[1].strip() for line in m.group(2).splitlines()
                           if line.startswith("| ") and not line.startswith("| column")]
    return out


def test_every_view_and_column_is_documented(tmp_path):
    night(tmp_path, N1, [(entry("a"), [finding("f1")], [seance()])])
    con = history.connect(tmp_path)
    docs = documented()
    assert set(docs) == set(history.PUBLIC_VIEWS)
    for view in history.PUBLIC_VIEWS:
        columns = [r[0] for r in con.execute(f"DESCRIBE {view}").fetchall()]
        assert columns == docs[view], f"docs/history.md, view {view}: document {set(columns) ^ set(docs[view])}"


def test_every_indicator_is_documented():
    from auditor.indicators import CSV_COLUMNS, INDICATORS

    text = DOCS.read_text(encoding="utf-8")
    part = text[text.index("## Indicators"):]
    assert [c for c in CSV_COLUMNS if f"| {c} |" not in part] == []
    assert [k for k in INDICATORS if f"`{k}`" not in part] == []


def test_the_documentation_check_fails_on_an_undocumented_column(tmp_path, monkeypatch):
    # The check above bites: a column added to a view and not to the docs is caught.
    monkeypatch.setitem(history.VIEWS, "runs", f"SELECT *, 1 AS surprise FROM ({history.VIEWS['runs']})")
    night(tmp_path, N1, [(entry("a"), [], None)])
    columns = [r[0] for r in history.connect(tmp_path).execute("DESCRIBE runs").fetchall()]
    assert columns != documented()["runs"] and "surprise" in columns


# -- the ledger --------------------------------------------------------------------

@pytest.mark.slow
def test_a_finding_over_nights_first_last_closed_open(tmp_path):
    night(tmp_path, N1, [(entry("a"), [finding("f1"), finding("f2", "EC561-03")], [seance()])])
    night(tmp_path, N2, [(entry("a"), [finding("f1"), finding("f2", "EC561-03")], [seance()])])
    night(tmp_path, N3, [(entry("a"), [finding("f1", impact=30), finding("f2", "EC561-03")], [seance()])])
    night(tmp_path, N4, [(entry("a"), [finding("f1", impact=30)], [seance()])])
    f1, f2 = one(tmp_path, "f1"), one(tmp_path, "f2")
    assert (f1["first_seen"], f1["last_seen"], f1["closed_at"], f1["open"]) == (at(N1), at(N4), None, True)
    assert f1["impact_cents"] == 30 and f1["seen_runs"] == 4 and f1["message"] == "EC66-01 30"
    assert (f1["row"], f1["cell"], f1["expected"], f1["found"]) == (7, "K7", "1,10 €", "1,00 €")
    # Gone from its carnet's next audit: closed then.
    assert (f2["last_seen"], f2["closed_at"], f2["open"]) == (at(N3), at(N4), False)
    # Seen again: open again.
    night(tmp_path, N5, [(entry("a"), [finding("f1", impact=30), finding("f2", "EC561-03")], [seance()])])
    f2 = one(tmp_path, "f2")
    assert (f2["last_seen"], f2["closed_at"], f2["open"], f2["seen_runs"]) == (at(N5), None, True, 4)
    # Once per finding, once per run in observations; compact: f1 is two spans (its value changed once).
    assert rows(tmp_path, "SELECT count(*) FROM findings") == [(2,)]
    assert rows(tmp_path, "SELECT count(*) FROM observations") == [(9,)]
    assert rows(tmp_path, "SELECT count(*) FROM _spans WHERE fingerprint = 'f1'") == [(2,)]
    assert rows(tmp_path, "SELECT count(*) FROM observations WHERE fingerprint = 'f1' AND impact_cents = 30") \
        == [(3,)]


def test_a_carnet_not_audited_leaves_its_findings_open(tmp_path):
    night(tmp_path, N1, [(entry("a"), [finding("f1")], None), (entry("b", 2), [finding("g1")], None)])
    night(tmp_path, N2, [(entry("a"), [], None)])   # b not in this run: nothing said about g1
    assert one(tmp_path, "g1")["open"] is True
    assert one(tmp_path, "f1")["closed_at"] == at(N2)


def test_a_renamed_carnet_closes_what_it_no_longer_has(tmp_path):
    # The same cover (casino, table, first séance and its day) under a new name: the same carnet.
    night(tmp_path, N1, [(entry("2026-10-01.xlsx"), [finding("f1"), finding("f2", "EC561-03")], [seance()])])
    night(tmp_path, N2, [(entry("2026-10-01 (corrigé).xlsx", sha="other"), [finding("f2", "EC561-03")],
                          [seance()])])
    f1, f2 = one(tmp_path, "f1"), one(tmp_path, "f2")
    assert (f1["closed_at"], f1["open"]) == (at(N2), False)
    assert f2["open"] is True and f2["carnet_id"] == "2026-10-01 (corrigé).xlsx" and f2["first_seen"] == at(N1)


def test_an_acknowledgement_closes_a_vanished_finding(tmp_path):
    night(tmp_path, N1, [(entry("a"), [finding("f1")], None), (entry("b", 2), [finding("g1")], None)])
    # b vanished; its finding acknowledged (`corrige`) the next day, kept by the next run.
    ack = {"fingerprint": "g1", "review_status": "corrige", "review_by": "M. Roux",
           "review_at": "2026-11-02T09:30:00Z", "review_justification": "carnet refait", "review_stale": None}
    night(tmp_path, N3, [(entry("a"), [finding("f1")], None)], [ack])
    g1 = one(tmp_path, "g1")
    assert (g1["closed_at"], g1["open"]) == (at("2026-11-02T09:30:00Z"), False)
    assert (g1["review_status"], g1["review_by"], g1["review_justification"]) == ("corrige", "M. Roux",
                                                                                   "carnet refait")
    # An acknowledgement older than the last sighting does not close it.
    night(tmp_path, N4, [(entry("b", 2), [finding("g1")], None)])
    assert one(tmp_path, "g1")["open"] is True


def test_money_counts_open_unjustified_findings_once(tmp_path, capsys):
    ok = {"status": "justifie", "by": "A", "at": "2026-11-01T10:00:00Z", "justification": "erreur de saisie"}
    night(tmp_path, N1, [(entry("a"), [finding("open", impact=100), finding("fixed", impact=1000),
                                       finding("justified", impact=10000, review=ok),
                                       finding("stale", impact=100000, review={**ok, "stale": True}),
                                       finding("confirmed", impact=7, review={**ok, "status": "confirme"})], None)])
    night(tmp_path, N2, [(entry("a"), [finding("open", impact=100), finding("justified", impact=10000, review=ok),
                                       finding("stale", impact=100000, review={**ok, "stale": True}),
                                       finding("confirmed", impact=7, review={**ok, "status": "confirme"})], None)])
    assert main(["history", str(tmp_path), "--lang", "fr"]) == 0
    out = capsys.readouterr().out
    money = out.split("## ")[1].replace("\u202f", " ").replace("\xa0", " ")
    # 1,00 € open + 1 000,00 € stale justification + 0,07 € confirmed; not the fixed one, not the justified one.
    assert "1\u202f001,07 €" in money or "1 001,07 €" in money, money
    opened = out.split("## ")[3]
    assert all(fp in opened for fp in ("open", "stale", "confirmed"))
    assert "justified" not in opened and "fixed" not in opened


def test_severity_and_older_than_count_from_the_seance(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(int(at("2026-12-01T00:00:00Z").timestamp())))
    night(tmp_path, "2026-11-30T02:00:00Z",
          [(entry("a"), [finding("old", date="2026-09-01"), finding("recent", date="2026-11-20"),
                         finding("warn", "EC64-07", date="2026-09-01", severity="warning")], None)])
    # A history begun yesterday still knows a séance of September is three months old.
    assert main(["history", str(tmp_path), "--older-than", "30", "--view", "findings", "--lang", "fr"]) == 0
    out = capsys.readouterr().out
    assert "old" in out and "warn" in out and "recent" not in out
    assert main(["history", str(tmp_path), "--older-than", "30", "--severity", "error", "--lang", "fr"]) == 0
    out = capsys.readouterr().out.split("## ")[3]
    assert "old" in out and "warn" not in out and "recent" not in out
    assert "91" in out   # age in days: 2026-09-01 → 2026-12-01
    for bad in (["--severity", "grave"], ["--older-than", "-3"],
                ["--sql", "SELECT 1", "--view", "runs"], ["--format", "csv"]):
        assert main(["history", str(tmp_path), *bad, "--lang", "fr"]) == 2, bad
        err = capsys.readouterr().err
        assert err.strip() and "Traceback" not in err


def test_views_runs_carnets_seances(tmp_path):
    night(tmp_path, N1, [(entry("a"), [finding("f1")], [seance(1), seance(2, "2026-10-02", mass=20000, levy=1000)]),
                         (entry("b", 2), [], [seance(1)])])
    night(tmp_path, N2, [(entry("a", sha="a2"), [], [seance(1), seance(2, "2026-10-02", mass=30000, levy=1500)])])
    assert rows(tmp_path, "SELECT carnets FROM runs ORDER BY run_at") == [(2,), (1,)]
    got = rows(tmp_path, "SELECT carnet_id, carnet_sha256, audits, last_audited_at FROM carnets ORDER BY 1")
    assert got == [("a", "a2", 2, at(N2)), ("b", "sha-b", 1, at(N1))]
    # The séances of each carnet's latest audit, its totals as that audit computed them.
    got = rows(tmp_path, "SELECT carnet_id, seance, winning_mass_cents, levy_recorded_cents FROM seances "
                         "ORDER BY 1, 2")
    assert got == [("a", 1, 10000, 500), ("a", 2, 30000, 1500), ("b", 1, 10000, 500)]


# -- folding ------------------------------------------------------------------------

def views(folder: Path) -> dict[str, list]:
    con = history.connect(folder)
    order = {"findings": "fingerprint", "observations": "run_at, fingerprint", "runs": "run_at",
             "carnets": "carnet_id", "seances": "carnet_id, seance"}
    return {v: con.execute(f"SELECT * FROM {v} ORDER BY {order[v]}").fetchall() for v in history.PUBLIC_VIEWS}


def story(folder: Path, fold: bool) -> None:
    night(folder, N1, [(entry("a"), [finding("f1"), finding("f2")], [seance()]), (entry("b", 2), [], None)],
          fold=fold)
    night(folder, N2, [(entry("a"), [finding("f1")], [seance()])], fold=fold)
    night(folder, N4, [(entry("a"), [finding("f1", impact=20), finding("f2")], [seance()])], fold=fold)
    # A run that began before the last one and wrote after it (two runs at once).
    night(folder, N3, [(entry("a"), [finding("f1")], [seance()]), (entry("b", 2), [finding("g")], None)],
          fold=fold)


@pytest.mark.slow
def test_a_folded_history_answers_as_the_run_files_do(tmp_path):
    story(tmp_path / "folded", fold=True)
    story(tmp_path / "files", fold=False)
    assert len(list((tmp_path / "files").glob("run-*.parquet"))) == 4
    assert not list((tmp_path / "folded").glob("run-*.parquet"))
    assert len(list((tmp_path / "folded").glob("ledger-*"))) == 1
    folded, files = views(tmp_path / "folded"), views(tmp_path / "files")
    for v in history.PUBLIC_VIEWS:
        if v == "findings":   # the run files alone cannot order a late run: compare what they agree on
            continue
        assert folded[v] == files[v], v
    f2 = one(tmp_path / "folded", "f2")
    # f2: N1, absent N2, absent N3 (the late run), seen N4.
    assert (f2["first_seen"], f2["last_seen"], f2["seen_runs"], f2["open"]) == (at(N1), at(N4), 2, True)
    assert rows(tmp_path / "folded", "SELECT count(*) FROM observations WHERE fingerprint = 'f2'") == [(2,)]
    # Folding the files afterwards gives the same ledger as folding as they came.
    history.compact(tmp_path / "files")
    assert views(tmp_path / "files") == views(tmp_path / "folded")


@pytest.mark.slow
def test_nights_with_the_same_findings_stay_one_span(tmp_path):
    for d in range(1, 10):
        night(tmp_path, f"2026-11-{d:02d}T02:00:00Z", [(entry("a"), [finding("f1"), finding("f2")], [seance()])])
    assert rows(tmp_path, "SELECT count(*) FROM _spans") == [(2,)]
    assert rows(tmp_path, "SELECT count(*) FROM observations") == [(18,)]
    assert rows(tmp_path, "SELECT count(*) FROM _seances") == [(1,)]


def test_a_history_written_before_the_ledger_is_read_and_folded(tmp_path):
    """A folder of the earlier format: one flat file per run, no row_kind, fewer columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    old = ("run_id", "run_at", "tool_version", "profile", "carnet_id", "carnet_path", "carnet_sha256", "casino",
           "table_no", "date_debut", "verdict", "errors", "warnings", "info", "carnet_impact_cents",
           "levy_expected_cents", "levy_recorded_cents", "seances", "coups", "mises", "fingerprint", "code",
           "severity", "seance", "seance_date", "coup", "impact_cents", "baseline_state", "review_status",
           "review_by", "review_at")
    full = history._schema()
    schema = pa.schema([full.field(c) for c in old])
    for i, (when, fps) in enumerate(((N1, ["f1", "f2"]), (N2, ["f1"]))):
        base = {c: None for c in old}
        base.update(run_id=f"old{i}", run_at=at(when), tool_version="0.0.9", profile="arrete-2007", carnet_id="a",
                    casino="Casino d'Enghien", table_no=1, errors=1, warnings=0, info=0, carnet_impact_cents=10)
        data = [{**base, "fingerprint": fp, "code": "EC66-01", "severity": "error", "seance": 1,
                 "seance_date": dt.date(2026, 10, 1), "impact_cents": 10} for fp in fps]
        pq.write_table(pa.Table.from_pylist(data, schema=schema), tmp_path / f"run-{i}-old{i}.parquet")
    f2 = one(tmp_path, "f2")
    assert (f2["last_seen"], f2["closed_at"], f2["open"], f2["message"]) == (at(N1), at(N2), False, None)
    before = views(tmp_path)
    night(tmp_path, N3, [(entry("a"), [finding("f1")], [seance()])])
    assert not list(tmp_path.glob("run-*.parquet"))
    after = views(tmp_path)
    assert [r for r in after["runs"] if r[1] < at(N3)] == before["runs"]
    f1 = one(tmp_path, "f1")
    assert (f1["first_seen"], f1["last_seen"], f1["seen_runs"], f1["open"]) == (at(N1), at(N3), 3, True)


def test_a_second_run_folding_at_once_leaves_it_to_the_next(tmp_path):
    night(tmp_path, N1, [(entry("a"), [finding("f1")], None)])
    with history._lock(tmp_path) as mine:
        assert mine
        night(tmp_path, N2, [(entry("a"), [finding("f1")], None)])   # its fold finds the lock taken
        assert len(list(tmp_path.glob("run-*.parquet"))) == 1
        assert one(tmp_path, "f1")["seen_runs"] == 2   # read from the ledger and the run file
    night(tmp_path, N3, [(entry("a"), [finding("f1")], None)])
    assert not list(tmp_path.glob("run-*.parquet")) and one(tmp_path, "f1")["seen_runs"] == 3


# -- as controllers run it -----------------------------------------------------------

@pytest.mark.slow
@pytest.mark.subprocess
def test_several_nights_on_the_real_clock(tmp_path):
    """Four nights of `ecarte-audit audit … --history H` as processes, on the
    real clock: a carnet corrected, one renamed, one left alone; the
    history's states read back through `ecarte-audit history --sql`."""
    from auditor.synth.breaches import inject
    from auditor.synth.generate import Spec, generate, write_csv_folder

    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    today = dt.date.today()

    def carnet(table: int, breaches: tuple[str, ...], days_ago: int):
        t = generate(Spec(seances=1, coups=6, mises=4, seed=table, table=table, casino="Casino d'Enghien",
                          start=today - dt.timedelta(days=days_ago),
                          ticket_start={10: table * 1000, 100: table * 1000, 1000: table * 1000}))
        inject(t, list(breaches), seed=table)
        return t

    root, hist = tmp_path / "archive", tmp_path / "H"

    def audit(n: int) -> None:
        p = subprocess.run([sys.executable, "-m", "auditor", "audit", str(root), "--out", str(tmp_path / f"n{n}"),
                            "--quiet", "--jobs", "1", "--history", str(hist)], env=env, capture_output=True,
                           text=True, timeout=600)
        assert p.returncode in (0, 1), p.stderr

    def ask(query: str) -> list[list[str]]:
        p = subprocess.run([sys.executable, "-m", "auditor", "history", str(hist), "--sql", query, "--lang", "en"],
                           env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        return [line.split("|") for line in p.stdout.splitlines()[2:]]

    write_csv_folder(carnet(1, ("EC66-01",), 60), root / "t1")
    write_csv_folder(carnet(2, ("EC66-01",), 10), root / "t2")
    audit(1)
    write_csv_folder(carnet(1, (), 60), root / "t1")   # corrected
    audit(2)
    (root / "t2").rename(root / "t2 (copie)")           # renamed, unchanged
    audit(3)
    audit(4)
    q = ("SELECT f.code || '|' || c.table_no || '|' || (f.first_seen = r1.t) || '|' || (f.last_seen = r4.t) || '|' "
         "|| coalesce(CAST(f.closed_at = r2.t AS VARCHAR), 'none') || '|' || f.open || '|' || f.carnet_id "
         "|| '|' || f.seen_runs || '|' || date_diff('day', f.seance_date, current_date) "
         "FROM findings f JOIN carnets c USING (carnet_id), "
         "(SELECT min(run_at) t FROM runs) r1, (SELECT max(run_at) t FROM runs) r4, "
         "(SELECT run_at t FROM runs ORDER BY run_at LIMIT 1 OFFSET 1) r2 "
         "WHERE f.code = 'EC66-01' ORDER BY c.table_no")
    got = ask(q)
    assert [r[:8] for r in got] == [
        ["EC66-01", "1", "true", "false", "true", "false", "t1", "1"],       # corrected on night 2: closed then
        ["EC66-01", "2", "true", "true", "none", "true", "t2__copie_", "4"],  # renamed: the same finding, open
    ], got
    assert [int(r[8]) for r in got] in ([60, 10], [61, 11])   # ages from the séances' days (a night may pass midnight)
    assert ask("SELECT count(*) || '' FROM runs") == [["4"]]
    assert ask("SELECT count(*) || '' FROM (SELECT DISTINCT fingerprint FROM observations)") == \
        ask("SELECT count(*) || '' FROM findings")
    # The séances' totals: each carnet's levy recorded per séance adds up to its summary's.
    assert ask("SELECT bool_and(s.total = c.levy_recorded_cents) || '' FROM carnets c JOIN "
               "(SELECT carnet_id, sum(levy_recorded_cents) total FROM seances GROUP BY 1) s USING (carnet_id)") \
        == [["true"]]


def test_a_damaged_run_file_is_left_aside_and_named(tmp_path, capsys):
    night(tmp_path, N1, [(entry("a"), [finding("f1")], None)])
    (tmp_path / "run-20261102T020000Z-broken.parquet").write_bytes(b"PAR1 not really parquet")
    night(tmp_path, N2, [(entry("a"), [finding("f1")], None)])   # folds the good ones, keeps the damaged one
    assert (tmp_path / "run-20261102T020000Z-broken.parquet").exists()
    assert one(tmp_path, "f1")["seen_runs"] == 2
    assert main(["history", str(tmp_path), "--lang", "en"]) == 0
    err = capsys.readouterr().err
    assert "broken.parquet" in err and "unreadable run file" in err and "Traceback" not in err
    # A damaged ledger: a clear message, exit 2.
    ledger = next(tmp_path.glob("ledger-*"))
    (ledger / "spans.parquet").write_bytes(b"garbage")
    assert main(["history", str(tmp_path), "--lang", "en"]) == 2
    err = capsys.readouterr().err
    assert "cannot be read" in err and "Traceback" not in err
    assert main(["history", str(tmp_path), "--html", str(tmp_path / "d"), "--lang", "en"]) == 2


@pytest.mark.slow
def test_an_audit_with_a_damaged_history_still_writes_its_reports(tmp_path, capsys):
    from auditor.synth.generate import Spec, generate, write_csv_folder

    for n in (1, 2):
        write_csv_folder(generate(Spec(seances=1, coups=4, mises=3, table=n, seed=n)), tmp_path / "a" / f"t{n}")
    hist = tmp_path / "H"
    assert main(["audit", str(tmp_path / "a"), "--out", str(tmp_path / "o1"), "--quiet", "--history", str(hist)]) \
        in (0, 1)
    assert (tmp_path / "o1" / "dashboard" / "index.html").is_file()
    (next(hist.glob("ledger-*")) / "states.parquet").write_bytes(b"garbage")
    assert main(["audit", str(tmp_path / "a"), "--out", str(tmp_path / "o2"), "--quiet", "--history", str(hist)]) \
        in (0, 1)
    assert (tmp_path / "o2" / "index.html").is_file() and len(list(hist.glob("run-*.parquet"))) == 1
    assert "Traceback" not in capsys.readouterr().err


def test_money_counts_a_lost_ticket_once_per_seance(tmp_path):
    """A lost ticket is both its coup's levy without its ticket (EC661-01) and
    its number missing (EC83-01): the history's money (the `history`
    command, the indicators) counts it once per séance, as the carnet's
    total does; a justified one no longer counts, and its twin then does."""
    def at_seance(f, n):
        return {**f, "seance": n}

    ok = {"status": "justifie", "by": "A", "at": "2026-11-01T10:00:00Z", "justification": "ticket retrouvé"}
    night(tmp_path, N1, [(entry("a"), [
        at_seance(finding("levy1", "EC661-01", 10), 1), at_seance(finding("num1", "EC83-01", 10), 1),
        at_seance(finding("num2", "EC83-01", 30), 2), at_seance(finding("num2b", "EC83-01", 20), 2),
        at_seance(finding("levy2", "EC661-01", 40), 2),
        at_seance(finding("levy3", "EC661-01", 10, review=ok), 3), at_seance(finding("num3", "EC83-01", 10), 3),
        at_seance(finding("other", "EC66-01", 5), 1)], None)])
    con = history.connect(tmp_path)
    history.select(con)
    [(cents,)] = con.execute("SELECT impact_cents FROM (" + history.QUERIES["money"] + ")").fetchall()
    # séance 1: max(10, 10); séance 2: max(40, 30 + 20); séance 3: the open EC83-01; EC66-01 apart.
    assert cents == 10 + 50 + 10 + 5
    # Each finding keeps its own impact; `stake_cents` is its part of the total.
    assert rows(tmp_path, "SELECT sum(impact_cents) FROM findings") == [(10 + 10 + 30 + 20 + 40 + 10 + 10 + 5,)]
