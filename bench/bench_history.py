"""The findings history as a ledger: a year of nights over 5,000 carnets,
queried in about a second.

The ledger a year of nightly `audit --history` runs leaves is written
directly (what folding 365 run files would write: the same tables, columns
and types, auditor/history.py LEDGER_TABLES), over 5,000 carnets of 200
tables (20 casinos × 10 tables, 25 carnets each), every carnet audited every
night: 1,825,000 audits. Each carnet has six findings; one carnet in a
hundred is re-saved each night (a new SHA-256, its séances kept again), and
then one of its findings changes money and another comes and goes, so the
ledger holds spans, not 11 million observations.

H. `ecarte-audit history DIR` (money per table and month, findings per rule
   and month, the open list), a whole process: median of 5.
Q. In process, over one connection each: the `findings` view (each finding
   once, with first/last seen, closed, open, latest review) summed; the open
   errors older than 30 days; the `carnets` view; the `seances` view summed
   per table and month; one carnet's `observations`. Medians of 5, in turns.
F. The night after: one more run of the 5,000 carnets appended and folded
   into the year's ledger (what each nightly run pays).
R. (--raw) The same year as 365 unfolded run files (the history's earlier
   layout, séances left out), the same `findings` sum: what folding saves.
I. The indicators (issue 28) of 5,000 carnets × 30 nights of history:
   `ecarte-audit history DIR --html OUT --format html,csv`, a whole process,
   median of 3: the page of 200 tables and its CSV.

Figures go to stdout and bench/RESULTS-history.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench_audit import DATA, PY, ROOT, machine  # noqa: E402

CARNETS, NIGHTS, FINDINGS, SEANCES = 5000, 365, 6, 30


def _cast(table: str, select: str) -> str:
    """`select` with each column of the ledger table cast to its type, in the ledger's order."""
    from auditor.history import LEDGER_TABLES, _typed

    cols = ", ".join(f'CAST("{c}" AS {_typed(c)}) AS "{c}"' for c in LEDGER_TABLES[table])
    return f"SELECT {cols} FROM ({select})"


# Each carnet c is at version floor((night + c) / 100): re-saved once in a hundred nights.
def versions() -> str:
    return f"""
    SELECT c, v, greatest(1, v * 100 - c) AS s0, least({NIGHTS}, v * 100 + 99 - c) AS s1
    FROM (SELECT range AS c FROM range({CARNETS})) t,
         LATERAL (SELECT unnest(range((1 + c) // 100, ({NIGHTS} + c) // 100 + 1)) AS v)"""

CARNET = """
    'carnet-' || lpad(CAST(c AS VARCHAR), 5, '0') AS carnet_id,
    'archive/carnet-' || c || '.xlsx' AS carnet_path,
    'Casino ' || (c % 20) AS casino, (c // 20) % 10 + 1 AS table_no,
    DATE '2025-01-05' + CAST((c // 200) * 30 AS INTEGER) AS date_debut"""


def night_at(n: str) -> str:
    return f"TIMESTAMPTZ '2026-01-01 02:00:00+00' + INTERVAL ({n}) DAY"


