"""Where the carnets of a batch are audited: in this process, in a pool of
local processes (`pool.py`), or on a Dask cluster. Every carnet goes through one picklable
function, `run_job`, which audits it and returns its audit as data
(auditor.outputs.CarnetAudit): the run renders and writes every file once the
batch is known, so every executor gives byte-identical outputs.

`ECARTE_AUDIT_HOOK=module:function`, when set, names a function called with
(job, retry) before each carnet's audit, in whichever process audits it (the
fault tests use it; see tests/fault_hook.py).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Iterator

from auditor.batch.plan import CarnetJob, Options
from auditor.catalogue import load_profile
from auditor.errors import UsageError
from auditor.limits import size_text
from auditor.model import BatchCarnet
from auditor.outputs import CarnetAudit, carnet_audit


def run_job(index: int, job: CarnetJob, options: Options, *, retry: bool = False, tickets: bool = True) -> CarnetAudit:
    """Audit one carnet (runs in a worker) and hand back its audit as data:
    nothing is rendered here, the run does it once the batch is known.
    `tickets`: hand back the facts the checks over the batch need (not needed
    when the batch is this carnet alone and no cache keeps them for later ones)."""
    # Imported here: the run imports this module for its executor, and a night
    # whose carnets all come from the cache never audits (nor imports pandas).
    from auditor.audit import audit_path, audit_refused

    _share_with_dask_threads()
    _before_audit(job, retry)
    profile = load_profile()
    if job.refusal is not None:
        result = audit_refused(job.shown, job.sha256, job.refusal, profile, options.lang)
    else:
        result = audit_path(job.path, profile, options.lang, debug=options.debug, limits=options.limits,
                            columns=options.columns)
    return carnet_audit(index, job, result, options, batch_facts(result, job) if tickets else None)


def _share_with_dask_threads() -> None:
    """In a Dask worker, whose threads each audit a carnet at once: a long
    carnet's own threads take their share of the worker's cores
    (auditor.threads.share_cores), as a local pool's workers do. Elsewhere
    (a local worker, this process) nothing: the main thread is not a Dask
    worker's."""
    import threading

    if threading.current_thread() is threading.main_thread():
        return
    try:
        from distributed import get_worker

        worker = get_worker()
    except Exception:   # not a Dask worker's thread (or no Dask at all)
        return
    from auditor import threads

    state = getattr(worker, "state", None)
    threads.share_cores(int(getattr(state, "nthreads", None) or getattr(worker, "nthreads", 1) or 1))


def batch_facts(result, job: CarnetJob) -> BatchCarnet:
    """What the checks over the batch need of this carnet: its place in its
    table (casino, table, séances), its ticket runs and ends, its books."""
    from dataclasses import replace

    from auditor.derived.batch_facts import batch_facts as facts
    from auditor.tickets.ledger import open_books

    out = facts(result.carnet, job.id, job.shown, result.profile)
    # The ledger lives above the derived facts: its open books are added here.
    if out.placeable and out.tickets_readable:
        out = replace(out, open_books=open_books(result.carnet, result.profile))
    return out


def fault_output(index: int, job: CarnetJob, options: Options, kind: str, **params) -> CarnetAudit:
    """The carnet's audit when it could not finish (its process was killed, or
    it went past a bound): one EC00-01 that says why and how large the carnet is."""
    from auditor.audit import audit, container_of
    from auditor.batch.cache import fingerprint
    from auditor.carnet import Carnet, Source
    from auditor.model import Violation

    profile = load_profile()
    try:
        sha, size = fingerprint(job.path), carnet_size(job.path)
    except OSError:
        sha, size = "", 0
    carnet = Carnet(Source(str(job.path), sha, container_of(job.path)), unreadable=True)
    carnet.problems.append(("EC00-01", Violation(kind=kind, params={**params, "size": size_text(size)})))
    result = audit(carnet, profile, options.lang)
    out = carnet_audit(index, job, result, options, batch_facts(result, job))
    out.fault = kind
    return out


def carnet_size(path: Path) -> int:
    """Bytes on disk: the workbook, or the CSV files of the folder."""
    if path.is_dir():
        return sum(p.stat().st_size for p in path.iterdir() if p.is_file() and p.suffix.lower() == ".csv")
    return path.stat().st_size


# The one hook point of the audit path: `module:function`, imported where the
# carnet is audited (this process, a local worker, a Dask worker: each reads
# its own environment, which it inherits) and called with (job, retry) before
# each audit. Nothing sets it in production; the fault tests name
# tests/fault_hook.py there to make one carnet hang, grow or die.
AUDIT_HOOK_ENV = "ECARTE_AUDIT_HOOK"


