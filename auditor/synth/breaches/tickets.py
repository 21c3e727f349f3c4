"""Breaches of articles 56-1, 59, 82 and 83: the ticket series, the books and the cagnotte."""

from __future__ import annotations

import datetime as dt

from auditor.synth.breaches.registry import CannotInject, injector
from auditor.synth.breaches.tables import (
    add_tickets, all_minimal, coup_rows, phase_amount, phase_key, phase_tickets, regulation_profile,
    seance_values, simple_coups, sync_books, take_tickets, ticket_count, ticket_rows, try_each)


@injector("EC561-01")
def book_put_in_service_late(t, rng):
    """A book in use is put in service the day after its last ticket (EC561-01)."""
    size = regulation_profile().book_size
    day_of = {s["seance"]: s["date"] for s in t["seances"]}
    options = []
    for b in t.get("carnets_tickets", []):
        days = [day_of[r["seance"]] for r in t["tickets"] if r["valeur"] == b["valeur"]
                and r["premier"] < b["premier"] + size and r["dernier"] >= b["premier"]]
        if days:
            options.append((b, max(days)))
    if not options:
        raise CannotInject("no book in use")
    b, last = rng.choice(options)
    b["mise_en_service"] = last + dt.timedelta(days=1)
    return {"EC561-01"}


@injector("EC561-02")
def tickets_backwards(t, rng):
    """Two runs of one value swap their numbers, so the series goes back (EC561-02)."""
    options = []
    for v in sorted({r["valeur"] for r in t["tickets"]}):
        rows = ticket_rows(t, v)
        options += [(rows[k - 1], rows[k]) for k in range(1, len(rows))
                    if (rows[k - 1]["seance"], rows[k - 1]["coup"]) != (rows[k]["seance"], rows[k]["coup"])]
    if not options:
        raise CannotInject("no two coups with tickets of one value")
    r1, r2 = rng.choice(options)
    n1, n2 = r1["dernier"] - r1["premier"] + 1, r2["dernier"] - r2["premier"] + 1
    start = r1["premier"]
    r2["premier"], r2["dernier"] = start, start + n2 - 1
    r1["premier"], r1["dernier"] = start + n2, start + n2 + n1 - 1
    return {"EC561-02"}


@injector("EC561-03")
def cagnotte_miscounted(t, rng):
    """A séance's counted cagnotte is 0,10 € short of its tickets (EC561-03)."""
    s = rng.choice([s for s in t["seances"] if s.get("cagnotte") is not None] or [None])
    if s is None:
        raise CannotInject("no cagnotte")
    s["cagnotte"] -= 10
    return {"EC561-03"}


@injector("EC59-01")
def fourth_ticket_value(t, rng):
    """A séance uses a fourth ticket value (EC59-01)."""
    # Two big stakes at the head of a simple coup (one per side): the mass grows so that
    # the levy grows by the ticket values the séance does not use yet, detached at that coup.
    profile = regulation_profile()

    def attempt(t, option):
        (c,) = option
        missing = [v for v in profile.ticket_values_cents if v not in seance_values(t, c["seance"])]
        need = profile.max_ticket_values_per_seance + 1 - len(seance_values(t, c["seance"]))
        if need <= 0 or len(missing) < need:
            return False
        add = sorted(missing)[-need:]
        extra = sum(add) * 20
        mass = c["total_a"]
        if profile.levy(mass + extra) != profile.levy(mass) + sum(add):
            return False
        stakes = coup_rows(t, "mises", c["seance"], c["coup"])
        fiche = stakes[0]["fiche"]
        for m in stakes:
            m["rang"] += 2
        at = t["mises"].index(stakes[0])
        t["mises"][at:at] = [{"seance": c["seance"], "coup": c["coup"], "rang": r, "fiche": fiche, "cote": side,
                              "montant": extra, "restitue": 0} for r, side in ((1, "a"), (2, "b"))]
        c["total_a"] += extra
        c["total_b"] += extra
        c["prelevement"] += sum(add)
        for v in add:
            add_tickets(t, c["seance"], c["coup"], "avant", v, 1)
        return all_minimal(t, c["seance"])

    try_each(t, rng, [(c["seance"], c["coup"]) for c in simple_coups(t)
                       if coup_rows(t, "mises", c["seance"], c["coup"])], attempt)
    return {"EC59-01"}


