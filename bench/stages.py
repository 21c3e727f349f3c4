"""Where the time and memory of one carnet's audit go: read, normalise, each
rule, summary, outputs (CPU seconds of this process, so a busy machine skews
less; the process's resident memory after each stage and its peak so far).
Each rule's time is the CPU of the thread it ran on: a long carnet's rules
run on two (auditor.audit.PARALLEL_ROWS), and their peaks then mix;
`--one-thread` runs them one after the other, as a small carnet's.

    python bench/stages.py PATH [--formats json,html] [--top N] [--one-thread]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _resident_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize() / 2**20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("path", type=Path)
    ap.add_argument("--formats", default="json,html")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--one-thread", action="store_true", help="the rules one after the other, whatever the carnet")
    args = ap.parse_args()

    from auditor import threads

    threads.one_malloc_arena()   # as the console command does, before any thread starts
    from auditor import audit as audit_module, checks
    from auditor.catalogue import load_profile
    from auditor.normalise import normalise
    from auditor.batch.plan import plan
    from auditor.outputs import carnet_audit, finish
    from auditor.batch.plan import Options
    from auditor.read import read_carnet

    clock = time.process_time
    if args.one_thread:
        audit_module.PARALLEL_ROWS = 1 << 62
    profile = load_profile()
    rows: list[tuple[str, float]] = []
    memory: list[tuple[float, float]] = []   # (resident now, peak so far) after each stage, MB

    def stage(name: str, secs: float) -> None:
        rows.append((name, secs))
        memory.append((_resident_mb(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))

    print(f"imports done: {_resident_mb():.0f} MB resident")
    t = clock()
    raw = read_carnet(args.path)
    stage("read", clock() - t)
    t = clock()
    carnet = normalise(raw, free_raw=True)
    del raw   # as in the audit (`normalise(read_carnet(...))`): the raw text is not kept
    audit_module.release_unused_memory()
    stage("normalise", clock() - t)
    # Time each rule by wrapping the registered functions for this run.
    spent: dict[str, float] = {}
    raised: dict[str, float] = {}   # MB by which a rule raised the process's peak
    for code, spec in checks.registered().items():
        def timed(c, p, _f=spec.func, _code=code):
            t0, peak0 = time.thread_time(), _peak_mb()
            out = list(_f(c, p))
            spent[_code] = spent.get(_code, 0.0) + time.thread_time() - t0
            if _peak_mb() > peak0:
                raised[_code] = raised.get(_code, 0.0) + _peak_mb() - peak0
            return out
        object.__setattr__(spec, "func", timed)
    t = clock()
    result = audit_module.audit(carnet, profile)
    total_audit = clock() - t
    rules = sum(spent.values())
    stage("rules (all)", rules)
    stage("audit besides rules (summary, findings)", total_audit - rules)
    job = plan([args.path])[0]
    t = clock()
    options = Options(formats=tuple(args.formats.split(",")))
    finish(carnet_audit(0, job, result, options), options)
    stage(f"outputs ({args.formats})", clock() - t)
    width = max(len(n) for n, _ in rows)
    for (name, secs), (now, peak) in zip(rows, memory):
        print(f"{name:<{width}}  {secs:7.3f} s   {now:5.0f} MB now, {peak:5.0f} MB peak")
    print(f"{'total':<{width}}  {sum(s for _, s in rows):7.3f} s")
    print("\nslowest rules:")
    for code, secs in sorted(spent.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {code:<10} {secs:7.3f} s")
    print("\nrules that raised the peak (in the order they ran, which is the catalogue's):")
    for code, mb in raised.items():
        print(f"  {code:<10} +{mb:5.0f} MB")


if __name__ == "__main__":
    main()