def write_ledger(folder: Path) -> None:
    """The ledger of a year of nights, written as a fold would write it."""
    import duckdb

    shutil.rmtree(folder, ignore_errors=True)
    ledger = folder / "ledger-00000000000000000001-bench"
    ledger.mkdir(parents=True)
    con = duckdb.connect()
    con.execute(f"CREATE TABLE versions AS {versions()}")
    tables = {
        "runs": f"""SELECT 'run-' || n AS run_id, {night_at('n')} AS run_at, '0.1.0' AS tool_version,
                    'arrete-2007' AS profile FROM (SELECT range AS n FROM range(1, {NIGHTS + 1}))""",
        "audits": f"""
            SELECT 'run-' || n AS run_id, {night_at('n')} AS run_at,
                   'carnet-' || lpad(CAST(c AS VARCHAR), 5, '0') AS carnet_id, n AS seq
            FROM (SELECT c.range AS c, n.range AS n FROM range({CARNETS}) c, range(1, {NIGHTS + 1}) n)""",
        # A carnet's values change when it is re-saved (its SHA-256): one state per version.
        "states": f"""
            SELECT {CARNET}, 'sha-' || c || '-' || v AS carnet_sha256,
                   date_debut AS period_start, date_debut + 29 AS period_end,
                   1 + (c // 200) * 30 AS seance_first, date_debut AS seance_first_date,
                   30 + (c // 200) * 30 AS seance_last, date_debut + 29 AS seance_last_date,
                   'error' AS verdict, 4 AS errors, 1 AS warnings, 1 AS info, 120 AS carnet_impact_cents,
                   250000 AS levy_expected_cents, 249880 AS levy_recorded_cents, 30 AS seances, 1800 AS coups,
                   14000 AS mises, s0 AS first_seq, s1 AS last_seq, {night_at('s0')} AS first_run_at,
                   {night_at('s1')} AS last_run_at
            FROM versions""",
        # Findings 1-4: one span the whole year; 0: one span per version (its money grows); 5: even versions only.
        "spans": f"""
            SELECT 'fp-' || c || '-' || k AS fingerprint, 'carnet-' || lpad(CAST(c AS VARCHAR), 5, '0') AS carnet_id,
                   ['EC66-01', 'EC561-03', 'EC64-07', 'EC83-02', 'EC661-01', 'EC64-01'][k + 1] AS code,
                   ['error', 'error', 'warning', 'info', 'error', 'error'][k + 1] AS severity,
                   ['66', '56-1', '64', '83', '66-1', '64'][k + 1] AS article,
                   'Constat ' || k || ' du carnet ' || c AS message, 1 + (c // 200) * 30 + k AS seance,
                   DATE '2025-01-05' + CAST((c // 200) * 30 + k AS INTEGER) AS seance_date, 3 + k AS coup,
                   NULL AS rang, 10 + k AS "row", 'K' || (10 + k) AS cell, '1,10 €' AS expected, '1,00 €' AS found,
                   CASE WHEN k = 0 THEN 10 * (v + 1) WHEN k IN (1, 4, 5) THEN 10 ELSE 0 END AS impact_cents,
                   CASE WHEN s0 = 1 THEN NULL ELSE 'unchanged' END AS baseline_state,
                   CASE WHEN k = 1 AND c % 10 = 0 THEN 'justifie' END AS review_status,
                   CASE WHEN k = 1 AND c % 10 = 0 THEN 'M. Roux' END AS review_by,
                   CASE WHEN k = 1 AND c % 10 = 0 THEN '2026-02-01T10:00:00Z' END AS review_at,
                   CASE WHEN k = 1 AND c % 10 = 0 THEN 'erreur de report' END AS review_justification,
                   CASE WHEN k = 1 AND c % 10 = 0 THEN false END AS review_stale,
                   s0 AS first_seq, s1 AS last_seq, {night_at('s0')} AS first_run_at,
                   {night_at('s1')} AS last_run_at, s1 - s0 + 1 AS runs
            FROM versions, (SELECT range AS k FROM range({FINDINGS}))
            WHERE k = 0 OR (k = 5 AND v % 2 = 0)
            UNION ALL
            SELECT 'fp-' || c || '-' || k, 'carnet-' || lpad(CAST(c AS VARCHAR), 5, '0'),
                   ['EC66-01', 'EC561-03', 'EC64-07', 'EC83-02', 'EC661-01', 'EC64-01'][k + 1],
                   ['error', 'error', 'warning', 'info', 'error', 'error'][k + 1],
                   ['66', '56-1', '64', '83', '66-1', '64'][k + 1],
                   'Constat ' || k || ' du carnet ' || c, 1 + (c // 200) * 30 + k,
                   DATE '2025-01-05' + CAST((c // 200) * 30 + k AS INTEGER), 3 + k, NULL, 10 + k, 'K' || (10 + k),
                   '1,10 €', '1,00 €', CASE WHEN k IN (1, 4) THEN 10 ELSE 0 END, NULL,
                   CASE WHEN k = 1 AND c % 10 = 0 THEN 'justifie' END,
                   CASE WHEN k = 1 AND c % 10 = 0 THEN 'M. Roux' END,
                   CASE WHEN k = 1 AND c % 10 = 0 THEN '2026-02-01T10:00:00Z' END,
                   CASE WHEN k = 1 AND c % 10 = 0 THEN 'erreur de report' END,
                   CASE WHEN k = 1 AND c % 10 = 0 THEN false END,
                   1, {NIGHTS}, {night_at('1')}, {night_at(str(NIGHTS))}, {NIGHTS}
            FROM (SELECT range AS c FROM range({CARNETS})), (SELECT range AS k FROM range(1, 5))""",
        "seances": f"""
            SELECT 'sha-' || c || '-' || v AS carnet_sha256, {night_at('s1')} AS run_at,
                   (c // 200) * 30 + s + 1 AS seance,
                   DATE '2025-01-05' + CAST((c // 200) * 30 + s AS INTEGER) AS seance_date, 60 AS seance_coups,
                   200000 + (c % 37) * 1000 AS seance_winning_mass_cents,
                   10000 + (c % 37) * 50 AS seance_levy_expected_cents,
                   10000 + (c % 37) * 50 AS seance_levy_recorded_cents,
                   10000 + (c % 37) * 50 AS seance_cagnotte_cents,
                   10000 + (c % 37) * 50 AS seance_tickets_face_cents
            FROM versions, (SELECT range AS s FROM range({SEANCES}))""",
        "reviews": "SELECT NULL AS fingerprint, NULL AS run_at, NULL AS review_status, NULL AS review_by, "
                   "NULL AS review_at, NULL AS review_justification, NULL AS review_stale WHERE false",
    }
    for name, select in tables.items():
        target = str(ledger / f"{name}.parquet")
        order = {"audits": "ORDER BY carnet_id, seq", "spans": "ORDER BY fingerprint, first_seq"}.get(name, "")
        con.execute(f"COPY ({_cast(name, select)} {order}) TO '{target}' (FORMAT parquet, COMPRESSION zstd)")


