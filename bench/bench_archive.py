"""The rules across the carnets of a table at scale (issue 24, point 5):
"10,000 carnets of one casino add under 2 s to a batch".

A. 10,000 daily carnets of one casino (20 tables × 500 days), as
   `generate --archive` gives them (séances and ticket series going on from
   one carnet to the next, 2 séances, about 45 tickets in 12 runs a day):
   what the run adds once every carnet is audited — `check_batch` (every
   check over the batch: the four rules across a table's carnets and EC82-03)
   `archive_statuses` and the tables' timelines of summary.json.
B. The same with one day's carnet removed at every table (findings to type:
   EC64-11 and EC83-04 per table, the casino's detached numbers searched).

The facts are built directly (the worker builds them while auditing; here
only the checks are timed), in a fresh interpreter per measure (imports
included: the whole process is what a batch pays), median of 3.
Figures go to stdout and bench/RESULTS-archive.md.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_audit import PY, ROOT, results_page  # noqa: E402

CHILD = r"""
import datetime as dt, sys, time
t0 = time.perf_counter()
sys.path.insert(0, {root!r})
from auditor.model import BatchCarnet

def facts(tables, days, drop):
    out, start = [], dt.date(2026, 1, 5)
    for t in range(1, tables + 1):
        # Each table its own books: series far apart, as a casino assigns them (art. 56-1).
        nxt = {{10: t * 40_000 + 1, 100: t * 40_000 + 1, 1000: t * 40_000 + 1}}
        for k in range(days):
            day = (start + dt.timedelta(days=k)).isoformat()
            seances = ((2 * k + 1, day, 2, None, None), (2 * k + 2, day, 3, None, None))
            runs, ends, row = [], [], 2
            for v, per_run, n_runs in ((10, 4, 10), (100, 2, 1), (1000, 1, 1)):
                first = nxt[v]
                for r in range(n_runs):
                    a = nxt[v]
                    runs.append([v, a, a + per_run - 1, 2 * k + 1 + r // 5, r % 5 + 1, row])
                    nxt[v] = a + per_run
                    row += 1
                ends.append((v, first, 2 * k + 1, 1, 2, None, nxt[v] - 1, 2 * k + 2, 5, row - 1, None, "dernier"))
            if k == drop:
                continue      # the day's carnet is not in the batch: its numbers go on without it
            out.append(BatchCarnet(f"t{{t}}/{{day}}", f"casino/t{{t}}/{{day}}", "Casino de Deauville", t, runs,
                                   seances=seances, ticket_ends=tuple(ends), date_debut=day))
    return out

batch = facts({tables}, {days}, {drop})
from auditor.across import check_batch
from auditor.catalogue import load_profile
from auditor.checks.archive import archive_statuses
from auditor.derived.table_archive import describe_tables
profile = load_profile()
t1 = time.perf_counter()
cross = check_batch(batch, profile, "fr")
checked, tables = archive_statuses(batch, profile, "fr")
tables = describe_tables(batch, tables)
t2 = time.perf_counter()
print(len(batch), len(cross), len(tables), f"{{t2 - t1:.3f}}", f"{{t2 - t0:.3f}}")
"""


def measure(tables: int, days: int, drop: int, runs: int = 3) -> tuple[int, int, float, float]:
    """Carnets, findings, median seconds of the checks, median seconds of the whole child process."""
    checks, whole, got = [], [], None
    for _ in range(runs):
        code = CHILD.format(root=str(ROOT), tables=tables, days=days, drop=drop)
        out = subprocess.run([PY, "-c", code], capture_output=True, text=True, check=True).stdout.split()
        got = (int(out[0]), int(out[1]))
        checks.append(float(out[3]))
        whole.append(float(out[4]))
    return got[0], got[1], statistics.median(checks), statistics.median(whole)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tables", type=int, default=20)
    ap.add_argument("--days", type=int, default=500)
    args = ap.parse_args()
    lines = []
    for row, drop, what in (("A", -1, "whole archives"), ("B", args.days // 2, "one day's carnet removed at every table")):
        n, found, checks, whole = measure(args.tables, args.days, drop)
        lines.append(f"| {row} | {n:,} carnets of one casino ({args.tables} tables × {args.days} days), {what}: "
                     f"check_batch + archive_statuses + tables' timelines, median of 3 | {checks:.2f} s "
                     f"({found} finding(s) across carnets; whole process with building the facts {whole:.2f} s) | "
                     f"**{checks:.2f} s** | < 2 s | {'yes' if checks < 2 else 'no'} |")
    print(results_page("Rules across the carnets of a table at scale", "bench_archive.py", "\n".join(lines),
                       "RESULTS-archive.md"))


if __name__ == "__main__":
    main()
