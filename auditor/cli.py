"""`ecarte-audit`: audit carnets, list and explain the rules.

Exit status (outputs.md): 0 nothing at or above --fail-on, 1 something is,
2 usage error (bad option, a PATH that does not exist or holds no carnet,
an output folder that cannot be written).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from auditor import __version__
from auditor.catalogue import load_catalogue
from auditor.errors import UsageError
from auditor.model import Severity
from auditor.limits import DEFAULT_BOUNDS

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def _formats(text: str) -> tuple[str, ...]:
    from auditor.render import FORMATS

    chosen = tuple(dict.fromkeys(p.strip().lower() for p in text.split(",") if p.strip()))
    unknown = [f for f in chosen if f not in FORMATS]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"unknown format(s) {', '.join(unknown) or text!r}; "
                                         f"choose among {', '.join(FORMATS)}")
    return chosen


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser: audit, generate, template and rules."""
    parser = argparse.ArgumentParser(prog="ecarte-audit", description="Audit écarté carnets spéciaux "
                                     "(arrêté du 14 mai 2007, art. 63 to 66-1).")
    parser.add_argument("--version", action="version", version=f"ecarte-auditor {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    a = sub.add_parser("audit", help="audit carnets and write reports")
    a.add_argument("paths", nargs="+", type=Path, metavar="PATH",
                   help="a workbook (.xlsx, .xlsm, .xlsb, .xls, .ods), a CSV-folder carnet, or a folder of carnets")
    a.add_argument("--out", type=Path, default=Path("reports"), help="output folder (default: reports/)")
    a.add_argument("--format", type=_formats, default=("html", "json"), help="html,json,xlsx (default: html,json)")
    a.add_argument("--fail-on", choices=("error", "warning", "never"), default="error",
                   help="lowest severity that makes the exit status 1 (default: error)")
    a.add_argument("--jobs", type=_positive, default=os.cpu_count() or 1,
                   help="carnets audited in parallel (default: the number of cores)")
    a.add_argument("--lang", choices=("fr", "en"), default="fr", help="report language (default: fr)")
    a.add_argument("--cache", type=Path, metavar="DIR",
                   help="keep each carnet's result here; an unchanged carnet is not audited again")
    a.add_argument("--scheduler", metavar="ADDRESS",
                   help="run the batch on a Dask distributed cluster (e.g. tcp://10.0.0.5:8786)")
    a.add_argument("--quiet", action="store_true", help="no progress bar, no per-carnet lines")
    a.add_argument("--max-file-mb", type=_positive, metavar="MB",
                   help="largest workbook or CSV file read (default 200); past it: EC00-01")
    a.add_argument("--max-rows", type=_positive, metavar="N", help="most rows in one table (default 2,000,000)")
    a.add_argument("--max-columns", type=_positive, metavar="N", help="most columns in one table (default 200)")
    a.add_argument("--timeout-per-carnet", type=_positive, metavar="SECONDS", default=DEFAULT_BOUNDS.timeout_s,
                   help=f"longest audit of one carnet (default {DEFAULT_BOUNDS.timeout_s}); past it: EC00-01")
    a.add_argument("--max-memory-mb", type=_positive, metavar="MB", default=DEFAULT_BOUNDS.memory_mb,
                   help=f"most resident memory of the process auditing one carnet (default "
                        f"{DEFAULT_BOUNDS.memory_mb}); past it: EC00-01")
    a.add_argument("--baseline", type=Path, metavar="PREVIOUS_OUT",
                   help="a previous run's output folder: each finding is new, unchanged or updated, "
                        "the previous findings now gone are listed as absent; its reviews are carried forward")
    a.add_argument("--fail-on-new", action="store_true",
                   help="only new findings (against --baseline) at or above --fail-on set the exit status")
    a.add_argument("--reviews", type=Path, metavar="FILE",
                   help="one shared review file instead of each carnet's reviews.jsonl")
    a.add_argument("--history", type=Path, metavar="DIR",
                   help="append this run to the findings history in DIR (one Parquet file per run)")
    a.add_argument("--columns", type=Path, metavar="FILE.toml",
                   help="column mapping for another system's export: per table, source column = carnet column")
    a.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)

    c = sub.add_parser("columns", help="show how each sheet and column of a carnet is understood")
    c.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="a workbook, a CSV-folder carnet, or a folder")
    c.add_argument("--columns", type=Path, metavar="FILE.toml", help="the column mapping to apply")
    c.add_argument("--lang", choices=("fr", "en"), default="fr")

    g = sub.add_parser("generate", help="write a synthetic carnet (compliant, or with chosen breaches)")
    g.add_argument("out", type=Path, metavar="OUT", help="the .xlsx file or CSV folder to write")
    g.add_argument("--seances", type=_positive, default=3)
    g.add_argument("--coups", type=_positive, default=20, help="coups per séance")
    g.add_argument("--mises", type=_positive, default=6, help="average stakes per coup")
    g.add_argument("--container", choices=("xlsx", "csv"), help="default: from OUT's suffix")
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("--breaches", default="", metavar="CODE,...", help="rules to break once each")
    g.add_argument("--casino", default="Casino de Forges-les-Eaux")
    g.add_argument("--table", type=_positive, default=3)
    g.add_argument("--chouette", action="store_true", help="mix chouette runs among the simple coups")

    t = sub.add_parser("template", help="write a blank carnet workbook to start recording in the right format")
    t.add_argument("out", type=Path, metavar="OUT", help="the .xlsx or .ods file to write")
    t.add_argument("--lang", choices=("fr", "en"), default="fr")

    from auditor.reviews import STATUSES

    v = sub.add_parser("review", help="record a decision on a finding (append-only review file)")
    v.add_argument("out", type=Path, metavar="OUT", help="the run's output folder (or one carnet's folder in it)")
    v.add_argument("fingerprint", metavar="FINGERPRINT", help="the finding's fingerprint (or its first 8+ characters)")
    v.add_argument("--status", required=True, choices=STATUSES, help="the decision")
    v.add_argument("--comment", required=True, help="the justification")
    v.add_argument("--by", required=True, metavar="NAME", help="who decided")
    v.add_argument("--reviews", type=Path, metavar="FILE",
                   help="write to this shared file instead of the carnet's reviews.jsonl")

    h = sub.add_parser("history", help="query the findings history written by audit --history (DuckDB)")
    h.add_argument("folder", type=Path, metavar="DIR")
    h.add_argument("--open-since", metavar="DATE", help="open findings first seen on DATE (YYYY-MM-DD) or before")
    h.add_argument("--sql", metavar="QUERY", help="any SQL query over the views runs, carnets and findings")
    h.add_argument("--lang", choices=("fr", "en"), default="fr")

    r = sub.add_parser("rules", help="list the rule catalogue, or explain one rule")
    r.add_argument("--explain", metavar="CODE", help="explain one rule, e.g. EC64-01")
    r.add_argument("--lang", choices=("fr", "en"), default="fr")

    s = sub.add_parser("serve", help="open the local page: drop a carnet, read its report (no terminal needed)")
    s.add_argument("--port", type=_port, help="port to listen on at 127.0.0.1 (default: a free one)")
    s.add_argument("--no-browser", action="store_true", help="do not open the browser")
    s.add_argument("--lang", choices=("fr", "en"), help="language of the page and reports (default: fr)")
    s.add_argument("--jobs", type=_positive, default=os.cpu_count() or 1,
                   help="carnets of a batch audited in parallel (default: the number of cores)")
    s.add_argument("--max-file-mb", type=_positive, metavar="MB",
                   help="largest file dropped or read (default 200); past it: refused")
    s.add_argument("--reviews", type=Path, metavar="FILE", default=Path("reviews.jsonl"),
                   help="review file the page writes to (default: reviews.jsonl in the current folder)")
    return parser


