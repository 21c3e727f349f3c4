"""`ecarte-audit`: audit carnets, list and explain the rules.

Exit status (outputs.md): 0 nothing at or above --fail-on, 1 something is,
2 usage error (bad option, a PATH that does not exist or holds no carnet,
an output folder that cannot be written).

The command line speaks the user's language (docs/interpretations.md): its
help, messages and errors come from templates/i18n/cli.<lang>.toml, in the
language `--lang` names when given, else the locale's (LANG…).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import functools
import os
import sys
from pathlib import Path

from auditor import __version__
from auditor.catalogue import load_catalogue
from auditor.errors import Message, UsageError, os_reason, text_of
from auditor.i18n import LANGS, argparse_words, cli_label, environment_lang
from auditor.model import Severity
from auditor.limits import DEFAULT_BOUNDS

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
EXIT_BROKEN_PIPE = 141   # 128 + SIGPIPE, as a shell reports a writer stopped by a closed pipe

# The reports, the annotated workbook, the blank template and the local page
# are documents for the official record: French unless --lang says otherwise
# (outputs.md), whatever the locale. Only what the terminal says follows it.
DOCUMENT_LANG = "fr"


def _formats(text: str) -> tuple[str, ...]:
    from auditor.outputs import FORMATS

    chosen = tuple(dict.fromkeys(p.strip().lower() for p in text.split(",") if p.strip()))
    unknown = [f for f in chosen if f not in FORMATS]
    if unknown or not chosen:
        raise _type_error("main.unknown_formats", unknown=", ".join(unknown) or repr(text),
                          choices=", ".join(FORMATS))
    return chosen


# -- languages ---------------------------------------------------------------
# Every `help=` and `description=` below is a key of
# templates/i18n/cli.<lang>.toml, looked up when the parser is built: to add
# an option, add its key to cli.fr.toml and cli.en.toml and write
# `help="section.key"`. A help that is not a key is refused at build time, so
# no English slips into the French help.

class LocalizedParser(argparse.ArgumentParser):
    """An ArgumentParser whose help texts are label keys, shown in `lang`."""

    def __init__(self, *args, lang: str = "en", description: str | None = None, **kwargs):
        """As ArgumentParser, with `description` a label key and the help option's text in `lang`."""
        self.lang = lang
        kwargs["add_help"] = False   # argparse's own -h would say "show this help message" in English
        super().__init__(*args, description=self.text(description), **kwargs)
        self.register("action", "parsers", _LocalizedSubParsers)
        words = argparse_words(lang)
        self._positionals.title = words.get("positional arguments", "positional arguments")
        self._optionals.title = words.get("options", "options")
        self.add_argument("-h", "--help", action="help", default=argparse.SUPPRESS, help="main.help")

    def text(self, key: str | None, **params) -> str | None:
        """The label `key` in this parser's language (None and SUPPRESS pass through)."""
        if key is None or key == argparse.SUPPRESS:
            return key
        try:
            return cli_label(key, self.lang, **params)
        except KeyError:
            raise ValueError(f"help={key!r} is not a key of templates/i18n/cli.{self.lang}.toml "
                             "(write the text there, in French and English)") from None

    def add_argument(self, *args, help_params: dict | None = None, **kwargs):
        """As ArgumentParser.add_argument, `help` being a label key (`help_params` fill its placeholders)."""
        if "help" in kwargs:
            kwargs["help"] = self.text(kwargs["help"], **(help_params or {}))
        return super().add_argument(*args, **kwargs)

    def add_subparsers(self, **kwargs):
        """Sub-commands whose parsers are LocalizedParsers in the same language."""
        kwargs.setdefault("parser_class", functools.partial(LocalizedParser, lang=self.lang))
        kwargs["title"] = self.text(kwargs.get("title"))
        return super().add_subparsers(**kwargs)


