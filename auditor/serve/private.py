"""The server's private folder: made for this user only, marked with the
server's process id, bounded while it runs, removed when it stops — and
removed at the next start when it was left by a server that could not clean
up (killed with SIGKILL, the machine switched off).

It holds the uploads until their run takes them (the spool) and the audits'
cache (each carnet's audit pickled: the casino's data), bounded while the
page runs; none of it may stay on the disk once the page is gone. The audits
themselves are kept in the inspector's workspace (auditor.serve.workspace),
which nothing here touches.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from auditor.marked_folders import SERVE as FOLDERS
from auditor.marked_folders import is_plain_dir, remove

PID_FILE = FOLDERS.pid_file
# What the private folder may take (the audits' cache, mostly) before the
# oldest is evicted (it may be in memory: /tmp is often a tmpfs).
KEEP_BYTES = 2048 * 1024 * 1024
KEEP_RUNS = 20

make = FOLDERS.make                  # a new private folder (mode 0700) marked with this process's id
remove_stale = FOLDERS.remove_stale  # the private folders of servers that are no longer running, removed


def running(tmp: Path | None = None) -> list[Path]:
    """The redirect files (server.REDIRECT_FILE) of this user's servers
    still running, newest first: a second click on the shortcut opens the
    page already there rather than a second server."""
    found = []
    for folder, _ in FOLDERS.owned(tmp):
        page = folder / "open.html"
        try:
            if FOLDERS.alive(folder) and page.is_file():
                found.append((page.stat().st_mtime, page))
        except OSError:
            continue
    return [page for _, page in sorted(found, reverse=True)]


# -- bounded while it runs -----------------------------------------------------------

def size_of(folder: Path, skip: Path | None = None) -> int:
    """Bytes of the files under `folder`, but those under `skip` (what cannot
    be read counts nothing)."""
    total = 0
    skip_text = os.path.normcase(os.path.abspath(skip)) if skip is not None else None
    for dirpath, dirs, files in os.walk(folder):
        if skip_text is not None:
            dirs[:] = [d for d in dirs if os.path.normcase(os.path.abspath(os.path.join(dirpath, d))) != skip_text]
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


CACHE = "cache"   # the audits' cache in the private folder (auditor.serve.runs.Runs.cache)


def cache_entries(cache: Path) -> list[Path]:
    """The entries of an audits' cache (`<key[:2]>/<key>`, auditor.batch.cache),
    least recently used first (a run touches the entries it used), and the
    half-written ones a worker stopped short left (`<key>.tmp<pid>`) before all."""
    found = []
    try:
        shards = [d for d in cache.iterdir() if d.is_dir() and not d.is_symlink()]
    except OSError:
        return []
    for shard in shards:
        try:
            for entry in shard.iterdir():
                st = entry.lstat()
                if is_plain_dir(st.st_mode):
                    found.append((".tmp" not in entry.name, st.st_mtime, entry.name, entry))
        except OSError:
            continue
    return [entry for *_, entry in sorted(found)]


def evict(runs, root: Path, keep_bytes: int, keep_runs: int = KEEP_RUNS, protect=()) -> list[str]:
    """Keep the private folder within `keep_bytes`. What it holds besides
    the upload spool (uploads waiting for their run, never removed here):
    the audits' cache — each carnet's audit pickled, the casino's data —
    and, should a run have been made there rather than in the workspace,
    that run's folder. Removed oldest first until the folder takes at most
    `keep_bytes`: first the finished runs whose folder is in `root` (folder
    and entry: the page says they are gone; the newest finished one kept
    whatever its size, a run under way never touched, at most `keep_runs`
    kept), then the cache's entries least recently used first, never one of
    `protect` (those the audit just made used). Nothing of the inspector's
    workspace is ever removed, even a workspace inside `root`; an entry of
    the cache removed only means a decision on that audit audits its carnet
    again (from the workspace's copy). Call it where nothing else uses the
    cache (the runs' worker thread). The run ids and cache keys removed."""
    root = Path(root)
    workspace = getattr(getattr(runs, "workspace", None), "folder", None)
    ours = lambda path: _inside(path, root) and not (workspace is not None and _inside(path, workspace))  # noqa: E731
    with runs._lock:   # the registry: insertion order is the runs' age
        candidates = [(run_id, run) for run_id, run in runs._runs.items() if ours(run.folder)]
    finished = [(i, r) for i, r in candidates if r.state in ("done", "failed")]
    inside = workspace is not None and _inside(workspace, root)
    total = size_of(root, skip=workspace if inside else None)
    count = len(candidates)
    removed = []
    for run_id, run in finished[:-1]:
        if total <= keep_bytes and count <= keep_runs:
            break
        size = size_of(run.folder)
        remove(run.folder)
        with runs._lock:
            runs._runs.pop(run_id, None)
        total -= size
        count -= 1
        removed.append(run_id)
    kept = {Path(p).resolve() for p in protect}
    for entry in cache_entries(root / CACHE):
        if total <= keep_bytes:
            break
        if entry.resolve() in kept or not ours(entry):
            continue
        size = size_of(entry)
        remove(entry)
        total -= size
        removed.append(entry.name)
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
