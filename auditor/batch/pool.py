"""The local executor: audit worker processes that a lost worker does not end.

Each worker is a fresh interpreter (spawn: never a fork of a parent that may
run threads, and no fork server left running after the command) that imports
the auditor once, then audits carnets one at a time until the pool closes; the
parent joins every worker before the batch returns. Each worker has its own
pipe and holds one carnet at a time, so when a worker dies the parent knows
which carnet it held, and nothing else is touched: the worker is replaced and
the batch goes on. The carnet is retried once on its own at the end of the
batch (the first death may have come from the memory of the carnets audited
beside it); if it kills its process again it gets an EC00-01.

Neither `concurrent.futures.ProcessPoolExecutor` (one lost worker breaks the
pool and fails every pending carnet, without saying which carnet it held) nor
pebble's pool (its workers share one pipe and its locks: a worker killed while
sending its result leaves the pipe mid-message or the lock held) survives a
worker killed by the kernel's out-of-memory killer.

Bounds per carnet, enforced inside the process that audits it (`guard`):
- timeout: SIGALRM raises CarnetTimeout in the audit; an audit stuck in native
  code that does not return is killed by the parent HARD_KILL_GRACE_S later;
- memory: a watchdog thread reads the process's resident memory every POLL_S;
  past the limit it raises MemoryLimitExceeded in the audit (through SIGUSR1);
  if the audit does not stop within MEMORY_GRACE_S (native code), the worker
  ends itself with EXIT_MEMORY and the parent writes the finding. Resident
  memory rather than an address-space limit (RLIMIT_AS): pyarrow and glibc
  reserve address space they never use (a worker that has audited a small
  carnet holds 1.7 GB of address space for 170 MB resident), so an
  address-space limit refuses small carnets long before memory is short.
Both need POSIX signals; elsewhere (Windows) only the parent's hard timeout
applies.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterator

from auditor.errors import Message, UsageError
from auditor.limits import DEFAULT_BOUNDS, MB, Bounds  # noqa: F401  (the pool's bounds, kept light for the CLI)
from auditor.marked_folders import stops_held

EXIT_MEMORY = 86            # the worker's own exit status when its memory watchdog ends it
HARD_KILL_GRACE_S = 10.0    # after the timeout, how long an audit may take to stop by itself
MEMORY_GRACE_S = 2.0        # past the memory limit, how long before the worker ends itself
POLL_S = 0.05               # the memory watchdog's period
TICK_S = 0.2                # the parent's wake-up period, for the hard timeout
START_FAILURES = 3          # workers in a row that die before being ready: give up
END_GRACE_S = 5.0           # how long a worker asked to end has before it is killed
RESEND_S = 0.5              # a worker still warming up is sent SIGTERM again this often (_reap)




class CarnetTimeout(BaseException):
    """Raised in the audit at its deadline (BaseException: the pipeline's
    `except Exception`, which turns a defect into a finding, must not swallow it)."""


class MemoryLimitExceeded(BaseException):
    """Raised in the audit when its process's resident memory passes the limit."""


class WorkerStartError(UsageError):
    """The worker processes could not start: a usage error, said once."""