def write_raw(folder: Path) -> None:
    """The same year as 365 run files of the earlier layout (a row per finding, carnet columns on each)."""
    import duckdb

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    con = duckdb.connect()
    from auditor.history import COLUMNS, _type

    for n in range(1, NIGHTS + 1):
        select = f"""
            SELECT 'run-{n}' AS run_id, {night_at(str(n))} AS run_at, '0.1.0' AS tool_version,
                   'arrete-2007' AS profile, 'finding' AS row_kind, {CARNET},
                   'sha-' || c || '-' || (({n} + c) // 100) AS carnet_sha256, 'error' AS verdict,
                   4 AS errors, 1 AS warnings, 1 AS info, 120 AS carnet_impact_cents,
                   'fp-' || c || '-' || k AS fingerprint,
                   ['EC66-01', 'EC561-03', 'EC64-07', 'EC83-02', 'EC661-01', 'EC64-01'][k + 1] AS code,
                   ['error', 'error', 'warning', 'info', 'error', 'error'][k + 1] AS severity,
                   1 + (c // 200) * 30 + k AS seance,
                   DATE '2025-01-05' + CAST((c // 200) * 30 + k AS INTEGER) AS seance_date,
                   CASE WHEN k = 0 THEN 10 * ((({n} + c) // 100) + 1) WHEN k IN (1, 4, 5) THEN 10 ELSE 0 END
                       AS impact_cents
            FROM (SELECT c.range AS c, k.range AS k FROM range({CARNETS}) c, range({FINDINGS}) k)
            WHERE k <> 5 OR (({n} + c) // 100) % 2 = 0"""
        made = {"run_id", "run_at", "tool_version", "profile", "row_kind", "carnet_id", "carnet_path", "casino",
                "table_no", "date_debut", "carnet_sha256", "verdict", "errors", "warnings", "info",
                "carnet_impact_cents", "fingerprint", "code", "severity", "seance", "seance_date", "impact_cents"}
        cols = ", ".join(f'CAST("{c}" AS {_type(c)}) AS "{c}"' if c in made else f'CAST(NULL AS {_type(c)}) AS "{c}"'
                         for c in COLUMNS)
        target = str(folder / f"run-{n:04d}-run{n}.parquet")
        con.execute(f"COPY (SELECT {cols} FROM ({select})) TO '{target}' (FORMAT parquet, COMPRESSION zstd)")


