"""The speed benchmarks, measured side by side in one run (`make bench`).

1. CSV carnet with 1,000,000 stake rows (7 files): the full audit (the CLI,
   end to end, json+html) vs the DuckDB script of the mission's four
   headline checks on the same files (`duckdb_anchor.py`): time and peak
   memory. Row 1r keeps the previous anchor, a process reading the same
   files with pandas.read_csv.
2. The same mises.csv validated by `frictionless validate` (column types
   only) vs our full audit of the carnet.
3. 200 small carnets as casinos keep them (1 séance, 60 coups with chouette
   runs, ~450 stakes, the fiche and book registers; `;`, decimal comma,
   Windows-1252, French accented headers: `write_casino_csv`) with
   --jobs 1: carnets per second on one core.
4. The same with --jobs 2 over --jobs 1.
5. One of those carnets audited by a whole command (default formats) vs a
   process that only imports pandas, in turns, medians of 9.
X. A 50,000-stake workbook audited with --format json,html,xlsx vs
   json,html; peak memory.
T. 1,000,000 tickets through the ticket rules (bench_tickets.py).

`make bench` then runs bench_nightly.py (1,000 unchanged carnets audited
twice with --cache, real clock) and bench_batch_memory.py (peak memory of the
process tree, a 50-carnet vs a 1,000-carnet batch), each with its own
results page (RESULTS-nightly.md, RESULTS-memory.md).

Every figure is one whole process (wall seconds; peak RSS of its tree); rows
1 and 2 take the median of 5 runs of each command, rows 3 and 4 of 3, in turns.
Generated carnets are kept in bench/.data (not committed). `--quick` shrinks
every size by 10 for a smoke run. Figures go to stdout and bench/RESULTS.md,
with the machine and its load average.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / ".data"
PY = sys.executable

sys.path.insert(0, str(ROOT / "bench"))
import batch_phases  # noqa: E402  (row 4's bound)


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
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(wall, usage.ru_maxrss / 1024, proc.returncode, usage.ru_utime + usage.ru_stime)
"""

# CPU seconds of the last command run (its whole tree): on a shared, loaded
# machine the figure that still means something for one core.
LAST_CPU = [0.0]


