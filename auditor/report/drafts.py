"""The pieces of a report's draft made by the modules that read the carnet
(the tickets' picture, the chouette runs' stories), as plain data.

A carnet's draft is kept in the cache with its audit. They are defined here,
apart from the numpy and pandas code that makes them, so that reading a
draft back imports neither: a night that makes again only a reviewed
carnet's report does it without importing pandas.
"""

from __future__ import annotations

from dataclasses import dataclass

from auditor.report.charts import Chart


@dataclass
class TicketValue:
    """One row of the section's table and its picture."""

    valeur_cents: int
    valeur: str
    anchor: str              # id of the value's figure
    books: int               # books this carnet draws from
    used: int                # distinct numbers detached
    seances: str             # first → last séance using the value
    missing: str             # tickets missing (EC83-01)
    missing_runs: int        # stretches of missing numbers: EC83-01 findings
    missing_runs_text: str
    owed_cents: int          # EC83-01 impacts of the value
    owed: str
    duplicates: str          # extra detachments of a number (EC82-03), or "not checked"
    duplicate_runs: int      # EC82-03 findings
    duplicate_runs_text: str
    outside: str             # tickets outside every registered book (EC561-01), or "not checked"
    outside_runs: int        # EC561-01 findings of kind outside
    outside_runs_text: str
    early: str               # books used before their service date (the other EC561-01 findings), or "not checked"
    early_findings: int
    chart: Chart
    label: str               # the picture's accessible name


@dataclass
class TicketSection:
    """The report's ticket section: one row and picture per ticket value, and what the casino owes."""

    checked: bool            # the tickets table was read (EC83-01 checked)
    reason: str              # why not, when not
    series: list[TicketValue]
    total_owed_cents: int    # Σ EC83-01 impacts, as summary.impact_cents counts them
    total_owed: str
    total_missing: int
    note: str                # ticket rows that cannot be drawn


@dataclass(frozen=True)
class RunStory:
    """One chouette run as the report shows it."""

    seance: str
    chouetteur: str
    coups: str
    story: str
