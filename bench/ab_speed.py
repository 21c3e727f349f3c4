"""A/B of issue "Speed, part two"'s rows 1, 2, 3 and 5 between two checkouts
(BEFORE and AFTER, e.g. `git worktree add --detach ../cmp-before COMMIT`),
run in turns with this venv: each round runs the anchors (the DuckDB script
of four checks, frictionless, `import pandas`) once and each checkout's commands once, so
that every figure of a round sees the same machine. Medians of wall and CPU
(the process tree), the largest peak RSS, and the 1-minute load average
read before each command.

    python bench/ab_speed.py BEFORE_CHECKOUT AFTER_CHECKOUT [--rows 1,2,3,5] [--rounds 5]

Row 1: the 1M-stake CSV carnet (`bench/.data/csv-1m-1`), json+html,
--jobs 1, against `duckdb_anchor.py`. Row 2: the same audits against
frictionless's validation of its mises.csv (types only). Row 3: the 200
carnets as casinos keep them, --jobs 1. Row 5: one of them, whole command,
against `python -c 'import pandas'`.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_audit import DATA, FRICTIONLESS, WRAPPER, casino_batch, generate_csv, rotated, timed_child  # noqa: E402

PY = sys.executable


def measure(cmd: list[str], cwd: Path | None = None, pythonpath: str | None = None) -> tuple[float, float, float, float]:
    """Wall s, CPU s, peak MB of `cmd`, and the load average before it."""
    env = dict(os.environ)
    env.pop("SOURCE_DATE_EPOCH", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    load = os.getloadavg()[0]
    proc = subprocess.run([PY, "-c", WRAPPER, *cmd], capture_output=True, text=True, cwd=cwd, env=env, check=True)
    wall, peak, rc, cpu = proc.stdout.split()
    if int(rc) not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({rc}): {proc.stderr[-2000:]}")
    return float(wall), float(cpu), float(peak), load


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--rows", default="1,3,5")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    rows = args.rows.split(",")
    big = generate_csv(DATA / "csv-1m-1", seances=10, coups=5000, mises=20)
    batch = casino_batch(200)
    one = batch / "c0000"
    out = Path(tempfile.mkdtemp(prefix="ab-speed-"))
    revs = {"before": args.before.resolve(), "after": args.after.resolve()}
    for path in revs.values():   # as `make bench` does: bytecode compiled first
        subprocess.run([PY, "-m", "compileall", "-q", "auditor", "schemas"], cwd=path, check=True)
    samples: dict[str, list[tuple[float, float, float, float]]] = {}

    def take(key: str, cmd: list[str], rev: str | None = None) -> None:
        cwd, pp = (revs[rev], str(revs[rev])) if rev else (None, None)
        if rev:
            shutil.rmtree(out / rev, ignore_errors=True)
        s = measure(cmd, cwd, pp)
        samples.setdefault(key, []).append(s)
        print(f"{key:<16} {s[0]:6.2f} s wall {s[1]:6.2f} s CPU {s[2]:6.0f} MB  load {s[3]:.1f}", flush=True)

    audit = [PY, "-m", "auditor", "audit"]
    for turn in range(args.rounds):
        # Each round takes its commands in another order (`bench_audit.rotated`):
        # a process right after another pays for what that one left behind.
        order = rotated(list(revs), turn)
        if "2" in rows:   # as `make bench` times it: the validation, inside its own process
            secs, _ = timed_child(FRICTIONLESS.format(name="mises.csv", folder=str(big)))
            samples.setdefault("2 frictionless", []).append((secs, 0.0, 0.0, os.getloadavg()[0]))
            print(f"{'2 frictionless':<16} {secs:6.2f} s", flush=True)
        if "1" in rows or "2" in rows:
            for rev in rotated(["duckdb", *order], turn) if "1" in rows else order:
                if rev == "duckdb":
                    take("1 duckdb", [PY, str(HERE / "duckdb_anchor.py"), str(big)])
                else:
                    take(f"1 {rev}", [*audit, str(big), "--out", str(out / rev), "--quiet", "--jobs", "1",
                                      "--format", "json,html"], rev)
        if "3" in rows:
            for rev in order:
                take(f"3 {rev}", [*audit, str(batch), "--out", str(out / rev), "--quiet", "--jobs", "1",
                                  "--fail-on", "never"], rev)
        if "5" in rows:
            for inner in range(3):
                for rev in rotated(["pandas", *order], inner):
                    if rev == "pandas":
                        take("5 pandas", [PY, "-c", "import pandas"])
                    else:
                        take(f"5 {rev}", [*audit, str(one), "--out", str(out / rev), "--quiet", "--fail-on",
                                          "never"], rev)
    shutil.rmtree(out, ignore_errors=True)
    med = {k: (statistics.median(s[0] for s in v), statistics.median(s[1] for s in v), max(s[2] for s in v),
               statistics.median(s[3] for s in v)) for k, v in samples.items()}
    print(f"\nmedians ({time.strftime('%H:%M UTC', time.gmtime())}):")
    for k, (w, c, m, load) in med.items():
        print(f"{k:<16} {w:6.2f} s wall {c:6.2f} s CPU {m:6.0f} MB  (load {load:.1f})")
    for rev in revs:
        if "2" in rows:
            w = med[f"1 {rev}"][0]
            print(f"row 2 {rev}: {med['2 frictionless'][0] / w:.1f}× faster than frictionless")
        if "1" in rows:
            w, c, m, _ = med[f"1 {rev}"]
            dw, dc, dm, _ = med["1 duckdb"]
            print(f"row 1 {rev}: {w / dw:.2f}× time ({c / dc:.2f}× CPU), {m / dm:.2f}× memory")
        if "3" in rows:
            w, c, _, _ = med[f"3 {rev}"]
            print(f"row 3 {rev}: {200 / w:.1f} carnets/s ({200 / c:.1f} per CPU second)")
        if "5" in rows:
            w, c, _, _ = med[f"5 {rev}"]
            pw, pc, _, _ = med["5 pandas"]
            print(f"row 5 {rev}: {w / pw:.2f}× ({c / pc:.2f}× CPU)")


if __name__ == "__main__":
    main()
