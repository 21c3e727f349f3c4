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
WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?", re.UNICODE)
# Proper names and technical words that are neither language's (file formats, the tool).
NEUTRAL = {"ecarte", "auditor", "xlsx", "csv", "json", "sha", "html", "excel", "pdf", "ods", "xls", "xlsb",
           "json", "utf", "pandas", "calamine", "id", "ok"}


@lru_cache(maxsize=1)
def _dictionaries():
    from spellchecker import SpellChecker

    return SpellChecker(language="en", distance=1), SpellChecker(language="fr", distance=1)


def glossary_words(lang: str = "en") -> set[str]:
    """Every word of the glossary's terms (both languages may use them)."""
    words: set[str] = set()
    for term in labels(lang).get("glossary", []):
        words.update(w.casefold() for w in WORD.findall(term["term"]))
    return words


def _fold(word: str) -> str:
    return unicodedata.normalize("NFC", word.casefold().replace("’", "'"))


def foreign_words(text: str, lang: str, allowed: set[str] = frozenset()) -> list[str]:
    """The words of `text` that belong to the other language than `lang`."""
    en, fr = _dictionaries()
    keep = glossary_words("en") | NEUTRAL | {_fold(a) for a in allowed}
    found = []
    for raw in WORD.findall(text):
        w = _fold(raw)
        if w in keep or len(w) < 2 and lang == "fr":
            continue
        pe, pf = en.word_usage_frequency(w), fr.word_usage_frequency(w)
        if lang == "en" and pf > RATIO * pe and pf > 0:
            found.append(raw)
        elif lang == "fr" and pe > RATIO * pf and pe > 0:
            found.append(raw)
    return found
