"""CPU per carnet of a batch in one warm process, as a worker spends it:
each carnet read and audited (`run_job`), then its files made (`finish`),
after a few carnets to warm up; `--profile` adds the functions that cost most.

    python bench/stages_batch.py [FOLDER] [--carnets N] [--profile]

FOLDER: a folder of carnets (default: the 200 carnets as casinos keep them,
`bench/.data/casino-200`, made by bench_audit.casino_batch).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=Path, nargs="?")
    ap.add_argument("--carnets", type=int, default=120)
    ap.add_argument("--warm", type=int, default=20)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    if args.folder is None:
        from bench_audit import casino_batch

        args.folder = casino_batch(200)

    from auditor.batch.executors import run_job
    from auditor.batch.plan import Options, plan
    from auditor.outputs import finish

    jobs = plan([args.folder])[:args.carnets]
    options = Options(formats=("json", "html"))
    for i, job in enumerate(jobs[:args.warm]):
        finish(run_job(i, job, options), options)
    measured = list(enumerate(jobs[args.warm:], args.warm))
    if not measured:
        raise SystemExit("not enough carnets past the warm-up")
    clock = time.process_time
    audit = files = 0.0
    for i, job in measured:
        t = clock()
        done = run_job(i, job, options)
        audit += clock() - t
        t = clock()
        finish(done, options)
        files += clock() - t
    n = len(measured)
    print(f"{n} carnets: audit {audit / n * 1000:.2f} ms, files {files / n * 1000:.2f} ms a carnet (CPU)")
    if args.profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
        for i, job in measured:
            finish(run_job(i, job, options), options)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()
