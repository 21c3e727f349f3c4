"""`ecarte-audit`: audit carnets, list and explain the rules.

Exit status (outputs.md): 0 nothing at or above --fail-on, 1 something is,
2 usage error (bad option, a PATH that does not exist or holds no carnet,
an output folder that cannot be written).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
from pathlib import Path

from auditor import __version__
from auditor.catalogue import load_catalogue
from auditor.errors import UsageError
from auditor.i18n import LANGS, argparse_words, cli_label, environment_lang
from auditor.model import Severity

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def _formats(text: str) -> tuple[str, ...]:
    from auditor.pipeline import FORMATS

    chosen = tuple(dict.fromkeys(p.strip().lower() for p in text.split(",") if p.strip()))
    unknown = [f for f in chosen if f not in FORMATS]
    if unknown or not chosen:
        raise _type_error("main.unknown_formats", unknown=", ".join(unknown) or repr(text),
                          choices=", ".join(FORMATS))
    return chosen


# -- languages ---------------------------------------------------------------
# Help, messages and errors speak the user's language: `--lang` if given,
# else the locale (LANG…, see i18n.environment_lang). Every `help=` and
# `description=` below is a key of templates/i18n/cli.<lang>.toml, looked up
# when the parser is built: to add an option, add its key to cli.fr.toml and
# cli.en.toml and write `help="section.key"`. A help that is not a key is
# refused at build time, so no English slips into the French help.

class LocalizedParser(argparse.ArgumentParser):
    """An ArgumentParser whose help texts are label keys, in `lang`."""

    def __init__(self, *args, lang: str = "en", description: str | None = None, **kwargs):
        self.lang = lang
        kwargs.setdefault("add_help", False)
        super().__init__(*args, description=self.text(description), **kwargs)
        self.register("action", "parsers", _LocalizedSubParsers)
        self._positionals.title = argparse_words(lang).get("positional arguments", "positional arguments")
        self._optionals.title = argparse_words(lang).get("options", "options")
        self.add_argument("-h", "--help", action="help", default=argparse.SUPPRESS, help="main.help")

    def text(self, key: str | None) -> str | None:
        if key is None or key == argparse.SUPPRESS:
            return key
        try:
            return cli_label(key, self.lang)
        except KeyError:
            raise ValueError(f"help={key!r} is not a key of templates/i18n/cli.{self.lang}.toml "
                             "(write the text there, in French and English)") from None

    def add_argument(self, *args, **kwargs):
        if "help" in kwargs:
            kwargs["help"] = self.text(kwargs["help"])
        return super().add_argument(*args, **kwargs)

    def add_subparsers(self, **kwargs):
        kwargs.setdefault("parser_class", functools.partial(LocalizedParser, lang=self.lang))
        kwargs["title"] = self.text(kwargs.get("title"))
        return super().add_subparsers(**kwargs)


class _LocalizedSubParsers(argparse._SubParsersAction):
    def add_parser(self, name, **kwargs):
        lang = self._parser_class.keywords["lang"]
        if "help" in kwargs:
            kwargs.setdefault("description", kwargs["help"])
            kwargs["help"] = cli_label(kwargs["help"], lang)
        return super().add_parser(name, **kwargs)


def _type_error(key: str, **params) -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(cli_label(key, _speaking[-1], **params))


_speaking = ["en"]   # the language argparse speaks while it parses (see `_argparse_speaks`)


@contextlib.contextmanager
def _argparse_speaks(lang: str):
    """argparse's own words (usage, "the following arguments are required"…)
    in `lang`: argparse looks them up through its module's gettext names."""
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
        value = argv[i + 1] if arg == "--lang" and i + 1 < len(argv) else (
            arg.partition("=")[2] if arg.startswith("--lang=") else None)
        if value in LANGS:
            chosen = value
    return chosen


