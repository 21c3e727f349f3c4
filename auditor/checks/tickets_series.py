"""Articles 82, 83 and 56-1: the numbering of each ticket value's series."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from auditor.arrays import column, value
from auditor.carnet import Carnet
from auditor.catalogue import Profile
from auditor.tickets.ledger import NA_INT, ledger, objects
from auditor.model import Cents, Violation
from auditor.registry import check
from auditor.checks._needs import BOOKS, TICKET_RUNS, TICKETS
from auditor.frames import cat


def _emit(hit, make) -> Iterator[Violation]:
    """One violation per row of the ledger's columns `hit`, made by `make` from the row as plain values."""
    return (make(r) for r in hit.records())


def _span(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}-{last}"


@check("EC82-01", needs=(TICKETS,))
def ticket_value_allowed(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """Every ticket is worth one of the values of article 82.

    Why: art. 82 — tickets are printed in 0,10 €, 1 €, 10 € and 100 € only; another value is no ticket.
    Non-compliant: a run of tickets of 0,50 €.
    Compliant: runs of 0,10 € and 1 € tickets.
    """
    valeur = column(carnet, "tickets", "valeur_cents")
    at = np.flatnonzero((valeur != NA_INT) & ~np.isin(valeur, profile.ticket_values_cents))
    for row, seance, coup, v in zip(column(carnet, "tickets", "_row")[at].tolist(),
                                    column(carnet, "tickets", "seance")[at], column(carnet, "tickets", "coup")[at],
                                    valeur[at].tolist()):
        yield Violation(table="tickets", row=row, column="valeur_cents", seance=value(seance), coup=value(coup),
                        found=Cents(v), params={"valeur_cents": v})


@check("EC82-02", needs=TICKET_RUNS)
def ticket_number_in_series(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """Ticket numbers lie in 1 … 1 000 000 and a run's `dernier` does not precede its `premier`.

    Why: art. 82 — each value is numbered in one series from 1 to 1 000 000; other numbers were not printed.
    Non-compliant: `premier` 0, or `premier` 120 with `dernier` 115.
    Compliant: `premier` 115, `dernier` 120.
    """
    top = profile.ticket_number_max
    first, last = column(carnet, "tickets", "premier"), column(carnet, "tickets", "dernier")
    has_first, has_last = first != NA_INT, last != NA_INT
    bad_first = has_first & ((first < 1) | (first > top))
    bad_last = has_first & has_last & ((last < 1) | (last > top)) & ~bad_first
    reversed_ = has_first & has_last & (last < first) & ~bad_first & ~bad_last
    numbers = {"premier": first, "dernier": last}
    for name, kind, mask in (("premier", "range", bad_first), ("dernier", "range", bad_last),
                             ("dernier", "reversed", reversed_)):
        at = np.flatnonzero(mask)
        for row, seance, coup, p, n in zip(column(carnet, "tickets", "_row")[at].tolist(),
                                           column(carnet, "tickets", "seance")[at],
                                           column(carnet, "tickets", "coup")[at], first[at].tolist(),
                                           numbers[name][at].tolist()):
            yield Violation(
                table="tickets", row=row, column=name, seance=value(seance), coup=value(coup), kind=kind,
                expected=f"1 … {top}" if kind == "range" else f"≥ {p}", found=str(n),
                params={"number": n, "premier": p, "max": top})


@check("EC82-03", needs=TICKET_RUNS)
def ticket_detached_once(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """No ticket (value and number) is detached twice in the carnet.

    Why: art. 82 — the casino may never hold two tickets of one value with the same number.
    Non-compliant: 0,10 € ticket 105 detached in séance 1 and again in séance 2.
    Compliant: every number of a value appears in one run only.
    """
    led = ledger(carnet, profile)
    d = led.repeats
    if d.empty:
        return
    s, e = d["s"], d["e"]
    other = led.located(d["other"])
    hit = led.located(d["at"], first=led.number(s), last=led.number(e), valeur=led.valeur(s),
                      pos=led.runs["pos"][d["at"]],
                      other_seance=other["seance"], other_coup=other["coup"], other_row=other["_row"])
    hit = hit.take(np.lexsort((hit["first"], hit["pos"])))
    yield from _emit(hit, lambda r: Violation(
        table="tickets", row=r["_row"], column="premier", seance=r["seance"], coup=r["coup"],
        kind="one" if r["first"] == r["last"] else "several", found=_span(r["first"], r["last"]),
        params={"first": r["first"], "last": r["last"], "count": r["last"] - r["first"] + 1,
                "valeur_cents": r["valeur"], "other_seance": r["other_seance"],
                "other_coup": r["other_coup"], "other_row": r["other_row"]}))


@check("EC561-02", needs=TICKET_RUNS)
def ticket_numbers_forward(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """A value's new ticket numbers never fall below those of the previous coup that used the value.

    Why: art. 56-1 and 82 — books are used in order; a number lower than the last one used hides a book switched back.
    Non-compliant: 0,10 € tickets 101-105 at coup 1, then 96-100 at coup 2.
    Compliant: 96-100 at coup 1, then 101-105 at coup 2; a repeated number is EC82-03, not a step back.
    """
    led = ledger(carnet, profile)
    r = led.runs
    seance, coup, ke = r["seance"], r["coup"], r["ke"]
    g = led.first_new
    # Only numbers detached for the first time count: a repeat is a duplicate (EC82-03).
    fresh = np.flatnonzero((g <= ke) & (seance != NA_INT) & (coup != NA_INT))
    vid = r["ks"][fresh] // led.stride
    # Steps = (value, séance, coup) in carnet order; within a step, its lowest new number first.
    o = fresh[np.lexsort((r["pos"][fresh], g[fresh], coup[fresh], seance[fresh], vid))]
    vid = r["ks"][o] // led.stride
    if len(o) == 0:
        return
    new = cat(True, (vid[1:] != vid[:-1]) | (seance[o][1:] != seance[o][:-1]) | (coup[o][1:] != coup[o][:-1]))
    first = np.flatnonzero(new)
    step_run, low, high = o[first], g[o][first], np.maximum.reduceat(ke[o], first)
    same_value = cat(False, vid[first][1:] == vid[first][:-1])
    prev_high = cat(0, high[:-1])
    back = np.flatnonzero(same_value & (low < prev_high))
    prev_run = step_run[back - 1]
    hit = led.located(step_run[back], number=led.number(low[back]), previous=led.number(prev_high[back]),
                      valeur=led.valeur(low[back]), prev_seance=objects(seance[prev_run]),
                      prev_coup=objects(coup[prev_run]))
    yield from _emit(hit, lambda x: Violation(
        table="tickets", row=x["_row"], column="premier", seance=x["seance"], coup=x["coup"],
        expected=f"> {x['previous']}", found=str(x["number"]),
        params={"number": x["number"], "previous": x["previous"], "valeur_cents": x["valeur"],
                "prev_seance": x["prev_seance"], "prev_coup": x["prev_coup"]}))


@check("EC83-01", needs=TICKET_RUNS, needs_if_present=(BOOKS,))
def no_ticket_missing(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """No number is skipped inside a book, and no book is left unfinished once a later one is started.

    Why: art. 83 — tickets lost or misused are owed at face value; a hole in a book is a levy not accounted for.
    Non-compliant: 0,10 € tickets 1-150 then 260-300 (151-259 missing: book 1-200 unfinished, 201-259 skipped).
    Compliant: 1-200 then 201-250; numbers below the carnet's first ticket are not missing.
    """
    led = ledger(carnet, profile)
    # Holes between used numbers, kept where they fall in a book this carnet draws from
    # (the ledger's `missing`, which the report's ticket section draws too).
    s, e, nxt = led.missing
    if len(s) == 0:
        return
    valeur = led.valeur(s)
    # "unfinished": the stretch runs to the end of its book and numbers resume in a later book.
    _, book_end = led.book_of(s)
    kind = np.where(e == book_end, "unfinished", np.where(e == s, "gap_one", "gap"))
    hit = led.located(led.covering(nxt), first=led.number(s), last=led.number(e), next=led.number(nxt),
                      valeur=valeur, impact=(e - s + 1) * valeur, kind=kind)
    yield from _emit(hit, lambda r: Violation(
        table="tickets", row=r["_row"], column="premier", seance=r["seance"], coup=r["coup"], kind=r["kind"],
        expected=str(r["first"]), found=str(r["next"]), impact_cents=r["impact"],
        params={"first": r["first"], "last": r["last"], "count": r["last"] - r["first"] + 1,
                "next": r["next"], "valeur_cents": r["valeur"]}))


@check("EC83-02", needs=TICKET_RUNS, needs_if_present=(BOOKS,))
def last_book_in_progress(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """Information: the last book of a value is still in progress at the end of the carnet.

    Why: art. 83 — the tickets left in the book in service must be found with it; the next carnet starts there.
    Non-compliant: 0,10 € tickets end at 250, in book 201-400 (150 remain).
    Compliant: 0,10 € tickets end at 400, the last of book 201-400.
    """
    led = ledger(carnet, profile)
    last, first, end = led.open_books
    if len(last) == 0:
        return
    valeur = led.valeur(last)
    hit = led.located(led.covering(last), last=led.number(last), book_first=led.number(first),
                      book_last=led.number(end), remaining=end - last, valeur=valeur)
    yield from _emit(hit, lambda r: Violation(
        table="tickets", row=r["_row"], column="dernier", seance=r["seance"], coup=r["coup"],
        expected=str(r["book_last"]), found=str(r["last"]),
        params={"last": r["last"], "book_first": r["book_first"], "book_last": r["book_last"],
                "remaining": r["remaining"], "valeur_cents": r["valeur"]}))
