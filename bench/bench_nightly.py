"""Nightly runs: the second run over unchanged carnets comes from the cache.

N. 1,000 one-séance carnets (the batch of `bench_audit.py`, benchmark 3) are
   audited twice with `--cache`, on the real clock (no SOURCE_DATE_EPOCH, as
   every real nightly run): the second run must take under a tenth of the
   first.
R. 300 of them as a controller runs them, each night `--cache --baseline
   LAST_NIGHT --reviews R.jsonl --fail-on-new`, a decision
   recorded in the shared review file during the day (through `ecarte-audit
   review`, which keeps the values it was made on): the review and the baseline are applied after the
   cache, so the second night takes every carnet from the cache, and the
   files of the carnets the review does not reach too (kept beside their
   audit for the same baseline and reviews), and costs under a tenth of the
   first (whose cache is cold).
RH. Row R with `--history H` too (the history's own cost on a night).
Figures go to stdout and bench/RESULTS-nightly.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_audit import DATA, PY, archive_batch, results_page, run  # noqa: E402


def with_reviews(n: int, jobs: int, with_history: bool = False) -> str:
    """Row R (RH `with_history`): nights as a controller runs them (`--cache --baseline LAST_NIGHT
    --reviews R.jsonl --fail-on-new`, and `--history H`), a review recorded in the shared file during
    the day: the night after takes every carnet from the cache, and the files of every carnet the
    review does not reach too."""
    import json

    tag = "rh" if with_history else "r"
    root = archive_batch(n)
    cache, reviews, history = (DATA / f"nightly-{tag}-cache", DATA / f"nightly-{tag}-reviews.jsonl",
                               DATA / f"nightly-{tag}-history")
    shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(history, ignore_errors=True)
    reviews.unlink(missing_ok=True)
    outs = [DATA / f"nightly-{tag}-out-{night}" for night in (0, 1, 2)]
    for out in outs:
        shutil.rmtree(out, ignore_errors=True)
    common = ["--reviews", str(reviews), "--fail-on-new", "--quiet", "--jobs", str(jobs), "--fail-on", "never"]
    if with_history:
        common += ["--history", str(history)]
    # The night before (its output is the first timed night's baseline; no cache, so that one starts
    # cold): a first night, its baseline folder not there yet.
    run([PY, "-m", "auditor", "audit", str(root), "--out", str(outs[0]), "--baseline",
         str(DATA / f"nightly-{tag}-none"), *common])
    first, _ = run([PY, "-m", "auditor", "audit", str(root), "--out", str(outs[1]), "--cache", str(cache),
                    "--baseline", str(outs[0]), *common])
    finding = next(f for p in sorted(outs[1].glob("*/findings.json"))
                   for f in json.loads(p.read_text(encoding="utf-8"))["findings"])
    run([PY, "-m", "auditor", "review", str(outs[1]), finding["fingerprint"], "--status", "confirme",
         "--comment", "vu", "--by", "bench", "--reviews", str(reviews)])
    second, _ = run([PY, "-m", "auditor", "audit", str(root), "--out", str(outs[2]), "--cache", str(cache),
                     "--baseline", str(outs[1]), *common])
    ratio = second / first
    what = "--history H " if with_history else ""
    return (f"| {tag.upper()} | {n:,} carnets, --cache --baseline LAST_NIGHT --reviews R.jsonl {what}--fail-on-new, "
            f"a review recorded between the nights, "
            f"real clock, --jobs {jobs} | first {first:.1f} s (cold cache); second {second:.1f} s | "
            f"ratio **{ratio:.3f}** | < 0.1 | {'yes' if ratio < 0.1 else 'no'} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--carnets", type=int, default=1000)
    ap.add_argument("--reviewed-carnets", type=int, default=300)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    os.environ.pop("SOURCE_DATE_EPOCH", None)
    n = args.carnets
    root = archive_batch(n)
    cache = DATA / "nightly-cache"
    shutil.rmtree(cache, ignore_errors=True)
    walls = []
    for night in (1, 2):
        out = DATA / f"nightly-out-{night}"
        shutil.rmtree(out, ignore_errors=True)
        wall, _ = run([PY, "-m", "auditor", "audit", str(root), "--out", str(out), "--cache", str(cache),
                       "--quiet", "--jobs", str(args.jobs), "--fail-on", "never"])
        walls.append(wall)
    ratio = walls[1] / walls[0]
    line = (f"| N | {n:,} unchanged carnets, two nightly runs with --cache, real clock, --jobs {args.jobs} | "
            f"first {walls[0]:.1f} s; second {walls[1]:.1f} s | ratio **{ratio:.3f}** | < 0.1 | "
            f"{'yes' if ratio < 0.1 else 'no'} |")
    line += "\n" + with_reviews(args.reviewed_carnets, args.jobs)
    line += "\n" + with_reviews(args.reviewed_carnets, args.jobs, with_history=True)
    print(results_page("Nightly runs (cache) benchmark", "bench_nightly.py", line, "RESULTS-nightly.md"))


if __name__ == "__main__":
    main()