class _LocalizedSubParsers(argparse._SubParsersAction):
    """Sub-commands: `help` is a label key, also the sub-command's description."""

    def add_parser(self, name, **kwargs):
        """As argparse's, the help key translated for the list of commands."""
        lang = self._parser_class.keywords["lang"]
        if "help" in kwargs:
            kwargs.setdefault("description", kwargs["help"])
            kwargs["help"] = cli_label(kwargs["help"], lang)
        return super().add_parser(name, **kwargs)


_speaking = ["en"]   # the language argparse speaks while it parses (see `_argparse_speaks`)


def _type_error(key: str, **params) -> argparse.ArgumentTypeError:
    """A bad option value, said in the language of the parse under way."""
    return argparse.ArgumentTypeError(cli_label(key, _speaking[-1], **params))


@contextlib.contextmanager
def _argparse_speaks(lang: str):
    """argparse's own words (usage, "the following arguments are required"…)
    in `lang`: argparse looks them up through its module's gettext names at
    the moment it prints, so they are swapped for the parse and put back."""
    words = argparse_words(lang)
    saved = argparse._, argparse.ngettext
    argparse._ = lambda text: words.get(text, text)
    argparse.ngettext = lambda one, many, n: words.get(one if n == 1 else many, one if n == 1 else many)
    _speaking.append(lang)
    try:
        yield
    finally:
        argparse._, argparse.ngettext = saved
        _speaking.pop()


def chosen_lang(argv: list[str]) -> str | None:
    """The `--lang` given anywhere on the command line (the last one), if valid:
    it must be known before the parser is built, since the help speaks it."""
    chosen = None
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        name, eq, value = arg.partition("=")
        # argparse takes any unambiguous prefix of an option (`--lan en`); no
        # other option of any command starts with `--l`.
        if len(name) < 3 or not "--lang".startswith(name):
            continue
        if not eq:
            value = argv[i + 1] if i + 1 < len(argv) else None
        if value in LANGS:
            chosen = value
    return chosen


def ui_lang(argv: list[str], environ=os.environ) -> str:
    """The language the terminal is spoken to in: `--lang` if given, else the locale's."""
    return chosen_lang(argv) or environment_lang(environ)


