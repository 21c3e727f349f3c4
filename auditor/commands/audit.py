"""`ecarte-audit audit` and `columns`: audit carnets (auditor.run), show how their columns are read."""

from __future__ import annotations

import sys
from pathlib import Path

from auditor import collector
from auditor.commands import DOCUMENT_LANG, EXIT_FINDINGS, EXIT_OK, say, terminate_as_interrupt
from auditor.errors import Message, UsageError, os_reason
from auditor.i18n import cli_label
from auditor.model import Severity


def cmd_audit(args) -> int:
    """`ecarte-audit audit`: audit the carnets found in the paths, write their outputs and, for a batch, the
    index and summary (auditor.run)."""
    # Options that contradict each other are refused before anything is made (the --out folder included).
    if args.fail_on_new and args.baseline is None:
        raise UsageError("audit.fail_on_new_needs_baseline")
    if args.sign is not None and "pdf" not in args.format:
        raise UsageError("audit.sign_needs_pdf")
    columns = _columns_file(args.columns)
    jobs = _jobs(args.paths)
    for folder in (args.out, args.cache):
        if folder is None:
            continue
        try:
            folder.mkdir(parents=True, exist_ok=True)
            probe = folder / ".ecarte-audit-write-test"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            raise UsageError("main.cannot_write_folder", folder=folder, reason=os_reason(exc)) from None
    limits = _limits(args)
    with terminate_as_interrupt(), _early_workers(args, jobs) as started, _early_read(args, jobs, limits, columns):
        return _audit(args, jobs, columns, limits, started)


def _early_workers(args, jobs):
    """The workers of a batch that will surely audit every carnet, started
    before the auditor is imported here (pandas and all): their start-up and
    this process's overlap. Not with a cache (its carnets may all be known
    already), a cluster, or a carnet alone (audited in this process)."""
    import contextlib

    if args.scheduler is not None or args.cache is not None or len(jobs) < 2:
        return contextlib.nullcontext()
    from auditor.batch.pool import Started

    return Started(min(args.jobs, len(jobs)))


def _early_read(args, jobs, limits, columns):
    """A CSV folder alone, read in a thread while this process imports the
    auditor (auditor.read.early). Not with a cache (it may know the carnet), a
    cluster (which audits it) or a carnet the plan refused."""
    import contextlib

    job = jobs[0]
    if args.scheduler is not None or args.cache is not None or len(jobs) != 1 or job.refusal is not None \
            or not job.path.is_dir():
        return contextlib.nullcontext()
    from auditor.read import read_early

    return read_early(job.path, limits, columns)