@injector("EC82-01")
def odd_ticket_value(t, rng):
    """A levy paid with one ticket of a value outside the regulation (EC82-01)."""
    # The levy of a coup paid with one ticket of a value outside the regulation (its
    # amount exactly), in a séance with room for one more value.
    profile = regulation_profile()

    def attempt(t, option):
        c, phase = option
        amount = phase_amount(t, c["seance"], c["coup"], phase)
        if amount in profile.ticket_values_cents or amount % 10:
            return False
        if len(seance_values(t, c["seance"])) >= profile.max_ticket_values_per_seance:
            return False
        for r in phase_tickets(t, c["seance"], c["coup"], phase):
            take_tickets(t, c["seance"], c["coup"], phase, r["valeur"], r["dernier"] - r["premier"] + 1)
        add_tickets(t, c["seance"], c["coup"], phase, amount, 1)
        return all_minimal(t, c["seance"])

    try_each(t, rng, [(c["seance"], c["coup"], p) for c in t["coups"] for p in ("avant", "apres")
                       if phase_amount(t, c["seance"], c["coup"], p) > 0], attempt)
    return {"EC82-01"}


@injector("EC82-02")
def ticket_number_too_high(t, rng):
    """A value's series ends past the highest ticket number (EC82-02)."""
    top = regulation_profile().ticket_number_max
    options = [v for v in sorted({r["valeur"] for r in t["tickets"]}) if ticket_count(ticket_rows(t, v)) >= 2]
    if not options:
        raise CannotInject("no series")
    value = rng.choice(options)
    rows = ticket_rows(t, value)
    shift = top + 1 - rows[-1]["dernier"]     # the last ticket of the series is numbered top + 1
    for r in rows:
        r["premier"] += shift
        r["dernier"] += shift
    # Its books are registered afresh where the numbers now are.
    t["carnets_tickets"] = [b for b in t.get("carnets_tickets", []) if b["valeur"] != value]
    sync_books(t)
    return {"EC82-02"}


@injector("EC82-03")
def ticket_reused(t, rng):
    """A ticket detached again at a later coup (EC82-03)."""
    # A ticket is detached again at a later coup instead of the next one of the series.
    options = []
    for v in sorted({r["valeur"] for r in t["tickets"]}):
        rows = ticket_rows(t, v)
        options += [(rows, k) for k in range(1, len(rows))
                    if rows[k]["premier"] == rows[k]["dernier"] and phase_key(rows[k]) != phase_key(rows[k - 1])]
    if not options:
        raise CannotInject("no single ticket to reuse")
    rows, k = rng.choice(options)
    for r in rows[k:]:
        r["premier"] -= 1
        r["dernier"] -= 1
    return {"EC82-03"}


@injector("EC83-01")
def ticket_skipped(t, rng):
    """A ticket number skipped in a value's series (EC83-01)."""
    options = [(v, rows) for v in sorted({r["valeur"] for r in t["tickets"]})
               for rows in [ticket_rows(t, v)] if len(rows) >= 2]
    if not options:
        raise CannotInject("no series")
    value, rows = rng.choice(options)
    k = rng.randrange(1, len(rows))
    for r in rows[k:]:
        r["premier"] += 1
        r["dernier"] += 1
    sync_books(t)
    return {"EC83-01"}


@injector("EC83-03")
def unsigned_book(t, rng):
    """A book in use is not paraphed (EC83-03)."""
    used = {r["valeur"] for r in t["tickets"]}
    size = regulation_profile().book_size
    books = [b for b in t.get("carnets_tickets", []) if any(
        r["valeur"] == b["valeur"] and r["premier"] < b["premier"] + size and r["dernier"] >= b["premier"]
        for r in t["tickets"])]
    if not books or not used:
        raise CannotInject("no book in use")
    rng.choice(books)["paraphe"] = "non"
    return {"EC83-03"}