def rss_bytes() -> int:
    """This process's resident memory (Linux), else its peak (macOS, BSD), else 0."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:
        return 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


class Watchdog:
    """A thread that watches this process's resident memory while a carnet is
    audited, and (in a worker) ends the process once its parent is gone: a
    crashed or killed command leaves no worker behind."""

    def __init__(self, limit_mb: int | None, *, hard_exit: bool, parent_pid: int | None = None):
        self.limit = limit_mb * MB if limit_mb and hasattr(signal, "SIGUSR1") else 0
        self.hard_exit = hard_exit
        self.parent_pid = parent_pid
        self.armed = False
        self.tripped_at: float | None = None
        self._main = threading.main_thread().ident
        self._stop = threading.Event()
        self._thread = None
        if self.limit or parent_pid is not None:
            self._thread = threading.Thread(target=self._run, name="ecarte-audit-watchdog", daemon=True)
            self._thread.start()

    def arm(self) -> None:
        """Start watching the carnet being audited."""
        self.tripped_at = None
        self.armed = True

    def disarm(self) -> None:
        """Stop watching: the carnet is done."""
        self.armed = False

    def stop(self) -> None:
        """End the watchdog's thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(POLL_S):
            if self.parent_pid is not None and os.getppid() != self.parent_pid:
                os._exit(0)  # nobody is left to read this worker's result
            if not (self.armed and self.limit):
                continue
            rss = rss_bytes()
            if rss <= self.limit:
                continue
            now = time.monotonic()
            if self.tripped_at is None:
                self.tripped_at = now
                signal.pthread_kill(self._main, signal.SIGUSR1)
            elif self.hard_exit and (now - self.tripped_at > MEMORY_GRACE_S or rss > self.limit * 3 // 2):
                os._exit(EXIT_MEMORY)


class guard:
    """Bound one carnet's audit in this process: its deadline and its memory.
    Signals reach only the main thread: elsewhere (a Dask worker thread) the
    audit runs unbounded here and the cluster's own limits apply."""

    def __init__(self, bounds: Bounds, watchdog: Watchdog):
        self.bounds = bounds
        self.watchdog = watchdog
        self.active = threading.current_thread() is threading.main_thread()
        self._armed = False
        self._saved: dict = {}

    def __enter__(self):
        if not self.active:
            return self
        if self.bounds.timeout_s and hasattr(signal, "setitimer"):
            self._saved[signal.SIGALRM] = signal.signal(signal.SIGALRM, self._on_alarm)
            signal.setitimer(signal.ITIMER_REAL, self.bounds.timeout_s)
        if self.watchdog.limit:
            self._saved[signal.SIGUSR1] = signal.signal(signal.SIGUSR1, self._on_memory)
            self.watchdog.arm()
        self._armed = True
        return self

    def __exit__(self, *exc):
        if not self.active:
            return False
        self._armed = False
        self.watchdog.disarm()
        if signal.SIGALRM in self._saved:
            signal.setitimer(signal.ITIMER_REAL, 0)
        for signum, handler in self._saved.items():
            signal.signal(signum, handler)
        return False

    def _on_alarm(self, signum, frame):
        if self._armed:
            raise CarnetTimeout()

    def _on_memory(self, signum, frame):
        if self._armed:
            raise MemoryLimitExceeded()


def audit_guarded(index: int, job, options, bounds: Bounds, watchdog: Watchdog, retry: bool = False,
                  tickets: bool = True):
    """One carnet's audit (CarnetAudit); past a bound, its EC00-01 (written in this process)."""
    from auditor.batch.executors import fault_output, run_job

    try:
        with guard(bounds, watchdog):
            return run_job(index, job, options, retry=retry, tickets=tickets)
    except CarnetTimeout:
        return fault_output(index, job, options, "timeout", seconds=bounds.timeout_s)
    except (MemoryLimitExceeded, MemoryError):
        if not bounds.memory_mb:
            raise
        return fault_output(index, job, options, "memory_limit", limit_mb=bounds.memory_mb)


def finish_guarded(index: int, task, options, bounds: Bounds, watchdog: Watchdog):
    """A carnet's files made and written in this worker (`task.perform`); past
    a bound, or on a defect of ours, the run makes them itself (`finishing.lost`)."""
    from auditor.batch.finishing import lost

    try:
        with guard(bounds, watchdog):
            return task.perform(index, options, catch=True)
    except CarnetTimeout:
        return lost(index, task, options, "timeout")
    except (MemoryLimitExceeded, MemoryError):
        if not bounds.memory_mb:
            raise
        return lost(index, task, options, "memory_limit")
    except Exception:
        return lost(index, task, options, "unreadable")


def audit_here(index: int, job, options, bounds: Bounds, tickets: bool = True):
    """A single carnet, in this process (no worker start-up to pay).
    `tickets`: hand back its ticket runs for the checks over the batch."""
    watchdog = Watchdog(bounds.memory_mb, hard_exit=False)
    try:
        return audit_guarded(index, job, options, bounds, watchdog, tickets=tickets)
    finally:
        watchdog.stop()


def _freeze_what_is_loaded() -> None:
    """The objects the imports and the warm-up made (pandas, pyarrow, the
    templates: some 65,000) live as long as the process: frozen, the garbage
    collector's full passes during the audits skip them (about 5 % of a small
    carnet's audit). The collector was off meanwhile (`_worker_main`,
    auditor.collector): 35 ms less CPU per worker start. The warm-up's tiny
    carnet leaves some 750 objects of garbage then, frozen with the rest; a
    collection first to free them would cost 20 ms. Only in a worker, which
    ends with its run: in a process that audits again and again (the local
    page's, a test run's), what a run left would be frozen and never freed."""
    from auditor import collector

    collector.resume()


def _warm_up(options=None) -> None:
    """The start-up, paid once per worker rather than by its first carnet (and
    within that carnet's timeout): the imports, then a tiny synthetic carnet
    through the whole pipeline, for what loads on first use (the compiled
    report templates; about 1.5 s on a busy machine). Pandera is left out: a
    worker imports it only for a table that may fail its schema. `options`:
    the run's (None: the defaults, for a worker started before the run knew them)."""
    from auditor.batch.executors import run_job
    from auditor.batch.plan import CarnetJob, Options
    from auditor.marked_folders import WARM_UPS, remove
    from auditor.outputs import finish
    from auditor.synth.generate import Spec, generate, write_csv_folder

    options = options or Options()
    folder = None
    try:
        # A SIGTERM between the folder's making and its name kept would leave
        # it; a SIGKILL leaves it marked with this worker's id, and the next
        # run removes it (auditor.marked_folders).
        with stops_held():
            folder = WARM_UPS.make()
        path = write_csv_folder(generate(Spec(seances=1, coups=2, mises=2)), folder / "warm-up")
        audit = run_job(-1, CarnetJob(path, "warm-up", "warm-up"), options)
        finish(audit, options)   # the report templates compiled once, before the first carnet's files
    except Exception:
        pass  # only a head start: the first carnet then pays it
    finally:
        if folder is not None:
            remove(folder)   # a SIGTERM meanwhile waits until the folder is gone (marked_folders.stops_held)


def _probe_temp_folder() -> None:
    """tempfile's first use in a process probes the temp folder with a file of
    a random name, opened, written and removed; a SIGTERM just after the open
    (a run stopped while its workers warm up) raised SystemExit outside the
    probe's cleanup and left the file there. The probe is made here, with
    SIGTERM held until it is over."""
    import tempfile

    with stops_held():
        tempfile.gettempdir()


class _stop:
    """A worker asked to end while it warms up (SIGTERM)."""
    asked = False      # SIGTERM came: the worker ends once its warm-up is over, whatever the warm-up did with it
    leaving = False    # the stop reached _worker_main: the worker is ending, a SIGTERM then only asks


def _stop_warming_up(signum, frame) -> None:
    """SIGTERM while the worker warms up: it ends there, cleanly (SystemExit
    runs the warm-up's clean-up). Python ignores an exception raised in a weakref
    callback or a __del__ (a module lock's, during an import): such a stop is
    lost, so it is also noted (`_stop.asked`, checked after the warm-up), and
    the run sends SIGTERM again until the worker is gone (`_reap`)."""
    _stop.asked = True
    if not _stop.leaving:   # raised there, it would be printed in the interpreter's last steps
        raise SystemExit(0)


def _get_ready(conn, options, bounds: Bounds | None) -> tuple | None:
    """The worker's warm-up, then (started before the run knew its options,
    `Started`) the wait for them: the run's (options, bounds), or None when
    the run ended first."""
    _probe_temp_folder()
    _warm_up(options)   # None: on the defaults
    if _stop.asked:
        return None
    if options is not None:
        return options, bounds
    try:
        message = conn.recv()
    except (EOFError, OSError):
        return None
    if message is None:
        return None
    _, options, bounds = message
    return options, bounds


def _worker_main(conn, options, bounds: Bounds | None, parent_pid: int) -> None:
    # Ctrl-C reaches the whole process group: it is the parent's to handle
    # (it stops the workers and says how to resume).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})   # blocked by _spawn: now ignored
    # Stopped before it is ready (SIGTERM: a run stopped or over while it
    # warms up), it ends cleanly, its warm-up's temporary folder removed.
    signal.signal(signal.SIGTERM, _stop_warming_up)
    from auditor import collector, threads

    threads.one_malloc_arena()   # before a long carnet's threads, as the console command
    collector.pause()   # while the worker imports and warms up, until _freeze_what_is_loaded
    try:
        ready = _get_ready(conn, options, bounds)
    except SystemExit:
        _stop.leaving = True   # the stop got through: a SIGTERM sent again finds the worker on its way out
        raise
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if ready is None or _stop.asked:   # asked: a stop lost while it waited for the run's options
        return
    options, bounds = ready
    _freeze_what_is_loaded()
    watchdog = Watchdog(bounds.memory_mb, hard_exit=True, parent_pid=parent_pid)
    if not _answer(conn, ("ready", os.getpid())):
        return
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            # The run is over: end here rather than free every object one by
            # one at interpreter exit (0.1 s and more that the command waits
            # for). Nothing is left to write: each output went to the parent.
            conn.close()
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            os._exit(0)
        index, job, retry, sharing = message
        threads.share_cores(sharing)   # the workers that run beside this one now use the same cores
        if not _answer(conn, ("started",)):  # a death from here on is this carnet's
            return
        if hasattr(job, "perform"):   # a carnet's files to make (auditor/batch/finishing.py)
            out = finish_guarded(index, job, options, bounds, watchdog)
        else:
            order = job if hasattr(job, "keep") else None   # an AuditOrder (auditor/batch/cache.py)
            carnet = order.job if order is not None else job
            try:
                out = audit_guarded(index, carnet, options, bounds, watchdog, retry)
            except Exception as exc:  # a defect of ours is that carnet's finding, as in the pipeline
                from auditor.batch.executors import fault_output

                out = fault_output(index, carnet, options, "unreadable",
                                   reason=f"erreur interne de l'auditeur ({type(exc).__name__}: {exc})"[:300])
            if order is not None and out.fault is None:
                try:
                    out = order.keep(out)   # written here: only its head crosses the pipe
                except Exception:
                    pass   # handed back whole: the run keeps it itself, or says why it cannot
        out.pid = os.getpid()
        # A carnet stopped half-way may have left anything behind, and memory
        # still held near the limit would count against the next carnet: start afresh.
        retire = out.fault is not None or bool(watchdog.limit and rss_bytes() > watchdog.limit * 3 // 4)
        if not _answer(conn, ("done", out, retire)) or retire:
            return


def _answer(conn, message) -> bool:
    """Send `message` to the run; False when the run is gone (killed
    outright: its end of the pipe closed). The worker then ends quietly: a
    traceback of the broken pipe would reach the terminal the run shared."""
    from multiprocessing.reduction import ForkingPickler

    data = ForkingPickler.dumps(message)   # as conn.send does; a pickling error is no lost run
    try:
        conn.send_bytes(data)
    except (BrokenPipeError, ConnectionResetError):
        return False
    return True


@dataclass
class _Worker:
    process: object
    conn: object
    ready: bool = False
    held: tuple | None = None        # (index, job) sent to it
    acked: bool = False              # it said it started on `held`
    started: float = 0.0
    terminated: bool = False         # sent SIGTERM while it warmed up (_ask_to_end)


def _spawn(ctx, options, bounds: Bounds | None) -> _Worker:
    parent, child = ctx.Pipe()
    process = ctx.Process(target=_worker_main, name="ecarte-audit-worker", daemon=True,
                          args=(child, options, bounds, os.getpid()))
    # Ctrl-C reaches the whole process group, the worker too: until
    # _worker_main ignores it, the new interpreter would die of it with a
    # traceback on the terminal (the command's first half-second, when its
    # workers start early). The worker is born with SIGINT blocked (the mask
    # is inherited across exec); here it is pending until start() returns.
    # SIGTERM is held in this process meanwhile (stops_held): the command
    # turns it into KeyboardInterrupt (auditor.commands.terminate_as_interrupt),
    # which inside start() would leave the new interpreter without its
    # start-up data (EOFError, with a traceback on the terminal).
    block = hasattr(signal, "pthread_sigmask")
    if block:
        from multiprocessing import resource_tracker

        resource_tracker.ensure_running()   # its first start unblocks SIGINT: before the block
        before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        with stops_held():
            process.start()
    finally:
        if block:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)
    child.close()
    return _Worker(process, parent)


class Started:
    """Workers started before the run knows its options: the command line
    starts them as soon as it has planned a batch, before it imports the
    auditor, so that their start-up (an interpreter, its imports, a warm-up
    carnet) and the command's overlap. The run's LocalPool takes them over
    and sends them the options (`take`); `close` stops those never taken
    (the run stopped before its audits, or needed no worker)."""

    def __init__(self, size: int):
        import multiprocessing

        self.ctx = multiprocessing.get_context("spawn")
        self.workers = [_spawn(self.ctx, None, None) for _ in range(max(1, size))]

    def take(self, options, bounds: Bounds) -> _Worker | None:
        """A started worker, set up with the run's options and bounds (None: none left)."""
        while self.workers:
            w = self.workers.pop(0)
            try:
                w.conn.send(("setup", options, bounds))
                return w
            except OSError:   # it died on its way: the pool starts another
                _reap(w)
        return None

    def close(self) -> None:
        """Stop the workers never taken (not ready: each ends cleanly on SIGTERM)."""
        workers, self.workers = self.workers, []
        for w in workers:
            _ask_to_end(w)
        for w in workers:
            _reap(w)

    def __enter__(self) -> "Started":
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False


def _ask_to_end(w: _Worker, kill: bool = False) -> None:
    """Ask a worker to end: one still warming up ends at once, and cleanly, on
    SIGTERM (_worker_main); a ready one when it reads None, or killed (`kill`)."""
    if not w.ready:
        w.terminated = True
        w.process.terminate()
    elif kill:
        w.process.kill()
    else:
        try:
            w.conn.send(None)
        except OSError:
            pass


def _reap(w: _Worker) -> int | None:
    """Wait for a worker asked to end (END_GRACE_S at most, then it is killed).
    One still warming up is sent SIGTERM again every RESEND_S: the first may
    have come where Python ignores what its handler raised (_stop_warming_up)."""
    end = time.monotonic() + END_GRACE_S
    w.process.join(RESEND_S if w.terminated else END_GRACE_S)
    while w.terminated and w.process.exitcode is None and time.monotonic() < end:
        w.process.terminate()
        w.process.join(max(0.0, min(RESEND_S, end - time.monotonic())))
    if w.process.exitcode is None:
        w.process.kill()
        w.process.join()
    code = w.process.exitcode
    w.conn.close()
    w.process.close()
    return code


def exit_text(code: int | None, lang: str | None = None):
    """How a worker ended: the signal's name (SIGKILL), or its exit status in
    words — a Message for the command line's sentences, or the text in `lang`
    for a finding's."""
    if code is not None and code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    status = Message("audit.exit_status", code=code)
    return status if lang is None else status.text(lang)


class LocalPool:
    """`with LocalPool(...) as pool: for out in pool.run(items)` — every worker
    is stopped and joined when the block ends, however it ends."""

    def __init__(self, size: int, options, bounds: Bounds, fault: Callable,
                 notice: Callable[[str], None] | None = None, started: Started | None = None):
        import multiprocessing

        self.ctx = multiprocessing.get_context("spawn")
        self.size = max(1, size)
        self.options = options
        self.bounds = bounds
        self.fault = fault
        self.notice = notice or (lambda text: None)
        self.workers: list[_Worker] = []
        self.start_failures = 0
        self.started = started   # workers the command line started early, taken first

    def __enter__(self) -> "LocalPool":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self.close(kill=exc_type is not None)
        return False

    def run(self, items: list[tuple[int, object]], fault: Callable | None = None) -> Iterator:
        """Audit the items with the pool's workers, yielding each output as it comes; a carnet whose worker was
        lost is retried alone. The items may be carnets' files to make (finishing.FinishTask), with their own
        `fault` for a task whose worker was lost or overran a bound."""
        lost: list[tuple[int, object]] = []
        saved, self.fault = self.fault, fault or self.fault
        try:
            yield from self._drain(deque(items), self.size, lost)
            for index, job in lost:
                self.notice(Message("audit.retrying_alone", shown=job.shown))
                yield from self._drain(deque([(index, job)]), 1, None)
        finally:
            self.fault = saved

    def close(self, kill: bool = False) -> None:
        """Stop the workers (killed at once when `kill`, or when one still holds a carnet)."""
        workers, self.workers = self.workers, []
        for w in workers:
            _ask_to_end(w, kill=kill or w.held is not None)
        for w in workers:
            _reap(w)

    # -- internals -----------------------------------------------------------

    def _drain(self, queue: deque, size: int, lost: list | None) -> Iterator:
        """Audit every carnet of `queue` on at most `size` workers. A carnet
        whose worker dies goes to `lost` (retried alone later), or with no
        `lost` (it was alone) becomes its EC00-01."""
        from multiprocessing.connection import wait

        alone = lost is None
        while queue or any(w.held for w in self.workers):
            busy = sum(w.held is not None for w in self.workers)
            for w in [w for w in self.workers if w.held is None][max(0, size - busy):]:
                self._retire(w)  # more workers than this phase uses
            while len(self.workers) < min(size, busy + len(queue)):
                self._start()
            self._dispatch(queue, alone)
            outputs = []
            ready = set(wait([w.conn for w in self.workers], timeout=TICK_S))
            for w in [w for w in self.workers if w.conn in ready]:
                try:
                    message = w.conn.recv()
                except Exception:  # EOF, or a message cut off by the death
                    message = None
                if message is None:
                    outputs.extend(self._lost(w, lost, queue))
                elif message[0] == "ready":
                    w.ready, self.start_failures = True, 0
                elif message[0] == "started":
                    w.acked, w.started = True, time.monotonic()
                else:
                    _, out, retire = message
                    w.held = None
                    outputs.append(out)
                    if retire:
                        self._retire(w)
            outputs.extend(self._overdue())
            self._dispatch(queue, alone)  # the next carnets start while the client writes these
            yield from outputs

    def _dispatch(self, queue: deque, alone: bool) -> None:
        for w in self.workers:
            if queue and w.ready and w.held is None:
                w.held, w.acked, w.started = queue.popleft(), False, time.monotonic()
                try:
                    # With how many workers this phase runs: a long carnet's
                    # threads take that share of the cores (auditor.threads).
                    w.conn.send((*w.held, alone, len(self.workers)))
                except OSError:
                    pass  # it died: its end of the pipe says so

    def _start(self) -> None:
        w = self.started.take(self.options, self.bounds) if self.started is not None else None
        self.workers.append(w or _spawn(self.ctx, self.options, self.bounds))

    def _retire(self, w: _Worker) -> None:
        self.workers.remove(w)
        _ask_to_end(w)
        _reap(w)

    def _lost(self, w: _Worker, lost: list | None, queue: deque) -> list:
        self.workers.remove(w)
        code = _reap(w)
        if w.held is not None and not w.acked:
            queue.appendleft(w.held)  # it died before starting on it (killed idle): not the carnet's doing
            w.held = None
        if w.held is None:
            if not w.ready:
                self.start_failures += 1
                if self.start_failures >= START_FAILURES:
                    raise WorkerStartError("audit.workers_cannot_start", how=exit_text(code))
            return []  # an idle worker: replaced, nothing to redo
        index, job = w.held
        if code == EXIT_MEMORY:
            return [self.fault(index, job, self.options, "memory_limit", limit_mb=self.bounds.memory_mb)]
        if lost is not None:
            self.notice(Message("audit.worker_killed", shown=job.shown, how=exit_text(code)))
            lost.append((index, job))
            return []
        return [self.fault(index, job, self.options, "killed", signal=exit_text(code, self.options.lang))]

    def _overdue(self) -> list:
        """Audits still running HARD_KILL_GRACE_S past their deadline: killed."""
        if not self.bounds.timeout_s:
            return []
        limit = self.bounds.timeout_s + HARD_KILL_GRACE_S
        outputs = []
        for w in [w for w in self.workers if w.held is not None and time.monotonic() - w.started > limit]:
            index, job = w.held
            self.workers.remove(w)
            w.process.kill()
            _reap(w)
            outputs.append(self.fault(index, job, self.options, "timeout", seconds=self.bounds.timeout_s))
        return outputs
