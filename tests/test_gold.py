"""The outputs of every sample carnet (report.html, findings.json, the
annotated workbook as seen by a reader, index.html, summary.json), in French
and English, byte for byte as kept in `tests/gold/`.

A change meant to change outputs regenerates them with `make gold` and commits
the diff, which a reviewer then reads; any other change leaves them alone.
"""

from __future__ import annotations

import pytest

from outputs import LANGS, gold_files, kept_gold


@pytest.mark.subprocess
@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGS)
def test_outputs_match_gold(lang):
    fresh = gold_files(lang)
    kept = kept_gold(lang)
    assert sorted(fresh) == sorted(kept), "files differ from tests/gold/ (make gold regenerates on purpose)"
    changed = [name for name in fresh if fresh[name] != kept[name]]
    assert not changed, f"outputs differ from tests/gold/{lang}/ (make gold regenerates on purpose): {changed}"


def test_gold_covers_every_sample():
    """Each sample carnet has its report, its findings and its annotated workbook kept."""
    from outputs import ROOT
    from auditor.read import discover

    samples = discover(ROOT / "sample_carnets")
    for lang in LANGS:
        kept = kept_gold(lang)
        folders = {name.split("/")[0] for name in kept if name.endswith("/findings.json")}
        assert len(folders) == len(samples) > 0
        assert {"index.html", "summary.json"} <= set(kept)
        for folder in folders:
            for name in ("report.html", "findings.json", "annotated.xlsx.dump.txt"):
                assert f"{folder}/{name}" in kept, (lang, folder, name)


def test_workbook_dump_sees_what_a_reader_sees(tmp_path):
    """Two workbooks that differ by one comment, fill or value have different
    dumps; the same content saved twice has the same dump."""
    from openpyxl import Workbook
    from openpyxl.comments import Comment
    from openpyxl.styles import PatternFill

    from outputs import workbook_dump

    from auditor.report.xlsx_io import workbook_bytes

    def book(comment="note", colour="FFF4C7C3", value=12):
        wb = Workbook()
        ws = wb.active
        ws["A1"] = value
        ws["A1"].comment = Comment(comment, "ecarte-auditor")
        ws["A1"].fill = PatternFill("solid", fgColor=colour)
        return workbook_bytes(wb, "2026-01-01T00:00:00Z")   # stamped as the outputs are

    base = workbook_dump(book())
    assert workbook_dump(book()) == base
    for changed in (book(comment="other"), book(colour="FFFCE8B2"), book(value=13)):
        assert workbook_dump(changed) != base


@pytest.mark.subprocess
@pytest.mark.slow
def test_digest_of_generated_carnets_is_stable_and_sensitive(tmp_path, monkeypatch):
    """scripts/compare_outputs.py on a few carnets, as a user runs it (no
    SOURCE_DATE_EPOCH of theirs): the same code gives the same digest; a
    carnet whose outputs change changes its lines."""
    import sys

    from outputs import ROOT

    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import compare_outputs
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    first = compare_outputs.digest(3, seed=5, batch=3, langs=("fr",), keep=None)
    assert first == compare_outputs.digest(3, seed=5, batch=3, langs=("fr",), keep=None)
    names = [line.split("  ", 1)[1] for line in first if "  " in line]
    assert any(n.endswith("findings.json") for n in names) and any(n.endswith(".dump.txt") for n in names)
    assert "fr/batch000/summary.json" in names
    other = compare_outputs.digest(3, seed=6, batch=3, langs=("fr",), keep=None)
    assert other != first
