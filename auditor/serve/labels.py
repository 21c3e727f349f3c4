"""The page's words, beside the reports' and the command line's
(`templates/i18n/page.<lang>.toml`)."""

from __future__ import annotations

import tomllib
from functools import lru_cache
from importlib import resources

from auditor.i18n import LANGS


@lru_cache(maxsize=None)
def page_labels(lang: str) -> dict[str, str]:
    """`section.key` → text."""
    if lang not in LANGS:
        raise ValueError(f"unknown language {lang!r}")
    text = resources.files("auditor").joinpath("templates", "i18n", f"page.{lang}.toml").read_text(encoding="utf-8")
    return {f"{section}.{key}": value for section, table in tomllib.loads(text).items()
            for key, value in table.items()}


def page_label(key: str, lang: str, **params) -> str:
    """One text of the page (`section.key`) in `lang`, its {placeholders} filled."""
    text = page_labels(lang)[key]
    return text.format(**params) if params else text
