"""Batches: many carnets, audited in parallel (local processes or a Dask
cluster), with an optional cache, a progress bar, and the cross-carnet check.

Every carnet goes through one picklable function, `run_job`, which audits it
and returns its rendered files instead of writing them: the client writes, so
a local pool and remote Dask workers give byte-identical outputs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import zipfile
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Iterable, Iterator

from auditor import __version__
from auditor.catalogue import load_profile, rules_root
from auditor.errors import UsageError
from auditor.model import Severity
from auditor.pipeline import CarnetJob, audit_path, render_outputs, restamp_outputs
from auditor.limits import Limits
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


def run_job(index: int, job: CarnetJob, options: Options) -> JobOutput:
    """Audit one carnet and render its outputs (runs in a worker)."""
    profile = load_profile()
    result = audit_path(job.path, profile, options.lang, debug=options.debug, limits=options.limits)
    files, entry = render_outputs(result, job, options.formats, profile, options.generated_at)
    worst = result.worst()
    return JobOutput(index, entry, files, ticket_runs(result), None if worst is None else int(worst))


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
        shutil.rmtree(tmp, ignore_errors=True)
        (tmp / "files").mkdir(parents=True)
        for name, data in out.files.items():
            (tmp / "files" / name).write_bytes(data)
        meta = {"entry": out.entry, "files": sorted(out.files), "at": self.generated_at,
                "tickets": out.tickets, "worst": out.worst}
        (tmp / "result.json").write_text(json.dumps(meta), encoding="utf-8")
        shutil.rmtree(d, ignore_errors=True)
        tmp.rename(d)  # atomic: a reader sees a whole entry or none


# -- executors -----------------------------------------------------------------

def _local(items: list[tuple[int, CarnetJob]], options: Options, workers: int) -> Iterator[JobOutput]:
    if workers <= 1 or len(items) <= 1:
        for index, job in items:
            yield run_job(index, job, options)
        return
    import multiprocessing

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["auditor.batch"])
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
        raise UsageError("main.needs_dask") from None
    try:
        client = Client(address, timeout="20s")
    except (OSError, TimeoutError) as exc:
        raise UsageError("main.no_scheduler", address=address, reason=exc) from None
    with client:
        futures = [client.submit(run_job, index, job, options, pure=False, key=f"carnet-{index}-{job.id}")
                   for index, job in items]
        for fut in dask_completed(futures):
            yield fut.result()
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
              progress: bool = False, on_done=None) -> BatchResult:
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
    bar = _bar(len(jobs), progress)
    for o in outputs.values():
        _write(o, jobs[o.index], out)
        _done(bar, on_done, jobs[o.index], o)
    stream: Iterable[JobOutput] = (_dask(todo, options, scheduler) if scheduler and todo
                                   else _local(todo, options, workers))
    for o in stream:
        _write(o, jobs[o.index], out)
        if cache and o.index in keys:
            cache.store(keys[o.index], o)
        o.files = {}  # written: keep only what the summary needs
        outputs[o.index] = o
        _done(bar, on_done, jobs[o.index], o)
    if bar is not None:
        bar.close()
    ordered = [outputs[i] for i in range(len(jobs))]
    entries = [o.entry for o in ordered]
    from auditor.crosscheck import cross_carnet_duplicates

    cross = cross_carnet_duplicates(entries, [o.tickets for o in ordered], options.lang)
    return BatchResult(entries, [o.worst for o in ordered], cross, cached=sum(o.cached for o in ordered))


def _write(o: JobOutput, job: CarnetJob, out: Path) -> None:
    folder = out / job.id
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in o.files.items():
        (folder / name).write_bytes(data)


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