def run(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB, the largest process of the command's tree)."""
    proc = subprocess.run([PY, "-c", WRAPPER, *cmd], capture_output=True, text=True, check=True)
    wall, peak, rc, cpu = proc.stdout.split()
    if int(rc) not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({rc}): {proc.stderr[-2000:]}")
    LAST_CPU[0] = float(cpu)
    return float(wall), float(peak)


def timed_child(code: str) -> tuple[float, float]:
    """Run Python code in a fresh interpreter; it prints its own timing."""
    proc = subprocess.run([PY, "-c", code], capture_output=True, text=True, check=True)
    secs, mb = proc.stdout.split()
    return float(secs), float(mb)


# The baseline is a whole process too: interpreter, pandas import, reading.
READ_CSV = """
import glob, pandas as pd
for f in sorted(glob.glob({folder!r} + '/*.csv')):
    pd.read_csv(f, sep=';', encoding='utf-8')
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
    # Medians of RUNS runs of each, taken in turns so that all see the same
    # machine (one run of a 2-second process varies by a fifth here); peaks: the largest.
    samples = in_turns({"read": [PY, "-c", READ_CSV.format(folder=str(folder))],
                        "duckdb": [PY, str(ROOT / "bench" / "duckdb_anchor.py"), str(folder)],
                        "audit": [PY, "-m", "auditor", "audit", str(folder), "--out", str(DATA / "out-1"), "--quiet",
                                  "--jobs", "1", "--format", "json,html"]}, RUNS)
    (read, read_mb, read_cpu), (duck, duck_mb, duck_cpu), (wall, peak, cpu) = (
        _medians(samples[k]) for k in ("read", "duckdb", "audit"))
    lines.append(f"| 1 | CSV carnet, {n_mises:,} stakes (7 files): audit json+html vs the DuckDB script of four "
                 f"checks (`bench/duckdb_anchor.py`), medians of {RUNS} runs each | "
                 f"audit {wall:.2f} s ({cpu:.2f} s CPU), {peak:.0f} MB; DuckDB {duck:.2f} s "
                 f"({duck_cpu:.2f} s CPU), {duck_mb:.0f} MB; CPU ratio {cpu / duck_cpu:.1f}× | "
                 f"**{wall / duck:.1f}× time**, **{peak / duck_mb:.1f}× memory** | ≤ 2× time, ≤ 2.5× memory | "
                 f"{_met(wall / duck <= 2 and peak / duck_mb <= 2.5)} |")
    lines.append(f"| 1r | same audit vs pandas.read_csv of the 7 files (the previous anchor) | read_csv {read:.2f} s "
                 f"({read_cpu:.2f} s CPU), {read_mb:.0f} MB | **{wall / read:.1f}×** | ≤ 4× | "
                 f"{_met(wall / read <= 4)} |")
    fl, errors = timed_child(FRICTIONLESS.format(name="mises.csv", folder=str(folder)))
    lines.append(f"| 2 | mises.csv: frictionless (types only) vs our full audit | frictionless {fl:.2f} s "
                 f"({int(errors)} errors); ours {wall:.2f} s | ours **{fl / wall:.1f}×** faster | ≥ 10× | "
                 f"{_met(fl / wall >= 10)} |")


RUNS = 6         # each of row 1's three commands twice in each place of a turn (`rotated`)
BATCH_RUNS = 4   # each of rows 3–4's two runs twice first


def rotated(items: list, turn: int) -> list:
    """The commands of one turn, in an order that moves on each turn, so that
    over len(items) turns each runs once in every place. A process that comes
    right after another pays for what that one left behind: the same audit,
    the same code, ran 15–20 % slower right after the DuckDB script than in
    the next place (session 17, `bench/ab_speed.py` with one commit on both
    sides). In a fixed order that cost fell on the command that always came
    second."""
    k = turn % len(items)
    return items[k:] + items[:k]


def in_turns(commands: dict[str, list[str]], turns: int) -> dict[str, list[tuple[float, float, float]]]:
    """Each command run once a turn, `turns` times, in `rotated` order: per
    command, its (wall, peak MB, CPU) of each run."""
    samples: dict[str, list[tuple[float, float, float]]] = {key: [] for key in commands}
    for turn in range(turns):
        for key in rotated(list(commands), turn):
            samples[key].append((*run(commands[key]), LAST_CPU[0]))
    return samples


def _medians(samples: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    """(wall, peak, cpu) samples → median wall, largest peak, median CPU."""
    walls, peaks, cpus = zip(*samples)
    return statistics.median(walls), max(peaks), statistics.median(cpus)


def _small(i: int):
    """Small carnet i: one séance of 60 coups (~480 stakes) at one of 12
    tables of 7 casinos, with ticket books of its own, as at real tables
    (shared numbers would turn the batch into a test of the cross-carnet
    EC82-03 findings instead)."""
    from auditor.synth.generate import Spec

    start = 1 + 2000 * i
    return Spec(seances=1, coups=60, mises=8, seed=i, table=1 + i % 12, casino=f"Casino {i % 7}",
                ticket_start={10: start, 100: start, 1000: start})


# The nightly and memory benchmarks' batches: a casino group's archive, each
# (casino, table) pair a table whose carnets follow day after day.
ARCHIVE_TABLES = 84   # 7 casinos × 12 tables


def archive_batch(n: int) -> Path:
    """`DATA/archive-n`: `n` carnets of one séance of 20 coups, as 84 tables
    keep them (7 casinos × 12 tables): carnet i is day i // 84 of table
    i % 84, its séance numbers, dates and ticket series going on from the
    day before (auditor.synth.archive), each table's tickets in books of its
    own. Nothing between two carnets of a table is a finding, as in a
    well-kept archive: the batch measures the run, not thousands of
    findings across carnets (carnets made each on its own, all dated the
    same day with unrelated tickets, gave 7,286 of them over 1,000)."""
    def make(folder: Path) -> None:
        from auditor.synth.archive import ArchiveSpec, generate_archive
        from auditor.synth.generate import Spec, write_csv_folder

        for k in range(min(n, ARCHIVE_TABLES)):
            start = 1 + 10_000 * k   # the table's own books: no number shared with another table of its casino
            spec = Spec(seances=1, coups=20, mises=6, seed=k, table=1 + k % 12, casino=f"Casino {k % 7}",
                        ticket_start={10: start, 100: start, 1000: start})
            days = generate_archive(ArchiveSpec(len(range(k, n, ARCHIVE_TABLES)), spec))
            for d, (_, tables) in enumerate(days):
                write_csv_folder(tables, folder / f"c{k + d * ARCHIVE_TABLES:04d}")

    return made_once(DATA / f"archive-{n}", make)


def made_once(root: Path, make) -> Path:
    """`root`, made by `make(folder)` the first time only, whole or not at all:
    made beside it, then renamed (a generation stopped half-way is made again)."""
    if not root.exists():
        part = root.with_name(root.name + ".part")
        shutil.rmtree(part, ignore_errors=True)
        make(part)
        part.rename(root)
    return root


def generated_batch(name: str, n: int, spec_of) -> Path:
    """`DATA/name`: `n` CSV-folder carnets, carnet i from `spec_of(i)` (written once)."""
    def make(folder: Path) -> None:
        from auditor.synth.generate import generate, write_csv_folder

        for i in range(n):
            write_csv_folder(generate(spec_of(i)), folder / f"c{i:04d}")

    return made_once(DATA / name, make)


def _batch_folder(n: int) -> Path:
    return generated_batch(f"small-{n}", n, _small)


# Column headers as casino systems and clerks write them (each one a variant
# the reader knows, `auditor/read/columns.py`): accents, `N°`, units.
FRENCH_HEADERS = {
    "carnet": {"casino": "Établissement", "table": "N° table", "date_debut": "Date de début"},
    "seances": {"seance": "N° séance", "date": "Date de la séance", "timbre": "Timbre dateur",
                "jeux": "Jeux de cartes", "cagnotte": "Produit de la cagnotte"},
    "fiches": {"seance": "Séance", "fiche": "N° fiche", "date": "Date", "tenir_cartes": "Rang d'inscription"},
    "coups": {"seance": "Séance", "coup": "N° coup", "type": "Type de coup", "joueur_a": "Joueur A",
              "joueur_b": "Joueur B", "total_a": "Total côté A", "total_b": "Total côté B",
              "chouette": "Montant de la chouette", "en_dehors": "En dehors", "evenement": "Événement",
              "gagnant": "Côté gagnant", "prelevement": "Prélèvement", "prelevement_apres": "Prélèvement après"},
    "mises": {"seance": "Séance", "coup": "N° coup", "rang": "Rang", "fiche": "N° fiche", "cote": "Côté",
              "montant": "Montant (€)", "restitue": "Restitué"},
    "tickets": {"seance": "Séance", "coup": "N° coup", "phase": "Phase", "valeur": "Valeur (€)",
                "premier": "Premier ticket", "dernier": "Dernier ticket"},
    "carnets_tickets": {"valeur": "Valeur faciale", "premier": "Premier ticket",
                        "mise_en_service": "Date de mise en service", "paraphe": "Paraphe"},
}


def write_casino_csv(tables: dict[str, list[dict]], folder: Path) -> Path:
    """A CSV-folder carnet as a casino's office exports it: `;`, decimal
    comma, Windows-1252, CRLF, day-first dates, French accented headers."""
    import csv
    import io

    from auditor.synth.generate import COLUMNS, source_text

    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in tables.items():
        cols = COLUMNS[name]
        buf = io.StringIO()
        w = csv.writer(buf, delimiter=";", lineterminator="\r\n")
        w.writerow([FRENCH_HEADERS[name].get(c, c) for c in cols])
        for row in rows:
            w.writerow([source_text(c, row.get(c), ",", "fr") for c in cols])
        (folder / f"{name}.csv").write_bytes(buf.getvalue().encode("cp1252"))
    return folder


def _casino(i: int):
    """Small carnet i as casinos keep them: one séance of 60 coups (~480
    stakes) with chouette runs among the simple coups, its fiche register and
    its book register (the generator writes both), ticket books of its own."""
    from auditor.synth.generate import Spec

    start = 1 + 2000 * i
    return Spec(seances=1, coups=60, mises=8, seed=i, table=1 + i % 12, casino=f"Casino {i % 7}",
                ticket_start={10: start, 100: start, 1000: start}, chouette=True)


def casino_batch(n: int) -> Path:
    """`DATA/casino-n`: `n` carnets of `_casino`, written by `write_casino_csv` (once)."""
    def make(folder: Path) -> None:
        from auditor.synth.generate import generate

        for i in range(n):
            write_casino_csv(generate(_casino(i)), folder / f"c{i:04d}")

    return made_once(DATA / f"casino-{n}", make)


def results_page(title: str, script: str, line: str, name: str) -> str:
    """A one-row results page (`bench/name`, also returned): machine, load, time, the row.
    The page's notes (from its first `## ` heading on) are kept: a run replaces the figures only."""
    load = os.getloadavg()
    text = (f"# {title}\n\nMachine: {machine()}; load average after the run "
            f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min).\n"
            f"Run: `python bench/{script}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.\n\n"
            "| # | what | measured | figure | target | met |\n|---|---|---|---|---|---|\n" + line + "\n")
    write_keeping_notes(ROOT / "bench" / name, text)
    return text


