"""Batches: many carnets, audited in parallel (local processes or a Dask
cluster), with an optional cache, a progress bar, and the cross-carnet check.

Every carnet goes through one picklable function, `run_job`, which audits it
and returns its rendered files instead of writing them: the client writes, so
a local pool and remote Dask workers give byte-identical outputs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import sys
import time
import zipfile
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Callable, Iterable, Iterator

from auditor import __version__
from auditor.atomic import make_folder, write_atomic, write_failure
from auditor.catalogue import load_profile, rules_root
from auditor.errors import UsageError, WriteError
from auditor.model import Severity
from auditor.pipeline import CarnetJob, audit_path, render_outputs, restamp_outputs
from auditor.limits import MB, Limits, size_text
from auditor.pool import Bounds, LocalPool, audit_here
from auditor.read.raw import file_digest, sha256_of_digests


@dataclass(frozen=True)
class Options:
    formats: tuple[str, ...] = ("html", "json")
    lang: str = "fr"
    debug: bool = False
    generated_at: str = ""
    limits: Limits | None = None      # the reader's size limits (None: the defaults)


@dataclass
class JobOutput:
    index: int
    entry: dict                       # the carnet's row of summary.json / index.html
    files: dict[str, bytes]           # file name → content, written by the client
    tickets: list[list]               # [value, premier, dernier, séance, coup, row] runs, for EC82-03
    worst: int | None                 # highest severity found (Severity value)
    cached: bool = False
    fault: str | None = None          # the audit did not finish: killed, timeout, memory_limit
    pid: int | None = None            # the worker process that audited it


def run_job(index: int, job: CarnetJob, options: Options, *, retry: bool = False) -> JobOutput:
    """Audit one carnet and render its outputs (runs in a worker)."""
    _test_fault(job, retry)
    profile = load_profile()
    result = audit_path(job.path, profile, options.lang, debug=options.debug, limits=options.limits)
    files, entry = render_outputs(result, job, options.formats, profile, options.generated_at)
    worst = result.worst()
    return JobOutput(index, entry, files, ticket_runs(result), None if worst is None else int(worst))


def fault_output(index: int, job: CarnetJob, options: Options, kind: str, **params) -> JobOutput:
    """The carnet's outputs when its audit could not finish (its process was
    killed, or it went past a bound): one EC00-01 that says why and how large
    the carnet is."""
    from auditor.carnet import Carnet, Source
    from auditor.engine import audit
    from auditor.model import Violation

    profile = load_profile()
    try:
        sha, size = fingerprint(job.path), carnet_size(job.path)
    except OSError:
        sha, size = "", 0
    carnet = Carnet(Source(str(job.path), sha, "xlsx" if job.path.is_file() else "csv"), unreadable=True)
    carnet.problems.append(("EC00-01", Violation(kind=kind, params={**params, "size": size_text(size)})))
    result = audit(carnet, profile, options.lang)
    files, entry = render_outputs(result, job, options.formats, profile, options.generated_at)
    worst = result.worst()
    return JobOutput(index, entry, files, [], None if worst is None else int(worst), fault=kind)


def carnet_size(path: Path) -> int:
    """Bytes on disk: the workbook, or the CSV files of the folder."""
    if path.is_dir():
        return sum(p.stat().st_size for p in path.iterdir() if p.is_file() and p.suffix.lower() == ".csv")
    return path.stat().st_size


TEST_FAULT_ENV = "_ECARTE_AUDIT_TEST_FAULT"


def _test_fault(job: CarnetJob, retry: bool) -> None:
    """Test-only: make the audit of one named carnet behave as a huge or broken
    one would (`action:NAME[:ARG]`, comma-separated; NAME is the carnet's file or
    folder name). Only the fault tests set the variable.

    sleep:NAME:S      sleep S seconds          stall:NAME:S   the same, first try only
    kill:NAME         SIGKILL its own process  alloc:NAME:MB  hold MB of memory
    sleep-masked / alloc-masked: the same with the guard's signal blocked
    (an audit stuck in native code)
    """
    spec = os.environ.get(TEST_FAULT_ENV)
    if not spec:
        return
    for item in spec.split(","):
        action, _, rest = item.partition(":")
        name, _, arg = rest.partition(":")
        if name != job.path.name:
            continue
        if action.endswith("-masked"):
            action = action[:-len("-masked")]
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGUSR1})
        if action == "sleep" or (action == "stall" and not retry):
            time.sleep(float(arg))
        elif action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif action == "alloc":
            held = []
            for _ in range(int(arg) // 8):
                held.append(b"\1" * (8 * MB))  # written, so resident


def ticket_runs(result) -> list[list]:
    t = result.carnet.tables.get("tickets")
    if t is None:
        return []
    df = t.df[["valeur_cents", "premier", "dernier", "seance", "coup", "_row"]].dropna()
    df = df[df["dernier"] >= df["premier"]]
    return [[int(v) for v in row] for row in df.itertuples(index=False)]


# -- cache -------------------------------------------------------------------

def fingerprint(path: Path) -> str:
    """SHA-256 of a carnet's files, exactly as the reader computes it, hashed in
    blocks (a huge file is never held whole just to look it up in the cache)."""
    if path.is_dir():
        parts = [(p.name, _digest(p)) for p in sorted(path.iterdir(), key=lambda p: p.name)
                 if p.is_file() and p.suffix.lower() == ".csv"]
        return sha256_of_digests(parts)
    return _digest(path).hex()


def _digest(path: Path) -> bytes:
    digest = file_digest(path)
    if digest is None:
        raise OSError(f"cannot read {path}")
    return digest


def _rules_digest() -> str:
    h = hashlib.sha256()
    root = rules_root()
    for node in sorted([root.joinpath("profile.toml")] + list(root.joinpath("catalogue").iterdir()),
                       key=lambda n: n.name):
        h.update(node.name.encode() + b"\0" + node.read_bytes())
    return h.hexdigest()


# Options that never change what an audit finds or renders: the clock (a hit
# is re-stamped) and the debug switch.
NOT_IN_KEY = ("generated_at", "debug")


class Cache:
    """Results keyed by what decides the audit: the carnet's files, the tool
    version, the profile and catalogue, and every option that shapes the
    outputs (formats, language, limits, and any option added later), plus the
    carnet's id and path and what the run brings to it (baseline, reviews).
    Never the run's time: a nightly run hits, and the hit is re-stamped with
    this run's time."""

    def __init__(self, folder: Path, options: Options):
        self.folder = folder
        chosen = {f.name: repr(getattr(options, f.name)) for f in fields(options) if f.name not in NOT_IN_KEY}
        self.salt = json.dumps({"version": __version__, "rules": _rules_digest(), "options": chosen},
                               sort_keys=True)
        self.generated_at = options.generated_at

    def key(self, job: CarnetJob) -> str | None:
        try:
            content = fingerprint(job.path)
        except OSError:
            return None  # unreadable: audit it, the reader will say why
        text = json.dumps({"salt": self.salt, "content": content, "id": job.id, "shown": job.shown,
                           "context": job.context_digest()})
        return hashlib.sha256(text.encode()).hexdigest()

    def _dir(self, key: str) -> Path:
        return self.folder / key[:2] / key

    def load(self, key: str, index: int) -> JobOutput | None:
        d = self._dir(key)
        meta = d / "result.json"
        if not meta.is_file():
            return None
        try:
            data = json.loads(meta.read_text(encoding="utf-8"))
            files = {name: (d / "files" / name).read_bytes() for name in data["files"]}
            files = restamp_outputs(files, data["at"], self.generated_at)
        except (OSError, ValueError, KeyError, zipfile.BadZipFile):
            return None  # a damaged entry is a miss
        return JobOutput(index, data["entry"], files, data["tickets"], data["worst"], cached=True)

    def store(self, key: str, out: JobOutput) -> None:
        d = self._dir(key)
        tmp = d.with_name(d.name + f".tmp{os.getpid()}")
        try:
            shutil.rmtree(tmp, ignore_errors=True)
            (tmp / "files").mkdir(parents=True)
            for name, data in out.files.items():
                (tmp / "files" / name).write_bytes(data)
            meta = {"entry": out.entry, "files": sorted(out.files), "at": self.generated_at,
                    "tickets": out.tickets, "worst": out.worst}
            (tmp / "result.json").write_text(json.dumps(meta), encoding="utf-8")
            shutil.rmtree(d, ignore_errors=True)
            tmp.rename(d)  # atomic: a reader sees a whole entry or none
        except OSError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise WriteError(write_failure(d, exc)) from None