def build_parser(lang: str = "en") -> argparse.ArgumentParser:
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
    a.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)

    g = sub.add_parser("generate", help="generate.help")
    g.add_argument("out", type=Path, metavar="OUT", help="generate.out")
    g.add_argument("--seances", type=_positive, default=3, help="generate.seances")
    g.add_argument("--coups", type=_positive, default=20, help="generate.coups")
    g.add_argument("--mises", type=_positive, default=6, help="generate.mises")
    g.add_argument("--container", choices=("xlsx", "csv"), help="generate.container")
    g.add_argument("--seed", type=int, default=1, help="generate.seed")
    g.add_argument("--breaches", default="", metavar="CODE,...", help="generate.breaches")
    g.add_argument("--casino", default="Casino de Forges-les-Eaux", help="generate.casino")
    g.add_argument("--table", type=_positive, default=3, help="generate.table")
    g.add_argument("--chouette", action="store_true", help="generate.chouette")
    g.add_argument("--lang", choices=LANGS, help="generate.lang")

    t = sub.add_parser("template", help="template.help")
    t.add_argument("out", type=Path, metavar="OUT", help="template.out")
    t.add_argument("--lang", choices=LANGS, help="template.lang")

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


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise _type_error("main.not_a_number", text=text) from None
    if value < 1:
        raise _type_error("main.at_least_one", text=text)
    return value


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    ui = chosen_lang(argv) or environment_lang(os.environ)
    with _argparse_speaks(ui):
        args = build_parser(ui).parse_args(argv)
    # args.lang: the language asked for (None: reports keep French, the
    # official language); args.ui: the language the terminal is spoken to in.
    args.lang = getattr(args, "lang", None) or args.ui_lang
    args.ui = ui
    try:
        if args.command == "rules":
            return cmd_rules(args)
        if args.command == "generate":
            return cmd_generate(args)
        if args.command == "template":
            return cmd_template(args)
        if args.command == "serve":
            return cmd_serve(args)
        return cmd_audit(args)
    except UsageError as exc:
        print(f"ecarte-audit: {exc.text(ui)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"ecarte-audit: {cli_label('main.interrupted', ui)}", file=sys.stderr)
        return 130


def cmd_rules(args) -> int:
    from auditor.i18n import label
    from auditor.registry import registered

    catalogue = load_catalogue()
    checks = registered()
    lang = args.ui

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
            doc = (spec.func.__doc__ or "").strip()
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
    from auditor.batch import Options, run_batch, worst_severity
    from auditor.pipeline import plan, write_batch
    from auditor.report.json_report import generated_at

    for p in args.paths:
        if not p.exists():
            raise UsageError("main.no_such_path", path=p)
    jobs = plan(args.paths)
    if not jobs:
        raise UsageError("main.no_carnet", paths=", ".join(str(p) for p in args.paths))
    for folder in (args.out, args.cache):
        if folder is None:
            continue
        try:
            folder.mkdir(parents=True, exist_ok=True)
            probe = folder / ".ecarte-audit-write-test"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            raise UsageError("main.cannot_write_folder", folder=folder, reason=exc.strerror or exc) from None
    options = Options(formats=args.format, lang=args.lang or "fr", debug=args.debug, generated_at=generated_at(),
                      limits=_limits(args))
    lines = not args.quiet and not sys.stderr.isatty()

    def report_line(job, output):
        if lines:
            s = output.entry["summary"]
            print(cli_label("audit.carnet_line", args.ui, shown=job.shown, errors=s["errors"],
                            warnings=s["warnings"], info=s["info"], out=args.out / job.id), file=sys.stderr)

    result = run_batch(jobs, args.out, options, workers=args.jobs, scheduler=args.scheduler,
                       cache_dir=args.cache, progress=not args.quiet, on_done=report_line)
    batch = len(jobs) > 1 or any(p.is_dir() and jobs[0].path != p for p in args.paths)
    if batch:
        write_batch(result.entries, args.out, args.format, options.lang, options.generated_at,
                    result.cross_findings)
    if not args.quiet and (batch or result.cached):
        print(cli_label("audit.batch_line", args.ui, carnets=len(jobs), cached=result.cached,
                        cross=len(result.cross_findings), out=args.out), file=sys.stderr)
    worst = worst_severity(result.worst)
    if result.cross_findings:
        worst = max(worst or Severity.ERROR, Severity.ERROR)
    threshold = None if args.fail_on == "never" else Severity.parse(args.fail_on)
    return EXIT_FINDINGS if threshold is not None and worst is not None and worst >= threshold else EXIT_OK


def _limits(args):
    from dataclasses import replace

    from auditor.limits import DEFAULT_LIMITS, MB

    chosen = {k: v for k, v in (("max_file_bytes", args.max_file_mb and args.max_file_mb * MB),
                                ("max_rows", args.max_rows), ("max_columns", args.max_columns)) if v}
    return replace(DEFAULT_LIMITS, **chosen) if chosen else None


def cmd_serve(args) -> int:
    from dataclasses import replace

    from auditor.limits import DEFAULT_LIMITS, MB

    try:
        from auditor.serve.server import serve
    except ImportError:
        raise UsageError("serve.needs_web") from None
    limits = replace(DEFAULT_LIMITS, max_file_bytes=args.max_file_mb * MB) if args.max_file_mb else None
    try:
        return serve(port=args.port, open_browser=not args.no_browser, lang=args.lang or "fr", ui=args.ui,
                     limits=limits, workers=args.jobs, reviews_file=args.reviews)
    except OSError as exc:
        raise UsageError("serve.port_taken", port=args.port or 0, reason=exc.strerror or exc) from None


def cmd_template(args) -> int:
    from auditor.report.template_xlsx import write_blank_template

    out = args.out if args.out.suffix else args.out.with_suffix(".xlsx")
    try:
        write_blank_template(out, args.lang or "fr")
    except OSError as exc:
        raise UsageError("main.cannot_write", path=out, reason=exc.strerror or exc) from None
    print(cli_label("template.written", args.ui, out=out), file=sys.stderr)
    return EXIT_OK


def cmd_generate(args) -> int:
    from auditor.breaches import CannotInject, inject
    from auditor.generate import Spec, generate, write_csv_folder, write_xlsx

    container = args.container or ("xlsx" if args.out.suffix.lower() in (".xlsx", ".xlsm") else "csv")
    spec = Spec(seances=args.seances, coups=args.coups, mises=args.mises, seed=args.seed,
                casino=args.casino, table=args.table, chouette=args.chouette)
    tables = generate(spec)
    codes = [c.strip().upper() for c in args.breaches.split(",") if c.strip()]
    try:
        expected = inject(tables, codes, seed=args.seed) if codes else set()
    except CannotInject as exc:
        raise UsageError("generate.cannot_inject", reason=exc) from None
    try:
        if container == "xlsx":
            out = args.out if args.out.suffix else args.out.with_suffix(".xlsx")
            write_xlsx(tables, out)
        else:
            out = write_csv_folder(tables, args.out)
    except OSError as exc:
        raise UsageError("main.cannot_write", path=args.out, reason=exc.strerror or exc) from None
    n = {k: len(v) for k, v in tables.items()}
    print(cli_label("generate.written", args.ui, out=out, seances=n["seances"], coups=n["coups"], mises=n["mises"],
                    tickets=n["tickets"])
          + (cli_label("generate.breaches_expected", args.ui, codes=", ".join(sorted(expected))) if expected else ""),
          file=sys.stderr)
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
