"""Inputs where a night with the cache could differ from a fresh run, or
fail: what the batch keeps beside the cache (auditor/batch/cache.py
`BatchChecks`, `BatchMemo`) never changes a run's files, and a cache in a
state the run did not leave never stops it."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.batch import Options
from auditor.batch.cache import BATCH_FOLDER
from auditor.batch.plan import plan
from auditor.run import run as run_batch

from test_batch_memo import MONDAY, TUESDAY, _files, shared  # noqa: F401  (the three carnets of one casino)


@pytest.mark.slow
def test_a_cache_whose_batches_folder_is_a_file_still_runs(shared, tmp_path):
    """`batches` taken by a file (a user's, a copy gone wrong): what the batch
    would keep there is not kept, and the nights run as without it."""
    jobs = plan([shared])
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / BATCH_FOLDER).write_text("not a folder")
    for out, at in (("monday", MONDAY), ("tuesday", TUESDAY)):
        run_batch(jobs, tmp_path / out, Options(generated_at=at), cache_dir=cache)
    run_batch(jobs, tmp_path / "fresh", Options(generated_at=TUESDAY))
    assert _files(tmp_path / "tuesday") == _files(tmp_path / "fresh")
    assert (cache / BATCH_FOLDER).read_text() == "not a folder"


# Damage a length field can take (one byte of the file changed): a pickle
# opcode whose length is absurd. The unpickler raises neither
# UnpicklingError nor ValueError for these.
ABSURD_LENGTHS = {
    "overflow": b"\x80\x05\x96" + (2**64 - 1).to_bytes(8, "little"),   # BYTEARRAY8 past sys.maxsize
    "memory": b"\x80\x05\x8e" + (2**40).to_bytes(8, "little"),         # BINBYTES8 of a terabyte
}


@pytest.mark.slow
@pytest.mark.parametrize("damage", sorted(ABSURD_LENGTHS))
def test_a_batch_file_damaged_in_a_length_is_made_again(shared, tmp_path, damage):
    jobs = plan([shared])
    cache = tmp_path / "cache"
    run_batch(jobs, tmp_path / "monday", Options(generated_at=MONDAY), cache_dir=cache)
    for kept in (cache / BATCH_FOLDER).iterdir():
        kept.write_bytes(ABSURD_LENGTHS[damage])
    run_batch(jobs, tmp_path / "tuesday", Options(generated_at=TUESDAY), cache_dir=cache)
    run_batch(jobs, tmp_path / "fresh", Options(generated_at=TUESDAY))
    assert _files(tmp_path / "tuesday") == _files(tmp_path / "fresh")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["checks", "files"])
def test_a_batch_file_damaged_inside_its_text_is_not_recalled(shared, tmp_path, kind):
    """A byte changed inside what a batch file keeps (a disk's or a copy's
    damage) still unpickles: the file says whether it is whole, and one that
    is not is made again, never written out as it reads."""
    jobs = plan([shared])
    cache = tmp_path / "cache"
    run_batch(jobs, tmp_path / "monday", Options(generated_at=MONDAY), cache_dir=cache)
    kept = next((cache / BATCH_FOLDER).glob(f"*.{kind}.pickle"))
    data = kept.read_bytes()
    assert b"t3" in data
    kept.write_bytes(data.replace(b"t3", b"t9"))   # the carnet named otherwise in a place or a row
    run_batch(jobs, tmp_path / "tuesday", Options(generated_at=TUESDAY), cache_dir=cache)
    run_batch(jobs, tmp_path / "fresh", Options(generated_at=TUESDAY))
    assert _files(tmp_path / "tuesday") == _files(tmp_path / "fresh")


@pytest.mark.slow
def test_a_damaged_checks_file_is_kept_anew_with_a_workbook(shared, tmp_path, monkeypatch):
    """With a workbook asked for (no carnet's files are kept, so no carnet's
    digest is added to the checks), a damaged checks file is still replaced:
    the night after makes no checks again."""
    jobs = plan([shared])
    cache = tmp_path / "cache"
    options = lambda at: Options(formats=("json", "xlsx"), generated_at=at)   # noqa: E731
    run_batch(jobs, tmp_path / "monday", options(MONDAY), cache_dir=cache)
    checks = next((cache / BATCH_FOLDER).glob("*.checks.pickle"))
    checks.write_bytes(b"damaged")
    run_batch(jobs, tmp_path / "tuesday", options(TUESDAY), cache_dir=cache)
    from auditor import across

    made: list[str] = []
    check = across.check_batch
    monkeypatch.setattr("auditor.across.check_batch", lambda *a, **k: made.append("checks") or check(*a, **k))
    run_batch(jobs, tmp_path / "wednesday", options(TUESDAY), cache_dir=cache)
    assert made == []
    monkeypatch.undo()
    run_batch(jobs, tmp_path / "fresh", options(TUESDAY))
    assert _files(tmp_path / "wednesday") == _files(tmp_path / "fresh")


def test_a_carnet_alone_that_cannot_be_placed_reads_the_same_with_the_cache(tmp_path):
    """A carnet audited alone: with a cache its facts come back (kept for
    later batches), without one they do not; the rules across a table's
    carnets must say the same either way (not "a carnet of the batch cannot
    be placed" with the cache and "needs the table's other carnets" without)."""
    carnet = tmp_path / "night" / "damaged.xlsx"
    carnet.parent.mkdir()
    carnet.write_bytes(b"not a workbook")
    jobs = plan([carnet])
    cache = tmp_path / "cache"
    for out, at in (("monday", MONDAY), ("tuesday", TUESDAY)):
        run_batch(jobs, tmp_path / out, Options(generated_at=at), cache_dir=cache)
    run_batch(jobs, tmp_path / "fresh", Options(generated_at=TUESDAY))
    assert _files(tmp_path / "monday").keys() == _files(tmp_path / "fresh").keys()
    assert _files(tmp_path / "tuesday") == _files(tmp_path / "fresh")


@pytest.mark.slow
def test_a_bit_changed_in_any_file_of_the_cache_never_reaches_the_outputs(shared, tmp_path):
    """A disk's or a copy's damage, one bit of one file of the cache, in each
    file a night keeps (every carnet's audit, row and files; the batch's
    checks and files) at its middle and at its last byte: a changed byte
    inside a report's or a finding's text still unpickles, and was written
    out as it read. The next night writes what a run without the cache does."""
    import shutil

    jobs = plan([shared])
    first = tmp_path / "cache"
    run_batch(jobs, tmp_path / "monday", Options(generated_at=MONDAY), cache_dir=first)
    run_batch(jobs, tmp_path / "fresh", Options(generated_at=TUESDAY))
    fresh = _files(tmp_path / "fresh")
    kept = sorted(p.relative_to(first) for p in first.rglob("*.pickle"))
    assert {"carnet-audit.pickle", "carnet-head.pickle", "carnet-files.pickle"} <= {p.name for p in kept}
    assert {"checks", "files"} <= {p.name.split(".")[-2] for p in kept if p.parts[0] == BATCH_FOLDER}
    for n, (rel, middle) in enumerate((rel, middle) for rel in kept for middle in (True, False)):
        cache, out = tmp_path / f"cache-{n}", tmp_path / f"tuesday-{n}"
        shutil.copytree(first, cache)
        data = bytearray((cache / rel).read_bytes())
        data[len(data) // 2 if middle else -1] ^= 0x04
        (cache / rel).write_bytes(bytes(data))
        run_batch(jobs, out, Options(generated_at=TUESDAY), cache_dir=cache)
        assert _files(out) == fresh, (rel.as_posix(), "middle" if middle else "last byte")
