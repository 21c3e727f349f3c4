"""Every label the reports and the CLI show, from one catalogue per language
(`templates/i18n/<lang>.toml`). Rule titles and messages come from `rules/`."""

from __future__ import annotations

import re
import tomllib
from functools import lru_cache
from importlib import resources

LANGS = ("fr", "en")


@lru_cache(maxsize=None)
def labels(lang: str) -> dict[str, str]:
    """Every label of the reports and messages in `lang` (fr or en)."""
    if lang not in LANGS:
        raise ValueError(f"unknown language {lang!r}")
    text = resources.files("auditor").joinpath("templates", "i18n", f"{lang}.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def label(key: str, lang: str) -> str:
    """One label in `lang`."""
    return labels(lang)[key]


_ISO_DAY = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


def format_day(text: str, lang: str) -> str:
    """Dates in `text` as a reader of `lang` writes them: `JJ/MM/AAAA` in
    French, ISO (unambiguous) in English."""
    if lang == "fr":
        return _ISO_DAY.sub(lambda m: f"{m[3]}/{m[2]}/{m[1]}", text)
    return str(text)