def write_keeping_notes(page: Path, text: str) -> None:
    """Write a results page's figures (`text`), keeping its notes: what
    follows its first `## ` heading (RESULTS.md's "## Notes", each page's
    sessions) stays across runs."""
    old = page.read_text(encoding="utf-8") if page.exists() else ""
    notes = old[old.index("\n## ") + 1:] if "\n## " in old else ""
    page.write_text(text + ("\n" + notes if notes else ""), encoding="utf-8")


# The machine's own scaling, for reading row 4: the same CPU-bound work
# (Python and small numpy arrays, as an audit is) done twice in one process,
# against once in each of two processes at the same time. On a VM whose two
# cores are shared with others this is well under 2×, and no batch can beat it.
SCALING_PROBE = """
import sys, time
import numpy as np
a = np.arange(400)
t = time.perf_counter()
for _ in range(int(sys.argv[1])):
    s = 0
    for i in range(120_000):
        s += int((a * i).sum() % 7)
print(time.perf_counter() - t)
"""


def machine_scaling() -> float:
    """Wall of 2 units in one process over that of 1 unit in each of two processes at once, whole
    processes (each one's interpreter and numpy import included). Not a ceiling for row 4: the
    probe's loops alone scale about 1.95× on the bench machine, its start-ups far less
    (batch_phases.py measures what bounds row 4)."""
    t = time.perf_counter()
    subprocess.run([PY, "-c", SCALING_PROBE, "2"], check=True, capture_output=True)
    one = time.perf_counter() - t
    t = time.perf_counter()
    pair = [subprocess.Popen([PY, "-c", SCALING_PROBE, "1"], stdout=subprocess.DEVNULL) for _ in range(2)]
    for p in pair:
        p.wait()
    return one / (time.perf_counter() - t)


