"""A carnet alone, read in a thread while the command imports the auditor.

`ecarte-audit audit` audits a carnet alone in its own process, and before it
can it imports pandas and the rules (half a second or more). Reading a CSV
folder needs neither: the reader hands Arrow tables, and Arrow's CSV reader
parses in its own threads without the GIL. So the command starts the read
first (`auditor.read.read_early`, which holds it here with `reading`) and
imports the auditor meanwhile; `read_carnet` then takes that read (`take`)
instead of reading again. On two cores the million-stake carnet's read (a
quarter of a second) runs beside the imports; the command takes some 5 % less.

What the read gives is what `read_carnet` would give: the same function, the
same arguments. An exception it raises is raised again where the audit reads,
which reports it as it reports any reader's defect.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Callable

from auditor.limits import Limits

_LOCK = threading.Lock()
_PENDING: dict[tuple, "_Read"] = {}
# How long the end of the block waits for a read still running: a command
# that ends before its audit took the read (a usage error found once the
# auditor is imported, Ctrl-C, the carnet's timeout while the audit waited on
# it) must not end its interpreter while Arrow's threads parse the carnet
# (the process then aborts: exit 134, "terminate called without an active
# exception"). The largest carnet the limits let in reads in a second or two;
# a read stalled longer (a disk that no longer answers) does not hold a
# stopped command.
WAIT_AT_END_S = 5.0


class _Read:
    """One carnet being read in a thread; `result` waits for it."""

    def __init__(self, read: Callable):
        self._raw = None
        self._error: BaseException | None = None
        # Waited on rather than the thread joined: a join that Ctrl-C
        # interrupts marks the thread as ended while it still runs (Python
        # 3.11's Thread._wait_for_tstate_lock), and every later join returns
        # at once; an event says the truth after an interrupted wait too.
        self._done = threading.Event()
        # A daemon: a command stopped by Ctrl-C waits for a read it no longer
        # needs no longer than WAIT_AT_END_S.
        self._thread = threading.Thread(target=self._read, args=(read,), name="ecarte-audit-early-read", daemon=True)
        self._thread.start()

    def _read(self, read: Callable) -> None:
        try:
            self._raw = read()
        except BaseException as exc:   # raised again in the thread that takes it
            self._error = exc
        finally:
            self._done.set()

    def wait(self, timeout: float) -> None:
        """Until the read and its thread have ended, or for `timeout` seconds."""
        if self._done.wait(timeout):
            self._thread.join()   # it has set the event: only its return is left

    def result(self):
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._raw


def _key(path: Path, limits: Limits | None, columns) -> tuple:
    # The columns file by identity: it is the one object the command loaded.
    return (Path(path), limits, id(columns))


@contextlib.contextmanager
def reading(path: Path, limits: Limits | None, columns, read: Callable):
    """`read()` (the carnet at `path` read with `limits` and `columns`) in a
    thread for as long as the block runs; what `take` has not taken by its end
    is dropped, and the read waited for (WAIT_AT_END_S)."""
    key = _key(path, limits, columns)
    started = _Read(read)
    with _LOCK:
        _PENDING[key] = started
    try:
        yield
    finally:
        with _LOCK:
            _PENDING.pop(key, None)
        started.wait(WAIT_AT_END_S)


def take(path: Path, limits: Limits | None, columns):
    """The carnet read early with these very arguments (once), or None."""
    with _LOCK:
        read = _PENDING.pop(_key(path, limits, columns), None)
    return None if read is None else read.result()
