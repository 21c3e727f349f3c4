"""Every label the reports and the CLI show, from one catalogue per language
(`templates/i18n/<lang>.toml`). Rule titles and messages come from `rules/`."""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from typing import Mapping

from auditor.user_cache import toml_loads

LANGS = ("fr", "en")


class Labels(dict):
    """A language's catalogue, pickled as its language: every process reads
    the same catalogue, and each carnet's report draft holds it (a batch
    pickles every draft once and reads it back once: its 26 kB were half of
    a small carnet's pickle)."""

    __slots__ = ("lang",)

    def __reduce__(self):
        return labels, (self.lang,)


@lru_cache(maxsize=None)
def labels(lang: str) -> Labels:
    """Every label of the reports and messages in `lang` (fr or en)."""
    if lang not in LANGS:
        raise ValueError(f"unknown language {lang!r}")
    text = resources.files("auditor").joinpath("templates", "i18n", f"{lang}.toml").read_text(encoding="utf-8")
    catalogue = Labels(toml_loads(text))   # parsed once per user (auditor.user_cache)
    catalogue.lang = lang
    return catalogue


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


# -- the command line ----------------------------------------------------------

# Python's gettext order: the first of these that is set decides.
LOCALE_VARIABLES = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


def environment_lang(environ: Mapping[str, str]) -> str:
    """The language of the user's locale: French for `fr`, `fr_FR.UTF-8`,
    `fr_BE`, `fr:en` (LANGUAGE's list, first entry), English otherwise
    (`C`, `POSIX`, `en_GB`, `de_DE`, nothing set)."""
    for name in LOCALE_VARIABLES:
        value = (environ.get(name) or "").strip()
        if value:
            first = value.split(":")[0].lower()
            return "fr" if first == "fr" or first.startswith(("fr_", "fr-", "fr.", "fr@")) else "en"
    return "en"


@lru_cache(maxsize=None)
def _cli_file(lang: str) -> dict:
    if lang not in LANGS:
        raise ValueError(f"unknown language {lang!r}")
    text = resources.files("auditor").joinpath("templates", "i18n", f"cli.{lang}.toml").read_text(encoding="utf-8")
    return toml_loads(text)   # parsed once per user (auditor.user_cache)


@lru_cache(maxsize=None)
def cli_labels(lang: str) -> dict[str, str]:
    """The command line's labels as `section.key` → text (`audit.out`)."""
    return {f"{section}.{key}": text for section, table in _cli_file(lang).items() if section != "argparse"
            for key, text in table.items()}


def cli_label(key: str, lang: str, **params) -> str:
    """One command-line text (`section.key`) in `lang`, its {placeholders} filled."""
    text = cli_labels(lang)[key]
    return text.format(**params) if params else text


def argparse_words(lang: str) -> dict[str, str]:
    """argparse's own messages (its English text → `lang`'s)."""
    return _cli_file(lang).get("argparse", {})