# -- executors -----------------------------------------------------------------

def _dask(items: list[tuple[int, CarnetJob]], options: Options, address: str) -> Iterator[JobOutput]:
    try:
        from dask.distributed import Client, as_completed as dask_completed
        from distributed.scheduler import KilledWorker
    except ImportError:
        raise UsageError("--scheduler needs dask.distributed: pip install 'ecarte-auditor[cluster]'") from None
    try:
        client = Client(address, timeout="20s")
    except (OSError, TimeoutError) as exc:
        raise UsageError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    with client:
        # A worker lost mid-run is the scheduler's to survive: it gives the
        # carnet to another worker, and past `distributed.scheduler.allowed-failures`
        # tries it gives up with KilledWorker, which is that carnet's EC00-01.
        held, futures = {}, []
        for index, job in items:
            fut = client.submit(run_job, index, job, options, pure=False, key=f"carnet-{index}-{job.id}")
            held[fut.key] = (index, job)
            futures.append(fut)
        for fut in dask_completed(futures):
            try:
                out = fut.result()
            except KilledWorker:
                out = fault_output(*held[fut.key], options, "killed_cluster")
            yield out
            fut.release()


# -- the batch -------------------------------------------------------------------

@dataclass
class BatchResult:
    entries: list[dict]
    worst: list[int | None]
    cross_findings: list[dict] = field(default_factory=list)
    cached: int = 0


def run_batch(jobs: list[CarnetJob], out: Path, options: Options, *, workers: int = 1,
              scheduler: str | None = None, cache_dir: Path | None = None,
              progress: bool = False, on_done=None, bounds: Bounds | None = None,
              notice: Callable[[str], None] | None = None) -> BatchResult:
    """Audit `jobs` and write each carnet's files under `out`.

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
        notice(f"{len(outputs)} of {len(jobs)} carnet(s) already audited (in the cache), {len(todo)} to audit")
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
                stream = (audit_here(index, job, options, bounds) for index, job in todo)
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
        resume = ("run the same command again to audit only the rest (the cache keeps what was done)" if cache
                  else "with --cache DIR, a new run resumes where the last one stopped")
        raise WriteError(f"{exc}. The run stopped after {len(outputs)} of {len(jobs)} carnet(s); "
                         f"{resume}") from None
    ordered = [outputs[i] for i in range(len(jobs))]
    entries = [o.entry for o in ordered]
    from auditor.crosscheck import cross_carnet_duplicates

    cross = cross_carnet_duplicates(entries, [o.tickets for o in ordered], options.lang)
    return BatchResult(entries, [o.worst for o in ordered], cross, cached=sum(o.cached for o in ordered))


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
    present = [v for v in values if v is not None]
    return Severity(max(present)) if present else None