QUERIES = {
    "findings": "SELECT count(*), sum(impact_cents) FILTER (WHERE open), count(*) FILTER (WHERE open) FROM findings",
    "open errors > 30 d": ("SELECT count(*) FROM selected WHERE open AND severity = 'error' "
                           "AND seance_date <= DATE '2026-12-31' - INTERVAL 30 DAY"),
    "carnets": "SELECT count(*), sum(audits) FROM carnets",
    "seances per table-month": ("SELECT casino, table_no, strftime(seance_date, '%Y-%m') m, sum(winning_mass_cents), "
                                "sum(levy_recorded_cents) FROM seances GROUP BY ALL"),
    "one carnet's observations": "SELECT count(*) FROM observations WHERE carnet_id = 'carnet-01234'",
}


def timed_query(folder: Path, query: str) -> float:
    """Seconds for a fresh connection and one query, in a fresh interpreter (imports paid outside the timing)."""
    code = (f"import time, sys; sys.path.insert(0, {str(ROOT)!r}); from pathlib import Path; "
            "from auditor import history; import duckdb; "
            f"t = time.perf_counter(); con = history.connect(Path({str(folder)!r})); history.select(con); "
            f"con.execute({query!r}).fetchall(); print(time.perf_counter() - t)")
    return float(subprocess.run([PY, "-c", code], capture_output=True, text=True, check=True).stdout)


def timed_command(folder: Path) -> float:
    env = {**os.environ, "LANG": "fr_FR.UTF-8"}
    t = time.perf_counter()
    subprocess.run([PY, "-m", "auditor", "history", str(folder), "--lang", "fr"], capture_output=True, check=True,
                   env=env)
    return time.perf_counter() - t


