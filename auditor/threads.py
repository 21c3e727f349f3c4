"""Threads beside the main one, for a long carnet's work on the process's other cores.

Normalise parses a long table's columns on several threads
(`normalise._parse_columns`), and the audit runs a long carnet's rules on two
(`auditor.audit`): both are whole-column work in Arrow and numpy, which let go
of the GIL. What they share is here: how many cores the process may use;
calls taken from one list by several threads, stopped together (`run_all`);
a lock per fact of the carnet while threads build them (`sharing`,
`building`); and the C library's memory, one arena for every thread
(`one_malloc_arena`), handed back once the threads end.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")


# How many processes share the cores this process may run on (`share_cores`).
_SHARED_BY = [1]


def share_cores(processes: int) -> None:
    """This process is one of `processes` that run at once on the same cores
    (a batch's workers, one per core by default, told with each carnet by
    the pool: auditor.batch.pool): `cores` is then its share, so that a long
    carnet's threads do not crowd the other workers' cores (two workers on
    two cores would run four parse threads and four rule threads at once)."""
    _SHARED_BY[0] = max(1, processes)


def cores() -> int:
    """The cores this process may use: those it may run on (a container's or
    taskset's limit included), shared with the processes that run beside it
    (`share_cores`), at least one."""
    import os

    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, n // _SHARED_BY[0])


def _libc(name: str):
    """The C library's function `name` through ctypes, or None where there is
    none (no ctypes; not glibc: malloc_trim and mallopt are glibc's)."""
    try:
        import ctypes

        return getattr(ctypes.CDLL(None), name)
    except (ImportError, OSError, AttributeError, TypeError):
        return None


def hand_back_threads_memory() -> None:
    """glibc keeps what threads freed in its arenas (one per thread, unless
    `one_malloc_arena`): the threads gone, it stays resident under the
    rules' peak (some 40 MB for a million stakes with an arena per thread,
    20 MB with one). malloc_trim hands it back to the system (a few
    milliseconds). Only where the C library has it (glibc); elsewhere nothing."""
    trim = _libc("malloc_trim")
    if trim is not None:
        trim(0)


class Stopped(SystemExit):
    """Raised in `run_all`'s other threads when the calling thread stops
    (its exception, the time limit, Ctrl-C): each stops at its next step of
    Python, as the calling thread does at a signal. A SystemExit, so that
    one landing as its thread ends is let go by `threading` without a word."""


def run_all(calls: Sequence[Callable[[], T]], threads: int, name: str) -> list[T]:
    """Each of `calls` called once, their results in the same order: taken
    one at a time from the list, in its order, by this thread and `threads`
    − 1 others (named `ecarte-audit-<name>_<k>`), or by this thread alone.
    This thread takes part rather than waits: a signal's handler (the
    carnet's time limit, Ctrl-C) runs in it at once, and a process with no
    thread to spare still makes every call. Whatever ends it (a call that
    raised, here or in another thread; the time limit; Ctrl-C): no call
    begins after, the other threads are stopped where they are (`Stopped`),
    and it is raised here once they have ended."""
    results: list = [None] * len(calls)
    if min(threads, len(calls)) < 2:
        for i, call in enumerate(calls):
            results[i] = call()
        return results
    lock = threading.Lock()
    position = [0]
    stop = threading.Event()
    raised: list[BaseException] = []   # by a call in another thread
    working: set[int] = set()          # the other threads that may still be making a call

    def take() -> None:
        while not stop.is_set():
            with lock:
                i = position[0]
                position[0] += 1
            if i >= len(calls):
                return
            results[i] = calls[i]()

    def other(ended: threading.Event) -> None:
        me = threading.get_ident()
        try:
            with lock:
                if stop.is_set():
                    return
                working.add(me)
            try:
                take()
            except Stopped:
                pass
            except BaseException as exc:
                raised.append(exc)
                stop.set()
        finally:
            # Out of `working`, this thread is sent no Stopped; one sent before
            # and not raised yet is taken back (`_raise_in(me, None)`), inside the loop
            # so that one raised meanwhile is caught: the event is set, whole.
            while True:
                try:
                    with lock:
                        working.discard(me)
                    _raise_in(me, None)
                    break
                except Stopped:
                    pass
            ended.set()

    # Each other thread and the event it sets as it ends: waited for rather
    # than joined, since a join that a signal interrupts (Python 3.11's
    # Thread._wait_for_tstate_lock) marks the thread as ended while it still
    # runs, and the next join returns at once.
    others: list[tuple[threading.Thread, threading.Event]] = []

    def wait_for_others() -> None:
        for thread, ended in others:
            ended.wait()
            thread.join()

    try:
        for k in range(min(threads, len(calls)) - 1):
            ended = threading.Event()
            # A daemon: a process ended while one is stuck in a native call is not held by it.
            thread = threading.Thread(target=other, args=(ended,), name=f"ecarte-audit-{name}_{k}", daemon=True)
            try:
                thread.start()
            except RuntimeError:
                break   # no thread could be started (a limit on the process's threads): this one does the rest
            others.append((thread, ended))
        take()
        wait_for_others()
    except BaseException:
        stop.set()
        with lock:
            for ident in working:
                _raise_in(ident, Stopped)
        wait_for_others()   # a thread in a native call ends once it is back (a second Ctrl-C leaves it)
        raise
    finally:
        hand_back_threads_memory()
    if raised:
        raise raised[0]
    return results


def _raise_in(ident: int, exc: type[BaseException] | None) -> None:
    """`exc` raised in the thread `ident` at its next step of Python code;
    None: what was sent to it and not raised yet, taken back. Nothing
    without ctypes (the thread then stops after its call)."""
    try:
        import ctypes

        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident),
                                                   None if exc is None else ctypes.py_object(exc))
    except Exception:   # no ctypes, or no Python C API through it
        return