def bench_batch(scale: int, lines: list[str]) -> None:
    n = 200 // scale
    root = casino_batch(n)
    # Medians of BATCH_RUNS runs of each, in turns, as for row 1; the machine's own scaling between them.
    samples: dict[int, list[tuple[float, float, float]]] = {1: [], 2: []}
    bounds: list[float] = []
    for turn in range(BATCH_RUNS):
        for jobs in rotated([1, 2], turn):
            samples[jobs].append((*run([PY, "-m", "auditor", "audit", str(root), "--out", str(DATA / f"out-b{jobs}"),
                                        "--quiet", "--jobs", str(jobs), "--fail-on", "never"]), LAST_CPU[0]))
        # What a second worker can give at most, from one more --jobs 1 run's own steps (batch_phases.py).
        bounds.append(batch_phases.bound(batch_phases.one_run(root, 1, DATA / "out-phases")))
    rates, cpus = {}, {}
    for jobs in (1, 2):
        wall, _, cpus[jobs] = _medians(samples[jobs])
        rates[jobs] = n / wall
    lines.append(f"| 3 | {n:,} small carnets as casinos keep them (1 séance, 60 coups with chouette runs, ~450 "
                 f"stakes, fiches, book register; `;`, decimal comma, Windows-1252, French headers), --jobs 1, "
                 f"median of {BATCH_RUNS} | "
                 f"{n / rates[1]:.1f} s wall, {cpus[1]:.1f} s CPU ({n / cpus[1]:.1f} carnets per CPU second) | "
                 f"**{rates[1]:.1f} carnets/s** | ≥ 30 carnets/s | {_met(rates[1] >= 30)} |")
    lines.append(f"| 4 | same, --jobs 2 over --jobs 1 | {rates[2]:.1f} vs {rates[1]:.1f} carnets/s; at most "
                 f"{statistics.median(bounds):.2f}× with the run's serial steps (start, checks across carnets, "
                 f"summary and index: `bench/batch_phases.py`) and its parallel ones exactly halved, in the same "
                 f"rounds (runs {', '.join(f'{c:.2f}' for c in bounds)}) | "
                 f"**{rates[2] / rates[1]:.2f}×** | ≥ 1.85× | {_met(rates[2] / rates[1] >= 1.85)} |")


