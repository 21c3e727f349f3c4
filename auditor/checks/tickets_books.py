"""Articles 56-1 and 83: tickets against the register of books put in service at the table."""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pandas as pd

from auditor.carnet import Carnet
from auditor.catalogue import Profile
from auditor.checks._util import emit
from auditor.tickets.ledger import ints, ledger, texts
from auditor.model import Day, Violation
from auditor.registry import check
from auditor.checks._needs import BOOKS, TICKETS



@check("EC561-01", needs=(TICKETS, BOOKS, "carnets_tickets.mise_en_service"),
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
    reg = carnet.df("carnets_tickets")
    blind = carnet.unreadable_rows("carnets_tickets", "valeur_cents", "premier").to_numpy()
    if blind.any():
        unknown = reg.loc[blind, "valeur_cents"]
        keep = np.zeros(len(s), bool) if unknown.isna().any() else ~np.isin(valeur, ints(unknown))
        s, e, valeur = s[keep], e[keep], valeur[keep]
    out = led.located(led.covering(s), first=led.number(s), last=led.number(e), valeur=valeur)
    yield from emit(out, lambda r: Violation(
        table="tickets", row=r["_row"], column="premier", seance=r["seance"], coup=r["coup"],
        kind="outside_one" if r["first"] == r["last"] else "outside",
        found=str(r["first"]) if r["first"] == r["last"] else f"{r['first']}-{r['last']}",
        params={"first": r["first"], "last": r["last"], "count": r["last"] - r["first"] + 1,
                "valeur_cents": r["valeur"]}))

    if "seances" not in carnet.tables:
        return  # no séance dates to compare with (the EC00-01 says why)
    books = led.books
    seances = carnet.df("seances")
    seances = seances[seances["seance"].notna() & seances["date"].notna()].drop_duplicates("seance")
    pairs = led.book_pairs
    # Days as datetime64 whatever the frames held: a column without any readable
    # date is all NaT, never a float (an unreadable date is simply not compared).
    day = pd.Series(_days(seances["date"]).to_numpy(), index=ints(seances["seance"]))
    day = day.reindex(led.runs["seance"].to_numpy()[pairs["run"].to_numpy()])
    since = _days(books["mise_en_service"]).iloc[pairs["book"].to_numpy()]
    early = pairs.assign(day=day.to_numpy(), since=since.to_numpy())
    early = early[(early["day"] < early["since"]).fillna(False).to_numpy(bool)]
    # One finding per book, where it was first used too early.
    early = early.sort_values("pos", kind="stable").drop_duplicates("book", keep="first")
    b = books.iloc[early["book"]]
    hit = led.located(early["run"].to_numpy(), day=early["day"].to_numpy(), since=early["since"].to_numpy(),
                      book_first=b["premier"].to_numpy(), book_last=b["last"].to_numpy(),
                      valeur=b["valeur_cents"].to_numpy())
    yield from emit(hit, lambda r: Violation(
        table="tickets", row=r["_row"], column="premier", seance=r["seance"], coup=r["coup"], kind="before_service",
        expected=Day.of(r["since"], "≥ "), found=Day.of(r["day"]),
        params={"date": Day.of(r["day"]), "mise_en_service": Day.of(r["since"]), "book_first": r["book_first"],
                "book_last": r["book_last"], "valeur_cents": r["valeur"]}))


def _days(s: pd.Series) -> pd.Series:
    return pd.Series(pd.to_datetime(s, errors="coerce"), index=s.index).astype("datetime64[us]")


@check("EC83-03", needs=(TICKETS, BOOKS, "carnets_tickets.paraphe"))
def tickets_from_paraphed_books(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """No ticket is detached from a book marked as lacking the paraphe.

    Why: art. 83 — books bear the paraphe and stamp of the public accountant; an unstamped book is not a valid stock.
    Non-compliant: tickets 201-210 detached from book 201-400 registered with `paraphe` = non.
    Compliant: every book used has `paraphe` = oui (an empty cell is not a breach).
    """
    led = ledger(carnet, profile)
    books = led.books
    pairs = led.book_pairs
    pairs = pairs[(texts(books["paraphe"]) == "non")[pairs["book"].to_numpy()]]
    if pairs.empty:
        return
    # One finding per book, at the first run drawn from it, counting all its tickets detached.
    count = pairs.groupby("book")["count"].sum()
    first = pairs.sort_values("pos", kind="stable").drop_duplicates("book", keep="first")
    b = books.iloc[first["book"]]
    hit = led.located(first["run"].to_numpy(), count=count.loc[first["book"]].to_numpy(),
                      book_first=b["premier"].to_numpy(), book_last=b["last"].to_numpy(),
                      valeur=b["valeur_cents"].to_numpy(), book_row=b["_row"].to_numpy())
    yield from emit(hit, lambda r: Violation(
        table="tickets", row=r["_row"], column="premier", seance=r["seance"], coup=r["coup"],
        expected="oui", found="non",
        params={"count": r["count"], "book_first": r["book_first"], "book_last": r["book_last"],
                "valeur_cents": r["valeur"], "book_row": r["book_row"]}))