# Where a carnet's memo holds the locks of the facts being built while its
# rules run on several threads (`sharing`); absent otherwise.
_LOCKS = "_building"
_NO_LOCK = contextlib.nullcontext()


@contextlib.contextmanager
def sharing(owner: dict):
    """While the block runs, several threads read and build the facts that
    `owner` (a carnet's `__dict__`) keeps: each fact gets a lock of its own
    (`building`), so the first thread to need it builds it and another waits
    for it, rather than both building it (twice the time and the memory)."""
    owner[_LOCKS] = {}
    try:
        yield
    finally:
        owner.pop(_LOCKS, None)


def building(owner: dict, key) -> contextlib.AbstractContextManager:
    """The lock of the fact `key` of `owner` while threads share it
    (`sharing`), held while it is built; no lock at all otherwise. Two facts'
    locks are only ever held together when one's building needs the other:
    the order of the facts' needs, which has no cycle (it would recurse
    without end on one thread), so no two threads wait for each other."""
    locks = owner.get(_LOCKS)
    if locks is None:
        return _NO_LOCK
    return locks.setdefault(key, threading.Lock())


def build_once(owner: dict, memo: dict, key, make: Callable[[], T],
               fresh: Callable[[T], bool] | None = None) -> T:
    """`memo[key]` as `make()` builds it, once: the caller found it missing
    (or stale: `fresh` says no); looked for again under the fact's lock
    (`building`), in case another thread built it meanwhile. The memos of a
    carnet's derived facts and columns (`derived.cache.per_carnet`,
    `arrays`) take this one path, their hits staying outside it."""
    with building(owner, key):
        got = memo.get(key)
        if got is None or (fresh is not None and not fresh(got)):
            got = memo[key] = make()
    return got


MALLOC_ARENA_ENV = "MALLOC_ARENA_MAX"
_M_ARENA_MAX = -8   # glibc's mallopt parameter


def one_malloc_arena() -> None:
    """Every thread of this process allocates from one glibc arena, unless
    the user chose a number (MALLOC_ARENA_MAX, which glibc read at the
    process's start). With an arena per thread, what a thread frees stays in
    its arena for it alone, while another thread's allocations take fresh
    pages: a million stakes' rules on two threads peaked 10–15 MB higher
    than on one arena, for the same time (their big arrays are few; taking
    turns at the arena's lock costs nothing measurable). Called by the
    console command, the page and each batch worker before they start a
    thread; told by mallopt, not by the variable, which every program they
    start would inherit (the browser the page opens). Only where the C
    library has it (glibc)."""
    import os

    if MALLOC_ARENA_ENV in os.environ:
        return
    mallopt = _libc("mallopt")
    if mallopt is not None:
        mallopt(_M_ARENA_MAX, 1)