def build_parser(lang: str = "en") -> argparse.ArgumentParser:
    """The command line's parser, its help in `lang`: audit, columns, generate, template, review, history,
    rules and serve."""
    parser = LocalizedParser(prog="ecarte-audit", description="main.description", lang=lang)
    parser.add_argument("--version", action="version", version=f"ecarte-auditor {__version__}",
                        help="main.version")
    parser.add_argument("--lang", dest="ui_lang", choices=LANGS, help="main.lang")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="main.commands")

    a = sub.add_parser("audit", help="audit.help")
    a.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="audit.paths")
    a.add_argument("--out", type=Path, default=Path("reports"), help="audit.out")
    a.add_argument("--format", type=_formats, default=("html", "json"), help="audit.format")
    a.add_argument("--fail-on", choices=("error", "warning", "never"), default="error", help="audit.fail_on")
    a.add_argument("--jobs", type=_positive, default=os.cpu_count() or 1, help="audit.jobs")
    a.add_argument("--lang", choices=LANGS, help="audit.lang")
    a.add_argument("--cache", type=Path, metavar="DIR", help="audit.cache")
    a.add_argument("--scheduler", metavar="ADDRESS", help="audit.scheduler")
    a.add_argument("--quiet", action="store_true", help="audit.quiet")
    a.add_argument("--max-file-mb", type=_positive, metavar="MB", help="audit.max_file_mb")
    a.add_argument("--max-rows", type=_positive, metavar="N", help="audit.max_rows")
    a.add_argument("--max-columns", type=_positive, metavar="N", help="audit.max_columns")
    a.add_argument("--timeout-per-carnet", type=_positive, metavar="SECONDS", default=DEFAULT_BOUNDS.timeout_s,
                   help="audit.timeout_per_carnet", help_params={"default": DEFAULT_BOUNDS.timeout_s})
    a.add_argument("--max-memory-mb", type=_positive, metavar="MB", default=DEFAULT_BOUNDS.memory_mb,
                   help="audit.max_memory_mb", help_params={"default": DEFAULT_BOUNDS.memory_mb})
    a.add_argument("--baseline", type=Path, metavar="PREVIOUS_OUT", help="audit.baseline")
    a.add_argument("--fail-on-new", action="store_true", help="audit.fail_on_new")
    a.add_argument("--reviews", type=Path, metavar="FILE", help="audit.reviews")
    a.add_argument("--history", type=Path, metavar="DIR", help="audit.history")
    a.add_argument("--columns", type=Path, metavar="FILE.toml", help="audit.columns")
    a.add_argument("--inspector", metavar="NAME", default="", help="audit.inspector")
    a.add_argument("--grade", default="", help="audit.grade")
    a.add_argument("--place", default="", help="audit.place")
    a.add_argument("--sign", type=Path, metavar="CERT.p12", help="audit.sign")
    a.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)

    c = sub.add_parser("columns", help="columns.help")
    c.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="columns.paths")
    c.add_argument("--columns", type=Path, metavar="FILE.toml", help="columns.columns")
    c.add_argument("--lang", choices=LANGS, help="columns.lang")

    g = sub.add_parser("generate", help="generate.help")
    g.add_argument("out", type=Path, metavar="OUT", help="generate.out")
    g.add_argument("--seances", type=_positive, default=3, help="generate.seances")
    g.add_argument("--coups", type=_positive, default=20, help="generate.coups")
    g.add_argument("--mises", type=_positive, default=6, help="generate.mises")
    g.add_argument("--container", choices=("xlsx", "csv"), help="generate.container")
    g.add_argument("--seed", type=_integer, default=1, help="generate.seed")
    g.add_argument("--breaches", default="", metavar="CODE,...", help="generate.breaches")
    g.add_argument("--casino", default="Casino de Forges-les-Eaux", help="generate.casino")
    g.add_argument("--table", type=_positive, default=3, help="generate.table")
    g.add_argument("--chouette", action="store_true", help="generate.chouette")
    g.add_argument("--archive", type=_positive, metavar="N", help="generate.archive")
    g.add_argument("--lang", choices=LANGS, help="generate.lang")

    t = sub.add_parser("template", help="template.help")
    t.add_argument("out", type=Path, metavar="OUT", help="template.out")
    t.add_argument("--lang", choices=LANGS, help="template.lang")

    from auditor.reviews import STATUSES

    v = sub.add_parser("review", help="review.help")
    v.add_argument("out", type=Path, metavar="OUT", help="review.out")
    v.add_argument("fingerprint", metavar="FINGERPRINT", help="review.fingerprint")
    v.add_argument("--status", required=True, choices=STATUSES, help="review.status")
    v.add_argument("--comment", required=True, help="review.comment")
    v.add_argument("--by", required=True, metavar="NAME", help="review.by")
    v.add_argument("--reviews", type=Path, metavar="FILE", help="review.reviews")
    v.add_argument("--lang", choices=LANGS, help="review.lang")

    h = sub.add_parser("history", help="history.help")
    h.add_argument("folder", type=Path, metavar="DIR", help="history.folder")
    h.add_argument("--open-since", metavar="DATE", help="history.open_since")
    h.add_argument("--sql", metavar="QUERY", help="history.sql")
    h.add_argument("--lang", choices=LANGS, help="history.lang")

    w = sub.add_parser("verify", help="verify.help")
    w.add_argument("pdf", type=Path, metavar="PV.pdf", help="verify.pdf")
    w.add_argument("sources", nargs="*", type=Path, metavar="SOURCE", help="verify.sources")
    w.add_argument("--lang", choices=LANGS, help="verify.lang")

    r = sub.add_parser("rules", help="rules.help")
    r.add_argument("--explain", metavar="CODE", help="rules.explain")
    r.add_argument("--lang", choices=LANGS, help="rules.lang")

    s = sub.add_parser("serve", help="serve.help")
    s.add_argument("--port", type=_port, help="serve.port")
    s.add_argument("--no-browser", action="store_true", help="serve.no_browser")
    s.add_argument("--lang", choices=LANGS, help="serve.lang")
    s.add_argument("--jobs", type=_positive, default=os.cpu_count() or 1, help="serve.jobs")
    s.add_argument("--max-file-mb", type=_positive, metavar="MB", help="serve.max_file_mb")
    s.add_argument("--reviews", type=Path, metavar="FILE", default=Path("reviews.jsonl"), help="serve.reviews")
    return parser


