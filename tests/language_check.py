"""Which words of a text belong to the other language: the check behind the
"English that reads as English" tests (and the reverse for French).

A word is taken as French when a French word-frequency list (pyspellchecker's)
uses it far more often than the English one, and the other way round; the
regulation's nouns the English report keeps are the glossary's, allowed in
both. Numbers, codes (EC64-01), amounts and identifiers with an underscore or
a digit are not words.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from auditor.i18n import labels

# A word used this many times more often in one language than in the other belongs to it.
RATIO = 20
WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
# Whitespace-separated pieces that are not prose: paths, file names, cells
# (mises!B12), identifiers (tenir_cartes, mises.montant), digests, anything
# with a digit, and quoted source text ('12,555', `coups`).
NOT_PROSE = re.compile(r"`[^`]*`|'[^'\s][^']*'|\S*[/\\._!\d@]\S*")
# Technical words of either language (file formats, the tool) and abbreviations.
NEUTRAL = {"ecarte", "auditor", "xlsx", "csv", "json", "sha", "html", "excel", "pdf", "ods", "xls", "xlsb",
           "utf", "id", "ok", "art", "utc"}
# The carnet format's table names: the sheets and files the clerk sees (identifiers, either language).
TABLES = {"carnet", "seances", "fiches", "coups", "mises", "tickets", "carnets_tickets"}
ALLOWED = {"en": {"nos", "multiples", "plus"},     # English words the frequency lists misjudge
           "fr": {"lot"}}


@lru_cache(maxsize=1)
def _dictionaries():
    from spellchecker import SpellChecker

    return SpellChecker(language="en", distance=1), SpellChecker(language="fr", distance=1)


def glossary_words(lang: str = "en") -> set[str]:
    """Every word of the glossary's terms (both languages may use them)."""
    words: set[str] = set()
    for term in labels(lang).get("glossary", []):
        words.update(w.casefold() for w in WORD.findall(term["term"]))
    return words | {w + "s" for w in words}     # plurals: séances, pontes


@lru_cache(maxsize=1)
def format_columns() -> set[str]:
    """The carnet format's column names (premier, montant …), identifiers of the
    source file, split as the checker splits words (joueur_a → joueur)."""
    names = set()
    for columns in labels("en")["coldoc"].values():
        for name in columns:
            names.update(w.casefold() for w in WORD.findall(name))
    return names


def _fold(word: str) -> str:
    return unicodedata.normalize("NFC", word.casefold().replace("’", "'"))


def foreign_words(text: str, lang: str, allowed: set[str] = frozenset()) -> list[str]:
    """The words of `text` that belong to the other language than `lang`."""
    en, fr = _dictionaries()
    keep = glossary_words("en") | NEUTRAL | TABLES | format_columns() | ALLOWED[lang] | {_fold(a) for a in allowed}
    found = []
    for raw in WORD.findall(NOT_PROSE.sub(" ", text.replace("’", "'").replace("'s ", " "))):
        w = _fold(raw)
        if w in keep or (len(w) < 2 and w != "à"):
            continue
        pe, pf = en.word_usage_frequency(w), fr.word_usage_frequency(w)
        if lang == "en" and pf > RATIO * pe and pf > 0:
            found.append(raw)
        elif lang == "fr" and pe > RATIO * pf and pe > 0:
            found.append(raw)
    return found
