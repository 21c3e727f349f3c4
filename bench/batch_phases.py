"""Where a batch's wall time goes, --jobs 1 against --jobs 2, and what that
allows row 4 of `make bench` (`--jobs 2` over `--jobs 1`) to reach.

    python bench/batch_phases.py [FOLDER] [--rounds N]

FOLDER: a folder of carnets (default: row 4's 200 carnets as casinos keep
them, `bench/.data/casino-200`, made by bench_audit.casino_batch).

Each round runs the whole command (`python -m auditor audit FOLDER`, json and
html) once with each --jobs, in turns, as separate processes, as row 4 does.
Inside each run the command's own steps are timed (this file, run as
`--inside`, wraps them before calling the console entry point):

- start: from the process's start to the first carnet audited (the
  command's start, then a worker's interpreter, imports and warm-up, then
  its first carnet, which is parallel work counted here: a carnet's 20 ms);
- audits: from there to the last carnet audited;
- checks: the checks across the carnets of the batch (after every audit);
- files: every carnet's files made and written (on the workers);
- end: summary.json and index.html, then the process's end.

Audits and files run on every worker at once; start, checks and end run
once, whatever the number of workers. With F the serial part and W the
parallel part of the --jobs 1 run, no second worker can take the ratio past
(F + W) / (F + W / 2), even if the parallel part halved exactly; the row
prints that bound beside what it measured.
"""

from __future__ import annotations

# Only what the command imports anyway: each worker the command spawns loads
# this file again (as `__mp_main__`), and must start as the command's would.
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

STEPS = ("start", "audits", "checks", "files", "end")
SERIAL = ("start", "checks", "end")


def inside(folder: str, jobs: int, out: str) -> None:
    """The command, its steps timed (monotonic clock, from the parent's
    reading just before it started this process: `BATCH_PHASES_T0`)."""
    t0 = int(os.environ["BATCH_PHASES_T0"])
    marks: dict[str, float] = {}

    def mark(name: str) -> None:
        marks.setdefault(name, (time.monotonic_ns() - t0) / 1e9)

    # The steps are wrapped once the command has imported them, as it
    # resumes the collector (auditor.collector): imported here first, they
    # would come before the command starts its workers, and lengthen the
    # start this measures.
    from auditor import collector

    resume = collector.resume

    def wrap_then_resume() -> None:
        wrap_steps()
        resume()

    collector.resume = wrap_then_resume

    def wrap_steps() -> None:
        import auditor.run as run_module
        from auditor.batch import executor

        for name in ("audits", "finishes"):
            timed_iter(executor.Executor, name)
        for name in ("_check_batch", "write_batch"):
            timed_call(run_module, name)

    def timed_iter(cls, name: str):
        method = getattr(cls, name)

        def wrapped(self, *args, **kwargs):
            mark(f"{name} start")
            for item in method(self, *args, **kwargs):
                mark(f"{name} first")
                yield item
            mark(f"{name} end")
        setattr(cls, name, wrapped)

    def timed_call(module, name: str):
        function = getattr(module, name)

        def wrapped(*args, **kwargs):
            mark(f"{name} start")
            try:
                return function(*args, **kwargs)
            finally:
                mark(f"{name} end")
        setattr(module, name, wrapped)

    import atexit
    import json

    # The console entry point ends the process with os._exit after the exit handlers: the marks go out there.
    atexit.register(lambda: print(json.dumps(marks), flush=True))
    from auditor.cli import run

    sys.argv = ["ecarte-audit", "audit", folder, "--out", out, "--quiet", "--fail-on", "never", "--jobs", str(jobs)]
    run()


def phases(marks: dict[str, float], wall: float) -> dict[str, float]:
    """The five steps of one run, in seconds, from its marks and its whole wall time."""
    return {"start": marks["audits first"], "audits": marks["audits end"] - marks["audits first"],
            "checks": marks["finishes start"] - marks["audits end"],
            "files": marks["finishes end"] - marks["finishes start"], "end": wall - marks["finishes end"]}


def bound(steps: dict[str, float]) -> float:
    """The most a second worker can give a run whose steps (with one worker)
    are `steps`: (F + W) / (F + W / 2), F its serial steps, W its parallel ones."""
    serial = sum(steps[k] for k in SERIAL)
    parallel = steps["audits"] + steps["files"]
    return (serial + parallel) / (serial + parallel / 2)


def one_run(folder: Path, jobs: int, out: Path) -> dict[str, float]:
    import json
    import subprocess

    env = dict(os.environ, BATCH_PHASES_T0=str(time.monotonic_ns()))
    t = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--inside", str(folder), "--jobs", str(jobs), "--out", str(out)],
                          env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t
    return {**phases(json.loads(done.stdout.strip().splitlines()[-1]), wall), "wall": wall}


def main() -> None:
    import argparse
    import statistics

    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=Path, nargs="?")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--jobs", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--out", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inside:
        inside(str(args.folder), args.jobs, args.out)
        return
    if args.folder is None:
        from bench_audit import casino_batch

        args.folder = casino_batch(200)
    out = ROOT / "bench" / ".data" / "out-phases"
    runs: dict[int, list[dict[str, float]]] = {1: [], 2: []}
    for turn in range(args.rounds):
        for jobs in ((1, 2) if turn % 2 == 0 else (2, 1)):
            runs[jobs].append(one_run(args.folder, jobs, out / f"j{jobs}"))
    med = {jobs: {k: statistics.median(r[k] for r in rs) for k in (*STEPS, "wall")} for jobs, rs in runs.items()}
    print(f"{args.folder}, medians of {args.rounds} runs each, in turns (seconds)")
    print(f"{'':8s}" + "".join(f"{k:>8s}" for k in (*STEPS, "wall")))
    for jobs in (1, 2):
        print(f"jobs {jobs}  " + "".join(f"{med[jobs][k]:8.2f}" for k in (*STEPS, "wall")))
    serial = sum(med[1][k] for k in SERIAL)
    parallel = med[1]["audits"] + med[1]["files"]
    ratios = [a["wall"] / b["wall"] for a, b in zip(runs[1], runs[2])]
    print(f"--jobs 2 over --jobs 1: {med[1]['wall'] / med[2]['wall']:.2f}× (medians; each round: "
          f"{', '.join(f'{r:.2f}' for r in ratios)})")
    print(f"parallel steps (audits + files): {parallel:.2f} s with one worker, "
          f"{med[2]['audits'] + med[2]['files']:.2f} s with two "
          f"({parallel / (med[2]['audits'] + med[2]['files']):.2f}×)")
    print(f"serial steps (start + checks + end): {serial:.2f} s with one worker, "
          f"{sum(med[2][k] for k in SERIAL):.2f} s with two")
    print(f"bound with this serial part and the parallel part exactly halved: "
          f"{bound(med[1]):.2f}×; serial part that 1.85× needs: "
          f"≤ {parallel * (1 - 1.85 / 2) / 0.85:.2f} s")


if __name__ == "__main__":
    main()
