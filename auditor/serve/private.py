"""The server's private folder: made for this user only, marked with the
server's process id, bounded while it runs, removed when it stops — and
removed at the next start when it was left by a server that could not clean
up (killed with SIGKILL, the machine switched off).

A casino's carnets and their reports live here while the page runs; none
may stay on the disk once the page is gone.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

PREFIX = "ecarte-audit-serve-"
PID_FILE = "server.pid"
# A folder without its pid file (a server older than the file, or one in the
# instant between making its folder and marking it) is left alone this long.
UNMARKED_GRACE = 24 * 3600
# What the runs in the private folder may take before the oldest are evicted
# (it may be in memory: /tmp is often a tmpfs); the newest is always kept.
KEEP_BYTES = 2048 * 1024 * 1024
KEEP_RUNS = 20


def make() -> Path:
    """A new private folder (mode 0700) marked with this process's id."""
    root = Path(tempfile.mkdtemp(prefix=PREFIX))
    fd = os.open(root / PID_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(f"{os.getpid()}\n")
    return root


def remove(root: Path) -> None:
    """Remove the folder and everything in it (what cannot be removed stays;
    nothing raises: this runs while the server stops)."""
    shutil.rmtree(root, ignore_errors=True)


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
    except OSError:
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


def stale(tmp: Path | None = None, now: float | None = None) -> list[Path]:
    """The private folders of servers that are no longer running, in the
    temporary folder: this user's own, real folders (never a link), whose
    pid file names a process that is gone (or, without a pid file, untouched
    for a day)."""
    tmp = Path(tmp or tempfile.gettempdir())
    now = time.time() if now is None else now
    found = []
    try:
        entries = sorted(tmp.glob(PREFIX + "*"))
    except OSError:
        return []
    uid = getattr(os, "getuid", lambda: None)()
    for folder in entries:
        try:
            st = folder.lstat()
        except OSError:
            continue
        if not _is_plain_dir(st.st_mode) or (uid is not None and st.st_uid != uid):
            continue
        try:
            pid = int((folder / PID_FILE).read_text(encoding="ascii").split()[0])
        except (OSError, ValueError, IndexError):
            if now - st.st_mtime > UNMARKED_GRACE:
                found.append(folder)
            continue
        if pid != os.getpid() and not pid_alive(pid):
            found.append(folder)
    return found


def _is_plain_dir(mode: int) -> bool:
    import stat

    return stat.S_ISDIR(mode) and not stat.S_ISLNK(mode)


def running(tmp: Path | None = None) -> list[Path]:
    """The redirect files (server.REDIRECT_FILE) of this user's servers
    still running, newest first: a second click on the shortcut opens the
    page already there rather than a second server."""
    tmp = Path(tmp or tempfile.gettempdir())
    uid = getattr(os, "getuid", lambda: None)()
    found = []
    try:
        entries = list(tmp.glob(PREFIX + "*"))
    except OSError:
        return []
    for folder in entries:
        try:
            st = folder.lstat()
            if not _is_plain_dir(st.st_mode) or (uid is not None and st.st_uid != uid):
                continue
            pid = int((folder / PID_FILE).read_text(encoding="ascii").split()[0])
            page = folder / "open.html"
            if pid_alive(pid) and page.is_file():
                found.append((page.stat().st_mtime, page))
        except (OSError, ValueError, IndexError):
            continue
    return [page for _, page in sorted(found, reverse=True)]


def remove_stale(tmp: Path | None = None) -> list[Path]:
    """Remove the folders `stale` finds; the ones removed."""
    gone = []
    for folder in stale(tmp):
        remove(folder)
        if not folder.exists():
            gone.append(folder)
    return gone


# -- bounded while it runs -----------------------------------------------------------

def size_of(folder: Path) -> int:
    """Bytes of the files under `folder` (what cannot be read counts nothing)."""
    total = 0
    for dirpath, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


def evict(runs, root: Path, keep_bytes: int, keep_runs: int, incoming: int = 0) -> list[str]:
    """Make room in the private folder for an upload of `incoming` bytes:
    the oldest finished runs whose files are in `root` are removed (their
    folder, and their entry, so the page says they are gone) until the runs
    there take at most `keep_bytes` with the upload and number fewer than
    `keep_runs`. The newest finished run is kept whatever its size, a run
    under way is never touched, and a run kept outside the private folder
    (the inspector's workspace) is not this function's. The ids removed."""
    with runs._lock:   # the registry: insertion order is the runs' age
        candidates = [(run_id, run) for run_id, run in runs._runs.items()
                      if _inside(run.folder, root)]
    finished = [(i, r) for i, r in candidates if r.state in ("done", "failed")]
    sizes = {i: size_of(r.folder) for i, r in candidates}
    total = sum(sizes.values()) + incoming
    count = len(candidates) + 1
    removed = []
    for run_id, run in finished[:-1]:
        if total <= keep_bytes and count <= keep_runs:
            break
        remove(run.folder)
        with runs._lock:
            runs._runs.pop(run_id, None)
        total -= sizes[run_id]
        count -= 1
        removed.append(run_id)
    return removed


def _inside(path: Path, root: Path) -> bool:
    try:
        return Path(path).resolve().is_relative_to(Path(root).resolve())
    except OSError:
        return False


# -- the Windows console closed -----------------------------------------------------

CTRL_CLOSE_EVENT, CTRL_LOGOFF_EVENT, CTRL_SHUTDOWN_EVENT = 2, 5, 6
CLOSE_WAIT = 4.0   # Windows ends the process 5 s after a close event


def console_handler(stop, cleaned, root: Path):
    """The function given to SetConsoleCtrlHandler: on the console's close,
    a log-off or a shutdown, ask the server to stop (`stop()`), wait for its
    clean-up (`cleaned`, a threading.Event) a little less than Windows
    allows, and remove the folder here if it has not been. Ctrl-C and
    Ctrl-Break (0, 1) are left to Python's own handling (False)."""
    def handler(event: int) -> bool:
        if event not in (CTRL_CLOSE_EVENT, CTRL_LOGOFF_EVENT, CTRL_SHUTDOWN_EVENT):
            return False
        stop()
        if not cleaned.wait(CLOSE_WAIT):
            remove(root)
        return True
    return handler


def watch_console(stop, cleaned, root: Path):
    """On Windows, `console_handler` installed (kept alive by the caller
    through the returned object); elsewhere None."""
    if sys.platform != "win32":
        return None
    import ctypes   # pragma: no cover - Windows only
    from ctypes import wintypes

    routine = ctypes.WINFUNCTYPE(wintypes.BOOL, wintypes.DWORD)(console_handler(stop, cleaned, root))
    ctypes.windll.kernel32.SetConsoleCtrlHandler(routine, True)
    return routine
