"""Batch memory: a 1,000-carnet batch needs no more memory than a 50-carnet one.

A batch's client keeps one line per carnet (summary.json, index.html, the
ticket runs of the cross-carnet check) and writes every carnet's files as
they come back, so its memory must not grow with the number of carnets. The
same small carnets (`bench_audit.archive_batch`: one séance of 20 coups, as
84 tables keep them day after day) are audited as a batch of 50 and of 1,000, `--jobs 2`,
json+html, and the resident memory of the whole process tree (client and
workers, summed) is sampled every 20 ms; the peaks must agree within 10 %.
Figures go to stdout and bench/RESULTS-memory.md.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_audit import DATA, PY, archive_batch, results_page  # noqa: E402


def tree_peak(cmd: list[str]) -> tuple[float, float, float]:
    """Wall seconds, peak summed RSS of the command's process tree (MB), and
    the client's own peak RSS (MB), sampled every 20 ms."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    top = psutil.Process(proc.pid)
    peak_tree = peak_client = 0
    while proc.poll() is None:
        try:
            client = top.memory_info().rss
            total = client
            for child in top.children(recursive=True):
                try:
                    total += child.memory_info().rss
                except psutil.Error:
                    pass
        except psutil.Error:
            break
        peak_tree, peak_client = max(peak_tree, total), max(peak_client, client)
        time.sleep(0.02)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace")
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err[-2000:]}")
    return wall, peak_tree / 2 ** 20, peak_client / 2 ** 20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", type=int, default=50)
    ap.add_argument("--large", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    rows = {}
    for n in (args.small, args.large):
        out = DATA / f"memory-out-{n}"
        shutil.rmtree(out, ignore_errors=True)
        rows[n] = tree_peak([PY, "-m", "auditor", "audit", str(archive_batch(n)), "--out", str(out), "--quiet",
                             "--jobs", str(args.jobs), "--fail-on", "never", "--format", "json,html"])
    (w1, t1, c1), (w2, t2, c2) = rows[args.small], rows[args.large]
    ratio = t2 / t1
    line = (f"| M | batch of {args.large:,} vs {args.small:,} small carnets, --jobs {args.jobs}, json+html: peak "
            f"resident memory of the process tree (client + workers, summed) | {args.small:,}: {t1:.0f} MB "
            f"(client {c1:.0f} MB, {w1:.1f} s); {args.large:,}: {t2:.0f} MB (client {c2:.0f} MB, {w2:.1f} s) | "
            f"ratio **{ratio:.3f}** | within 10 % | {'yes' if abs(ratio - 1) <= 0.10 else 'no'} |")
    print(results_page("Batch memory benchmark", "bench_batch_memory.py", line, "RESULTS-memory.md"))


if __name__ == "__main__":
    main()
