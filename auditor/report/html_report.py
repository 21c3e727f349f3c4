"""report.html and index.html: self-contained pages (inline CSS and script,
no network), rendered from the view model by the templates in
auditor/templates/."""

from __future__ import annotations

import re
from dataclasses import fields
from functools import lru_cache

from jinja2 import Environment, PackageLoader, StrictUndefined, pass_context, select_autoescape
from markupsafe import Markup, escape

from auditor.model import AuditResult
from auditor.money import format_cents
from auditor.names import code_point


# The environment's options: they shape the compiled templates, so they also
# name the compiled templates' cache (`_bytecode_cache`; `finalize` by its
# version: a function's repr names its address, which changes every process).
OPTIONS = dict(trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
AUTOESCAPED = ("html", "j2")
FINALIZE = "bidi-controls-1"

# The characters that reorder on screen the text around them (Unicode's
# Bidi_Control): a cell holding U+202E shows what follows it backwards
# ("Trojan Source"), so a page could show a value the carnet does not hold.
# Every value a page shows has them written as their code point, as the
# procès-verbal writes a character its fonts lack (`<U+202E>`); findings.json
# keeps the text as read.
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_BIDI_RE = re.compile(f"[{BIDI_CONTROLS}]")


def shown(value):
    """A value as the page shows it (the environment's `finalize`): its
    bidirectional controls written as their code points."""
    if not isinstance(value, str) or not _BIDI_RE.search(value):
        return value
    if isinstance(value, Markup):   # already HTML: the code point goes in escaped
        return Markup(_BIDI_RE.sub(lambda m: str(escape(code_point(m[0]))), str(value)))
    return _BIDI_RE.sub(lambda m: code_point(m[0]), value)


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The jinja2 environment of the report templates (autoescaped, strict)."""
    # The templates are package data, never edited during a run: no stat of every
    # template file at each report to see whether it changed (auto_reload).
    env = Environment(loader=PackageLoader("auditor", "templates"),
                      autoescape=select_autoescape(AUTOESCAPED), undefined=StrictUndefined,
                      auto_reload=False, bytecode_cache=_bytecode_cache(), finalize=shown, **OPTIONS)
    register_filters(env)
    return env


def _bytecode_cache():
    """Compiling the report's templates costs a tenth of a second, as much as
    the whole audit of a small carnet: each process after the first loads
    them compiled from the user's cache folder (`auditor.user_cache`). An
    entry is used only for the same template file with the same text, under
    the same Python; the options and jinja2's version are in its name. No
    cache (compile each time) where that folder cannot be had."""
    import hashlib

    import jinja2
    from jinja2 import FileSystemBytecodeCache

    from auditor.user_cache import folder

    class Cache(FileSystemBytecodeCache):
        def load_bytecode(self, bucket) -> None:
            # jinja2 reads a truncated entry's header with pickle and raises:
            # a damaged entry (a crash while writing, a disk fault) is compiled afresh.
            try:
                super().load_bytecode(bucket)
            except Exception:
                bucket.reset()

        def dump_bytecode(self, bucket) -> None:
            try:
                super().dump_bytecode(bucket)
            except OSError:   # a full or read-only disk: the page is still written
                pass

    where = folder("templates")
    if where is None:
        return None
    tag = hashlib.sha256(repr((sorted(OPTIONS.items()), AUTOESCAPED, FINALIZE, jinja2.__version__)).encode()
                         ).hexdigest()[:12]
    return Cache(str(where), pattern=f"__ecarte_report_{tag}_%s.cache")


def register_filters(env: Environment) -> None:
    """The one place filters are declared. Views pre-format nearly everything;
    `cents` is there for partials that receive raw amounts."""
    env.filters["cents"] = _cents


@pass_context
def _cents(context, cents) -> str:
    return format_cents(cents, context.get("lang", "fr"))


def render(template: str, view) -> str:
    """Render a view model (a dataclass of auditor/report/report_view.py or index_view.py): its fields
    are the template's names, taken as they are (no deep copy)."""
    context = {f.name: getattr(view, f.name) for f in fields(view)}
    return environment().get_template(template).render(**context)


def render_report(result: AuditResult, source_path: str, generated_at: str,
                  findings_file: str | None = "findings.json", annotated_file: str | None = None) -> str:
    """report.html for one carnet audited alone (language: the result's)."""
    from auditor.report.report_view import report_view

    return render("report.html.j2", report_view(result, source_path, generated_at, findings_file,
                                                annotated_file=annotated_file))


def render_index(summary_doc: dict, lang: str) -> str:
    """index.html of a batch, from the summary.json document."""
    from auditor.report.index_view import index_view

    return render("index.html.j2", index_view(summary_doc, lang))
