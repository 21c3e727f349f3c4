"""Regenerate `tests/gold/`: the outputs of every sample carnet (`make gold`).

Run it on purpose only, when a change is meant to change the outputs, and read
the diff before committing it: `tests/test_gold.py` compares a fresh audit of
`sample_carnets/` with these files byte for byte.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from outputs import GOLD, LANGS, PV_GOLD, SUFFIX, gold_files, pv_gold_text  # noqa: E402


def main() -> int:
    shutil.rmtree(GOLD, ignore_errors=True)
    count = 0
    for lang in LANGS:
        for name, data in gold_files(lang).items():
            target = GOLD / lang / (name + SUFFIX)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            count += 1
    print(f"{GOLD.relative_to(ROOT)}: {count} files")
    # The procès-verbal's text, apart: its PDF bytes are compared by a dump, not kept.
    PV_GOLD.mkdir(parents=True, exist_ok=True)
    for lang in LANGS:
        with tempfile.TemporaryDirectory() as out:
            (PV_GOLD / f"{lang}.txt").write_text(pv_gold_text(lang, Path(out)), encoding="utf-8")
    print(f"{PV_GOLD.relative_to(ROOT)}: {len(LANGS)} files")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