def _port(text: str) -> int:
    value = _positive(text)
    if value > 65535:
        raise _type_error("main.not_a_port", text=text)
    return value


def _integer(text: str) -> int:
    # Not argparse's `type=int`, whose error names Python's type ("invalid int value").
    try:
        return int(text)
    except ValueError:
        raise _type_error("main.not_a_number", text=text) from None


def _positive(text: str) -> int:
    value = _integer(text)
    if value < 1:
        raise _type_error("main.at_least_one", text=text)
    return value


def _say(message, args) -> None:
    """One line on stderr, `ecarte-audit: ` and the message in the terminal's language."""
    print(f"ecarte-audit: {text_of(message, args.ui)}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns the exit status (0, 1 findings at --fail-on, 2 usage error)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    ui = ui_lang(argv)
    with _argparse_speaks(ui):
        args = build_parser(ui).parse_args(argv)
    # args.lang: the language asked for on the line (None: documents stay in
    # DOCUMENT_LANG); args.ui: the language the terminal is spoken to in.
    args.lang = getattr(args, "lang", None) or args.ui_lang
    args.ui = ui
    commands = {"audit": cmd_audit, "columns": cmd_columns, "generate": cmd_generate, "template": cmd_template,
                "review": cmd_review, "history": cmd_history, "rules": cmd_rules, "serve": cmd_serve,
                "verify": cmd_verify}
    try:
        return commands[args.command](args)
    except UsageError as exc:
        _say(exc, args)
        return EXIT_USAGE
    except KeyboardInterrupt:
        _say(Message("main.interrupted"), args)
        return 130
    except BrokenPipeError:
        # The reader of our output went away (`ecarte-audit rules | head`):
        # nothing left to say to it, and no traceback at exit when Python
        # flushes stdout (the way the Python documentation gives).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def run() -> None:
    """The console entry point (`ecarte-audit`, `python -m auditor`): `main`,
    then a prompt exit.

    Once the command is done, Python would free the audit's objects one by one
    before the process ends (0.15 s and more on a carnet of a million stakes,
    most of it handing pages back to the kernel); the kernel takes the whole
    memory back at once. So: flush the standard streams, run the exit handlers
    (temporary folders, finalizers), and end the process there. In-process
    callers (tests, the local page) call `main` and are not affected; nor is a
    run under a profiler or a tracer."""
    code = main()
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    # Not CPython, or under a profiler or a tracer (cProfile, coverage), which
    # write what they saw once the program returns: the ordinary exit.
    if run_exit_handlers is None or sys.getprofile() is not None or sys.gettrace() is not None:
        raise SystemExit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):   # closed, or its reader went away: nothing left to say to it
            pass
    run_exit_handlers()
    os._exit(code)


