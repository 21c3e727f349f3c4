"""The temporary folders marked with their process (auditor.marked_folders):
which of them the next process removes, whatever their kind — the local
page's private folder, a run's spool, a worker's warm-up folder. The folders
of real processes killed outright: tests/test_serve_guard.py (the page) and
tests/test_batch_faults.py (a run)."""

from __future__ import annotations

import errno
import os
import sys
import tempfile
import time

import pytest

from auditor.marked_folders import RUN_SPOOLS, SERVE, UNMARKED_GRACE, WARM_UPS


@pytest.mark.parametrize("kind", [SERVE, RUN_SPOOLS, WARM_UPS], ids=lambda k: k.prefix)
def test_stale_folders(tmp_path, kind):
    dead = _ended_pid()
    mine = tmp_path / (kind.prefix + "mine")
    mine.mkdir()
    (mine / kind.pid_file).write_text(f"{os.getpid()}\n")
    gone = tmp_path / (kind.prefix + "gone")
    gone.mkdir()
    (gone / kind.pid_file).write_text(f"{dead}\n")
    fresh = tmp_path / (kind.prefix + "fresh")       # being made: no pid file yet
    fresh.mkdir()
    old = tmp_path / (kind.prefix + "old")           # an older version's, a day untouched
    old.mkdir()
    os.utime(old, (time.time() - 2 * UNMARKED_GRACE,) * 2)
    link = tmp_path / (kind.prefix + "link")         # never followed
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / kind.pid_file).write_text(f"{dead}\n")
    link.symlink_to(target)
    other = tmp_path / "unrelated"
    other.mkdir()
    others = []
    for k in (SERVE, RUN_SPOOLS, WARM_UPS):   # another kind's, of a process gone: not this kind's to remove
        if k is not kind:
            others.append(tmp_path / (k.prefix + "gone"))
            others[-1].mkdir()
            (others[-1] / k.pid_file).write_text(f"{dead}\n")
    assert kind.stale(tmp_path) == [gone, old]
    assert kind.remove_stale(tmp_path) == [gone, old]
    assert mine.exists() and fresh.exists() and target.exists() and link.exists() and other.exists()
    assert all(folder.exists() for folder in others)


def test_a_folder_that_cannot_be_marked_is_not_left(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    real_open = os.open

    def full_disk(path, *args, **kwargs):
        if str(path).endswith(RUN_SPOOLS.pid_file):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", full_disk)
    with pytest.raises(OSError):
        RUN_SPOOLS.make()
    assert list(tmp_path.iterdir()) == []


def _ended_pid() -> int:
    """The id of a process that has ended."""
    import subprocess

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_damaged_pid_file_makes_a_stale_folder_not_an_error(tmp_path):
    """A number past any pid (a pid file damaged on disk): the folder is its
    process's that is gone, never an OverflowError stopping every later run."""
    for kind in (SERVE, RUN_SPOOLS, WARM_UPS):
        folder = tmp_path / (kind.prefix + "damaged")
        folder.mkdir()
        (folder / kind.pid_file).write_text("99999999999999999999\n")
        assert kind.remove_stale(tmp_path) == [folder]
