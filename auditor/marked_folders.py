"""Temporary folders marked with the process that made them, so that the
next process of their kind removes those of a process killed outright
(SIGKILL, the out-of-memory killer, the machine switched off), which could
not remove its own.

The local page's private folder (auditor.serve.private) and a run's spool
(auditor.run: each carnet's audit pickled until its files are made) hold the
casino's data; neither may stay in the temporary folder once its process is
gone.

A folder is its process's while that process holds a lock on its pid file
(flock, taken at its making, released by the kernel when the process ends
however it ends). The process id alone would mislead: in another pid
namespace sharing the temporary folder (containers) a live maker's id names
no process here, and after a reboot an old id may name another process.
Where there is no flock (Windows), or for a folder marked by a version that
took no lock (its pid file holds the id alone), the id is asked as before.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import sys
import tempfile
import threading
import time
from pathlib import Path

# A folder without its pid file (one made by a version older than the file,
# or in the instant between making the folder and marking it) is left alone
# this long.
UNMARKED_GRACE = 24 * 3600


class MarkedFolders:
    """The folders `<tmp>/<prefix>*` of one kind, each marked by the file
    `pid_file` holding its maker's process id."""

    __slots__ = ("prefix", "pid_file")

    def __init__(self, prefix: str, pid_file: str):
        self.prefix, self.pid_file = prefix, pid_file

    def make(self) -> Path:
        """A new folder (mode 0700: this user only) marked with this process's
        id, its pid file locked until `remove` or the process's end."""
        root = Path(tempfile.mkdtemp(prefix=self.prefix))
        fd = None
        try:
            fd = os.open(root / self.pid_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            locked = _lock(fd)
            os.write(fd, f"{os.getpid()}{' ' + LOCKED if locked else ''}\n".encode("ascii"))
        except BaseException:   # a disk full: no unmarked folder left for a day
            if fd is not None:
                os.close(fd)
            remove(root)
            raise
        if locked:
            _HELD[str(root)] = fd   # the lock lives as long as this descriptor (never inherited by a child)
        else:
            os.close(fd)   # nothing to hold (and on Windows an open file could not be removed)
        return root

    def owned(self, tmp: Path | None = None) -> list[tuple[Path, os.stat_result]]:
        """This user's own folders of this kind (real folders, never a link)."""
        try:
            tmp = Path(tmp or tempfile.gettempdir())
            entries = sorted(tmp.glob(self.prefix + "*"))
        except OSError:   # no usable temp folder at all (tempfile's probe failed everywhere)
            return []
        uid = getattr(os, "getuid", lambda: None)()
        found = []
        for folder in entries:
            try:
                st = folder.lstat()
            except OSError:
                continue
            if is_plain_dir(st.st_mode) and (uid is None or st.st_uid == uid):
                found.append((folder, st))
        return found

    def owner(self, folder: Path) -> int | None:
        """The process id the folder is marked with (None: unmarked or unreadable)."""
        return self._mark(folder)[0]

    def _mark(self, folder: Path) -> tuple[int | None, bool]:
        """(the process id, whether its maker locked the pid file)."""
        try:
            words = (folder / self.pid_file).read_text(encoding="ascii").split()
            return int(words[0]), LOCKED in words[1:]
        except (OSError, ValueError, IndexError):
            return None, False

    def alive(self, folder: Path) -> bool:
        """Whether the folder's maker still runs: it holds the pid file's lock
        (where a lock is known), else a process of its id runs here."""
        return self._alive(folder, *self._mark(folder))

    def _alive(self, folder: Path, pid: int | None, locked: bool) -> bool:
        if pid is None:
            return False
        if pid == os.getpid():
            return True
        held = _held_elsewhere(folder / self.pid_file) if locked else None
        return pid_alive(pid) if held is None else held

    def stale(self, tmp: Path | None = None, now: float | None = None) -> list[Path]:
        """The folders whose process is gone: marked with a process that no
        longer runs or, unmarked, untouched for a day."""
        now = time.time() if now is None else now
        found = []
        for folder, st in self.owned(tmp):
            pid, locked = self._mark(folder)
            if pid is None:
                if now - st.st_mtime > UNMARKED_GRACE:
                    found.append(folder)
            elif not self._alive(folder, pid, locked):
                found.append(folder)
        return found

    def remove_stale(self, tmp: Path | None = None) -> list[Path]:
        """Remove the folders `stale` finds; the ones removed (nothing raises)."""
        gone = []
        for folder in self.stale(tmp):
            remove(folder)
            if not folder.exists():
                gone.append(folder)
        return gone


# The project's marked folders.
SERVE = MarkedFolders("ecarte-audit-serve-", "server.pid")   # the local page's private folder
RUN_SPOOLS = MarkedFolders("ecarte-audit-run-", "run.pid")   # a run's audits until their files are made
WARM_UPS = MarkedFolders("ecarte-audit-warm-up-", "worker.pid")   # a batch worker's synthetic carnet


def remove(root: Path) -> None:
    """Remove the folder and everything in it (what cannot be removed stays;
    nothing raises: this runs while a process stops); its lock, if this
    process made it, released once it is gone. Ctrl-C and SIGTERM wait
    until it is over: a stop asked again during the clean-up would leave the
    folder (the casino's data) half removed."""
    with stops_held():
        shutil.rmtree(root, ignore_errors=True)
        fd = _HELD.pop(str(root), None)
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass


class stops_held:
    """Ctrl-C and SIGTERM held within the block: noted, then sent again once
    it is over, to the handlers they had. Their handlers are swapped rather
    than the signals masked: a process-directed signal goes to any thread
    that does not mask it (a reader's, pyarrow's), and Python runs its
    handler in the main thread all the same. Only the main thread can swap
    them; a handler never interrupts another thread."""

    def __enter__(self):
        self.saved, self.asked = {}, []
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.saved[sig] = signal.signal(sig, self._note)
        return self

    def _note(self, sig, frame):
        self.asked.append(sig)

    def __exit__(self, *exc):
        for sig, handler in self.saved.items():   # set outside Python (None): the default is what is known of it
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        for sig in dict.fromkeys(self.asked):
            os.kill(os.getpid(), sig)
        return False


# The second word of a pid file whose maker holds its lock.
LOCKED = "locked"
# The pid files this process made and locks: folder → descriptor.
_HELD: dict[str, int] = {}


def _lock(fd: int) -> bool:
    """Take the lock on `fd` without waiting; False where there is no flock or
    the file system refuses it (some network file systems), or it is held."""
    try:
        import fcntl
    except ImportError:   # Windows
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _held_elsewhere(pid_file: Path) -> bool | None:
    """Whether another process holds the lock on `pid_file` (None: cannot tell)."""
    try:
        import fcntl
    except ImportError:   # Windows
        return None
    try:
        fd = os.open(pid_file, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return None
    finally:
        os.close(fd)
    return False


def is_plain_dir(mode: int) -> bool:
    """A folder itself, not a link to one (a link is never followed into)."""
    return stat.S_ISDIR(mode) and not stat.S_ISLNK(mode)


def pid_alive(pid: int) -> bool:
    """Whether a process of that id runs on this machine (a process of
    another user counts as running)."""
    if pid <= 0:
        return False
    if sys.platform == "win32":
        return _windows_pid_alive(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OSError, OverflowError):   # OverflowError: a damaged pid file's number past a pid's size
        return False
    return True


def _windows_pid_alive(pid: int) -> bool:   # pragma: no cover - Windows only
    # os.kill(pid, 0) would terminate the process on Windows: ask the kernel.
    import ctypes

    kernel32 = ctypes.windll.kernel32
    handle = kernel32.OpenProcess(0x1000, False, pid)   # PROCESS_QUERY_LIMITED_INFORMATION
    if not handle:
        return ctypes.GetLastError() == 5               # ERROR_ACCESS_DENIED: it exists
    try:
        code = ctypes.c_ulong()
        if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True
        return code.value == 259                        # STILL_ACTIVE
    finally:
        kernel32.CloseHandle(handle)
