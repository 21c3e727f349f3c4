"""The findings history: one Parquet file per run, DuckDB answers, Dask reads it.

A generated year of carnets (two tables, one carnet a month), audited twice
on the real clock, as a controller's nightly runs would."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.synth.breaches import inject
from auditor.cli import main
from auditor.synth.generate import Spec, generate, write_csv_folder

TABLES = (1, 2)


def month_carnet(month: int, table: int, extra: tuple[str, ...] = ()):
    n = month * 10 + table
    t = generate(Spec(seances=1, coups=6, mises=4, seed=n, table=table, casino="Casino d'Enghien",
                      start=dt.date(2026, month, 3), ticket_start={10: n * 1000, 100: n * 1000, 1000: n * 1000}))
    inject(t, ["EC66-01", *extra], seed=n)
    return t


@pytest.fixture(scope="module")
def year(tmp_path_factory):
    """Two runs over a year of carnets with --history; the second after one carnet changed."""
    os.environ.pop("SOURCE_DATE_EPOCH", None)
    root = tmp_path_factory.mktemp("year")
    archive, hist = root / "archive", root / "history"
    for month in range(1, 13):
        for table in TABLES:
            write_csv_folder(month_carnet(month, table), archive / f"2026-{month:02d}" / f"table{table}")
    assert main(["audit", str(archive), "--out", str(root / "r1"), "--quiet", "--jobs", "2",
                 "--history", str(hist)]) == 1
    write_csv_folder(month_carnet(6, 2, ("EC64-01",)), archive / "2026-06" / "table2")
    assert main(["audit", str(archive), "--out", str(root / "r2"), "--quiet", "--jobs", "2",
                 "--history", str(hist), "--baseline", str(root / "r1")]) == 1
    return root


def history(capsys, folder: Path, *args) -> tuple[int, str, str]:
    capsys.readouterr()
    # The history's text is terminal text (it follows the locale, here pinned
    # to French, the language these tests read money and dates in).
    code = main(["history", str(folder), *args, "--lang", "fr"])
    out = capsys.readouterr()
    return code, out.out, out.err


def sql(capsys, folder, query) -> list[list[str]]:
    code, out, err = history(capsys, folder, "--sql", query)
    assert code == 0, err
    return [line.split() for line in out.splitlines()[2:]]


def findings_of(out: Path) -> dict[str, dict]:
    found = {}
    for path in out.glob("*/findings.json"):
        for f in json.loads(path.read_text(encoding="utf-8"))["findings"]:
            found[f["fingerprint"]] = f
    return found


@pytest.mark.slow
@pytest.mark.subprocess
def test_runs_folded_into_one_ledger(year):
    # Each run wrote its file and folded it: one ledger, no run file left, nothing temporary.
    files = sorted(p.name for p in (year / "history").iterdir() if p.name != ".ledger.lock")
    assert len(files) == 1 and files[0].startswith("ledger-"), files
    assert sorted(p.name for p in (year / "history" / files[0]).iterdir()) == [
        "audits.parquet", "reviews.parquet", "runs.parquet", "seances.parquet", "spans.parquet", "states.parquet"]


@pytest.mark.slow
@pytest.mark.subprocess
def test_money_per_table_and_month_counts_each_finding_once(year, capsys):
    code, out, _ = history(capsys, year / "history")
    assert code == 0
    money = out.split("## ")[1]
    lines = [line for line in money.splitlines() if line.startswith("Casino")]
    assert len(lines) == 24   # 2 tables × 12 months
    assert any("2026-06" in line for line in lines) and any("2026-12" in line for line in lines)
    # Seen in two runs, counted once, with the latest values of each; a
    # finding gone in the second run is closed and no longer counts.
    latest = findings_of(year / "r2")
    expected = sum(f["impact_cents"] for f in latest.values() if f["impact_cents"] > 0)
    rows = sql(capsys, year / "history",
               "SELECT sum(impact_cents) AS total FROM findings WHERE impact_cents > 0 AND open")
    assert int(rows[0][0]) == expected
    text_total = sum(int(line.split()[-2].replace(",", "")) for line in lines)   # "12,30 €" → 1230
    assert text_total == expected


@pytest.mark.slow
@pytest.mark.subprocess
def test_findings_per_code_over_time_and_open_since(year, capsys):
    _, out, _ = history(capsys, year / "history")
    codes = out.split("## ")[2]
    assert sum(1 for line in codes.splitlines() if line.startswith("EC66-01")) == 12
    assert any(line.startswith("EC64-01") and "2026-06" in line for line in codes.splitlines())
    first_run = sql(capsys, year / "history", "SELECT strftime(min(run_at), '%Y-%m-%d') FROM runs")[0][0]
    _, since, _ = history(capsys, year / "history", "--open-since", first_run)
    opened = since.split("## ")[3]
    from auditor.i18n import format_day

    assert format_day(first_run, "fr") in opened.splitlines()[0]
    assert sum(1 for line in opened.splitlines() if "EC66-01" in line) == len(
        [f for f in findings_of(year / "r2").values() if f["code"] == "EC66-01"])
    _, before, _ = history(capsys, year / "history", "--open-since", "2020-01-01")
    assert "EC66-01" not in before.split("## ")[3]


@pytest.mark.slow
@pytest.mark.subprocess
def test_sql_over_the_views(year, capsys):
    assert sql(capsys, year / "history", "SELECT count(*) FROM runs") == [["2"]]
    assert sql(capsys, year / "history", "SELECT count(DISTINCT carnet_id) FROM carnets") == [["24"]]
    states = dict(sql(capsys, year / "history",
                      "SELECT baseline_state, count(*) FROM findings WHERE baseline_state IS NOT NULL GROUP BY 1"))
    assert int(states["new"]) >= 1 and int(states["unchanged"]) >= 24
    # Each finding once in `findings`, once per run in `observations`.
    assert sql(capsys, year / "history", "SELECT count(*) = count(DISTINCT fingerprint) FROM findings") == [["True"]]
    seen = int(sql(capsys, year / "history", "SELECT count(*) FROM observations")[0][0])
    assert seen == sum(len(findings_of(year / r)) for r in ("r1", "r2"))
    code, out, err = history(capsys, year / "history", "--sql", "SELECT nope FROM findings")
    assert code == 2 and "--sql" in err and "Traceback" not in err
    for statement in ("", "  ", "-- nothing but a comment"):
        code, out, err = history(capsys, year / "history", "--sql", statement)
        assert code == 2 and "ne renvoie rien" in err, (statement, err)
    code, _, err = history(capsys, year / "nowhere")
    assert code == 2 and "dossier d'historique introuvable" in err
    code, _, err = history(capsys, year / "history", "--open-since", "juin")
    assert code == 2 and "pas une date" in err


@pytest.mark.slow
@pytest.mark.subprocess
def test_index_shows_a_trend_chart_per_table(year):
    index = (year / "r2" / "index.html").read_text(encoding="utf-8")
    trends = index[index.index('id="trends"'):]
    # The trends section only (the archive of each table draws its own SVGs further on).
    trends = trends[:trends.index("</section>")]
    assert trends.count('<figure class="trend"') == 2
    assert trends.count("<svg") == 2 and "<rect" in trends
    assert "<script src" not in index and "http://" not in index.replace("http://www.w3.org/2000/svg", "")


@pytest.mark.slow
@pytest.mark.subprocess
def test_dask_reads_the_history(year, capsys):
    dd = pytest.importorskip("dask.dataframe")
    ledger = next((year / "history").glob("ledger-*"))
    frame = dd.read_parquet(str(ledger / "audits.parquet")).compute()
    assert len(frame) == 48   # 24 carnets × 2 runs
    states = dd.read_parquet(str(ledger / "states.parquet")).compute()
    assert set(states["casino"].dropna()) == {"Casino d'Enghien"}
    assert (states["last_seq"] - states["first_seq"] + 1).sum() == 48
    spans = dd.read_parquet(str(ledger / "spans.parquet")).compute()
    assert spans["fingerprint"].nunique() == int(sql(capsys, year / "history", "SELECT count(*) FROM findings")[0][0])


@pytest.mark.slow
@pytest.mark.subprocess
def test_history_holds_only_the_carnet_and_what_was_typed(year):
    import pyarrow.parquet as pq

    from auditor.history import LEDGER_TABLES

    ledger = next((year / "history").glob("ledger-*"))
    host = os.uname().nodename
    for name, columns in LEDGER_TABLES.items():
        table = pq.read_table(ledger / f"{name}.parquet")
        assert tuple(table.column_names) == columns
        cells = {str(v) for column in table.columns for v in column.to_pylist() if v is not None}
        assert len(host) < 4 or not any(host in c for c in cells)


@pytest.mark.subprocess
def test_two_runs_writing_history_at_once_leave_both_readable(tmp_path, capsys):
    carnet = tmp_path / "c"
    write_csv_folder(month_carnet(1, 1), carnet)
    hist = tmp_path / "h"
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    procs = [subprocess.Popen([sys.executable, "-m", "auditor", "audit", str(carnet), "--out", str(tmp_path / f"o{i}"),
                               "--quiet", "--jobs", "1", "--history", str(hist)], env=env,
                              stderr=subprocess.PIPE, text=True) for i in (1, 2)]
    for p in procs:
        assert p.wait(timeout=300) == 1, p.stderr.read()
    assert not list(hist.glob(".*tmp"))
    assert sql(capsys, hist, "SELECT count(DISTINCT run_id) FROM runs") == [["2"]]
    # Both runs saw the same findings: each once in `findings`, twice in `observations`.
    n = int(sql(capsys, hist, "SELECT count(*) FROM findings")[0][0])
    assert n > 0 and sql(capsys, hist, "SELECT count(*) FROM observations") == [[str(2 * n)]]
