"""A/B of bench rows 3 and 4 (200 small carnets, --jobs 1 and 2): two
checkouts (BEFORE and AFTER, e.g. `git worktree add --detach ../cmp-before
COMMIT`) run in turns with this venv, wall and CPU of the whole process tree,
medians (`ROUNDS`, default 3).

    python bench/ab_rows34.py BEFORE_CHECKOUT AFTER_CHECKOUT [MORE_CHECKOUTS...]
    VARIANT=own-tables python bench/ab_rows34.py ...   (each carnet at its own table)
    VARIANT=casino python bench/ab_rows34.py ...       (carnets as casinos keep them)

Each round also measures two whole processes of CPU work started at once
against one doing both (bench_audit.machine_scaling): their start-ups included,
so not a ceiling for row 4 (bench/batch_phases.py gives that bound).
"""
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_audit import _batch_folder, _small, generated_batch, machine_scaling  # noqa


def _own_table(i: int):
    """Row 3's carnet i at a table of its own: no carnet follows another, so
    the rules across a table's carnets find nothing (the run's own cost, without
    the findings those rules add to the bench's carnets)."""
    from dataclasses import replace

    return replace(_small(i), table=1 + i)


# VARIANT=own-tables: the same carnets, each at its own table.
# VARIANT=casino: the 200 carnets as casinos keep them (bench_audit.casino_batch, rows 3 and 4 since issue 30).
variant = os.environ.get("VARIANT")
if variant == "own-tables":
    root = generated_batch("small-200-own-tables", 200, _own_table)
elif variant == "casino":
    from bench_audit import casino_batch

    root = casino_batch(200)
else:
    root = _batch_folder(200)
PY = sys.executable
revs = {"before": sys.argv[1], "after": sys.argv[2], **{f"more{i}": p for i, p in enumerate(sys.argv[3:], 1)}}
for path in revs.values():   # as an installed wheel is: compiled once, not by each process
    subprocess.run([PY, "-m", "compileall", "-q", "auditor", "schemas"], cwd=path, check=True)
walls = {(r, j): [] for r in revs for j in (1, 2)}
cpus = {}
ceiling = []   # two whole processes of CPU work at once against one (bench_audit.machine_scaling)
for round_ in range(int(os.environ.get("ROUNDS", 3))):
    ceiling.append(machine_scaling())
    print(f"machine scaling {ceiling[-1]:.2f}", flush=True)
    for r, path in revs.items():
        for j in (1, 2):
            out = Path(tempfile.gettempdir()) / f"ab-out-{r}-{j}"
            shutil.rmtree(out, ignore_errors=True)
            env = {**os.environ, "PYTHONPATH": path}
            env.pop("SOURCE_DATE_EPOCH", None)
            t = time.perf_counter()
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            p = subprocess.run([PY, "-m", "auditor", "audit", str(root), "--out", str(out), "--quiet", "--jobs", str(j),
                                "--fail-on", "never"], cwd=path, env=env, capture_output=True, text=True)
            w = time.perf_counter() - t
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
            cpus.setdefault((r, j), []).append(cpu)
            assert p.returncode == 0, p.stderr[-2000:]
            walls[r, j].append(w)
            print(r, j, f"{w:.2f}s wall, {cpu:.2f}s cpu", flush=True)
print(f"two whole processes of CPU work at once: median {statistics.median(ceiling):.2f} "
      f"({', '.join(f'{c:.2f}' for c in ceiling)})")
for r in revs:
    m1, m2 = statistics.median(walls[r, 1]), statistics.median(walls[r, 2])
    c1, c2 = statistics.median(cpus[r, 1]), statistics.median(cpus[r, 2])
    print(f"{r}: jobs1 {200/m1:.1f}/s  jobs2 {200/m2:.1f}/s  ratio {m1/m2:.2f}  cpu jobs1 {c1:.1f}s jobs2 {c2:.1f}s  loadavg {os.getloadavg()[0]:.1f}")
