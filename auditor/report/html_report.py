"""report.html and index.html: self-contained pages (inline CSS and script,
no network), rendered from the view model by the templates in
auditor/templates/."""

from __future__ import annotations

from dataclasses import fields
from functools import lru_cache

from jinja2 import Environment, PackageLoader, StrictUndefined, pass_context, select_autoescape

from auditor.model import AuditResult
from auditor.money import format_cents


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The jinja2 environment of the report templates (autoescaped, strict)."""
    # The templates are package data, never edited during a run: no stat of every
    # template file at each report to see whether it changed (auto_reload).
    env = Environment(loader=PackageLoader("auditor", "templates"),
                      autoescape=select_autoescape(("html", "j2")), undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, auto_reload=False)
    register_filters(env)
    return env


def register_filters(env: Environment) -> None:
    """The one place filters are declared. Views pre-format nearly everything;
    `cents` is there for partials that receive raw amounts."""
    env.filters["cents"] = _cents


@pass_context
def _cents(context, cents) -> str:
    return format_cents(cents, context.get("lang", "fr"))


def render(template: str, view) -> str:
    """Render a view model (a dataclass of auditor/report/view.py): its fields
    are the template's names, taken as they are (no deep copy)."""
    context = {f.name: getattr(view, f.name) for f in fields(view)}
    return environment().get_template(template).render(**context)


def render_report(result: AuditResult, source_path: str, generated_at: str,
                  findings_file: str | None = "findings.json", annotated_file: str | None = None,
                  cross: list[dict] | None = None, reports: dict[str, str | None] | None = None,
                  series=None) -> str:
    """report.html for one audited carnet (language: the result's); `cross`
    and `reports` as in render.render_outputs; `series`: the findings against
    a baseline and their reviews (auditor/series.py)."""
    from auditor.report.series_view import report_part
    from auditor.report.view import report_view

    view = report_view(result, source_path, generated_at, findings_file,
                       annotated_file=annotated_file, cross=cross, reports=reports)
    view.series = report_part(result, series) if series is not None and series.any() else None
    return render("report.html.j2", view)


def render_index(summary_doc: dict, lang: str) -> str:
    """index.html of a batch, from the summary.json document."""
    from auditor.report.view import index_view

    return render("index.html.j2", index_view(summary_doc, lang))