def cmd_rules(args) -> int:
    """`ecarte-audit rules`: the catalogue, or one rule explained."""
    from auditor.i18n import label
    from auditor.checks import registered

    catalogue = load_catalogue()
    checks = registered()
    lang = args.ui   # terminal text: the terminal's language (--lang, else the locale)

    def severity(meta) -> str:   # the reports' word for it
        return label(meta.severity.label, lang).lower()

    if args.explain:
        code = args.explain.strip().upper()
        meta = catalogue.get(code)
        if meta is None:
            raise UsageError("rules.unknown_code", code=args.explain)
        spec = checks.get(code)
        print(f"{meta.code} — art. {meta.article} — {severity(meta)}")
        print(meta.title[lang])
        print()
        print(meta.explain[lang])
        if spec is not None:
            # The check's docstring (its examples of compliant and non-compliant
            # carnets) is English, as the code is: shown to English readers; the
            # catalogue's explanation above is the rule in either language.
            doc = (spec.func.__doc__ or "").strip() if lang == "en" else ""
            if doc:
                print()
                print("\n".join(line.strip() for line in doc.splitlines()))
            if spec.needs:
                print()
                print(cli_label("rules.needs", lang) + ", ".join(spec.needs))
        else:
            print()
            print(f"({label('not_implemented', lang)})")
        return EXIT_OK
    width = max(len(c) for c in catalogue)
    sev_width = max(len(severity(m)) for m in catalogue.values())
    for code, meta in catalogue.items():
        mark = "" if code in checks else cli_label("rules.not_implemented_mark", lang)
        print(f"{code:<{width}}  {meta.article:<5} {severity(meta):<{sev_width}} {meta.title[lang]}{mark}")
    return EXIT_OK


def cmd_audit(args) -> int:
    """`ecarte-audit audit`: audit the carnets found in the paths, write their outputs and, for a batch, the
    index and summary (auditor.run)."""
    from auditor.atomic import write_failure
    from auditor.batch import Options
    from auditor.errors import WriteError
    from auditor.limits import Bounds
    from auditor.clock import generated_at
    from auditor.run import run

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
    baseline = _baseline(args)
    visit, sign = _proces_verbal(args)
    options = Options(formats=args.format, lang=args.lang or DOCUMENT_LANG, debug=args.debug,
                      generated_at=generated_at(), limits=_limits(args), fail_on_new=args.fail_on_new,
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
                     notice=lambda text: _say(text, args), baseline=baseline, history=args.history, batch=batch,
                     visit=visit, sign=sign)
    except KeyboardInterrupt:
        resume = Message("audit.resume_cache") if args.cache else Message("audit.resume_no_cache")
        _say(Message("audit.interrupted_after", done=len(done), total=len(jobs), resume=resume), args)
        return 130
    if not args.quiet and (batch or result.cached):
        print(cli_label("audit.batch_line", args.ui, carnets=len(jobs), cached=result.cached,
                        cross=len(result.cross_findings), out=args.out), file=sys.stderr)
    threshold = None if args.fail_on == "never" else Severity.parse(args.fail_on)
    worst = result.worst
    return EXIT_FINDINGS if threshold is not None and worst is not None and worst >= threshold else EXIT_OK


def _proces_verbal(args):
    """Who audits and where (the procès-verbal's visit), and its signer when
    --sign is given: the certificate is opened before any carnet is audited,
    so a wrong password stops the run at once."""
    from auditor.report.pv import Visit

    visit = Visit(args.inspector.strip(), args.grade.strip(), args.place.strip())
    if args.sign is None:
        return visit, None
    if "pdf" not in args.format:
        raise UsageError("audit.sign_needs_pdf")
    from auditor.sign import load_signer

    return visit, load_signer(args.sign, args.ui)


def _baseline(args):
    """The baseline and review files the run was given (None: neither)."""
    if args.fail_on_new and args.baseline is None:
        raise UsageError("audit.fail_on_new_needs_baseline")
    if args.baseline is None and args.reviews is None:
        return None
    from auditor.baseline import Baseline

    return Baseline(args.baseline, args.reviews)