def _audit(args, jobs, columns, limits, started) -> int:
    from auditor.atomic import write_failure
    from auditor.batch import Options
    from auditor.clock import generated_at
    from auditor.errors import WriteError
    from auditor.limits import Bounds
    from auditor.run import run

    if args.scheduler is None and args.cache is None and len(jobs) == 1 and jobs[0].refusal is None:
        import auditor.audit  # noqa: F401  (a carnet alone, audited here: pandas and all, imported with the rest)
    collector.resume()   # the auditor is imported (auditor.collector): the collector is on for the audit
    baseline = _baseline(args)
    visit, sign = _proces_verbal(args)
    options = Options(formats=args.format, lang=args.lang or DOCUMENT_LANG, debug=args.debug,
                      generated_at=generated_at(), limits=limits, fail_on_new=args.fail_on_new,
                      columns=columns)
    lines = not args.quiet and not sys.stderr.isatty()
    batch = len(jobs) > 1 or any(p.is_dir() and jobs[0].path != p for p in args.paths)
    if batch:
        # A run that stops half-way must not leave the last run's summary
        # looking like this one's: it is written again at the end.
        for name in ("summary.json", "index.html"):
            try:
                (args.out / name).unlink(missing_ok=True)
            except OSError as exc:
                raise WriteError(write_failure(args.out / name, exc)) from None
    done = []

    def report_line(job, audited):
        done.append(job.id)
        if lines:
            s = audited.entry["summary"]
            print(cli_label("audit.carnet_line", args.ui, shown=job.shown, errors=s["errors"],
                            warnings=s["warnings"], info=s["info"], out=args.out / job.id), file=sys.stderr)

    try:
        result = run(jobs, args.out, options, workers=args.jobs, scheduler=args.scheduler, cache_dir=args.cache,
                     progress=not args.quiet, on_done=report_line,
                     bounds=Bounds(args.timeout_per_carnet, args.max_memory_mb),
                     notice=lambda text: say(text, args), baseline=baseline, history=args.history, batch=batch,
                     visit=visit, sign=sign, cluster_wait=args.cluster_wait, started=started)
    except KeyboardInterrupt:
        resume = Message("audit.resume_cache") if args.cache else Message("audit.resume_no_cache")
        say(Message("audit.interrupted_after", done=len(done), total=len(jobs), resume=resume), args)
        return 130
    if not args.quiet and (batch or result.cached):
        print(cli_label("audit.batch_line", args.ui, carnets=len(jobs), cached=result.cached,
                        cross=len(result.cross_findings), out=args.out), file=sys.stderr)
    threshold = None if args.fail_on == "never" else Severity.parse(args.fail_on)
    worst = result.worst
    failed = threshold is not None and worst is not None and worst >= threshold
    if failed and args.fail_on_new and result.changes is not None:
        # Why the night failed, in one line: what changes.txt lists that counts as new.
        from auditor.report.changes import TEXT_FILE, failing_new

        new, lapsed = failing_new(result.changes, threshold)
        if new or lapsed:
            say(Message("audit.fail_on_new_why", new=new, lapsed=lapsed, fail_on=threshold.label,
                        path=args.out / TEXT_FILE), args)
    return EXIT_FINDINGS if failed else EXIT_OK


def _proces_verbal(args):
    """Who audits and where (the procès-verbal's visit), and its signer when
    --sign is given: the certificate is opened before any carnet is audited,
    so a wrong password stops the run at once. None without a procès-verbal
    to make (its module, with its table of glyphs, is then not imported)."""
    if "pdf" not in args.format:
        return None, None   # --sign without pdf was refused before (cmd_audit)
    from auditor.report.pv import Visit

    visit = Visit(args.inspector.strip(), args.grade.strip(), args.place.strip())
    if args.sign is None:
        return visit, None
    from auditor.sign import load_signer

    return visit, load_signer(args.sign, args.ui)


def _baseline(args):
    """The baseline and review files the run was given (None: neither)."""
    if args.baseline is None and args.reviews is None:
        return None
    from auditor.baseline import Baseline

    memo = None
    if args.cache is not None and args.baseline is not None:
        from auditor.batch.cache import previous_memo

        memo = previous_memo(args.cache, args.baseline)
    return Baseline(args.baseline, args.reviews, memo=memo)


def _limits(args):
    from dataclasses import replace

    from auditor.limits import DEFAULT_LIMITS, MB

    chosen = {k: v for k, v in (("max_file_bytes", args.max_file_mb and args.max_file_mb * MB),
                                ("max_rows", args.max_rows), ("max_columns", args.max_columns)) if v}
    return replace(DEFAULT_LIMITS, **chosen) if chosen else None


def _jobs(paths: list[Path]):
    """The carnets under the PATHs given, or the usage error that says why there are none."""
    from auditor.batch.plan import plan

    for p in paths:
        if not p.exists():
            raise UsageError("main.no_such_path", path=p)
    jobs = plan(paths)
    if not jobs:
        raise UsageError("main.no_carnet", paths=", ".join(str(p) for p in paths))
    return jobs


def _columns_file(path: Path | None):
    if path is None:
        return None
    from auditor.read import ColumnsFileError, load_columns_file

    try:
        return load_columns_file(path)
    except ColumnsFileError as exc:
        raise UsageError(exc.args[0]) from None


def cmd_columns(args) -> int:
    """`ecarte-audit columns`: how each sheet and column of the carnets is understood."""
    from auditor.read import read_carnet
    from auditor.read.explain import explain_reading

    columns = _columns_file(args.columns)
    for job in _jobs(args.paths):
        print(explain_reading(read_carnet(job.path, None, columns), job.shown, args.ui))
    return EXIT_OK
