"""Articles 56-1 and 83: tickets against the register of books put in service at the table."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from auditor.arrays import NA_INT, blind, column, present_of, series
from auditor.carnet import Carnet
from auditor.catalogue import Profile
from auditor.checks._util import emit
from auditor.frames import find
from auditor.tickets.books import service_days
from auditor.tickets.ledger import ledger
from auditor.model import Day, Violation
from auditor.registry import check
from auditor.checks._needs import BOOKS, TICKET_RUNS



@check("EC561-01", needs=(*TICKET_RUNS, BOOKS, "carnets_tickets.mise_en_service"),
       needs_if_present=("seances.seance,date",))
def tickets_from_books_in_service(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """Every ticket comes from a book registered for the table, put in service before the ticket is detached.

    Why: art. 56-1 — books are assigned to a table; a ticket from elsewhere, or from a book not yet in service, is unexplained.
    Non-compliant: 0,10 € ticket 450 when the register lists only book 1-200; or a séance of 2026-03-01 using a book put in service on 2026-03-02.
    Compliant: every run lies in a registered book put in service on or before the séance's date.
    """
    led = ledger(carnet, profile)
    s, e = led.outside
    valeur = led.valeur(s)
    # A register row whose value or first number cannot be read may be the book these
    # tickets came from: outside findings of its value (of any value, if the value is unreadable).
    unknown = blind(carnet, "carnets_tickets", "valeur_cents", "premier")
    if unknown.any():
        unknown = column(carnet, "carnets_tickets", "valeur_cents")[unknown]
        keep = np.zeros(len(s), bool) if (unknown == NA_INT).any() else ~np.isin(valeur, unknown)
        s, e, valeur = s[keep], e[keep], valeur[keep]
    out = led.located(led.covering(s), first=led.number(s), last=led.number(e), valeur=valeur)
    for r in out.records():
        yield Violation(
            table="tickets", row=r["_row"], column="premier", seance=r["seance"], coup=r["coup"],
            kind="outside_one" if r["first"] == r["last"] else "outside",
            found=str(r["first"]) if r["first"] == r["last"] else f"{r['first']}-{r['last']}",
            params={"first": r["first"], "last": r["last"], "count": r["last"] - r["first"] + 1,
                    "valeur_cents": r["valeur"]})

    if "seances" not in carnet.tables:
        return  # no séance dates to compare with (the EC00-01 says why)
    books, pairs = led.books, led.book_pairs
    # The date of each séance, from its first row with a date (an unreadable date is simply not compared).
    seance = column(carnet, "seances", "seance")
    dates = series(carnet, "seances", "date")
    dated = np.flatnonzero((seance != NA_INT) & present_of(carnet, "seances", "date"))
    ids, first = np.unique(seance[dated], return_index=True)
    days = service_days(dates)[dated[first]]
    j = find(ids, led.runs["seance"][pairs["run"]])
    day = np.where(j >= 0, days[np.maximum(j, 0)] if len(ids) else np.datetime64("NaT", "us"),
                   np.datetime64("NaT", "us"))
    since = books["mise_en_service"][pairs["book"]]
    early = np.flatnonzero(day < since)
    if not len(early):
        return
    # One finding per book, where it was first used too early.
    early = early[np.argsort(pairs["pos"][early], kind="stable")]
    _, first = np.unique(pairs["book"][early], return_index=True)
    early = early[np.sort(first)]
    book = pairs["book"][early]
    hit = led.located(pairs["run"][early], day=day[early], since=since[early],
                      book_first=books["premier"][book], book_last=books["last"][book],
                      valeur=books["valeur_cents"][book])
    yield from emit(hit.frame(), lambda r: Violation(
        table="tickets", row=r["_row"], column="premier", seance=r["seance"], coup=r["coup"], kind="before_service",
        expected=Day.of(r["since"], "≥ "), found=Day.of(r["day"]),
        params={"date": Day.of(r["day"]), "mise_en_service": Day.of(r["since"]), "book_first": r["book_first"],
                "book_last": r["book_last"], "valeur_cents": r["valeur"]}))


@check("EC83-03", needs=(*TICKET_RUNS, BOOKS, "carnets_tickets.paraphe"))
def tickets_from_paraphed_books(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """No ticket is detached from a book marked as lacking the paraphe.

    Why: art. 83 — books bear the paraphe and stamp of the public accountant; an unstamped book is not a valid stock.
    Non-compliant: tickets 201-210 detached from book 201-400 registered with `paraphe` = non.
    Compliant: every book used has `paraphe` = oui (an empty cell is not a breach).
    """
    led = ledger(carnet, profile)
    books, pairs = led.books, led.book_pairs
    sel = np.flatnonzero(books["paraphe"][pairs["book"]] == "non")
    if not len(sel):
        return
    # One finding per book, at the first run drawn from it, counting all its tickets detached.
    ids, inv = np.unique(pairs["book"][sel], return_inverse=True)
    count = np.zeros(len(ids), dtype=np.int64)
    np.add.at(count, inv, pairs["count"][sel])
    sel = sel[np.argsort(pairs["pos"][sel], kind="stable")]
    _, first = np.unique(pairs["book"][sel], return_index=True)
    first = sel[np.sort(first)]
    book = pairs["book"][first]
    hit = led.located(pairs["run"][first], count=count[np.searchsorted(ids, book)],
                      book_first=books["premier"][book], book_last=books["last"][book],
                      valeur=books["valeur_cents"][book], book_row=books["_row"][book])
    for r in hit.records():
        yield Violation(
            table="tickets", row=r["_row"], column="premier", seance=r["seance"], coup=r["coup"],
            expected="oui", found="non",
            params={"count": r["count"], "book_first": r["book_first"], "book_last": r["book_last"],
                    "valeur_cents": r["valeur"], "book_row": r["book_row"]})