def cmd_review(args) -> int:
    """`ecarte-audit review`: record a decision on one finding, by its fingerprint."""
    from auditor.reviews import FILE_NAME, STATUS_TEXT, ReviewError, record_review
    from auditor.baseline import find_finding

    carnet_id, folder, finding = find_finding(args.out, args.fingerprint)
    target = args.reviews or folder / FILE_NAME
    try:
        entry = record_review(target, finding["fingerprint"], args.status, args.comment, args.by,
                              carnet=carnet_id, finding=finding)
    except ReviewError as exc:
        raise UsageError(exc.args[0]) from None
    except OSError as exc:
        raise UsageError("main.cannot_write", path=target, reason=os_reason(exc)) from None
    where = (", " + cli_label("review.where", args.ui, seance=entry["seance"], coup=entry["coup"])
             if entry["seance"] is not None else "")
    print(cli_label("review.recorded", args.ui, fingerprint=entry["fingerprint"], code=entry["code"], where=where,
                    status=STATUS_TEXT[args.ui].get(entry["status"], entry["status"]), by=entry["by"], target=target),
          file=sys.stderr)
    return EXIT_OK


def cmd_verify(args) -> int:
    """`ecarte-audit verify`: the procès-verbal's signature, its attached findings and the sources' hashes."""
    from auditor.verify import verify

    verdict = verify(args.pdf, args.sources)
    for ok, message in verdict.lines:
        mark = cli_label("verify.holds", args.ui) if ok else cli_label("verify.fails", args.ui)
        print(f"{mark} {message.text(args.ui)}")
    failed = sum(1 for ok, _ in verdict.lines if not ok)
    print(cli_label("verify.all_hold", args.ui) if verdict.ok else cli_label("verify.some_fail", args.ui, n=failed))
    return EXIT_OK if verdict.ok else EXIT_FINDINGS


def cmd_history(args) -> int:
    """`ecarte-audit history`: answer a question on the findings history."""
    from auditor.history import answer

    print(answer(args.folder, args.ui, since=args.open_since, sql=args.sql), end="")
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


def cmd_serve(args) -> int:
    """`ecarte-audit serve`: the local page, until Ctrl-C."""
    from dataclasses import replace

    from auditor.limits import DEFAULT_LIMITS, MB

    ui = args.ui
    try:
        from auditor.serve.server import serve
    except ImportError:
        raise UsageError("serve.needs_web") from None
    limits = replace(DEFAULT_LIMITS, max_file_bytes=args.max_file_mb * MB) if args.max_file_mb else None
    try:
        return serve(port=args.port, open_browser=not args.no_browser, lang=args.lang or DOCUMENT_LANG, ui=ui,
                     limits=limits, workers=args.jobs, reviews_file=args.reviews)
    except OSError as exc:
        raise UsageError("serve.port_taken", port=args.port or 0, reason=os_reason(exc)) from None


def cmd_template(args) -> int:
    """`ecarte-audit template`: a blank carnet workbook (.xlsx or .ods) in the right format."""
    out = args.out if args.out.suffix else args.out.with_suffix(".xlsx")
    if out.suffix.lower() == ".ods":
        from auditor.report.template_ods import write_blank_template
    elif out.suffix.lower() in (".xlsx", ".xlsm"):
        from auditor.report.template_xlsx import write_blank_template
    else:
        raise UsageError("template.bad_suffix", out=out)
    try:
        write_blank_template(out, args.lang or DOCUMENT_LANG)
    except OSError as exc:
        raise UsageError("main.cannot_write", path=out, reason=os_reason(exc)) from None
    print(cli_label("template.written", args.ui, out=out), file=sys.stderr)
    return EXIT_OK


