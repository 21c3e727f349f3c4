"""What every page of the report (report.html, index.html) is made of
besides its body: the `Page` around it, small pre-formatted pieces (a field,
a count, a filter's choice, a place of a finding across carnets) and the few
text helpers both views use (clipped text, the run's moment, an article)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from auditor.i18n import format_day, labels

# Text fields shown in a row are clipped (a cell can hold 32 767 characters);
# findings.json keeps them whole.
MAX_TEXT = 200


@dataclass(frozen=True)
class Field:
    """A name and its value, pre-formatted: the carnet's identity, row volumes."""

    name: str
    value: str


@dataclass(frozen=True)
class Count:
    """A counted thing (severity, verdict): CSS key, label, number."""

    key: str
    name: str
    n: int


@dataclass(frozen=True)
class Choice:
    """An option of a filter: its value and its text."""

    value: str
    text: str


@dataclass
class Page:
    """What every page (report.html, index.html) shows around its body."""

    lang: str
    t: dict
    js_labels: dict
    tool_version: str
    generated_at: str      # ISO, UTC (the <time> element's datetime)
    generated_text: str    # the same moment as the reader writes it


@dataclass(frozen=True)
class Place:
    """Where a cross-carnet finding sits, with a link to that carnet's report."""

    text: str
    href: str | None


def as_text(v) -> str:
    """A value as the page shows it: empty for None."""
    return "" if v is None else str(v)


def clip(text: str | None, limit: int = MAX_TEXT) -> str:
    """`text` cut to `limit` characters, with an ellipsis when it was longer."""
    text = as_text(text)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def moment_text(stamp: str, lang: str) -> str:
    """The run's timestamp (`2026-01-01T09:30:00Z`) as the reader writes it:
    `01/01/2026 à 09:30 UTC`, `2026-01-01 at 09:30 UTC`."""
    m = re.fullmatch(r"(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}):\d{2}Z", stamp or "")
    if not m:
        return as_text(stamp)
    return labels(lang)["moment"].format(day=format_day(m[1], lang), time=m[2])


def article_text(article: str, lab: dict) -> str:
    """`art. 64`, `art. 66-1`; the format rules (EC00) have no article."""
    return f"{lab['art']} {article}" if article[:1].isdigit() else lab.get(f"article_{article}", article)


def js_labels(lab: dict) -> dict[str, str]:
    """The few strings the inline script shows, from the same catalogue."""
    return {k[3:]: v for k, v in lab.items() if k.startswith("js_") and isinstance(v, str)}


def place_text(c: dict, lab: dict) -> str:
    """Where a finding across carnets sits in one of them, in words."""
    # A séance's place (EC64-10, EC64-11) has no coup: not "coup ," with nothing after.
    key = "cross_place" if c.get("coup") is not None else "cross_place_seance"
    return lab[key].format(path=as_text(c.get("path")), table=as_text(c.get("table_no")) or "?",
                           seance=as_text(c.get("seance")), coup=as_text(c.get("coup")), row=as_text(c.get("row")))


def here_text(c: dict, lab: dict) -> str:
    """Where a finding across carnets sits in this carnet, in words."""
    key = "cross_here" if c.get("coup") is not None else "cross_here_seance"
    return lab[key].format(seance=as_text(c.get("seance")), coup=as_text(c.get("coup")), row=as_text(c.get("row")))
