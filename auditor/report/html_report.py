"""report.html: a self-contained page (inline CSS, no network)."""

from __future__ import annotations

from functools import lru_cache

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape


@lru_cache(maxsize=1)
def environment() -> Environment:
    return Environment(loader=PackageLoader("auditor", "templates"),
                       autoescape=select_autoescape(("html", "j2")), undefined=StrictUndefined,
                       trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)


def render(template: str, view: dict) -> str:
    return environment().get_template(template).render(**view)
