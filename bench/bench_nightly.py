"""Nightly runs: the second run over unchanged carnets comes from the cache.

1,000 one-séance carnets (the batch of `bench_audit.py`, benchmark 3) are
audited twice with `--cache`, on the real clock (no SOURCE_DATE_EPOCH, as
every real nightly run): the second run must take under a tenth of the
first. Figures go to stdout and bench/RESULTS-nightly.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_audit import DATA, PY, ROOT, _one_seance, machine, run  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--carnets", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    os.environ.pop("SOURCE_DATE_EPOCH", None)
    n = args.carnets
    root = DATA / f"batch-{n}-own-books"
    if not root.exists():
        from auditor.synth.generate import generate, write_csv_folder

        for i in range(n):
            write_csv_folder(generate(_one_seance(i)), root / f"c{i:04d}")
    cache = DATA / "nightly-cache"
    shutil.rmtree(cache, ignore_errors=True)
    walls = []
    for night in (1, 2):
        out = DATA / f"nightly-out-{night}"
        shutil.rmtree(out, ignore_errors=True)
        wall, _ = run([PY, "-m", "auditor", "audit", str(root), "--out", str(out), "--cache", str(cache),
                       "--quiet", "--jobs", str(args.jobs), "--fail-on", "never"])
        walls.append(wall)
    load = os.getloadavg()
    ratio = walls[1] / walls[0]
    line = (f"| N | {n:,} unchanged carnets, two nightly runs with --cache, real clock, --jobs {args.jobs} | "
            f"first {walls[0]:.1f} s; second {walls[1]:.1f} s | ratio **{ratio:.3f}** | < 0.1 | "
            f"{'yes' if ratio < 0.1 else 'no'} |")
    text = (f"# Nightly runs (cache) benchmark\n\nMachine: {machine()}; load average after the run "
            f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min).\n"
            f"Run: `python bench/bench_nightly.py`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.\n\n"
            "| # | what | measured | figure | target | met |\n|---|---|---|---|---|---|\n" + line + "\n")
    print(text)
    (ROOT / "bench" / "RESULTS-nightly.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
