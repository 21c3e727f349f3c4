"""Plain value types shared by every layer (no pandas here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from dataclasses import field as _field   # Finding has a field named `field`
from enum import Enum, IntEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from auditor.carnet import Carnet
    from auditor.catalogue import Profile


# What a run may write of each carnet (outputs.md, the --format choices).
FORMATS = ("html", "json", "xlsx", "pdf")


class Severity(IntEnum):
    """Ordered: thresholds and exit status compare severities."""

    INFO = 10
    WARNING = 20
    ERROR = 30

    @classmethod
    def parse(cls, text: str) -> "Severity":
        """The severity named `text` (error, warning, info; any case)."""
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r}") from None

    @property
    def label(self) -> str:
        """The severity's name as outputs write it (`error`)."""
        return self.name.lower()


class Cents(int):
    """An amount in cents given as a finding's expected/found value: the
    engine formats it in the report language."""

    __slots__ = ()


class Day(str):
    """A date (ISO text, possibly with a comparison such as `≥ 2026-03-02`)
    given as a finding's value or message parameter: the engine writes it the
    report language's way (`02/03/2026` in French)."""

    __slots__ = ()

    @classmethod
    def of(cls, ts, prefix: str = "") -> "Day | None":
        """The day of a timestamp or date (None when missing)."""
        if ts is None:
            return None
        day = ts.date() if hasattr(ts, "date") and callable(ts.date) else ts
        return cls(f"{prefix}{day.isoformat()}")


class Status(Enum):
    """Whether a rule was checked on a carnet."""

    CHECKED = "checked"
    NOT_CHECKED = "not_checked"


@dataclass(frozen=True, slots=True)
class Violation:
    """What a check yields: where and what, never severity or article.

    `kind` picks the catalogue message variant; `params` fill it (keys ending
    in `_cents` are formatted as money in the report language).
    """

    table: str | None = None
    row: int | None = None          # source row number, header = 1
    column: str | None = None
    seance: int | None = None
    coup: int | None = None
    rang: int | None = None
    expected: str | Cents | None = None
    found: str | Cents | None = None
    impact_cents: int = 0
    kind: str = "default"
    params: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True, slots=True)
class Finding:
    """A violation as the report shows it: rule code, severity, article, message in the report's language, where
    it is (table, row, column, cell, séance, coup, rang), expected and found values, the money at stake."""

    code: str
    severity: Severity
    article: str
    message: str
    table: str | None
    row: int | None
    column: str | None
    cell: str | None
    seance: int | None
    coup: int | None
    rang: int | None
    expected: str | None
    found: str | None
    impact_cents: int = 0
    # The carnet column the finding is about (the source column can be
    # renamed by a re-saved file; this one cannot), and the finding's stable
    # identity across audits (auditor/fingerprint.py).
    field: str | None = None
    fingerprint: str | None = None
    # A finding across carnets (outputs.md v1.2), as one carnet it involves
    # sees it: its places, this carnet's first — each {"carnet", "path",
    # "table", "seance", "coup", "row", "cell"}. None for a carnet's own finding.
    across: tuple[dict, ...] | None = _field(default=None, compare=False, hash=False)

    def sort_key(self) -> tuple:
        """The spec's order of findings: séance, coup, rang, code (missing first), then table and row."""
        # The spec fixes the order: séance, coup, rang, code; None first, then
        # table/row so that ties stay stable.
        def k(v):
            return (0, 0) if v is None else (1, v)

        return (k(self.seance), k(self.coup), k(self.rang), self.code,
                self.table or "", k(self.row), self.column or "", self.message)

    def as_json(self) -> dict[str, Any]:
        """The finding as findings.json writes it."""
        return {
            "code": self.code,
            "severity": self.severity.label,
            "article": self.article,
            "message": self.message,
            "seance": self.seance,
            "coup": self.coup,
            "rang": self.rang,
            "table": self.table,
            "row": self.row,
            "column": self.column,
            "cell": self.cell,
            "expected": self.expected,
            "found": self.found,
            "impact_cents": int(self.impact_cents),
            "fingerprint": self.fingerprint,
            **({"across": [dict(p) for p in self.across]} if self.across is not None else {}),
        }


