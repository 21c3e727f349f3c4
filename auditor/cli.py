"""`ecarte-audit`: audit carnets, list and explain the rules.

Exit status (outputs.md): 0 nothing at or above --fail-on, 1 something is,
2 usage error (bad option, a PATH that does not exist or holds no carnet,
an output folder that cannot be written), 130 Ctrl-C; `audit` stopped by
SIGTERM cleans up, then ends by SIGTERM (143 in a shell).

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
from auditor.errors import Message, UsageError
from auditor.i18n import LANGS, argparse_words, cli_label, environment_lang
from auditor.limits import DEFAULT_BOUNDS, DEFAULT_CLUSTER_WAIT

# The exit statuses and the documents' language, shared with the commands (auditor/commands/).
from auditor.commands import DOCUMENT_LANG, EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, say as _say  # noqa: F401

EXIT_BROKEN_PIPE = 141   # 128 + SIGPIPE, as a shell reports a writer stopped by a closed pipe

# Each sub-command's body: its module in auditor/commands/ and its function.
COMMANDS = {"audit": ("audit", "cmd_audit"), "columns": ("audit", "cmd_columns"),
            "generate": ("generate", "cmd_generate"), "template": ("generate", "cmd_template"),
            "review": ("records", "cmd_review"), "history": ("records", "cmd_history"),
            "rules": ("records", "cmd_rules"), "serve": ("records", "cmd_serve"),
            "verify": ("records", "cmd_verify"), "shortcut": ("records", "cmd_shortcut")}



def _formats(text: str) -> tuple[str, ...]:
    from auditor.model import FORMATS

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
    a.add_argument("--cluster-wait", type=_positive, metavar="SECONDS", default=DEFAULT_CLUSTER_WAIT,
                   help="audit.cluster_wait", help_params={"default": DEFAULT_CLUSTER_WAIT})
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
    h.add_argument("--view", choices=("findings", "observations", "runs", "carnets", "seances"), help="history.view")
    h.add_argument("--severity", metavar="LIST", help="history.severity")
    h.add_argument("--older-than", type=_integer, metavar="DAYS", help="history.older_than")
    h.add_argument("--html", type=Path, metavar="OUT", help="history.html")
    h.add_argument("--format", dest="formats", metavar="LIST", help="history.formats")
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
    s.add_argument("--reviews", type=Path, metavar="FILE", help="serve.reviews")
    s.add_argument("--workspace", type=Path, metavar="DIR", help="serve.workspace")
    s.add_argument("--keep-mb", type=_positive, metavar="MB", help="serve.keep_mb")

    k = sub.add_parser("shortcut", help="shortcut.help")
    k.add_argument("--remove", action="store_true", help="shortcut.remove")
    k.add_argument("--lang", choices=LANGS, help="shortcut.lang")
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
    # Each sub-command's body lives in auditor/commands/, imported only when it runs.
    # Only that one: `audit` plans its run and starts its workers before it
    # imports the auditor (pandas and all), so nothing heavy may come first.
    import importlib

    home, name = COMMANDS[args.command]
    if args.command != "audit":   # `audit` turns the collector back on once it has imported the auditor
        from auditor import collector

        collector.resume()
    try:
        return getattr(importlib.import_module(f"auditor.commands.{home}"), name)(args)
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


# OpenBLAS (numpy's linear algebra) starts a thread per core when numpy is
# loaded, and they spin a while: about 0.2 s of CPU in each process on a
# two-core machine (the command, then each batch worker, all starting at
# once), for linear algebra the audit never does.
BLAS_THREADS_ENV = "OPENBLAS_NUM_THREADS"


def one_blas_thread() -> None:
    """OpenBLAS on one thread in this process and the workers it starts
    (they inherit its environment), unless the user chose a number."""
    os.environ.setdefault(BLAS_THREADS_ENV, "1")


def native_threads() -> None:
    """What a process that audits sets before anything imports numpy or
    starts a thread (the console command, the local page): one BLAS thread
    (`one_blas_thread`) and one malloc arena for every thread
    (auditor.threads.one_malloc_arena)."""
    one_blas_thread()
    from auditor import threads

    threads.one_malloc_arena()


def run() -> None:
    """The console entry point (`ecarte-audit`, `python -m auditor`): `main`,
    then a prompt exit.

    Once the command is done, Python would free the audit's objects one by one
    before the process ends (0.15 s and more on a carnet of a million stakes,
    most of it handing pages back to the kernel); the kernel takes the whole
    memory back at once. So: flush the standard streams, run the exit handlers
    (temporary folders, finalizers), and end the process there. In-process
    callers (tests, the local page) call `main` and are not affected; nor is a
    run under a profiler or a tracer.

    Before anything imports numpy or starts a thread: `native_threads`. And
    `audit` stopped by SIGTERM cleans up, then ends by that signal
    (auditor.commands.terminate_as_interrupt); in-process callers keep theirs."""
    native_threads()
    from auditor import collector

    collector.pause()   # until the command's imports are done (auditor.collector)
    from auditor.commands import terminate_as_interrupt

    terminate_as_interrupt.console = True
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
    _end_by_signal()
    os._exit(code)


def _end_by_signal() -> None:
    """A command stopped by SIGTERM (auditor.commands.terminate_as_interrupt),
    cleaned up: it ends by that signal, as a program stopped by it is
    expected to (its parent, a service manager, reads the signal)."""
    from auditor.commands import ENDED_BY

    if ENDED_BY:
        import signal

        signal.signal(ENDED_BY[0], signal.SIG_DFL)
        os.kill(os.getpid(), ENDED_BY[0])


if __name__ == "__main__":
    raise SystemExit(main())
