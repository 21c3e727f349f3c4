"""Batches: many carnets, audited in parallel (local processes or a Dask
cluster), with an optional cache, a progress bar, and the cross-carnet check.

`plan` lists the carnets and their output ids, `executors` audits them,
`cache` keeps their results; `run_batch` here ties them together and writes
each carnet's files as they come.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from auditor.batch.cache import Cache, fingerprint
from auditor.atomic import make_folder, write_atomic
from auditor.errors import Message
from auditor.batch.executors import _dask, fault_output, run_job
from auditor.batch.pool import Bounds, LocalPool, audit_here
from auditor.batch.plan import CarnetJob, JobOutput, Options, carnet_id, plan
from auditor.audit import audit_batch
from auditor.catalogue import load_profile
from auditor.errors import WriteError
from auditor.model import BatchCarnet, Severity
from auditor.render import cross_carnet_json
from auditor.report.cross_carnet import attribute, for_carnet

__all__ = ["BatchResult", "Cache", "CarnetJob", "JobOutput", "Options", "carnet_id", "fingerprint", "plan",
           "run_batch", "run_job", "worst_severity"]


@dataclass
class BatchResult:
    """What the batch summary needs once every carnet is written."""

    entries: list[dict]
    worst: list[int | None]
    cross_findings: list[dict] = field(default_factory=list)
    cached: int = 0
    history: list[list[dict]] = field(default_factory=list)   # per carnet, its findings' history rows


def run_batch(jobs: list[CarnetJob], out: Path, options: Options, *, workers: int = 1,
              scheduler: str | None = None, cache_dir: Path | None = None,
              progress: bool = False, on_done=None, bounds: Bounds | None = None,
              notice: Callable[[str], None] | None = None) -> BatchResult:
    """Audit `jobs` (from the cache when it holds them, else with `workers` local processes or on the Dask
    cluster at `scheduler`), write each carnet's files under `out` as they come, then run the checks over the
    whole batch.

    More than one carnet to audit: in worker processes (even with one
    worker), so a carnet that kills its process ends only itself. A write
    error stops the run (WriteError); what was done is in the cache, if any,
    and a new run with the same cache audits only the rest.
    """
    bounds = bounds or Bounds()
    notice = notice or (lambda text: None)
    cache = Cache(cache_dir, options) if cache_dir else None
    outputs: dict[int, JobOutput] = {}
    todo: list[tuple[int, CarnetJob]] = []
    keys: dict[int, str] = {}
    for index, job in enumerate(jobs):
        key = cache.key(job) if cache else None
        hit = cache.load(key, index) if cache and key else None
        if hit is not None:
            outputs[index] = hit
        else:
            todo.append((index, job))
            if key:
                keys[index] = key
    if outputs:
        notice(Message("audit.cached_notice", cached=len(outputs), total=len(jobs), todo=len(todo)))
    try:
        with contextlib.ExitStack() as stack:
            bar = _bar(len(jobs), progress)
            if bar is not None:
                stack.callback(bar.close)
            for o in outputs.values():
                _write(o, jobs[o.index], out)
                _done(bar, on_done, jobs[o.index], o)
            stream: Iterable[JobOutput]
            if not todo:
                stream = ()
            elif scheduler:
                stream = stack.enter_context(contextlib.closing(_dask(todo, options, scheduler)))
            elif len(todo) == 1:
                # A batch of this carnet alone, without a cache to keep its
                # ticket runs for later batches: nothing to compare them with.
                tickets = len(jobs) > 1 or cache is not None
                stream = (audit_here(index, job, options, bounds, tickets) for index, job in todo)
            else:
                pool = stack.enter_context(LocalPool(workers, options, bounds, fault_output, notice))
                stream = stack.enter_context(contextlib.closing(pool.run(todo)))
            for o in stream:
                _write(o, jobs[o.index], out)
                if cache and o.index in keys and o.fault is None:
                    cache.store(keys[o.index], o)
                o.files = {}  # written: keep only what the summary needs
                outputs[o.index] = o
                _done(bar, on_done, jobs[o.index], o)
    except WriteError as exc:
        resume = Message("audit.resume_cache_kept") if cache else Message("audit.resume_no_cache")
        raise WriteError("audit.write_stopped", error=exc.message, done=len(outputs), total=len(jobs),
                         resume=resume) from None
    ordered = [outputs[i] for i in range(len(jobs))]
    entries = [o.entry for o in ordered]
    batch = [BatchCarnet(e["id"], e["path"], e["carnet"].get("casino") or "", e["carnet"].get("table"), o.tickets)
             for e, o in zip(entries, ordered)]
    cross = [cross_carnet_json(f, v) for f, v in audit_batch(batch, load_profile(), options.lang)]
    attribute(entries, cross)
    _reports_with_cross(jobs, entries, cross, out, options)
    return BatchResult(entries, [o.worst for o in ordered], cross, cached=sum(o.cached for o in ordered),
                       history=[o.history for o in ordered])


def _reports_with_cross(jobs: list[CarnetJob], entries: list[dict], cross: list[dict], out: Path,
                        options: Options) -> None:
    """The report of each carnet a cross-carnet finding involves, rendered again
    with it (its verdict, counts and a section naming the other carnet). Only
    those carnets are audited a second time, here, once the batch is known."""
    if not cross or "html" not in options.formats:
        return
    from auditor.audit import audit_path
    from auditor.report.html_report import render_report
    from auditor.report.json_report import generated_at

    reports = {e["id"]: e.get("report") for e in entries}
    profile = load_profile()
    for job in jobs:
        mine = for_carnet(cross, job.id)
        if not mine:
            continue
        result = audit_path(job.path, profile, options.lang, debug=options.debug, limits=options.limits,
                            columns=options.columns)
        html = render_report(result, job.shown, options.generated_at or generated_at(),
                             findings_file="findings.json" if "json" in options.formats else None,
                             annotated_file="annotated.xlsx" if "xlsx" in options.formats else None,
                             cross=mine, reports=reports)
        write_atomic(out / job.id / "report.html", html.encode("utf-8"))


def _write(o: JobOutput, job: CarnetJob, out: Path) -> None:
    folder = out / job.id
    make_folder(folder)
    for name, data in o.files.items():
        write_atomic(folder / name, data)


def _bar(total: int, enabled: bool):
    if not enabled or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="carnet", file=sys.stderr, dynamic_ncols=True, smoothing=0.1)


def _done(bar, on_done, job: CarnetJob, o: JobOutput) -> None:
    if bar is not None:
        bar.update(1)
    if on_done is not None:
        on_done(job, o)


def worst_severity(values: list[int | None]) -> Severity | None:
    """The highest of the carnets' worst severities (None when no carnet has a finding)."""
    present = [v for v in values if v is not None]
    return Severity(max(present)) if present else None
