"""Making a carnet's files once the run is known, wherever it is done: in
the run's own process, or in the local pool's warm workers (the same
machine: a worker writes the files it makes, which spares sending their
bytes back). A Dask cluster's workers do not see the output folder: there the
client makes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from auditor.atomic import make_folder, write_atomic
from auditor.batch.cache import load_audit, read_pickle, write_pickle
from auditor.batch.plan import CarnetJob, Options
from auditor.errors import WriteError
from auditor.model import Finding
from auditor.outputs import Finished, finish


@dataclass
class FinishTask:
    """One carnet's files to make and write: where its audit waits, and what
    the run brings to it (see `auditor.outputs.finish`)."""

    job: CarnetJob
    path: Path                                   # its audit, in the cache or the run's spool
    out: Path                                    # the run's output folder
    across: list[Finding] = field(default_factory=list)
    context: object = None                       # its baseline and reviews (baseline.CarnetBaseline)
    reports: dict[str, str | None] = field(default_factory=dict)   # only the carnets its findings name
    history_of: frozenset[str] = frozenset()
    checked_across: dict[str, str | None] | None = None
    # Beside its audit in the cache: its files as made for these inputs
    # (`digest`), kept for the next run whose inputs are the same (`remember`).
    memo: Path | None = None
    digest: str = ""
    visit: object = None                         # the procès-verbal's visit (report.pv.Visit)
    sign: object = None                          # how it is signed; never sent to a worker (Executor.finishes)

    @property
    def shown(self) -> str:
        """The carnet as outputs show it (the pool's messages name it)."""
        return self.job.shown

    def perform(self, index: int, options: Options, catch: bool = False) -> Finished:
        """Make the carnet's files and write them; what the run keeps of it. A
        write error stops the run there (WriteError), or with `catch` (in a
        worker, which must hand it back) is kept in `error`."""
        from auditor.batch.executors import run_job

        audit = load_audit(self.path)
        if audit is None:   # its cache entry went away since it was looked up: audited again
            audit = run_job(index, self.job, options)
        fin = finish(audit, options, across=self.across, context=self.context, reports=self.reports,
                     history_of=set(self.history_of), checked_across=self.checked_across, visit=self.visit,
                     sign=self.sign)
        try:
            folder = self.out / self.job.id
            make_folder(folder)
            for name, data in fin.files.items():
                write_atomic(folder / name, data)
        except WriteError as exc:
            if not catch:
                raise
            fin.error = exc
        fin.files = {}   # written: the run keeps only what the summary needs
        fin.index = index
        if self.memo is not None:
            remember(self.memo, self.digest, fin)   # the files' text kept as made, with their time slots
        fin.stamped = {}   # nor their text once kept: a worker sends none back (90 KB a small carnet)
        return fin


MEMO_FILE = "carnet-files.pickle"
# Bumped when what a memo keeps changes (2: the carnet's part of changes.json;
# 3: its findings across carnets digested apart; 4: that part's findings whose
# review no longer holds): older memos are not recalled.
MEMO_VERSION = 4


def across_digest(across: list[Finding]) -> str:
    """The digest of a carnet's findings across carnets as its files show
    them (kept with the batch's checks: a night from the cache does not
    make it again)."""
    import hashlib
    import json

    text = json.dumps([f.as_json() for f in across], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def inputs_digest(task: FinishTask, options: Options, fingerprints: set[str], across: str | None = None) -> str:
    """What decides a carnet's files besides its audit and the run's time:
    its findings across carnets (`across`: their `across_digest`, if known),
    its baseline and the reviews that can reach its findings
    (`fingerprints`: its own), the reports its links name, its history
    rows, the statuses of the rules across carnets, --fail-on-new."""
    import hashlib
    import json

    fps = set(fingerprints) | {f.fingerprint for f in task.across}
    context = task.context.digest(fps) if task.context is not None else ""
    text = json.dumps({"memo": MEMO_VERSION, "across": across or across_digest(task.across), "context": context,
                       "reports": task.reports, "history_of": sorted(task.history_of),
                       "checked": task.checked_across, "fail_on_new": options.fail_on_new,
                       "formats": options.formats},
                      sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def remember(memo: Path, digest: str, fin: Finished) -> None:
    """Keep the carnet's files as made (with their time slots) beside its
    audit in the cache; a failure to keep them costs only the next run's time."""
    import os

    tmp = memo.with_name(f".{memo.name}.{os.getpid()}.part")
    try:
        write_pickle(tmp, (digest, fin))
        os.replace(tmp, memo)
    except OSError:
        tmp.unlink(missing_ok=True)


def recall(memo: Path, digest: str) -> Finished | None:
    """The carnet's files as a run with the same inputs made them (None: none kept, or other inputs)."""
    kept = read_pickle(memo)
    if not isinstance(kept, tuple) or len(kept) != 2:
        return None
    fin = kept[1]
    return fin if kept[0] == digest and isinstance(fin, Finished) and fin.stamped else None


def write_recalled(fin: Finished, job: CarnetJob, out: Path, at: str) -> Finished:
    """Write the files `recall` gave, at this run's time `at`."""
    folder = out / job.id
    make_folder(folder)
    for name, stamped in fin.stamped.items():
        write_atomic(folder / name, stamped.fill(at))
    return fin


def lost(index: int, task: FinishTask, options: Options, kind: str, **params) -> Finished:
    """A task whose worker was lost or overran its bound: the run makes that
    carnet's files itself (`Finished.fault` says so)."""
    fin = Finished({}, {}, None)
    fin.index, fin.fault = index, kind
    return fin
