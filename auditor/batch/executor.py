"""`Executor`: where a run's carnets are audited, then their files made, as
one stream each (the run, auditor.run, reads them as they come): a carnet
alone in this process, a batch on local workers kept warm from the audits to
the files (`pool.py`), or on a Dask cluster (`executors.py`)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Callable, Iterator

from auditor.batch.cache import AuditOrder, Kept
from auditor.batch.executors import _dask, fault_output
from auditor.batch.finishing import FinishTask, lost
from auditor.batch.plan import CarnetJob, Options
from auditor.batch.pool import Bounds, LocalPool, audit_here
from auditor.outputs import CarnetAudit, Finished


def _fault(index: int, job, options: Options, kind: str, **params) -> CarnetAudit:
    """A carnet whose worker was lost or overran a bound: its EC00-01, made here."""
    return fault_output(index, job.job if isinstance(job, AuditOrder) else job, options, kind, **params)


# Below this many carnets' files to make, starting workers costs more than it saves.
POOL_FINISH_FROM = 40


class Executor:
    """Where a run's carnets are audited, then their files made: on the Dask
    cluster at `scheduler` (files made by the client, which alone sees the
    output folder), in this process for a run's only carnet, else with `workers`
    local processes (even one: a carnet that kills its process ends only
    itself), kept warm from the audits to the files. Its resources close with
    `stack`."""

    def __init__(self, stack: contextlib.ExitStack, options: Options, *, workers: int = 1,
                 scheduler: str | None = None, bounds: Bounds | None = None,
                 notice: Callable[[str], None] | None = None, cluster_wait: float | None = None,
                 started=None):
        self.stack, self.options, self.workers, self.scheduler = stack, options, workers, scheduler
        self.started = started   # pool.Started: workers the command line started early
        self.cluster_wait = cluster_wait
        self.bounds = bounds or Bounds()
        self.notice = notice
        self.pool: LocalPool | None = None

    def _pool(self) -> LocalPool:
        if self.pool is None:
            self.pool = self.stack.enter_context(LocalPool(self.workers, self.options, self.bounds, _fault,
                                                           self.notice, self.started))
        return self.pool

    def audits(self, todo: list[tuple[int, CarnetJob]], tickets: bool = True,
               keep: Callable[[int], tuple[Path, Path | None]] | None = None,
               alone: bool = False) -> Iterator[CarnetAudit | Kept]:
        """The audits of `todo` as they come. `tickets`: hand back the facts
        the checks over the batch need. `keep(index)`: where a local worker
        keeps the carnet's audit itself (the run's spool file, the cache
        entry's folder or None); it then hands back only a `Kept`. `alone`:
        the run's only carnet, audited in this process. The one carnet a
        night from the cache has left to audit goes to a worker like any
        other: a carnet that kills its process would otherwise end the whole
        run, night after night (a fault's audit is never cached)."""
        if not todo:
            return iter(())
        if self.scheduler:
            return self.stack.enter_context(contextlib.closing(_dask(todo, self.options, self.scheduler,
                                                                     wait=self.cluster_wait, notice=self.notice)))
        if alone and len(todo) == 1:
            return (audit_here(index, job, self.options, self.bounds, tickets) for index, job in todo)
        if keep is not None:
            todo = [(index, AuditOrder(job, *keep(index))) for index, job in todo]
        return self.stack.enter_context(contextlib.closing(self._pool().run(todo)))

    def finishes(self, tasks: list[tuple[int, FinishTask]], here: bool = False) -> Iterator[Finished]:
        """Each carnet's files made and written, as they come (in any order):
        on the local pool's workers when they are warm from the audits, or
        started for these when there are enough carnets to pay for it; else
        here, one after the other. A task whose worker
        was lost comes back with its `fault` set: the caller makes it itself.
        `here`: make them all in this process (a procès-verbal's signing key
        stays in it)."""
        if not tasks:
            return iter(())
        # Workers still warm from the audits make them (this process then
        # loads no renderer); else workers are started only when there are
        # enough files to pay for it.
        warm = self.pool is not None and bool(self.pool.workers)
        local = not here and not self.scheduler and (warm or (self.workers > 1 and len(tasks) >= POOL_FINISH_FROM))
        if not local:
            return (task.perform(index, self.options) for index, task in tasks)
        return self.stack.enter_context(contextlib.closing(self._pool().run(tasks, fault=lost)))
