"""Benchmarks, measured side by side in one run (`make bench`).

1. CSV carnet with 1,000,000 stake rows: full audit (the CLI, end to end) vs
   pandas.read_csv of the same files; peak memory.
2. The same mises.csv validated by `frictionless validate` (column types only)
   vs our full audit of the carnet.
3. 1,000 one-séance carnets in a batch: carnets/s with --jobs 1 and --jobs 2,
   and peak memory for 250 vs 1,000 carnets.
4. An .xlsx carnet with 200,000 stake rows: audit vs
   pandas.read_excel(engine="calamine") of its sheets.

Generated carnets are kept in bench/.data (not committed). `--quick` shrinks
every size by 10 for a smoke run. Figures go to stdout and bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / ".data"
PY = sys.executable


def generate_csv(folder: Path, seances: int, coups: int, mises: int, seed: int = 1, **options) -> Path:
    if not (folder / "coups.csv").exists():
        from auditor.synth.generate import Spec, generate, write_csv_folder

        write_csv_folder(generate(Spec(seances=seances, coups=coups, mises=mises, seed=seed)), folder, **options)
    return folder


def generate_xlsx(path: Path, seances: int, coups: int, mises: int) -> Path:
    if not path.exists():
        from auditor.synth.generate import Spec, generate, write_xlsx

        write_xlsx(generate(Spec(seances=seances, coups=coups, mises=mises, seed=2)), path)
    return path


# Each measured command runs under its own small Python parent, whose
# RUSAGE_CHILDREN then holds that command's peak alone: read from this
# process, the figure would be the peak of every command run so far.
WRAPPER = """
import resource, subprocess, sys, time
t0 = time.perf_counter()
proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
wall = time.perf_counter() - t0
sys.stderr.write(proc.stderr[-2000:])
print(wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, proc.returncode)
"""


def run(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB, the largest process of the command's tree)."""
    proc = subprocess.run([PY, "-c", WRAPPER, *cmd], capture_output=True, text=True, check=True)
    wall, peak, rc = proc.stdout.split()
    if int(rc) not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({rc}): {proc.stderr[-2000:]}")
    return float(wall), float(peak)


def timed_child(code: str) -> tuple[float, float]:
    """Run Python code in a fresh interpreter; it prints its own timing."""
    proc = subprocess.run([PY, "-c", code], capture_output=True, text=True, check=True)
    secs, mb = proc.stdout.split()
    return float(secs), float(mb)


