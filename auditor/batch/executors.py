"""Where the carnets of a batch are audited: in this process, in a pool of
local processes, or on a Dask cluster. Every carnet goes through one picklable
function, `run_job`, which audits it and returns its rendered files instead of
writing them: the client writes, so every executor gives byte-identical outputs.
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Iterator

from auditor.audit import audit_path
from auditor.batch.plan import CarnetJob, JobOutput, Options
from auditor.catalogue import load_profile
from auditor.errors import UsageError
from auditor.render import render_outputs
from auditor.tickets.ledger import carnet_runs


def run_job(index: int, job: CarnetJob, options: Options) -> JobOutput:
    """Audit one carnet and render its outputs (runs in a worker)."""
    profile = load_profile()
    result = audit_path(job.path, profile, options.lang, debug=options.debug, limits=options.limits)
    files, entry = render_outputs(result, job, options.formats, profile, options.generated_at)
    worst = result.worst()
    return JobOutput(index, entry, files, carnet_runs(result.carnet), None if worst is None else int(worst))


def _local(items: list[tuple[int, CarnetJob]], options: Options, workers: int) -> Iterator[JobOutput]:
    if workers <= 1 or len(items) <= 1:
        for index, job in items:
            yield run_job(index, job, options)
        return
    import multiprocessing

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["auditor.batch.executors"])
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        pending = set()
        queue = iter(items)
        # Bounded submission: memory stays flat however many carnets there are.
        for index, job in queue:
            pending.add(pool.submit(run_job, index, job, options))
            if len(pending) >= workers * 4:
                break
        while pending:
            done = next(as_completed(pending))
            pending.remove(done)
            nxt = next(queue, None)
            if nxt is not None:
                pending.add(pool.submit(run_job, nxt[0], nxt[1], options))
            yield done.result()


def _dask(items: list[tuple[int, CarnetJob]], options: Options, address: str) -> Iterator[JobOutput]:
    try:
        from dask.distributed import Client, as_completed as dask_completed
    except ImportError:
        raise UsageError("--scheduler needs dask.distributed: pip install 'ecarte-auditor[cluster]'") from None
    try:
        client = Client(address, timeout="20s")
    except (OSError, TimeoutError) as exc:
        raise UsageError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    with client:
        futures = [client.submit(run_job, index, job, options, pure=False, key=f"carnet-{index}-{job.id}")
                   for index, job in items]
        for fut in dask_completed(futures):
            yield fut.result()
            fut.release()
