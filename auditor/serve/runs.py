"""Audits asked for by the page: one at a time, in a worker thread, through
the command line's own run service (`auditor.run.run`), each kept in the
visit's workspace (`auditor.serve.workspace`).

A run is one click: the carnets dropped together, or a folder of this
machine. It is made in the workspace's pending folder — the carnets copied
under `in/` (the snapshot the cell view shows), the outputs under `out/` —
then moved to its place by casino, table and date. When the workspace holds
an earlier audit of the same casino and table, that audit's findings are
this one's baseline and its decisions are carried: the files are made again
(the audit itself comes from the cache) with both. A decision recorded on
the page makes the files again the same way: the report, findings.json, the
workbook and the procès-verbal all show it.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from auditor.batch import Options
from auditor.batch.plan import CarnetJob, plan
from auditor.errors import WriteError
from auditor.limits import Limits
from auditor.model import FORMATS
from auditor.read import table_names
from auditor.read.raw import ReadProblem
from auditor.run import run as audit_run
from auditor.serve import private
from auditor.serve.labels import page_label, page_labels
from auditor.serve.uploads import stage
from auditor.serve.workspace import AuditRecord, CarnetRecord, Workspace, local_moment, reviews_file, zone_known

RUN_ID = "[0-9a-f]{16}"
PV_FILE = "proces-verbal.pdf"


@dataclass
class Run:
    """One audit asked for by the page, and what it gave."""

    id: str
    folder: Path
    lang: str
    state: str = "queued"              # queued → running → done | failed
    total: int = 0
    done: int = 0
    batch: bool = False
    carnets: list[dict] = field(default_factory=list)   # the batch summary's rows, with our links
    jobs: dict[str, CarnetJob] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)
    message: str | None = None
    record: AuditRecord | None = None
    place: str = ""                    # its folder, relative to the workspace
    rendering: bool = False            # its files are being made again (a decision)
    version: int = 0                   # goes up each time its files are made again
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def out(self) -> Path:
        """Where its reports are written."""
        return self.folder / "out"

    def status(self) -> dict:
        """What the page polls: state, progress, carnets with their links."""
        base = f"runs/{self.id}/"
        record = self.record
        carnets = []
        for c in self.carnets:
            kept = next((r for r in record.carnets if r.id == c["id"]), None) if record else None
            pv = self.out / c["id"] / PV_FILE
            carnets.append({**c, "report": base + f"{c['id']}/report.html",
                            "findings": base + f"{c['id']}/findings.json",
                            "workbook": base + f"{c['id']}/annotated.xlsx",
                            "pv": base + f"{c['id']}/{PV_FILE}" if pv.is_file() else None,
                            "casino": kept.casino if kept else None, "table": kept.table if kept else None,
                            "previous": kept.previous if kept else None,
                            "baseline_counts": kept.baseline_counts if kept else None})
        return {"run": self.id, "state": self.state, "done": self.done, "total": self.total, "batch": self.batch,
                "index": base + "index.html" if self.batch and self.state == "done" else None,
                "ignored": self.ignored, "message": self.message, "place": self.place,
                "created": record.created if record else None,
                "created_text": when_text(record.created, self.lang) if record else None,
                "version": self.version, "rendering": self.rendering, "carnets": carnets}


def when_text(stamp: str, lang: str) -> str:
    """A time stamp as the inspector reads it: Paris's time, said so."""
    moment = local_moment(stamp)
    key = "page.when_paris" if zone_known() else "page.when_utc"
    return page_label(key, lang, day=moment.strftime("%d/%m/%Y" if lang == "fr" else "%Y-%m-%d"),
                      time=moment.strftime("%H:%M"))