READ_CSV = """
import time, resource, glob, pandas as pd
t0 = time.perf_counter()
for f in sorted(glob.glob({folder!r} + '/*.csv')):
    pd.read_csv(f, sep=';', encoding='utf-8')
print(time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""

AUDIT_INPROC = """
import time, resource
from pathlib import Path
from auditor.catalogue import load_profile
from auditor.audit import audit_path
t0 = time.perf_counter()
r = audit_path(Path({path!r}), load_profile())
print(time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""

READ_EXCEL = """
import time, resource, pandas as pd
t0 = time.perf_counter()
pd.read_excel({path!r}, sheet_name=None, engine='calamine')
print(time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""

FRICTIONLESS = """
import time
from frictionless import Resource, Schema, fields, Dialect, formats
schema = Schema(fields=[fields.IntegerField(name='seance'), fields.IntegerField(name='coup'),
    fields.IntegerField(name='rang'), fields.IntegerField(name='fiche'), fields.StringField(name='cote'),
    fields.NumberField(name='montant', decimal_char=','), fields.NumberField(name='restitue', decimal_char=',')])
control = formats.CsvControl(delimiter=';')
t0 = time.perf_counter()
report = Resource(path={name!r}, basepath={folder!r}, schema=schema, control=control).validate(limit_errors=1000)
assert report.tasks[0].stats["rows"] > 0, report.flatten(["type", "note"])[:3]
print(time.perf_counter() - t0, 0 if report.valid else len(report.flatten()))
"""


def bench_big_csv(scale: int, lines: list[str]) -> None:
    coups = 50_000 // scale
    folder = generate_csv(DATA / f"csv-1m-{scale}", seances=10, coups=coups // 10, mises=20)
    n_mises = sum(1 for _ in open(folder / "mises.csv", encoding="utf-8-sig")) - 1
    read, read_mb = timed_child(READ_CSV.format(folder=str(folder)))
    inproc, inproc_mb = timed_child(AUDIT_INPROC.format(path=str(folder)))
    wall, peak = run([PY, "-m", "auditor", "audit", str(folder), "--out", str(DATA / "out-1"),
                      "--quiet", "--jobs", "1", "--format", "json"])
    lines.append(f"| 1 | CSV carnet, {n_mises:,} stakes, {coups:,} coups | audit (CLI, end to end) {wall:.2f} s; "
                 f"in-process audit {inproc:.2f} s; pandas read_csv {read:.2f} s | ratio CLI/read_csv "
                 f"**{wall / read:.1f}** (in-process {inproc / read:.1f}) | ≤ 6 |")
    lines.append(f"| 1 | peak memory, same run | CLI {peak:.0f} MB (in-process {inproc_mb:.0f} MB; "
                 f"read_csv alone {read_mb:.0f} MB) | **{peak:.0f} MB** | ≤ 800 MB |")
    fl, errors = timed_child(FRICTIONLESS.format(name="mises.csv", folder=str(folder)))
    lines.append(f"| 2 | mises.csv: frictionless (types only) vs our full audit | frictionless {fl:.2f} s "
                 f"({int(errors)} errors); ours {wall:.2f} s | ours **{fl / wall:.1f}×** faster | ≥ 3× |")


def _one_seance(i: int):
    """Carnet i of the batch: one séance at one of 12 tables of 7 casinos, with
    ticket books of its own, as at real tables (shared numbers would turn the
    batch into a test of the cross-carnet EC82-03 findings instead)."""
    from auditor.synth.generate import Spec

    start = 1 + 400 * i   # two aligned books of 200 per value and carnet
    return Spec(seances=1, coups=20, mises=6, seed=i, table=1 + i % 12, casino=f"Casino {i % 7}",
                ticket_start={10: start, 100: start, 1000: start})


def bench_batch(scale: int, lines: list[str]) -> None:
    n = 1000 // scale
    root = DATA / f"batch-{n}-own-books"
    if not root.exists():
        from auditor.synth.generate import generate, write_csv_folder

        for i in range(n):
            write_csv_folder(generate(_one_seance(i)), root / f"c{i:04d}")
    small = DATA / f"batch-{n}-quarter-own-books"
    if not small.exists():
        from auditor.synth.generate import generate, write_csv_folder

        for i in range(n // 4):
            write_csv_folder(generate(_one_seance(i)), small / f"c{i:04d}")
    rates = {}
    for jobs in (1, 2):
        wall, peak = run([PY, "-m", "auditor", "audit", str(root), "--out", str(DATA / f"out-b{jobs}"),
                          "--quiet", "--jobs", str(jobs), "--fail-on", "never"])
        rates[jobs] = (n / wall, peak)
    _, peak_small = run([PY, "-m", "auditor", "audit", str(small), "--out", str(DATA / "out-bs"),
                         "--quiet", "--jobs", "2", "--fail-on", "never"])
    lines.append(f"| 3 | {n:,} one-séance carnets, batch | --jobs 1: {rates[1][0]:.1f} carnets/s; "
                 f"--jobs 2: {rates[2][0]:.1f} carnets/s | scaling **{rates[2][0] / rates[1][0]:.2f}×** | ≥ 1.7× |")
    lines.append(f"| 3 | peak memory vs number of carnets | {n // 4:,} carnets: {peak_small:.0f} MB; "
                 f"{n:,} carnets: {rates[2][1]:.0f} MB | **{rates[2][1] / max(peak_small, 1):.2f}×** | flat |")


def bench_xlsx(scale: int, lines: list[str]) -> None:
    coups = 10_000 // scale
    path = generate_xlsx(DATA / f"xlsx-200k-{scale}.xlsx", seances=10, coups=coups // 10, mises=20)
    read, _ = timed_child(READ_EXCEL.format(path=str(path)))
    wall, peak = run([PY, "-m", "auditor", "audit", str(path), "--out", str(DATA / "out-x"), "--quiet",
                      "--jobs", "1", "--format", "json"])
    inproc, _ = timed_child(AUDIT_INPROC.format(path=str(path)))
    lines.append(f"| 4 | .xlsx carnet, ~{coups * 20:,} stakes | audit (CLI) {wall:.2f} s, in-process "
                 f"{inproc:.2f} s; read_excel(calamine) {read:.2f} s | ratio **{wall / read:.1f}** "
                 f"(in-process {inproc / read:.1f}) | ≤ 3 |")


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB, Python {platform.python_version()}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="every size divided by 10")
    ap.add_argument("--only", choices=("1", "3", "4"), help="one benchmark (2 runs with 1)")
    ap.add_argument("--batch", type=int, metavar="DIV", help="benchmark 3 with 1,000/DIV carnets")
    args = ap.parse_args()
    scale = 10 if args.quick else 1
    DATA.mkdir(parents=True, exist_ok=True)
    lines = ["| # | what | measured | figure | target |", "|---|---|---|---|---|"]
    if args.only is None and not args.quick:
        proc = subprocess.run([PY, str(ROOT / "bench" / "bench_tickets.py")], capture_output=True, text=True)
        last = (proc.stdout.strip().splitlines() or ["(failed)"])[-1]
        lines.append(f"| T | 1,000,000 tickets in runs, the twelve ticket rules | {last} | | well under 1 s |")
        print(lines[-1], flush=True)
    for key, fn in (("1", bench_big_csv), ("3", bench_batch), ("4", bench_xlsx)):
        if args.only in (None, key):
            before = len(lines)
            fn(scale if key != "3" or args.batch is None else args.batch, lines)
            print("\n".join(lines[before:]), flush=True)
    text = (f"# Benchmark results\n\nMachine: {machine()}.\n"
            f"Run: `make bench`{' (--quick)' if args.quick else ''}, {time.strftime('%Y-%m-%d')}.\n\n"
            + "\n".join(lines) + "\n")
    print(text)
    if not args.quick and args.only is None:
        (ROOT / "bench" / "RESULTS.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