def sort_findings(findings) -> list[Finding]:
    """The findings in the spec's order."""
    return sorted(findings, key=Finding.sort_key)


@dataclass(frozen=True, slots=True)
class RuleStatus:
    """What became of one rule on a carnet: checked (with its number of findings) or not, and why."""

    code: str
    status: Status
    findings: int = 0
    reason: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The rule's status as findings.json writes it."""
        out: dict[str, Any] = {"code": self.code, "status": self.status.value}
        if self.status is Status.CHECKED:
            out["findings"] = self.findings
        else:
            out["reason"] = self.reason
        return out


@dataclass
class AuditResult:
    """One audited carnet: the carnet, its findings in the spec's order, the
    status of every rule, the summary, and what it was audited with."""

    carnet: "Carnet"
    findings: list[Finding]
    rules: list[RuleStatus]
    summary: dict
    lang: str = "fr"
    notes: dict[str, str] = field(default_factory=dict)
    # The regulation profile the carnet was audited with: the report draws the
    # ticket series with the same values and book size as the rules.
    profile: "Profile | None" = None

    def worst(self) -> Severity | None:
        """The highest severity among the findings (None without findings)."""
        return max((f.severity for f in self.findings), default=None)


@dataclass(frozen=True)
class BatchCarnet:
    """One carnet of a batch as the checks over a batch see it: who it is, its
    readable ticket runs `[valeur_cents, premier, dernier, seance, coup, row]`,
    and the facts the rules across the carnets of a table read (built by
    `auditor.derived.batch_facts.batch_facts`; plain ints and strings, so a
    worker can hand them back and the cache can keep them).

    - `placeable`: cover and séances readable, casino and table given (spec
      "Safety first"); `tickets_readable`: the tickets table can be trusted.
    - `seances`: `(number, iso_date, row, cell, date_cell)` in the order of séances (date, then number).
    - `ticket_ends`: per value, its first and last ticket in the carnet's order of
      detachment, `(valeur_cents, first_no, first_seance, first_coup, first_row,
      first_cell, last_no, last_seance, last_coup, last_row, last_cell, last_column)`.
    - `books`: the registered books `(valeur_cents, premier, dernier)` of `carnets_tickets`.
    - `open_books`: per value, the book still in progress at the carnet's end (its
      EC83-02), `(valeur_cents, book_first, book_last, last_used)`: index.html's
      archive tells the books the next carnet continues from the table's open ones.
    - `loose_tickets`: ticket rows left out of `ticket_runs` whose numbers
      still tell something across carnets, `(valeur_cents, first, last, kind)`:
      kind 0, numbers detached though the row has no readable séance or coup;
      kind 1, numbers a hole of EC83-04 may not meet (a reversed run's span;
      valeur_cents −1: a row of unknown value; first 1 and last the profile's
      highest number: a row of unknown numbers).
    - `seances_loose`: how many séance rows have no readable number, and
      `seances_undated` the numbers of those whose date alone cannot be read:
      rows left out of `seances`; a gap of séances between two carnets such a
      row may fill is not reported (EC64-11).
    Cells are Excel references for workbooks, None for CSV folders.
    """

    id: str
    path: str
    casino: str
    table: int | None
    ticket_runs: list[list[int]]
    # Defaults keep the callers that know only the ticket runs (EC82-03) working.
    placeable: bool = True
    tickets_readable: bool = True
    date_debut: str | None = None
    seances: tuple = ()
    ticket_ends: tuple = ()
    books: tuple = ()
    open_books: tuple = ()
    loose_tickets: tuple = ()
    seances_loose: int = 0
    seances_undated: tuple = ()