def _before_audit(job: CarnetJob, retry: bool) -> None:
    spec = os.environ.get(AUDIT_HOOK_ENV)
    if not spec:
        return
    module, _, name = spec.partition(":")
    if not module or not name:
        # A developer's setting, never an inspector's: said in English, as a traceback would.
        raise ValueError(f"{AUDIT_HOOK_ENV} must name module:function, not {spec!r}")
    getattr(importlib.import_module(module), name)(job, retry)


def _dask(items: list[tuple[int, CarnetJob]], options: Options, address: str, *, wait: float | None = None,
          notice=None) -> Iterator[CarnetAudit]:
    """The audits of `items` on the Dask cluster at `address`, as they come.
    With no worker at all for `wait` seconds (none to start with, or every one
    lost), the run stops with a clear message (UsageError: exit 2) instead of
    waiting in silence; a carnet audited again after its worker was lost is
    named (`notice`)."""
    try:
        from dask.distributed import Client
        from distributed.scheduler import KilledWorker
    except ImportError:
        raise UsageError("main.needs_dask") from None
    from auditor.errors import Message
    from auditor.limits import DEFAULT_CLUSTER_WAIT, SCHEDULER_CONNECT_S

    wait = DEFAULT_CLUSTER_WAIT if wait is None else wait
    notice = notice or (lambda text: None)
    try:
        client = Client(address, timeout=SCHEDULER_CONNECT_S)
    except (OSError, TimeoutError) as exc:
        raise UsageError("main.no_scheduler", address=address, reason=exc) from None
    with client:
        watch = _Watch(client, address, wait)
        # A worker lost mid-run is the scheduler's to survive: it gives the
        # carnet to another worker, and past `distributed.scheduler.allowed-failures`
        # tries it gives up with KilledWorker. Every carnet that was on a lost
        # worker counts a try, so a carnet given up among others is tried once
        # more on its own; given up again, it is that carnet's EC00-01.
        held, futures, lost = {}, [], []
        for index, job in items:
            fut = client.submit(run_job, index, job, options, pure=False, key=f"carnet-{index}-{job.id}")
            held[fut.key] = (index, job)
            futures.append(fut)
        for fut, retried in watch.completed(futures):
            index, job = held[fut.key]
            try:
                out = fut.result()
            except KilledWorker:
                lost.append((index, job))
                continue
            finally:
                fut.release()
            if retried:
                notice(Message("audit.retried_lost_worker", shown=job.shown))
            yield out
        for index, job in lost:
            notice(Message("audit.retrying_alone", shown=job.shown))
            fut = client.submit(run_job, index, job, options, pure=False, key=f"carnet-{index}-{job.id}-alone")
            try:
                next(iter(watch.completed([fut])))
                out = fut.result()
            except KilledWorker:
                out = fault_output(index, job, options, "killed_cluster")
            fut.release()
            yield out


def _suspicious(dask_scheduler, keys):
    """On the scheduler: how many workers died while holding each task (a
    carnet handed to another worker after its worker was lost)."""
    tasks = dask_scheduler.tasks
    return {k: tasks[k].suspicious for k in keys if k in tasks}


class _Watch:
    """The futures of a Dask run as they complete, watching that the cluster
    still has a worker: none for `wait` seconds stops the run (UsageError)."""

    POLL = 2.0

    def __init__(self, client, address: str, wait: float):
        self.client, self.address, self.wait = client, address, wait
        self.alone_since: float | None = None

    def completed(self, futures):
        """Each future once done, with whether it was retried after a lost worker."""
        import time

        from distributed import wait as dask_wait

        pending = set(futures)
        while pending:
            try:
                done, pending = dask_wait(pending, timeout=min(self.POLL, self.wait), return_when="FIRST_COMPLETED")
                pending = set(pending)
            except TimeoutError:
                done = set()
            if not done:
                if self._workers():
                    self.alone_since = None
                elif self.alone_since is None:
                    self.alone_since = time.monotonic()
                elif time.monotonic() - self.alone_since >= self.wait:
                    raise UsageError("main.no_workers", address=self.address, seconds=int(self.wait))
                continue
            self.alone_since = None
            done = sorted(done, key=lambda f: str(f.key))
            try:
                counts = self.client.run_on_scheduler(_suspicious, keys=[f.key for f in done])
            except Exception:   # an older scheduler, or one that refuses to run code: nothing named
                counts = {}
            for fut in done:
                yield fut, bool(counts.get(fut.key))

    def _workers(self) -> bool:
        try:
            return bool(self.client.scheduler_info().get("workers"))
        except Exception:   # the scheduler itself is unreachable: as good as no worker
            return False
