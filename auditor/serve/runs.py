"""Audits asked for by the page: one at a time, in a worker thread, through
the command line's own run service (`auditor.run.run`).

A run is one click: the carnets dropped together, or a folder of this
machine. Its files live in the private folder (`run-<n>/in`, `run-<n>/out`)
under names the server chose; the page reads them through `file()`.
"""

from __future__ import annotations

import itertools
import os
import secrets
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from auditor.batch import Options
from auditor.batch.plan import CarnetJob, plan
from auditor.limits import Limits
from auditor.read import table_names
from auditor.run import run as audit_run
from auditor.serve.uploads import stage

FORMATS = ("html", "json", "xlsx")
RUN_ID = "[0-9a-f]{16}"


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

    @property
    def out(self) -> Path:
        """Where its reports are written."""
        return self.folder / "out"

    def status(self) -> dict:
        """What the page polls: state, progress, carnets with their links."""
        base = f"runs/{self.id}/"
        return {"run": self.id, "state": self.state, "done": self.done, "total": self.total, "batch": self.batch,
                "index": base + "index.html" if self.batch and self.state == "done" else None,
                "ignored": self.ignored, "message": self.message,
                "carnets": [{**c, "report": base + f"{c['id']}/report.html",
                             "findings": base + f"{c['id']}/findings.json",
                             "workbook": base + f"{c['id']}/annotated.xlsx"} for c in self.carnets]}


class Runs:
    """Every run of this server, in the private folder `root`."""

    def __init__(self, root: Path, limits: Limits | None = None, workers: int = 1):
        self.root = root
        self.limits = limits
        self.workers = workers
        self._runs: dict[str, Run] = {}
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="audit")
        self.stopping = False

    def get(self, run_id: str) -> Run | None:
        """The run of that id (None: no such run)."""
        return self._runs.get(run_id)

    def _new(self, lang: str) -> Run:
        with self._lock:
            folder = self.root / f"run-{next(self._numbers)}"
            run = Run(secrets.token_hex(8), folder, lang)
            self._runs[run.id] = run
        (folder / "in").mkdir(parents=True, mode=0o700)
        run.out.mkdir(mode=0o700)
        return run

    def upload(self, files: list[tuple[str, bytes]], lang: str) -> Run:
        """Audit uploaded (name, content) pairs, in the worker thread."""
        run = self._new(lang)
        self._pool.submit(self._guarded, run, self._upload, files)
        return run

    def folder(self, folder: Path, lang: str) -> Run:
        """A batch over a folder of this machine (checked by the caller)."""
        run = self._new(lang)
        self._pool.submit(self._guarded, run, self._folder, folder)
        return run

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
        except Exception as exc:   # the page says so; the server goes on
            run.state, run.message = "failed", f"{type(exc).__name__}: {exc}"[:300]

    def _upload(self, run: Run, files: list[tuple[str, bytes]]) -> None:
        limits = self.limits
        from auditor.limits import DEFAULT_LIMITS

        staging = stage(files, run.folder / "in", table_names(), limits or DEFAULT_LIMITS, run.lang)
        run.ignored = staging.ignored
        staged = staging.carnets
        run.total = len(staged)
        # An upload refused before reading (a hostile archive) is audited as
        # an unreadable carnet with its EC00-01, in the run like any other.
        jobs = [CarnetJob(s.path, s.shown, f"carnet-{i}") if s.path is not None
                else CarnetJob(Path(os.devnull), s.shown, f"carnet-{i}", refusal=s.problem, sha256=s.sha256)
                for i, s in enumerate(staged, 1)]
        self._audit(run, jobs, batch=len(staged) > 1)

    def _folder(self, run: Run, folder: Path) -> None:
        jobs = plan([folder])
        run.total = len(jobs)
        self._audit(run, jobs, batch=len(jobs) > 1 or jobs[0].path != folder)

    def _audit(self, run: Run, jobs: list[CarnetJob], batch: bool) -> None:
        from auditor.clock import generated_at

        options = Options(formats=FORMATS, lang=run.lang, generated_at=generated_at(), limits=self.limits)

        def one_done(job, entry):
            run.done += 1
            if self.stopping:
                raise Stopping()

        result = audit_run(jobs, run.out, options, workers=self.workers, on_done=one_done, batch=batch,
                           index_formats=("html", "json"))
        run.jobs = {j.id: j for j in jobs}
        run.batch = batch
        run.carnets = [{"id": e["id"], "shown": e["path"], "verdict": e["verdict"], "summary": e["summary"]}
                       for e in result.entries]


class Stopping(Exception):
    """The server is stopping: the batch ends after the carnet under way."""