def fold_one_night(folder: Path) -> float:
    """One more night of the 5,000 carnets appended and folded; seconds."""
    from auditor import history

    carnets = []
    for c in range(CARNETS):
        date = f"2025-{1 + (c // 200) % 12:02d}-05"
        entry = {"id": f"carnet-{c:05d}", "path": f"archive/carnet-{c}.xlsx", "sha256": f"sha-{c}-{(NIGHTS + 1 + c) // 100}",
                 "verdict": "error", "carnet": {"casino": f"Casino {c % 20}", "table": (c // 20) % 10 + 1,
                                                "date_debut": date},
                 "period": {"first": date, "last": date},
                 "summary": {"errors": 4, "warnings": 1, "info": 1, "impact_cents": 120, "levy_expected_cents": 250000,
                             "levy_recorded_cents": 249880, "seances": 30, "coups": 1800, "mises": 14000}}
        findings = [{"fingerprint": f"fp-{c}-{k}", "code": "EC66-01", "severity": "error", "article": "66",
                     "message": f"Constat {k} du carnet {c}", "seance": 1 + k, "seance_date": date, "coup": 3 + k,
                     "impact_cents": 10, "baseline_state": "unchanged"} for k in range(FINDINGS - 1)]
        seances = [{"seance": s + 1, "seance_date": date, "coups": 60, "winning_mass_cents": 200000,
                    "levy_expected_cents": 10000, "levy_recorded_cents": 10000, "cagnotte_cents": 10000,
                    "tickets_face_cents": 10000} for s in range(SEANCES)]
        carnets.append((entry, findings, seances))
    run = {"run_id": "run-366", "run_at": "2027-01-02T02:00:00Z", "tool_version": "0.1.0", "profile": "arrete-2007"}
    t = time.perf_counter()
    history.append_run(folder, run, carnets)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--raw", action="store_true", help="also time the same year as 365 unfolded run files")
    args = ap.parse_args()
    folder, raw = DATA / "history-year", DATA / "history-year-raw"
    t = time.perf_counter()
    write_ledger(folder)
    built = time.perf_counter() - t
    from auditor import history

    con = history.connect(folder)
    n_findings, n_obs, n_audits, n_spans, n_seances = con.execute(
        "SELECT (SELECT count(*) FROM findings), (SELECT sum(runs) FROM _spans), (SELECT count(*) FROM _audits), "
        "(SELECT count(*) FROM _spans), (SELECT count(*) FROM _seances)").fetchone()
    size = sum(p.stat().st_size for p in folder.rglob("*.parquet")) / 1e6
    print(f"ledger: {n_findings:,} findings, {n_obs:,} observations in {n_spans:,} spans, {n_audits:,} audits, "
          f"{n_seances:,} séance rows, {size:.1f} MB (written in {built:.1f} s)")
    samples: dict[str, list[float]] = {"history": [], **{k: [] for k in QUERIES}}
    for _ in range(args.repeat):   # in turns: every measure once, then again
        samples["history"].append(timed_command(folder))
        for name, query in QUERIES.items():
            samples[name].append(timed_query(folder, query))
    med = {k: statistics.median(v) for k, v in samples.items()}
    for k, v in med.items():
        print(f"{k}: {v:.2f} s")
    lines = [f"| H | `ecarte-audit history DIR` (money per table and month, rules per month, open list), a whole "
             f"process, over a year of nights × {CARNETS:,} carnets ({n_findings:,} findings, {n_obs:,} observations "
             f"in {n_spans:,} spans, {n_audits:,} audits, {n_seances:,} séance rows; {size:.1f} MB of Parquet, the "
             f"synthetic data being very regular), median of "
             f"{args.repeat} | {med['history']:.2f} s | **{med['history']:.2f} s** | about 1 s | "
             f"{'yes' if med['history'] <= 1.5 else 'no'} |"]
    for name in QUERIES:
        lines.append(f"| Q | connect + {name} (`{QUERIES[name]}`), median of {args.repeat} | {med[name]:.2f} s | "
                     f"**{med[name]:.2f} s** | about 1 s | {'yes' if med[name] <= 1.5 else 'no'} |")
    fold = fold_one_night(folder)
    print(f"fold one night: {fold:.1f} s")
    lines.append(f"| F | the night after: {CARNETS:,} carnets appended and folded into the year's ledger "
                 f"(audit --history's own cost) | {fold:.1f} s | **{fold:.1f} s** | small beside the audit | - |")
    if args.raw:
        write_raw(raw)
        rs = [timed_query(raw, QUERIES["findings"]) for _ in range(3)]
        r = statistics.median(rs)
        print(f"raw findings: {r:.2f} s")
        lines.append(f"| R | the same `findings` sum over the year as 365 unfolded run files (the earlier layout), "
                     f"median of 3 | {r:.2f} s | **{r:.2f} s** vs {med['findings']:.2f} s folded | - | - |")
    global NIGHTS
    NIGHTS = 30
    month = DATA / "history-month"
    write_ledger(month)
    out = DATA / "history-month-indicators"
    walls = []
    for _ in range(3):
        shutil.rmtree(out, ignore_errors=True)
        t = time.perf_counter()
        subprocess.run([PY, "-m", "auditor", "history", str(month), "--html", str(out), "--format", "html,csv",
                        "--lang", "fr"], capture_output=True, check=True)
        walls.append(time.perf_counter() - t)
    wall = statistics.median(walls)
    page_mb = (out / "index.html").stat().st_size / 1e6
    rows = sum(1 for _ in open(out / "indicators.csv", encoding="utf-8")) - 1
    print(f"indicators: {wall:.2f} s ({page_mb:.1f} MB page, {rows:,} CSV rows)")
    lines.append(f"| I | indicators of {CARNETS:,} carnets × 30 nights of history (200 tables): `ecarte-audit history DIR "
                 f"--html OUT --format html,csv`, a whole process, median of 3 ({page_mb:.1f} MB page, {rows:,} CSV rows) "
                 f"| {wall:.2f} s | **{wall:.2f} s** | a few seconds | {'yes' if wall <= 5 else 'no'} |")
    load = os.getloadavg()
    text = (f"# History ledger benchmark\n\nMachine: {machine()}; load average after the run "
            f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min).\n"
            f"Run: `python bench/bench_history.py{' --raw' if args.raw else ''}`, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.\n\n"
            "| # | what | measured | figure | target | met |\n|---|---|---|---|---|---|\n" + "\n".join(lines) + "\n"
            "\nThe machine is shared (up to six engineers on 2 cores): read the figures with the load average "
            "above.\n")
    (ROOT / "bench" / "RESULTS-history.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
