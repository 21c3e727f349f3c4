"""One run: the command line and the local page both audit through `run`.

plan (given) → each carnet from the cache or audited (workers hand back data,
never files) → the checks over the batch, once every carnet is known → each
carnet's files made once, with the findings across carnets that involve it,
its baseline and reviews, the run's time stamp → written atomically → the
batch's summary and index → the history → what the exit status needs.

No carnet is audited twice and no file is rendered before the batch is
known. Until its files are made, a carnet's audit waits on disk (in the
cache, or in the run's spool folder): the run holds only each carnet's
summary row and the facts the batch checks need, so a batch of thousands
of carnets takes the memory of a few.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from auditor.across import by_carnet
from auditor.batch import Bounds, Cache, CarnetJob, Executor, FinishTask, Options
from auditor.batch.cache import AuditOrder, BatchChecks, BatchMemo, Kept, keep_batch, recall_batch
from auditor.batch.finishing import MEMO_FILE, across_digest, inputs_digest, recall, write_recalled
from auditor.clock import generated_at
from auditor.catalogue import load_profile
from auditor.checks import BATCH_MODULES
from auditor.atomic import write_failure
from auditor.errors import Message, WriteError
from auditor.marked_folders import RUN_SPOOLS, WARM_UPS, remove
from auditor.model import Severity
from auditor.outputs import Finished, write_batch
from auditor.report.cross_carnet import attribute
from auditor.stake import batch_at_stake


@dataclass
class RunResult:
    """What the command line and the local page need once every file is written."""

    entries: list[dict]                  # each carnet's row of summary.json, in the jobs' order
    worst: Severity | None               # the highest severity that sets the exit status (None: none)
    cross_findings: list[dict] = field(default_factory=list)   # summary.json's findings across carnets
    cached: int = 0
    history: list[list[dict]] = field(default_factory=list)    # per carnet, its findings' history rows
    # changes.json as written (None without --baseline): what changed since the baseline, the
    # absent and vanished findings and their reviews (what the history's ledger closes).
    changes: dict | None = None


@dataclass
class _Held:
    """A carnet audited, until its files are made: its row, its batch facts,
    and where its whole audit waits."""

    entry: dict
    facts: object
    path: Path
    cached: bool = False
    pid: int | None = None     # the worker process that audited it
    in_cache: bool = False     # `path` is in the cache (its files may be kept beside it)
    fingerprints: frozenset[str] = frozenset()   # its own findings'


def run(jobs: list[CarnetJob], out: Path, options: Options, *, workers: int = 1, scheduler: str | None = None,
        cache_dir: Path | None = None, progress: bool = False, on_done: Callable | None = None,
        bounds: Bounds | None = None, notice: Callable | None = None, baseline=None, history: Path | None = None,
        batch: bool | None = None, index_formats: tuple[str, ...] | None = None, visit=None,
        sign: Callable | None = None, cluster_wait: float | None = None, started=None,
        keep_batches: bool = True) -> RunResult:
    """Audit `jobs` and write every file under `out`.

    `baseline`: the baseline and reviews (auditor.baseline.Baseline), applied after
    the audit (never in the cache key); `history`: the folder the run is
    appended to; `batch`: write summary.json and index.html (default: more
    than one carnet), in `index_formats` (default: the run's formats).
    `visit` (report.pv.Visit) and `sign` (auditor.sign) are the procès-verbal's:
    who audits, where, and how it is signed (None: unsigned). `cluster_wait`:
    on a Dask cluster, how long the run waits with no worker before it stops.
    `started` (batch.pool.Started): local workers already started, which the
    run's pool takes first. `keep_batches`: keep what the batch makes of its
    cached carnets beside the cache, for the next run over the same carnets
    (the local page's bounded cache keeps only the carnets' audits).
    `on_done(job, done)` is called as each carnet is audited (`done.entry`: its
    summary row; `done.pid`: the worker that audited it; `done.cached`). A write error
    stops the run (WriteError); what was audited is in the cache, if any, and
    a new run with the same cache audits only the rest.
    """
    notice = notice or (lambda text: None)
    batch = len(jobs) > 1 if batch is None else batch
    cache = Cache(cache_dir, options) if cache_dir else None
    held: dict[int, _Held] = {}
    finished: list[Finished] = []
    todo: list[tuple[int, CarnetJob]] = []
    keys: dict[int, str] = {}   # each carnet's cache key, if it has one
    for index, job in enumerate(jobs):
        key = cache.key(job) if cache else None
        hit = cache.load(key) if cache and key else None
        if key:
            keys[index] = key
        if hit is not None:
            held[index] = _Held(hit.entry, hit.facts, hit.path, cached=True, in_cache=True,
                                fingerprints=hit.fingerprints)
        else:
            todo.append((index, job))
    if cache is not None and todo:
        cache.remove_stale_parts()   # this run writes entries: what killed workers left goes first
    if held:
        notice(Message("audit.cached_notice", cached=len(held), total=len(jobs), todo=len(todo)))
    # The facts of the checks over the batch: not needed for a carnet alone
    # that no cache keeps for later batches, and that no baseline is matched
    # with (its cover recognises it renamed since: `_cover`).
    tickets = len(jobs) > 1 or cache is not None or baseline is not None
    try:
        with contextlib.ExitStack() as stack:
            # The spool holds the casino's data: marked with this process's id,
            # so that the next run removes the spools (and the workers' warm-up
            # folders) of runs killed outright.
            try:
                for kind in (RUN_SPOOLS, WARM_UPS):
                    kind.remove_stale()
                spool = RUN_SPOOLS.make()
            except OSError as exc:   # a full or read-only temp folder: said as any file not written
                # (no usable one at all: tempfile names none, the variable is what the user set)
                named = tempfile.tempdir or os.environ.get("TMPDIR") or os.environ.get("TEMP") or "/tmp"
                raise WriteError(write_failure(Path(named), exc)) from None
            stack.callback(remove, spool)
            bar = _bar(len(jobs), progress)
            if bar is not None:
                stack.callback(bar.close)
            for index in sorted(held):
                _done(bar, on_done, jobs[index], held[index])
            executor = Executor(stack, options, workers=workers, scheduler=scheduler, bounds=bounds, notice=notice,
                                cluster_wait=cluster_wait, started=started)
            def keep(index: int) -> tuple[Path, Path | None]:
                return spool / f"{index}.pickle", cache.entry_dir(keys[index]) if index in keys else None

            if todo and len(jobs) > 1:
                # The checks over the batch (numpy, not pandas: this process
                # never audits a carnet) imported while it waits on its workers.
                stack.enter_context(_importing("auditor.across", "auditor.derived.table_archive", "auditor.findings",
                                               *(f"auditor.checks.{name}" for name in BATCH_MODULES)))
            for audit in executor.audits(todo, tickets=tickets, keep=keep, alone=len(jobs) == 1):
                if not isinstance(audit, Kept):   # handed back whole (this process's, a cluster's, a fault's): kept here
                    spool_file, entry = keep(audit.index)
                    # A fault's audit is never cached: the next run audits that carnet again.
                    order = AuditOrder(jobs[audit.index], spool_file, entry if audit.fault is None else None)
                    audit = replace(order.keep(audit), pid=audit.pid)
                held[audit.index] = _Held(audit.entry, audit.facts, audit.path, pid=audit.pid,
                                          in_cache=audit.in_cache, fingerprints=audit.fingerprints)
                _done(bar, on_done, jobs[audit.index], held[audit.index])
            # What the batch makes of its carnets is kept beside the cache when
            # every carnet's audit is there (none lost to a fault, none unreadable).
            kept = (cache.batch_file if cache is not None and keep_batches and len(keys) == len(jobs)
                    and all(h.in_cache for h in held.values()) else None)
            batch_files = BatchMemo(kept([keys[i] for i in range(len(jobs))], "files")) if kept else None
            cross, tables, archive = _finish_all(jobs, held, out, options, baseline, finished, executor, cache, visit,
                                                 sign,
                                        notice, kept([keys[i] for i in range(len(jobs))], "checks") if kept else None)
    except WriteError as exc:
        resume = Message("audit.resume_cache_kept") if cache else Message("audit.resume_no_cache")
        raise WriteError("audit.write_stopped", error=exc.message, done=len(finished), total=len(jobs),
                         resume=resume) from None
    for problem in baseline.problems if baseline is not None else ():
        notice(problem)   # review lines left out, an unreadable baseline: said once every carnet is done
    entries = [f.entry for f in finished]
    attribute(entries, cross)
    at_stake = batch_at_stake({f.entry["id"]: _stake(f) for f in finished}, cross) if batch else 0
    changes = None
    if baseline is not None and baseline.folder is not None:
        from auditor.report.changes import changes_document, write_changes

        changes = changes_document(jobs, finished, cross, baseline, options.generated_at)
        write_changes(changes, out, options.lang)
    rows = [f.history for f in finished]
    trends = dashboard = None
    if history is not None:
        # The ledger closes a finding when its carnet is audited without it, and
        # keeps the decisions on findings gone (acknowledged `corrige`…).
        trends = _append_history(history, options, entries, rows, [f.seances for f in finished], baseline)
        if batch and "html" in (index_formats or options.formats):
            dashboard = _dashboard(history, out, options, archive)
    if batch:
        write_batch(entries, out, index_formats or options.formats, options.lang, options.generated_at, cross,
                    trends, tables, baseline=baseline.summary() if baseline is not None else None,
                    changes="changes.txt" if changes is not None else None, dashboard=dashboard,
                    memo=batch_files, impact_cents=at_stake)
    if cache is not None and keep_batches and baseline is not None and baseline.folder is not None:
        # A controller's night: the next one takes this run's files as its
        # baseline, and reads them back from the cache (baseline.read_previous).
        from auditor.baseline import read_previous
        from auditor.batch.cache import previous_memo

        read_previous(out, [], previous_memo(cache.folder, out))
    worst = max((f.worst for f in finished if f.worst is not None), default=None)
    return RunResult(entries, worst, cross, cached=sum(h.cached for h in held.values()), history=rows,
                     changes=changes)



def _stake(fin: Finished) -> tuple:
    """The carnet's own money at stake in `auditor.stake`'s parts. A carnet
    finished without them (none is: `finish` gives them, and a kept file is
    keyed by the code that made it): its summary's total as one plain sum,
    on the safe side (its findings across carnets then count twice)."""
    if fin.stake is not None:
        return fin.stake
    return int(fin.entry["summary"]["impact_cents"]), {}


def _finish_all(jobs: list[CarnetJob], held: dict[int, _Held], out: Path, options: Options, baseline,
                finished: list[Finished], executor: Executor, cache: Cache | None, visit=None,
                sign: Callable | None = None, notice: Callable | None = None,
                checks_file: Path | None = None) -> tuple[list[dict], list[dict], tuple[str, ...]]:
    """The checks over the batch, then each carnet's files made and written
    (on the executor's warm workers, or here), each appended to `finished`
    once written, in the jobs' order; the findings across carnets and the
    tables as summary.json lists them, the codes of the rules across a
    table's carnets. A procès-verbal is made here: its
    signing key never leaves this process. `checks_file`: where the checks
    over this batch of cached carnets are kept (recalled, or kept there)."""
    checks = recall_batch(checks_file) if checks_file is not None else None
    recalled = isinstance(checks, BatchChecks)
    if not recalled:
        checks = _check_batch(jobs, held, options.lang)
    # Kept again when made here (the file may be there, damaged: a file's
    # presence says nothing) or when it gained carnets' digests.
    digested = len(checks.across_digests) if recalled else -1
    cross, checked, tables = checks.cross, checks.checked, checks.tables
    seen = by_carnet(cross)
    owner = {cf.fingerprint: cf.places[0]["carnet"] for cf in cross}
    owned: dict[str, set[str]] = {}   # carnet → the findings across carnets whose history row it carries
    for fp, cid in owner.items():
        owned.setdefault(cid, set()).add(fp)
    html = "html" in options.formats
    # Files kept beside a cached audit serve again when nothing they depend
    # on changed (the workbook, whose time is inside its zip, is always made).
    memos = cache is not None and not {"xlsx", "pdf"} & set(options.formats)
    at = options.generated_at or generated_at()
    # Each carnet's findings (its own and those across carnets): what the
    # baseline is matched by, and what reaches it of the baseline and reviews.
    fps = {index: held[index].fingerprints | {f.fingerprint for f in seen.get(job.id, [])}
           for index, job in enumerate(jobs)}
    if baseline is not None:
        for said in baseline.match([(job.id, _cover(held[index].facts), fps[index])
                                    for index, job in enumerate(jobs)]):
            (notice or (lambda text: None))(said)
    tasks = []
    for index, job in enumerate(jobs):
        # Past here the run needs only the carnet's task: its row and its
        # facts for the checks over the batch go now, before the rows its
        # files' making hands back pile up beside them (some 30 KB a carnet).
        held[index].entry = held[index].facts = None
        across = seen.get(job.id, [])
        # Only the reports its findings across carnets link to (a batch of
        # 10,000 carnets must not send 10,000 links with each carnet).
        named = {p["carnet"] for f in across for p in f.across}
        task = FinishTask(job, held[index].path, out, across,
                          baseline.context(job.id, fps[index]) if baseline is not None else None,
                          {cid: f"{cid}/report.html" for cid in named} if html else {},
                          frozenset(owned.get(job.id, ())), checked.get(job.id),
                          visit=visit, sign=sign)
        if memos and held[index].in_cache:
            task.memo = held[index].path.with_name(MEMO_FILE)
            if job.id not in checks.across_digests:
                checks.across_digests[job.id] = across_digest(across)
            task.digest = inputs_digest(task, options, held[index].fingerprints, checks.across_digests[job.id])
            kept = recall(task.memo, task.digest)
            if kept is not None:
                finished.append(write_recalled(kept, job, out, at))
                finished[-1].index = index
                continue
        tasks.append((index, task))
    error = None
    task_of = dict(tasks)   # by the carnet's index (`tasks` leaves out the carnets whose files were recalled)
    for fin in executor.finishes(tasks, here="pdf" in options.formats):
        if fin.fault is not None:   # its worker was lost: made here
            fin = task_of[fin.index].perform(fin.index, options)
        if fin.error is not None:
            # From a worker: the others already under way go on (each leaves
            # its files whole or absent); the run stops once they are back.
            error = error or fin.error
            continue
        finished.append(fin)
    if error is not None:
        raise error
    finished.sort(key=lambda f: f.index)
    states: dict[str, dict] = {}
    if baseline is not None:
        for job in jobs:
            baseline.carry_reviews(job.id, out)
        baseline.carry_gone_reviews([job.id for job in jobs], out)
    for index, job in enumerate(jobs):
        for fp, state in finished[index].across_states.items():
            if owner.get(fp) == job.id:
                states[fp] = state
    listed = [{**cf.as_json(), **states.get(cf.fingerprint, {"baseline_state": None, "review": None})}
              for cf in cross]
    if checks_file is not None and digested < len(checks.across_digests):
        keep_batch(checks_file, checks)   # each carnet's view of its findings across carnets made
    return listed, tables, checks.archive_codes


def _check_batch(jobs: list[CarnetJob], held: dict[int, _Held], lang: str) -> BatchChecks:
    """The checks over the batch, from its carnets' facts."""
    # Imported here: a night whose checks are kept beside the cache needs
    # neither the checks nor numpy, which they import.
    from auditor.across import check_batch
    from auditor.checks.archive import archive_codes, archive_statuses
    from auditor.derived.table_archive import describe_tables

    # A carnet alone has its facts only when a cache keeps them for later
    # batches: they are not checked here, so that its files say the same
    # with the cache and without (where no facts come back).
    facts = [held[i].facts for i in range(len(jobs)) if held[i].facts is not None] if len(jobs) > 1 else []
    profile = load_profile()
    cross = check_batch(facts, profile, lang) if len(facts) > 1 else []
    # The rules across the carnets of a table: checked for each carnet, or why not.
    checked, tables = archive_statuses(facts, profile, lang) if facts else ({}, [])
    tables = describe_tables(facts, tables)   # what index.html's picture of each table draws
    return BatchChecks(cross, checked, tables, {}, archive_codes())


@contextlib.contextmanager
def _importing(*modules: str):
    """Import `modules` in a thread while the block runs (this process then
    mostly waits on its workers' pipes, which leaves the interpreter free);
    the block's end waits for it. An import that fails here fails again, and
    says why, where the module is used."""
    import importlib
    import threading

    def load() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:   # said where it is used
                return

    thread = threading.Thread(target=load, name="ecarte-audit-imports", daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join()


def _cover(facts) -> tuple | None:
    """What recognises the carnet renamed since the baseline: casino, table, first séance and its date."""
    from auditor.baseline import cover_key

    if facts is None or not facts.placeable or not facts.seances:
        return None
    first = facts.seances[0]
    return cover_key(facts.casino, facts.table, first[0], first[1])


def _append_history(folder: Path, options: Options, entries: list[dict], rows: list[list[dict]],
                    seances: list[list[dict] | None], baseline=None) -> list[dict]:
    """Append this run to the history folder; the trend per table for index.html."""
    from auditor import __version__, history
    from auditor.errors import UsageError, os_reason

    record = {"run_id": history.new_run_id(), "run_at": options.generated_at, "tool_version": __version__,
              "profile": load_profile().as_json().get("name")}
    # The shared review file's decisions on findings this run did not see
    # (a vanished carnet's, acknowledged): the history closes them.
    said = {r["fingerprint"] for carnet in rows for r in carnet}
    decided = baseline.decided() if baseline is not None else {}
    reviews = [{"fingerprint": fp, "review_status": r.get("status"), "review_by": r.get("by"),
                "review_at": r.get("at"), "review_justification": r.get("justification"), "review_stale": None}
               for fp, r in sorted(decided.items()) if fp not in said]
    try:
        history.append_run(folder, record, list(zip(entries, rows, seances)), reviews)
    except OSError as exc:
        raise UsageError("audit.cannot_write_history", folder=folder, reason=os_reason(exc)) from None
    return history.trends(folder, options.lang)


DASHBOARD = "dashboard"


def _dashboard(history: Path, out: Path, options: Options, archive: tuple[str, ...] = ()) -> str | None:
    """The indicators per table and month, from the whole history, beside the
    batch's index (which links them); their links reach this run's reports.
    `archive`: the rules across a table's carnets, as the run's checks know
    them (none known: the indicators import the checks to ask)."""
    from auditor.errors import UsageError
    from auditor.indicators import write_indicators

    try:
        write_indicators(history, out / DASHBOARD, options.lang, ("html",), reports=out,
                         generated_at=options.generated_at, archive=archive or None)
    except UsageError:
        return None   # a damaged history: the run's own files stand; `ecarte-audit history` names the problem
    return f"{DASHBOARD}/index.html"


def _bar(total: int, enabled: bool):
    if not enabled or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="carnet", file=sys.stderr, dynamic_ncols=True, smoothing=0.1)


def _done(bar, on_done, job: CarnetJob, done: _Held) -> None:
    if bar is not None:
        bar.update(1)
    if on_done is not None:
        on_done(job, done)