class Runs:
    """Every run of this server, kept in the workspace; `root` is the
    private folder (uploads, the audits' cache)."""

    def __init__(self, root: Path, limits: Limits | None = None, workers: int = 1,
                 workspace: Workspace | None = None, pv_settings: Callable | None = None,
                 keep_bytes: int | None = None):
        self.root = root
        # What the private folder may take: past it, its oldest cache entries go (private.evict).
        self.keep_bytes = keep_bytes or private.KEEP_BYTES
        self.limits = limits
        self.workers = workers
        self.workspace = workspace or Workspace(root / "workspace")
        # () → (Visit, signer or None): the settings the page filled, read at each run.
        self.pv_settings = pv_settings or (lambda: (None, None))
        self._runs: dict[str, Run] = {}
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="audit")
        self.stopping = False

    @property
    def cache(self) -> Path:
        """The audits' cache: a decision makes the files again without auditing again."""
        return self.root / private.CACHE

    def get(self, run_id: str) -> Run | None:
        """The run of that id (None: no such run): one of this server's, or
        one kept in the workspace by an earlier one."""
        run = self._runs.get(run_id)
        if run is None:
            run = self._kept(run_id)
        return run

    def _kept(self, run_id: str) -> Run | None:
        try:
            audits = self.workspace.audits()
        except OSError:
            return None
        for folder, record in audits:
            if record.id == run_id:
                run = run_from_record(folder, record, self.workspace.folder)
                with self._lock:
                    return self._runs.setdefault(run_id, run)
        return None

    def _new(self, lang: str) -> Run:
        run_id = secrets.token_hex(8)
        folder = self.workspace.pending(run_id)
        (folder / "in").mkdir(parents=True, mode=0o700)
        (folder / "out").mkdir(mode=0o700)
        run = Run(run_id, folder, lang)
        with self._lock:
            self._runs[run.id] = run
        return run

    def upload(self, files: list[tuple[str, bytes | Path]], lang: str) -> Run:
        """Audit uploaded (name, content) pairs, in the worker thread. A content
        given as a file of the upload spool is the run's once this returns:
        consumed whatever happens (moved into the audit's `in/`, or removed —
        a file no part of a carnet, a run that fails, or one cancelled because
        the server stops). Should this raise, nothing was taken: the caller
        removes the files (UploadParser.discard)."""
        run = self._new(lang)
        try:
            future = self._pool.submit(self._guarded, run, self._upload, files)
        except RuntimeError:   # the server is stopping: no run will take them
            with self._lock:
                self._runs.pop(run.id, None)
            shutil.rmtree(run.folder, ignore_errors=True)
            raise
        future.add_done_callback(lambda _: _discard_spool(files))
        return run

    def folder(self, folder: Path, lang: str, jobs: list[CarnetJob] | None = None) -> Run:
        """A batch over a folder of this machine (checked by the caller, who may have planned it)."""
        run = self._new(lang)
        self._pool.submit(self._guarded, run, self._folder, (folder, jobs))
        return run

    def again(self, run: Run) -> None:
        """Make the run's files again (a decision was recorded), in the worker thread."""
        run.rendering = True
        self._pool.submit(self._again, run)

    def close(self) -> None:
        """Cancel what waits, stop a batch after its current carnet, and wait
        for it: nothing writes in the private folder once this returns."""
        self.stopping = True
        self._pool.shutdown(wait=True, cancel_futures=True)

    # -- in the worker thread ----------------------------------------------------

    def _guarded(self, run: Run, work, arg) -> None:
        run.state = "running"
        try:
            work(run, arg)
            run.state = "done"
        except NoCarnet as exc:
            run.state, run.message = "failed", str(exc)
        except (OSError, WriteError) as exc:   # in the inspector's words: which folder, and why
            run.state, run.message = "failed", self._os_text(exc, run.lang)
        except Exception as exc:   # the page says so; the server goes on
            run.state, run.message = "failed", f"{type(exc).__name__}: {exc}"[:300]

    def _os_text(self, exc: Exception, lang: str) -> str:
        """A file error of a run: the folder of the visits that cannot be
        written, or the carnet's folder that cannot be read."""
        from auditor.errors import os_reason, text_of

        reason = text_of(exc, lang) if isinstance(exc, WriteError) else text_of(os_reason(exc), lang)
        name = str(getattr(exc, "filename", "") or "")
        if name and not name.startswith(str(self.workspace.folder)):
            return page_label("errors.folder_unreadable", lang, folder=name)
        return page_label("errors.workspace", lang, folder=self.workspace.folder, reason=reason)

    def _again(self, run: Run) -> None:
        try:
            with run.lock:
                self._render(run, list(run.jobs.values()))
        except (OSError, WriteError) as exc:   # the page says so; the audit stays as it was
            run.message = self._os_text(exc, run.lang)
        except Exception as exc:
            run.message = f"{type(exc).__name__}: {exc}"[:300]
        finally:
            run.rendering = False

    def _upload(self, run: Run, files: list[tuple[str, bytes]]) -> None:
        from auditor.limits import DEFAULT_LIMITS

        staging = stage(files, run.folder / "in", table_names(), self.limits or DEFAULT_LIMITS, run.lang)
        run.ignored = staging.ignored
        staged = staging.carnets
        if not staged:
            raise NoCarnet(no_carnet_text(run.lang))
        run.total = len(staged)
        # An upload refused before reading (a hostile archive) is audited as
        # an unreadable carnet with its EC00-01, in the run like any other.
        jobs = [CarnetJob(s.path, s.shown, f"carnet-{i}") if s.path is not None
                else CarnetJob(Path(os.devnull), s.shown, f"carnet-{i}", refusal=s.problem, sha256=s.sha256)
                for i, s in enumerate(staged, 1)]
        self._audit(run, jobs, batch=len(staged) > 1)

    def _folder(self, run: Run, arg) -> None:
        folder, jobs = arg
        jobs = jobs if jobs is not None else plan([folder])
        run.total = len(jobs)
        batch = len(jobs) > 1 or jobs[0].path != folder
        # The snapshot: each carnet copied as it is now, and audited from the copy.
        from auditor.limits import DEFAULT_LIMITS

        too_large = (self.limits or DEFAULT_LIMITS).max_file_bytes
        copies = []
        for job in jobs:
            if job.path.is_file() and job.path.stat().st_size > too_large:
                copies.append(job)   # refused by the reader unread (EC00-01): not copied either
                continue
            target = run.folder / "in" / job.id / job.path.name
            target.parent.mkdir(parents=True)
            if job.path.is_dir():
                shutil.copytree(job.path, target)
            else:
                shutil.copy2(job.path, target)
            copies.append(CarnetJob(target, job.shown, job.id))
        self._audit(run, copies, batch=batch)

    def _audit(self, run: Run, jobs: list[CarnetJob], batch: bool) -> None:
        from auditor.clock import generated_at

        at = generated_at()
        record = AuditRecord(run.id, at, run.lang, batch, ignored=list(run.ignored))
        for job in jobs:
            inside = job.refusal is None and run.folder in job.path.parents
            rel = job.path.relative_to(run.folder).as_posix() if inside else None
            record.carnets.append(CarnetRecord(job.id, job.shown, rel))
            if job.refusal is not None:
                record.refusals[job.id] = {"problem": _problem_json(job.refusal), "sha256": job.sha256}
        by_id = {c.id: c for c in record.carnets}

        def one_done(job, done):
            run.done += 1
            facts = getattr(done, "facts", None)
            if facts is not None and getattr(facts, "casino", None):
                by_id[job.id].casino, by_id[job.id].table = facts.casino, facts.table
                by_id[job.id].start = getattr(facts, "date_debut", None)
            if self.stopping:
                raise Stopping()

        run.record, run.batch = record, batch
        run.jobs = {j.id: j for j in jobs}
        with run.lock:
            self._render(run, jobs, on_done=one_done, first=True)
            # Its place in the workspace, now that its casino and table are known.
            labels = {k.split(".", 1)[1]: v for k, v in page_labels(run.lang).items() if k.startswith("workspace.")}
            pending = run.folder
            run.folder = self.workspace.settle(pending, record, labels)
            run.jobs = {j.id: _moved(j, pending, run.folder) for j in jobs}
            run.place = _relative(run.folder, self.workspace.folder)
            if self._baseline(run):
                self._render(run, list(run.jobs.values()))

    def _baseline(self, run: Run) -> bool:
        """Each carnet's previous audit of its table, laid out as this audit's
        baseline folder, and its decisions carried; False: none."""
        record = run.record
        audits = self.workspace.audits()
        carried = []
        found = False
        for c in record.carnets:
            previous = self.workspace.previous(c.casino, c.table, record.created, audits, exclude=record.id,
                                                start=c.start)
            if previous is None:
                continue
            folder, earlier, carnet = previous
            source = folder / "out" / carnet.id / "findings.json"
            if not source.is_file():
                continue
            target = run.folder / "baseline" / c.id
            target.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target / "findings.json")
            c.previous = {"audit": earlier.id, "carnet": carnet.id, "created": earlier.created,
                          "created_text": when_text(earlier.created, run.lang),
                          "place": _relative(folder, self.workspace.folder)}
            found = True
            if reviews_file(folder).is_file() and folder not in carried:
                carried.append(folder)
        if carried:
            with open(reviews_file(run.folder), "ab") as out:
                for folder in carried:
                    data = reviews_file(folder).read_bytes()
                    out.write(data if data.endswith(b"\n") or not data else data + b"\n")
        Workspace.write_record(run.folder, record)
        return found

    def _render(self, run: Run, jobs: list[CarnetJob], on_done=None, first: bool = False) -> None:
        """Make the run's files with its baseline and decisions (the audits
        from the cache); then the cache bounded (private.evict), but for the
        entries this run used."""
        used: set[Path] = set()

        def seen(job, done):
            if getattr(done, "in_cache", False):
                used.add(Path(done.path).parent)
            if on_done is not None:
                on_done(job, done)

        try:
            self._render_files(run, jobs, seen, first)
        finally:
            for entry in used:   # the least recently used go first: these are the most recent
                try:
                    os.utime(entry)
                except OSError:
                    pass
            private.evict(self, self.root, self.keep_bytes, protect=used)

    def _render_files(self, run: Run, jobs: list[CarnetJob], on_done, first: bool) -> None:
        from auditor.baseline import Baseline
        from auditor.clock import generated_at

        visit, sign = self.pv_settings()
        options = Options(formats=FORMATS, lang=run.lang,
                          generated_at=run.record.created if run.record else generated_at(), limits=self.limits)
        base = run.folder / "baseline"
        baseline = Baseline(base if base.is_dir() else None, reviews_file(run.folder))
        kwargs = {"visit": visit} if visit is not None else {}
        result = audit_run(jobs, run.out, options, workers=self.workers, on_done=on_done, batch=run.batch,
                           index_formats=("html", "json"), cache_dir=self.cache, baseline=baseline, sign=sign,
                           keep_batches=False,
                           **kwargs)
        run.carnets = [{"id": e["id"], "shown": e["path"], "verdict": e["verdict"], "summary": e["summary"]}
                       for e in result.entries]
        record = run.record
        if record is not None:
            record.signed = sign is not None
            for c, e in zip(record.carnets, result.entries):
                c.verdict, c.summary = e["verdict"], e["summary"]
                c.baseline_counts = _baseline_counts(run.out / c.id / "findings.json")
            if not first:
                Workspace.write_record(run.folder, record)
        run.version += 1


