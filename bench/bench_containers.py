"""What each workbook container costs to read: one carnet of about 60,000
stakes (an .xls sheet holds at most 65,536 rows) saved as .xlsx by our writer,
then as .ods, .xls and .xlsx again by LibreOffice Calc; .xlsb when LibreOffice
can write it (it cannot: it has no .xlsb export filter).

For each file: the reader alone (`read_carnet`: guard + calamine + frame),
the guard alone, calamine's own `to_python` of the sheets, and the whole
audit in process; best of N runs, wall time. Needs `soffice` on PATH.

    .venv/bin/python bench/bench_containers.py [--runs 3]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / ".data" / "containers"
PROFILE = "-env:UserInstallation=file:///tmp/lo-profile-bench"


def best(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def make_files() -> dict[str, Path]:
    DATA.mkdir(parents=True, exist_ok=True)
    src = DATA / "carnet60k.xlsx"
    if not src.exists():
        # 5 séances × 1,500 coups × 8 stakes ≈ 60,000 stakes.
        subprocess.run([sys.executable, "-m", "auditor", "generate", str(src), "--seances", "5", "--coups", "1500",
                        "--mises", "8", "--seed", "11"], check=True)
    files = {"xlsx (ours)": src}
    for fmt in ("ods", "xls", "xlsb"):
        out = DATA / f"carnet60k.{fmt}"
        if not out.exists():
            target = {"xlsb": "xlsb:Calc MS Excel 2007 Binary"}.get(fmt, fmt)
            subprocess.run(["soffice", PROFILE, "--headless", "--convert-to", target, "--outdir", str(DATA),
                            str(src)], capture_output=True)
        if out.exists():
            files[fmt] = out
    lo = DATA / "lo" / "carnet60k.xlsx"
    if not lo.exists() and "ods" in files:
        subprocess.run(["soffice", PROFILE, "--headless", "--convert-to", "xlsx", "--outdir", str(DATA / "lo"),
                        str(files["ods"])], capture_output=True)
    if lo.exists():
        files["xlsx (LibreOffice)"] = lo
    return files


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if shutil.which("soffice") is None:
        print("needs LibreOffice (soffice)", file=sys.stderr)
        return 1
    import os

    import python_calamine

    from auditor.catalogue import load_profile
    from auditor.audit import audit
    from auditor.limits import DEFAULT_LIMITS
    from auditor.normalise import normalise
    from auditor.read import read_carnet, table_names
    from auditor.read.workbook import _guard, container_of

    files = make_files()
    profile = load_profile()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print("| container | file size | stakes | guard | calamine to_python | read_carnet | whole audit |")
    print("|---|---|---|---|---|---|---|")
    for label, path in files.items():
        data = path.read_bytes()
        fmt = container_of(data, path.suffix)
        names = table_names()

        def guard():
            _guard(fmt, data, lambda n: n.lower() in names, DEFAULT_LIMITS)

        def calamine():
            book = python_calamine.CalamineWorkbook.from_path(str(path))
            for name in book.sheet_names:
                book.get_sheet_by_name(name).to_python(skip_empty_area=False)

        raw = read_carnet(path)
        stakes = len(raw.tables["mises"].df)
        t_guard = best(guard, args.runs)
        t_cal = best(calamine, args.runs)
        t_read = best(lambda: read_carnet(path), args.runs)
        t_audit = best(lambda: audit(normalise(read_carnet(path)), profile), args.runs)
        print(f"| {label} | {path.stat().st_size / 1e6:.1f} MB | {stakes:,} | {t_guard:.2f} s | {t_cal:.2f} s "
              f"| {t_read:.2f} s | {t_audit:.2f} s |")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