IMPORT_PANDAS = "import pandas"


def bench_one(scale: int, lines: list[str]) -> None:
    """Row 5: one small carnet as casinos keep them, the whole command
    (default formats, html and json) against a process that only imports
    pandas, in turns, medians of ONE_RUNS."""
    carnet = casino_batch(200 // scale) / "c0000"
    samples = in_turns({"pandas": [PY, "-c", IMPORT_PANDAS],
                        "audit": [PY, "-m", "auditor", "audit", str(carnet), "--out", str(DATA / "out-one"),
                                  "--quiet", "--fail-on", "never"]}, ONE_RUNS)
    (pd_wall, pd_mb, pd_cpu), (wall, peak, cpu) = (_medians(samples[k]) for k in ("pandas", "audit"))
    lines.append(f"| 5 | one small carnet as casinos keep them, whole command (html+json) vs `python -c 'import "
                 f"pandas'`, medians of {ONE_RUNS} in turns | audit {wall:.2f} s ({cpu:.2f} s CPU), {peak:.0f} MB; "
                 f"import pandas {pd_wall:.2f} s ({pd_cpu:.2f} s CPU), {pd_mb:.0f} MB; CPU ratio "
                 f"{cpu / pd_cpu:.2f}× | **{wall / pd_wall:.2f}×** | ≤ 1× | {_met(wall / pd_wall <= 1)} |")


ONE_RUNS = 10   # each of the two commands five times first


def bench_xlsx(scale: int, lines: list[str]) -> None:
    coups = 2_500 // scale
    path = generate_xlsx(DATA / f"xlsx-50k-{scale}.xlsx", seances=5, coups=coups // 5, mises=20)
    stakes = coups * 20
    walls = {}
    for formats in ("json,html", "json,html,xlsx"):
        walls[formats] = run([PY, "-m", "auditor", "audit", str(path), "--out", str(DATA / "out-x"), "--quiet",
                              "--jobs", "1", "--format", formats, "--fail-on", "never"])
        walls[formats] += (LAST_CPU[0],)
    (plain, _, plain_cpu), (full, peak, full_cpu) = walls["json,html"], walls["json,html,xlsx"]
    lines.append(f"| X | .xlsx carnet, ~{stakes:,} stakes: --format json,html,xlsx vs json,html | "
                 f"{full:.2f} s vs {plain:.2f} s ({full_cpu:.2f} vs {plain_cpu:.2f} s CPU); {peak:.0f} MB | "
                 f"**{full / plain:.2f}×**, **{peak:.0f} MB** | "
                 f"≤ 1.5×, ≤ 400 MB | {_met(full / plain <= 1.5 and peak <= 400)} |")


def _met(ok: bool) -> str:
    return "yes" if ok else "no"


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
    ap.add_argument("--only", choices=("1", "3", "5", "X", "T"), help="one benchmark (2 runs with 1, 4 with 3)")
    args = ap.parse_args()
    scale = 10 if args.quick else 1
    DATA.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    lines = ["| # | what | measured | figure | target | met |", "|---|---|---|---|---|---|"]
    if args.only in (None, "T") and not args.quick:
        proc = subprocess.run([PY, str(ROOT / "bench" / "bench_tickets.py")], capture_output=True, text=True)
        last = (proc.stdout.strip().splitlines() or ["(failed)"])[-1]
        lines.append(f"| T | 1,000,000 tickets in runs, the twelve ticket rules | {last} | | well under 1 s | |")
        print(lines[-1], flush=True)
    benches = [("1", bench_big_csv), ("3", bench_batch), ("5", bench_one), ("X", bench_xlsx)]
    for key, fn in benches:
        if args.only in (None, key):
            before = len(lines)
            fn(scale, lines)
            print("\n".join(lines[before:]), flush=True)
    load_after = os.getloadavg()
    text = (f"# Benchmark results\n\nMachine: {machine()}.\n"
            f"Run: `make bench`{' (--quick)' if args.quick else ''}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
            f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after "
            f"(1-minute, on {os.cpu_count()} cores).\n\n"
            + "\n".join(lines) + "\n")
    print(text)
    if not args.quick and args.only is None:
        write_keeping_notes(ROOT / "bench" / "RESULTS.md", text)


if __name__ == "__main__":
    main()
