"""Fuzz the reader (and, for a share of the inputs, the whole audit) with
hypothesis-generated hostile carnets: random bytes as workbooks and CSV
files, valid workbooks with their XML and zip edited, an .xlsb carnet with
its records edited (far rows and cells, lying grids, cut records), valid CSV tables with
their text edited in any dialect, and sound carnets spoiled as clerks do
(columns and tables dropped, cells corrupted, rows repeated or moved), a
share of which go through the whole audit.

Any exception out of `read_carnet` (or of `audit_path(..., debug=True)`) is a
crash: it is printed with its input saved under fuzz/crashes/. Workers run
under a memory cap, so an allocation blow-up kills a worker and counts too.

    python fuzz/fuzz_reader.py [--inputs N] [--jobs J] [--audit-every K] [--audit-spoiled-every K] [--seed S]
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing as mp
import os
import pickle
import resource
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "fuzz"))

MEMORY_CAP = 3 * 1024 ** 3


def worker(args) -> tuple[int, list[str]]:
    count, seed, audit_every, audit_spoiled_every = args
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    from auditor.catalogue import load_profile
    from auditor.audit import audit_path
    from auditor.read import read_carnet
    from strategies import fast_input, materialise

    profile = load_profile()
    done, spoiled = [0], [0]
    crashes: list[str] = []
    tmp = Path(tempfile.mkdtemp(prefix="fuzz-"))

    @hseed(seed)
    @settings(max_examples=count, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck), derandomize=False)
    @given(fast_input)
    def run(item):
        done[0] += 1
        path = materialise(item, tmp / "in")
        try:
            if item[0] == "spoiled":
                # A sound carnet with columns dropped and cells corrupted: its point is the rules.
                spoiled[0] += 1
                audit_it = spoiled[0] % audit_spoiled_every == 0
            else:
                audit_it = done[0] % audit_every == 0
            if audit_it:
                audit_path(path, profile, debug=True)
            else:
                read_carnet(path)
        except Exception as exc:
            blob = pickle.dumps(item)
            name = hashlib.sha256(blob).hexdigest()[:16]
            (ROOT / "fuzz" / "crashes").mkdir(exist_ok=True)
            (ROOT / "fuzz" / "crashes" / f"{name}.pickle").write_bytes(blob)
            # Where it broke: the reader and normalisation, or a rule (auditor/checks/).
            frames = [f.filename for f in traceback.extract_tb(exc.__traceback__) if "/auditor/" in f.filename]
            stage = "rules" if any("/auditor/checks/" in f for f in frames) else "reader"
            crashes.append(f"[{stage}] {name}: {traceback.format_exc(limit=-3)}")

    run()
    return done[0], crashes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=int(os.environ.get("FUZZ_INPUTS", 100_000)))
    parser.add_argument("--jobs", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    parser.add_argument("--audit-every", type=int, default=1000, help="run the whole audit on every K-th input")
    parser.add_argument("--audit-spoiled-every", type=int, default=5,
                        help="run the whole audit on every K-th spoiled carnet (columns dropped, cells corrupted)")
    parser.add_argument("--seed", type=int, default=int(os.environ.get("FUZZ_SEED", 2026)))
    parser.add_argument("--chunk", type=int, default=5000, help="inputs per worker task")
    args = parser.parse_args()
    tasks, left, n = [], args.inputs, 0
    while left > 0:
        size = min(args.chunk, left)
        tasks.append((size, args.seed * 1_000_003 + n, args.audit_every, args.audit_spoiled_every))
        left -= size
        n += 1
    start = time.monotonic()
    tried, crashes, died = 0, [], 0
    ctx = mp.get_context("spawn")
    with ctx.Pool(args.jobs, maxtasksperchild=1) as pool:
        pending = [pool.apply_async(worker, (t,)) for t in tasks]
        for task, job in zip(tasks, pending):
            try:
                done, found = job.get()
            except Exception as exc:   # a worker killed (memory cap, abort) or broken
                died += 1
                crashes.append(f"worker died on task seed {task[1]}: {exc!r}")
                continue
            tried += done
            crashes.extend(found)
            print(f"{tried} inputs tried, {len(crashes)} crash(es), {time.monotonic() - start:.0f} s",
                  flush=True)
    for c in crashes[:20]:
        print(c, file=sys.stderr)
    by_stage = {stage: sum(c.startswith(f"[{stage}]") for c in crashes) for stage in ("reader", "rules")}
    print(f"fuzz: {tried} inputs tried in {time.monotonic() - start:.0f} s, {len(crashes)} crash(es) "
          f"(reader and normalisation: {by_stage['reader']}, rules: {by_stage['rules']})"
          f"{f', {died} worker(s) died' if died else ''}; inputs in fuzz/crashes/")
    return 1 if crashes else 0


if __name__ == "__main__":
    raise SystemExit(main())
