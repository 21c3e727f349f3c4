"""Digest of the outputs of many generated carnets, to prove a refactor keeps
behaviour: run it before and after, on the same arguments, and compare.

    python scripts/compare_outputs.py --carnets 300 --digest before.txt
    ... change the code ...
    python scripts/compare_outputs.py --carnets 300 --digest after.txt --against before.txt

Each carnet is written by `ecarte-audit generate` (the command line, so the
comparison does not depend on where the generator lives), with its own seed,
size, container (xlsx or CSV folder), chouette or not, and zero to three
breaches; carnets are audited in batches of `--batch` (so `summary.json`,
`index.html` and the cross-carnet check are compared too), in French and in
English, with html, json and xlsx outputs and a fixed SOURCE_DATE_EPOCH.
The digest has one `sha256  path` line per file: the generated inputs
(`input/…`) and every output (`fr/…`, `en/…`); workbooks are compared by what
a reader sees in them (`tests/outputs.py`), not by their zip bytes.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import random
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from outputs import audit_tree, comparable_files, digest_lines, fixed_clock  # noqa: E402

# Every code the generator knows how to break (a code it no longer knows is
# recorded as such in the digest, which then differs).
BREACHES = ("EC00-02 EC00-03 EC63-01 EC63-02 EC63-03 EC63-04 EC63-05 EC63-06 EC63-07 EC63-08 "
            "EC64-01 EC64-02 EC64-03 EC64-04 EC64-05 EC64-06 EC64-07 EC64-08 EC64-09 "
            "EC65-01 EC65-02 EC65-03 EC65-04 EC65-05 EC66-01 EC66-02 EC661-01 EC661-02 "
            "EC561-01 EC561-02 EC561-03 EC59-01 EC82-01 EC82-02 EC82-03 EC83-01 EC83-03").split()
CHOUETTE_ONLY = {"EC65-01", "EC65-02", "EC65-03", "EC65-04", "EC65-05", "EC66-02"}


def plan(count: int, seed: int) -> list[list[str]]:
    """The `generate` arguments of each carnet (without OUT), reproducible from `seed`."""
    rng = random.Random(seed)
    runs = []
    for i in range(count):
        chouette = i % 3 == 0
        pool = BREACHES if chouette else [c for c in BREACHES if c not in CHOUETTE_ONLY]
        k = (0, 1, 1, 2, 3)[i % 5]
        codes = sorted(rng.sample(pool, k))
        args = ["--seances", str(rng.randint(1, 3)), "--coups", str(rng.randint(4, 24)),
                "--mises", str(rng.randint(2, 8)), "--seed", str(1000 + i),
                "--container", "xlsx" if i % 2 else "csv", "--table", str(1 + i % 4)]
        if chouette:
            args.append("--chouette")
        if codes:
            args += ["--breaches", ",".join(codes)]
        runs.append(args)
    return runs


def generate(work: Path, count: int, seed: int, batch: int) -> tuple[list[Path], list[str]]:
    """Write the carnets under `work`, `batch` per folder; the batch folders
    and a line per carnet that could not be generated."""
    from auditor.cli import main

    folders, refused = [], []
    for i, args in enumerate(plan(count, seed)):
        folder = work / f"batch{i // batch:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        if folder not in folders:
            folders.append(folder)
        suffix = ".xlsx" if "xlsx" in args else ""
        with open(work / "generate.log", "a") as log, contextlib.redirect_stderr(log):
            try:
                status = main(["generate", str(folder / f"c{i:04d}{suffix}"), *args])
            except SystemExit as exc:
                status = exc.code
        if status != 0:
            refused.append(f"generate-refused  c{i:04d} {' '.join(args)} (status {status})")
    return folders, refused


def digest(count: int, seed: int, batch: int, langs: tuple[str, ...], keep: Path | None) -> list[str]:
    """The digest lines of `count` generated carnets and their outputs."""
    work = Path(tempfile.mkdtemp(prefix="ecarte-compare-")) if keep is None else keep
    try:
        inputs = work / "input"
        with fixed_clock():
            folders, lines = generate(inputs, count, seed, batch)
        files = {f"input/{k}": v for k, v in comparable_files(inputs).items() if not k.endswith(".log")}
        for lang in langs:
            for folder in folders:
                out = work / lang / folder.name
                with contextlib.chdir(inputs):
                    audit_tree([Path(folder.name)], out, lang)
            files.update({f"{lang}/{k}": v for k, v in comparable_files(work / lang).items()})
        return lines + digest_lines(files)
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--carnets", type=int, default=300, help="how many carnets (default 300)")
    p.add_argument("--seed", type=int, default=12, help="seed of the plan (default 12)")
    p.add_argument("--batch", type=int, default=50, help="carnets per audited batch (default 50)")
    p.add_argument("--langs", default="fr,en", help="report languages (default fr,en)")
    p.add_argument("--digest", type=Path, required=True, help="write the digest lines here")
    p.add_argument("--against", type=Path, help="a digest to compare with; exit 1 if they differ")
    p.add_argument("--keep", type=Path, help="keep the carnets and outputs in this (new) folder")
    args = p.parse_args()
    lines = digest(args.carnets, args.seed, args.batch, tuple(args.langs.split(",")), args.keep)
    text = "\n".join(lines) + "\n"
    args.digest.write_text(text, encoding="utf-8")
    total = hashlib.sha256(text.encode()).hexdigest()
    print(f"{args.digest}: {len(lines)} lines, sha256 {total}")
    if args.against is None:
        return 0
    before = args.against.read_text(encoding="utf-8").splitlines()
    if before == lines:
        print(f"identical to {args.against}")
        return 0
    old, new = set(before), set(lines)
    for line in sorted(old - new)[:20]:
        print(f"- {line}")
    for line in sorted(new - old)[:20]:
        print(f"+ {line}")
    print(f"{len(old - new)} line(s) only in {args.against}, {len(new - old)} only in {args.digest}")
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
