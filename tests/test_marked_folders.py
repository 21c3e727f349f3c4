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
from pathlib import Path

import pytest

from auditor.marked_folders import RUN_SPOOLS, SERVE, UNMARKED_GRACE, WARM_UPS, remove


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


def test_a_folder_is_its_makers_while_it_holds_the_lock_whatever_its_id_says(tmp_path, monkeypatch):
    """A live maker in another pid namespace sharing the temp folder (its id
    names no process here) keeps its folder; a maker gone whose id now names
    another process (after a reboot) does not; a folder of a version that took
    no lock is judged by its id, as before."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = _ended_pid()
    live = RUN_SPOOLS.make()                          # held by this process, its id rewritten as another namespace's
    (live / RUN_SPOOLS.pid_file).write_text(f"{dead} locked\n")
    reused = tmp_path / (RUN_SPOOLS.prefix + "reused")   # its maker gone, its id now a live process's
    reused.mkdir()
    (reused / RUN_SPOOLS.pid_file).write_text(f"{os.getppid()} locked\n")
    older = tmp_path / (RUN_SPOOLS.prefix + "older")     # an older version's: no lock taken, its id alive
    older.mkdir()
    (older / RUN_SPOOLS.pid_file).write_text(f"{os.getppid()}\n")
    assert RUN_SPOOLS.stale(tmp_path) == [reused]
    remove(live)
    assert not live.exists()


def test_the_lock_is_released_when_the_maker_is_killed_outright(tmp_path):
    """A real process makes its folder and is killed (SIGKILL): the kernel
    releases its lock, and the folder is stale at once."""
    import signal
    import subprocess

    code = ("import sys, time\nfrom auditor.marked_folders import RUN_SPOOLS\n"
            "print(RUN_SPOOLS.make(), flush=True)\ntime.sleep(300)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(tmp_path)})
    try:
        folder = Path(proc.stdout.readline().strip())
        assert (folder / RUN_SPOOLS.pid_file).read_text().split() == [str(proc.pid), "locked"]
        assert RUN_SPOOLS.stale(tmp_path) == []
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert RUN_SPOOLS.remove_stale(tmp_path) == [folder]


@pytest.mark.parametrize("how", ["full", "none-usable"])
def test_a_run_whose_spool_cannot_be_made_says_so(tmp_path, monkeypatch, capsys, how):
    """A full temp folder when the run makes its spool, or no usable temp
    folder at all (tempfile's probe failed in every candidate): one message
    naming it and the reason, exit 2 (a write error), no traceback."""
    from auditor.cli import main

    if how == "full":
        def full(self):
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(type(RUN_SPOOLS), "make", full)
        named = tempfile.gettempdir()
    else:
        def none_usable():
            raise FileNotFoundError(errno.ENOENT, "No usable temporary directory found")

        named = str(tmp_path / "full-tmpfs")
        monkeypatch.setattr(tempfile, "tempdir", None)
        monkeypatch.setattr(tempfile, "gettempdir", none_usable)
        monkeypatch.setenv("TMPDIR", named)
    carnet = Path(__file__).resolve().parents[1] / "sample_carnets" / "compliant" / "forges-table5"
    assert main(["audit", str(carnet), "--out", str(tmp_path / "out"), "--quiet", "--lang", "en"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"cannot write {named}: " in err, err


def test_a_stop_asked_during_the_removal_waits_until_it_is_over(tmp_path, monkeypatch):
    """A second Ctrl-C or SIGTERM while the run removes its spool (the
    casino's data) comes once the folder is gone, never half-way."""
    import shutil
    import signal

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    folder = RUN_SPOOLS.make()
    (folder / "0.pickle").write_bytes(b"an audit")
    rmtree = shutil.rmtree

    def stopped_as_it_starts(path, *args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        return rmtree(path, *args, **kwargs)

    def interrupt(sig, frame):
        raise KeyboardInterrupt

    monkeypatch.setattr(shutil, "rmtree", stopped_as_it_starts)
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        with pytest.raises(KeyboardInterrupt):
            remove(folder)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert not folder.exists()
