"""Nothing left behind, nothing live: the page's security points, each with
a real `ecarte-audit serve` process where it matters.

- the private folder removed on SIGTERM, SIGHUP and Ctrl-C, after an upload;
  the folders of servers killed outright (SIGKILL) removed at the next start;
- an upload streamed to disk: the server's resident memory stays bounded
  whatever the size of the upload;
- the private folder bounded: the oldest runs evicted;
- the browser opened through a private redirect file, never a token on its
  command line;
- reports served sandboxed: no report script runs on the API's origin.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from auditor.serve import private
from serve_helpers import Server, csv_folder, files_under, multipart, zip_of

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_carnets"
XLSX = SAMPLES / "infractions" / "numerotation-et-mises.xlsx"
CSV = SAMPLES / "infractions" / "prelevements"
POSIX = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _signalled(tmp_path: Path, sig: int):
    server = Server(tmp_path / "tmp", "--jobs", "1")
    doc = server.audit([("a.xlsx", XLSX.read_bytes()), ("b.zip", zip_of(csv_folder(CSV, "b/")))])
    assert doc["state"] == "done", doc["message"]
    [folder] = server.private_folders()
    assert any(folder.rglob("report.html")) and any(folder.rglob("carnet-1.xlsx"))
    assert (folder / private.PID_FILE).read_text().split() == [str(server.proc.pid)]
    server.proc.send_signal(sig)
    out, err = server.proc.communicate(timeout=60)
    assert server.proc.returncode == -sig, err          # ended by its signal, as `kill` expects
    assert "Traceback" not in err
    assert "Page d'audit arrêtée ; fichiers temporaires effacés." in out
    assert not folder.exists()
    assert files_under(tmp_path / "tmp") == []


@POSIX
@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_signal_removes_the_private_folder(tmp_path, name):
    _signalled(tmp_path, getattr(signal, name))


@POSIX
@pytest.mark.slow
@pytest.mark.subprocess
def test_a_signal_while_an_upload_is_audited_still_cleans_up(tmp_path):
    """SIGTERM in the middle of an audit: the audit stops, the folder goes."""
    server = Server(tmp_path / "tmp", "--jobs", "1")
    status, _, data = server.upload([(f"c{i}.xlsx", XLSX.read_bytes()) for i in range(6)])
    assert status == 202
    [folder] = server.private_folders()
    server.proc.send_signal(signal.SIGTERM)
    out, err = server.proc.communicate(timeout=120)
    assert server.proc.returncode == -signal.SIGTERM, err
    assert not folder.exists() and files_under(tmp_path / "tmp") == []


@POSIX
@pytest.mark.slow
@pytest.mark.subprocess
def test_the_folder_of_a_killed_server_is_removed_at_the_next_start(tmp_path):
    first = Server(tmp_path / "tmp", "--jobs", "1")
    first.audit([("a.xlsx", XLSX.read_bytes())])
    [left] = first.private_folders()
    first.proc.kill()                                   # SIGKILL: no clean-up possible
    first.proc.communicate(timeout=30)
    assert left.exists() and any(left.rglob("report.html"))
    running = Server(tmp_path / "tmp", "--jobs", "1")    # removes the dead one's
    try:
        assert not left.exists()
        [kept] = running.private_folders()
        third = Server(tmp_path / "tmp", "--jobs", "1")  # a running server's folder is not touched
        try:
            assert kept.exists() and len(third.private_folders()) == 2
        finally:
            third.stop()
    finally:
        running.stop()
    assert files_under(tmp_path / "tmp") == []


# -- unit: which folders are stale ---------------------------------------------------------

def test_stale_folders(tmp_path):
    dead = _fake_server_pid()
    mine = tmp_path / (private.PREFIX + "mine")
    mine.mkdir()
    (mine / private.PID_FILE).write_text(f"{os.getpid()}\n")
    gone = tmp_path / (private.PREFIX + "gone")
    gone.mkdir()
    (gone / private.PID_FILE).write_text(f"{dead}\n")
    fresh = tmp_path / (private.PREFIX + "fresh")       # being made: no pid file yet
    fresh.mkdir()
    old = tmp_path / (private.PREFIX + "old")           # an older server's, a day untouched
    old.mkdir()
    os.utime(old, (time.time() - 2 * private.UNMARKED_GRACE,) * 2)
    link = tmp_path / (private.PREFIX + "link")         # never followed
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / private.PID_FILE).write_text(f"{dead}\n")
    link.symlink_to(target)
    other = tmp_path / "unrelated"
    other.mkdir()
    assert private.stale(tmp_path) == [gone, old]
    assert private.remove_stale(tmp_path) == [gone, old]
    assert mine.exists() and fresh.exists() and target.exists() and link.exists() and other.exists()


def _fake_server_pid() -> int:
    """The id of a process that has ended."""
    import subprocess

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_windows_console_close_waits_for_the_clean_up(tmp_path):
    """The handler SetConsoleCtrlHandler gets (called here as Windows would,
    from another thread): a close stops the server and waits for its
    clean-up; if the clean-up does not come in time, it removes the folder
    itself; Ctrl-C and Ctrl-Break are left to Python."""
    root = tmp_path / "private"
    root.mkdir()
    (root / "carnet.xlsx").write_bytes(b"x")
    stopped, cleaned = [], threading.Event()

    def stop():
        stopped.append(True)
        threading.Timer(0.05, lambda: (private.remove(root), cleaned.set())).start()

    handler = private.console_handler(stop, cleaned, root)
    assert handler(0) is False and handler(1) is False and not stopped
    assert handler(private.CTRL_CLOSE_EVENT) is True
    assert stopped and cleaned.is_set() and not root.exists()
    root.mkdir()
    late = private.console_handler(lambda: None, threading.Event(), root)
    private.CLOSE_WAIT, saved = 0.01, private.CLOSE_WAIT
    try:
        assert late(private.CTRL_LOGOFF_EVENT) is True
    finally:
        private.CLOSE_WAIT = saved
    assert not root.exists()