def cmd_generate(args) -> int:
    """`ecarte-audit generate`: a synthetic carnet, compliant or with the chosen breaches."""
    from auditor.synth.breaches import CannotInject, inject
    from auditor.synth.generate import Spec, generate, write_csv_folder, write_xlsx

    if args.archive:
        return _generate_archive(args)
    container = args.container or ("xlsx" if args.out.suffix.lower() in (".xlsx", ".xlsm") else "csv")
    spec = Spec(seances=args.seances, coups=args.coups, mises=args.mises, seed=args.seed,
                casino=args.casino, table=args.table, chouette=args.chouette)
    tables = generate(spec)
    codes = [c.strip().upper() for c in args.breaches.split(",") if c.strip()]
    try:
        expected = inject(tables, codes, seed=args.seed) if codes else set()
    except CannotInject as exc:
        raise UsageError(exc.args[0]) from None
    try:
        if container == "xlsx":
            out = args.out if args.out.suffix else args.out.with_suffix(".xlsx")
            write_xlsx(tables, out)
        else:
            out = write_csv_folder(tables, args.out)
    except OSError as exc:
        raise UsageError("main.cannot_write", path=args.out, reason=os_reason(exc)) from None
    if expected:
        _check_breaches(out, expected)
    n = {k: len(v) for k, v in tables.items()}
    print(cli_label("generate.written", args.ui, out=out, seances=n["seances"], coups=n["coups"], mises=n["mises"],
                    tickets=n["tickets"])
          + (cli_label("generate.breaches_expected", args.ui, codes=", ".join(sorted(expected))) if expected else ""),
          file=sys.stderr)
    return EXIT_OK


def _generate_archive(args) -> int:
    """`generate OUT --archive N`: a table's successive daily carnets under OUT,
    with the chosen breaches across carnets, checked before they are left there."""
    import shutil

    from auditor.synth.archive import ArchiveSpec, generate_archive, write_archive
    from auditor.synth.breaches import CannotInject
    from auditor.synth.generate import Spec

    codes = tuple(c.strip().upper() for c in args.breaches.split(",") if c.strip())
    base = Spec(seances=args.seances, coups=args.coups, mises=args.mises, seed=args.seed, casino=args.casino,
                table=args.table, chouette=args.chouette,
                ticket_start={10: 400001, 100: 400001, 1000: 400001})
    try:
        carnets = generate_archive(ArchiveSpec(args.archive, base, codes))
    except CannotInject as exc:
        raise UsageError(exc.args[0]) from None
    existed = args.out.exists()
    try:
        paths = write_archive(carnets, args.out, args.container or "csv")
    except OSError as exc:
        raise UsageError("main.cannot_write", path=args.out, reason=os_reason(exc)) from None
    found = _archive_codes(paths)
    if found != set(codes):
        for path in paths:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        if not existed:
            shutil.rmtree(args.out, ignore_errors=True)
        raise UsageError("generate.archive_not_delivered", asked=", ".join(sorted(codes)) or "-",
                         found=", ".join(sorted(found)) or "-")
    print(cli_label("generate.archive_written", args.ui, out=args.out, n=len(paths), table=args.table,
                    first=carnets[0][0].isoformat(), last=carnets[-1][0].isoformat())
          + (cli_label("generate.breaches_expected", args.ui, codes=", ".join(sorted(codes))) if codes else ""),
          file=sys.stderr)
    return EXIT_OK


def _archive_codes(paths: list[Path]) -> set[str]:
    """The codes of the rules across carnets that the written archive gives."""
    from auditor.catalogue import load_profile
    from auditor.checks.archive import archive_codes
    from auditor.derived.batch_facts import batch_facts
    from auditor.normalise import normalise
    from auditor.read import read_carnet
    from auditor.checks import registered_batch

    profile = load_profile()
    batch = [batch_facts(normalise(read_carnet(p)), str(i), p.name, profile) for i, p in enumerate(paths)]
    return {code for code in archive_codes() if any(True for _ in registered_batch()[code].func(batch, profile))}


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
    undone, more = ", ".join(sorted(expected - found)), ", ".join(sorted(found - expected))
    if undone and more:
        raise UsageError("generate.not_together_both", undone=undone, more=more)
    if undone:
        raise UsageError("generate.not_together_undone", undone=undone)
    raise UsageError("generate.not_together_more", more=more)


if __name__ == "__main__":
    raise SystemExit(main())
