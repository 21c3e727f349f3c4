"""Batches: many carnets, audited in parallel (local processes or a Dask
cluster), with an optional cache.

`plan` lists the carnets and their output ids, `executors` audits them,
`cache` keeps their audits; `execute` here gives the stream of audits of the
carnets to audit. The run itself (cache, batch checks, files, history) is
auditor.run's.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

from auditor.batch.cache import Cache, fingerprint
from auditor.batch.executors import _dask, fault_output, run_job
from auditor.batch.plan import CarnetJob, Options, carnet_id, plan
from auditor.batch.pool import Bounds, LocalPool, audit_here
from auditor.outputs import CarnetAudit

__all__ = ["Bounds", "Cache", "CarnetJob", "Options", "carnet_id", "execute", "fingerprint", "plan", "run_job"]


def execute(stack: contextlib.ExitStack, todo: list[tuple[int, CarnetJob]], options: Options, *, workers: int = 1,
            scheduler: str | None = None, bounds: Bounds | None = None, tickets: bool = True,
            notice: Callable[[str], None] | None = None) -> Iterator[CarnetAudit]:
    """The audits of `todo` as they come: on the Dask cluster at `scheduler`,
    in this process for a carnet alone, else with `workers` local processes
    (even one: a carnet that kills its process ends only itself). The
    executor's resources close with `stack`. `tickets`: hand back the facts
    the checks over the batch need."""
    bounds = bounds or Bounds()
    if not todo:
        return iter(())
    if scheduler:
        return stack.enter_context(contextlib.closing(_dask(todo, options, scheduler)))
    if len(todo) == 1:
        return (audit_here(index, job, options, bounds, tickets) for index, job in todo)
    pool = stack.enter_context(LocalPool(workers, options, bounds, fault_output, notice))
    return stack.enter_context(contextlib.closing(pool.run(todo)))