def _port(text: str) -> int:
    value = _positive(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"not a port number (1 to 65535): {text!r}")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns the exit status (0, 1 findings at --fail-on, 2 usage error)."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "rules":
            return cmd_rules(args)
        if args.command == "generate":
            return cmd_generate(args)
        if args.command == "template":
            return cmd_template(args)
        if args.command == "review":
            return cmd_review(args)
        if args.command == "history":
            return cmd_history(args)
        if args.command == "serve":
            return cmd_serve(args)
        if args.command == "columns":
            return cmd_columns(args)
        return cmd_audit(args)
    except UsageError as exc:
        print(f"ecarte-audit: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("ecarte-audit: interrupted", file=sys.stderr)
        return 130


def cmd_rules(args) -> int:
    """`ecarte-audit rules`: the catalogue, or one rule explained."""
    from auditor.registry import registered

    catalogue = load_catalogue()
    checks = registered()
    lang = args.lang
    if args.explain:
        code = args.explain.strip().upper()
        meta = catalogue.get(code)
        if meta is None:
            raise UsageError(f"unknown rule code {args.explain!r} (see 'ecarte-audit rules')")
        spec = checks.get(code)
        print(f"{meta.code} — art. {meta.article} — {meta.severity.label}")
        print(meta.title[lang])
        print()
        print(meta.explain[lang])
        if spec is not None:
            doc = (spec.func.__doc__ or "").strip()
            if doc:
                print()
                print("\n".join(line.strip() for line in doc.splitlines()))
            if spec.needs:
                print()
                print(("Nécessite : " if lang == "fr" else "Needs: ") + ", ".join(spec.needs))
        else:
            print()
            print("(" + ("pas encore implémentée" if lang == "fr" else "not implemented yet") + ")")
        return EXIT_OK
    width = max(len(c) for c in catalogue)
    for code, meta in catalogue.items():
        mark = "" if code in checks else ("  [non implémentée]" if lang == "fr" else "  [not implemented]")
        print(f"{code:<{width}}  {meta.article:<5} {meta.severity.label:<8} {meta.title[lang]}{mark}")
    return EXIT_OK


def cmd_audit(args) -> int:
    """`ecarte-audit audit`: audit the carnets found in the paths, write their outputs and, for a batch, the
    index and summary."""
    from auditor.atomic import write_failure
    from auditor.batch import Options, run_batch, worst_severity
    from auditor.batch.plan import plan
    from auditor.limits import Bounds
    from auditor.errors import WriteError
    from auditor.render import write_batch
    from auditor.report.json_report import generated_at

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
            raise UsageError(f"cannot write to folder {folder}: {exc.strerror or exc}") from None
    series = _series(args)
    if series is not None:
        from dataclasses import replace

        jobs = [replace(j, context=series.context(j.id)) for j in jobs]
        for problem in series.problems:
            print(f"ecarte-audit: {problem}", file=sys.stderr)
    options = Options(formats=args.format, lang=args.lang, debug=args.debug, generated_at=generated_at(),
                      limits=_limits(args), fail_on_new=args.fail_on_new, columns=columns)
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

    def report_line(job, output):
        done.append(job.id)
        if lines:
            s = output.entry["summary"]
            print(f"{job.shown}: {s['errors']} error(s), {s['warnings']} warning(s), {s['info']} info "
                  f"→ {args.out / job.id}", file=sys.stderr)

    try:
        result = run_batch(jobs, args.out, options, workers=args.jobs, scheduler=args.scheduler,
                           cache_dir=args.cache, progress=not args.quiet, on_done=report_line,
                           bounds=Bounds(args.timeout_per_carnet, args.max_memory_mb),
                           notice=lambda text: print(f"ecarte-audit: {text}", file=sys.stderr))
    except KeyboardInterrupt:
        resume = ("run the same command again to audit only the rest" if args.cache
                  else "with --cache DIR, a new run resumes where the last one stopped")
        print(f"ecarte-audit: interrupted after {len(done)} of {len(jobs)} carnet(s); {resume}", file=sys.stderr)
        return 130
    if series is not None:
        for job in jobs:
            series.carry_reviews(job.id, args.out)
    trends = _write_history(args, options, result) if args.history else None
    if batch:
        write_batch(result.entries, args.out, args.format, args.lang, options.generated_at,
                    result.cross_findings, trends)
    if not args.quiet and (batch or result.cached):
        print(f"{len(jobs)} carnet(s) audited ({result.cached} from the cache), "
              f"{len(result.cross_findings)} cross-carnet finding(s) → {args.out}", file=sys.stderr)
    worst = worst_severity(result.worst)
    cross = result.cross_findings
    if args.fail_on_new:
        known = series.cross_findings() or []
        cross = [f for f in cross if f not in known]
    if cross:
        worst = max(worst or Severity.ERROR, Severity.ERROR)
    threshold = None if args.fail_on == "never" else Severity.parse(args.fail_on)
    return EXIT_FINDINGS if threshold is not None and worst is not None and worst >= threshold else EXIT_OK


def _series(args):
    """The baseline and review files the run was given (None: neither)."""
    if args.fail_on_new and args.baseline is None:
        raise UsageError("--fail-on-new needs --baseline PREVIOUS_OUT (new against what?)")
    if args.baseline is None and args.reviews is None:
        return None
    from auditor.series import Series

    return Series(args.baseline, args.reviews)


def _write_history(args, options, result) -> list[dict] | None:
    """Append this run to --history; the trend per table for index.html."""
    from auditor import history
    from auditor.catalogue import load_profile

    run = {"run_id": history.new_run_id(), "run_at": options.generated_at, "tool_version": __version__,
           "profile": load_profile().as_json().get("name")}
    try:
        history.append_run(args.history, run, list(zip(result.entries, result.history)))
    except OSError as exc:
        raise UsageError(f"cannot write the history in {args.history}: {exc.strerror or exc}") from None
    return history.trends(args.history, args.lang)


def cmd_review(args) -> int:
    """`ecarte-audit review`: record a decision on one finding, by its fingerprint."""
    from auditor.reviews import FILE_NAME, ReviewError, record_review
    from auditor.series import find_finding

    carnet_id, folder, finding = find_finding(args.out, args.fingerprint)
    target = args.reviews or folder / FILE_NAME
    try:
        entry = record_review(target, finding["fingerprint"], args.status, args.comment, args.by,
                              carnet=carnet_id, finding=finding)
    except ReviewError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None
    where = f"séance {entry['seance']}, coup {entry['coup']}" if entry["seance"] is not None else ""
    print(f"{entry['fingerprint']} ({entry['code']}{', ' + where if where else ''}): {entry['status']} "
          f"— {entry['by']} → {target}", file=sys.stderr)
    return EXIT_OK


def cmd_history(args) -> int:
    """`ecarte-audit history`: answer a question on the findings history."""
    from auditor.history import answer

    print(answer(args.folder, args.lang, since=args.open_since, sql=args.sql), end="")
    return EXIT_OK


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
            raise UsageError(f"{p}: no such file or folder")
    jobs = plan(paths)
    if not jobs:
        raise UsageError(f"no carnet found in {', '.join(str(p) for p in paths)} "
                         "(a workbook .xlsx/.xlsm/.xlsb/.xls/.ods or a folder holding coups.csv)")
    return jobs


def _columns_file(path: Path | None):
    if path is None:
        return None
    from auditor.read import ColumnsFileError, load_columns_file

    try:
        return load_columns_file(path)
    except ColumnsFileError as exc:
        raise UsageError(str(exc)) from None


def cmd_columns(args) -> int:
    """`ecarte-audit columns`: how each sheet and column of the carnets is understood."""
    from auditor.read import read_carnet
    from auditor.read.explain import explain_reading

    columns = _columns_file(args.columns)
    for job in _jobs(args.paths):
        print(explain_reading(read_carnet(job.path, None, columns), job.shown, args.lang))
    return EXIT_OK


def cmd_serve(args) -> int:
    """`ecarte-audit serve`: the local page, until Ctrl-C."""
    from dataclasses import replace

    from auditor.i18n import cli_label, environment_lang
    from auditor.limits import DEFAULT_LIMITS, MB

    ui = args.lang or environment_lang(os.environ)
    try:
        from auditor.serve.server import serve
    except ImportError:
        raise UsageError(cli_label("serve.needs_web", ui)) from None
    limits = replace(DEFAULT_LIMITS, max_file_bytes=args.max_file_mb * MB) if args.max_file_mb else None
    try:
        return serve(port=args.port, open_browser=not args.no_browser, lang=args.lang or "fr", ui=ui,
                     limits=limits, workers=args.jobs, reviews_file=args.reviews)
    except OSError as exc:
        raise UsageError(cli_label("serve.port_taken", ui, port=args.port or 0, reason=exc.strerror or exc)) from None


def cmd_template(args) -> int:
    """`ecarte-audit template`: a blank carnet workbook (.xlsx or .ods) in the right format."""
    out = args.out if args.out.suffix else args.out.with_suffix(".xlsx")
    if out.suffix.lower() == ".ods":
        from auditor.report.template_ods import write_blank_template
    elif out.suffix.lower() in (".xlsx", ".xlsm"):
        from auditor.report.template_xlsx import write_blank_template
    else:
        raise UsageError(f"{out}: the template is written as .xlsx or .ods")
    try:
        write_blank_template(out, args.lang)
    except OSError as exc:
        raise UsageError(f"cannot write {out}: {exc.strerror or exc}") from None
    print(f"{out}: blank carnet workbook written", file=sys.stderr)
    return EXIT_OK


def cmd_generate(args) -> int:
    """`ecarte-audit generate`: a synthetic carnet, compliant or with the chosen breaches."""
    from auditor.synth.breaches import CannotInject, inject
    from auditor.synth.generate import Spec, generate, write_csv_folder, write_xlsx

    container = args.container or ("xlsx" if args.out.suffix.lower() in (".xlsx", ".xlsm") else "csv")
    spec = Spec(seances=args.seances, coups=args.coups, mises=args.mises, seed=args.seed,
                casino=args.casino, table=args.table, chouette=args.chouette)
    tables = generate(spec)
    codes = [c.strip().upper() for c in args.breaches.split(",") if c.strip()]
    try:
        expected = inject(tables, codes, seed=args.seed) if codes else set()
    except CannotInject as exc:
        raise UsageError(str(exc)) from None
    try:
        if container == "xlsx":
            out = args.out if args.out.suffix else args.out.with_suffix(".xlsx")
            write_xlsx(tables, out)
        else:
            out = write_csv_folder(tables, args.out)
    except OSError as exc:
        raise UsageError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    if expected:
        _check_breaches(out, expected)
    n = {k: len(v) for k, v in tables.items()}
    print(f"{out}: {n['seances']} séance(s), {n['coups']} coups, {n['mises']} mises, {n['tickets']} ticket runs"
          + (f"; breaches: expect {', '.join(sorted(expected))}" if expected else ""), file=sys.stderr)
    return EXIT_OK


def _check_breaches(out: Path, expected: set[str]) -> None:
    """The carnet written gives exactly the codes announced, or it is removed and
    the combination refused: breaches made one after the other can undo or
    add to each other (a later one renumbering what an earlier one broke)."""
    import shutil

    from auditor.catalogue import load_profile
    from auditor.model import Severity
    from auditor.audit import audit_path

    found = {f.code for f in audit_path(out, load_profile()).findings if f.severity >= Severity.WARNING}
    if found == expected:
        return
    shutil.rmtree(out) if out.is_dir() else out.unlink()
    parts = []
    if expected - found:
        parts.append(f"{', '.join(sorted(expected - found))} undone by another breach")
    if found - expected:
        parts.append(f"{', '.join(sorted(found - expected))} would appear as well")
    raise UsageError(f"these breaches cannot be made together on this carnet ({'; '.join(parts)}): "
                     "nothing written; try fewer codes or another --seed")


if __name__ == "__main__":
    raise SystemExit(main())