def _discard_spool(files: list[tuple[str, bytes | Path]]) -> None:
    """The upload's spool files its run did not take (none once staged)."""
    for _, data in files:
        if isinstance(data, Path):
            data.unlink(missing_ok=True)


def _baseline_counts(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("baseline_counts")
    except (OSError, ValueError, AttributeError):
        return None


def _problem_json(problem) -> dict:
    return {"code": problem.code, "kind": problem.kind, "table": problem.table, "row": problem.row,
            "column": problem.column, "params": dict(problem.params)}


def _moved(job: CarnetJob, pending: Path, folder: Path) -> CarnetJob:
    """The job once its audit moved from `pending` to `folder` (a carnet not copied stays where it is)."""
    if job.refusal is not None or pending not in job.path.parents:
        return job
    return CarnetJob(folder / job.path.relative_to(pending), job.shown, job.id)


def _relative(folder: Path, workspace: Path) -> str:
    try:
        return folder.relative_to(workspace).as_posix()
    except ValueError:
        return folder.as_posix()


def run_from_record(folder: Path, record: AuditRecord, workspace: Path) -> Run:
    """An audit kept by an earlier server, as a run of this one."""
    run = Run(record.id, folder, record.lang, state="done", batch=record.batch, record=record,
              ignored=list(record.ignored), place=_relative(folder, workspace))
    run.total = run.done = len(record.carnets)
    jobs = {}
    for c in record.carnets:
        refused = record.refusals.get(c.id)
        if refused is not None:
            p = refused["problem"]
            problem = ReadProblem(p["code"], p["kind"], p.get("table"), p.get("row"), p.get("column"),
                                  dict(p.get("params") or {}))
            jobs[c.id] = CarnetJob(Path(os.devnull), c.shown, c.id, refusal=problem, sha256=refused.get("sha256", ""))
        else:
            # Not copied (past the size limit): the file where it was.
            jobs[c.id] = CarnetJob(folder / c.input if c.input else Path(c.shown), c.shown, c.id)
    run.jobs = jobs
    run.carnets = [{"id": c.id, "shown": c.shown, "verdict": c.verdict, "summary": c.summary} for c in record.carnets]
    return run


def expected_names() -> str:
    """The names of a carnet's CSV files, `coups.csv` and `mises.csv` first."""
    return ", ".join(f"{t}.csv" for t in sorted(table_names(), key=lambda t: (t != "coups", t != "mises", t)))


def no_carnet_text(lang: str) -> str:
    """What a drop with no carnet in it is told: the names a carnet has."""
    from auditor.read import WORKBOOK_SUFFIXES

    return page_label("errors.no_carnet", lang, names=expected_names(), suffixes=", ".join(WORKBOOK_SUFFIXES))


class NoCarnet(Exception):
    """Nothing dropped was a carnet."""


class Stopping(Exception):
    """The server is stopping: the batch ends after the carnet under way."""
