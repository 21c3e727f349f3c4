"""The outputs of every sample carnet (report.html, findings.json, the
annotated workbook as seen by a reader, index.html, summary.json), in French
and English, byte for byte as kept in `tests/gold/`.

A change meant to change outputs regenerates them with `make gold` and commits
the diff, which a reviewer then reads; any other change leaves them alone.
"""

from __future__ import annotations

import pytest

from outputs import GOLD, LANGS, gold_files


@pytest.mark.parametrize("lang", LANGS)
def test_outputs_match_gold(lang):
    fresh = gold_files(lang)
    kept = {p.relative_to(GOLD / lang).as_posix(): p.read_bytes()
            for p in sorted((GOLD / lang).rglob("*")) if p.is_file()}
    assert sorted(fresh) == sorted(kept), "files differ from tests/gold/ (make gold regenerates on purpose)"
    changed = [name for name in fresh if fresh[name] != kept[name]]
    assert not changed, f"outputs differ from tests/gold/{lang}/ (make gold regenerates on purpose): {changed}"


def test_gold_covers_every_sample():
    """Each sample carnet has its report, its findings and its annotated workbook kept."""
    from outputs import ROOT
    from auditor.read import discover

    samples = discover(ROOT / "sample_carnets")
    for lang in LANGS:
        folders = {p.parent.name for p in (GOLD / lang).rglob("findings.json")}
        assert len(folders) == len(samples) > 0
        for folder in folders:
            for name in ("report.html", "findings.json", "annotated.xlsx.dump.txt"):
                assert (GOLD / lang / folder / name).is_file(), (lang, folder, name)
