"""Batches: many carnets, audited in parallel (local processes or a Dask
cluster), with an optional cache.

`plan` lists the carnets and their output ids, `executors` audits them,
`cache` keeps their audits, `finishing` makes their files; `Executor`
(executor.py) gives the stream of audits of the carnets to audit, then of
the carnets' files made, on the same warm workers. The run itself (cache,
batch checks, summary, history) is auditor.run's.

The plan and the pool are light to import, and the other names are found on
first use: the command line plans its run and starts its workers before it
imports the auditor itself (auditor.commands.audit), so that the workers'
start-up and the command's overlap.
"""

from __future__ import annotations

from importlib import import_module

from auditor.batch.plan import CarnetJob, Options, carnet_id, plan

_HOME = {
    "AuditOrder": "cache", "Cache": "cache", "Kept": "cache", "fingerprint": "cache",
    "Executor": "executor", "POOL_FINISH_FROM": "executor", "fault_output": "executors", "run_job": "executors",
    "FinishTask": "finishing", "lost": "finishing",
    "Bounds": "pool", "LocalPool": "pool", "audit_here": "pool",
}

__all__ = ["Bounds", "Cache", "CarnetJob", "Executor", "FinishTask", "Options", "carnet_id", "fingerprint", "plan",
           "run_job"]


def __getattr__(name: str):
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{home}"), name)
