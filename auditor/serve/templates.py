"""The local page's templates (auditor/serve/assets/*.j2), in one jinja2
environment built once: the page, the cell view. The reports' own templates
are the report's (auditor/report/html_report.py)."""

from __future__ import annotations

from functools import lru_cache

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from auditor.report.html_report import shown


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The environment every page of the local server renders with (a file's
    name or a cell shown with its bidirectional controls as code points, as
    in the reports: `html_report.shown`)."""
    return Environment(loader=PackageLoader("auditor.serve", "assets"), autoescape=select_autoescape(("html", "j2")),
                       undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, finalize=shown)


def render(name: str, **context) -> str:
    """The template `name` rendered with `context`."""
    return environment().get_template(name).render(**context)
