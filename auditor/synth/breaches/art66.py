"""Breaches of articles 66 and 66-1: the levy and the tickets that represent it."""

from __future__ import annotations

from auditor.synth.breaches.registry import CannotInject, injector
from auditor.synth.breaches.tables import (
    add_tickets, phase_tickets, pick, pick_chouette, remove_ticket, seance_values, set_levy,
    take_tickets)


@injector("EC66-01")
def short_levy(t, rng):
    """A simple coup's levy is 0,10 € short, and one 0,10 € ticket with it (EC66-01)."""
    c, _ = pick(rng, t, lambda c, s: c["prelevement"] % 100 >= 10)
    c["prelevement"] -= 10
    remove_ticket(t, c["seance"], c["coup"], 10)
    return {"EC66-01"}


@injector("EC66-02")
def short_levy_after(t, rng):
    """A chouette coup's levy after the result is 0,10 € short (EC66-02)."""
    c, _ = pick_chouette(rng, t, lambda c, s: c["prelevement_apres"] >= 10)
    set_levy(t, c, "prelevement_apres", c["prelevement_apres"] - 10)
    return {"EC66-02"}


@injector("EC661-01")
def missing_ticket(t, rng):
    """A 0,10 € ticket of a coup is taken off while its levy stays (EC661-01)."""
    c, _ = pick(rng, t, lambda c, s: c["prelevement"] % 100 >= 10)
    remove_ticket(t, c["seance"], c["coup"], 10)
    return {"EC661-01"}


@injector("EC661-02")
def too_many_tickets(t, rng):
    """A 1 € ticket paid as ten 0,10 € tickets (EC661-02)."""
    # A 1 € ticket paid as ten 0,10 € tickets, in a séance that uses 1 € tickets elsewhere.
    options = []
    for c in t["coups"]:
        for phase in ("avant", "apres"):
            rows = phase_tickets(t, c["seance"], c["coup"], phase)
            if any(r["valeur"] == 100 for r in rows) and 10 in seance_values(t, c["seance"]):
                ones = sum(r["dernier"] - r["premier"] + 1 for r in t["tickets"]
                           if r["seance"] == c["seance"] and r["valeur"] == 100)
                if ones >= 2:
                    options.append((c, phase))
    if not options:
        raise CannotInject("no 1 € ticket to split")
    c, phase = rng.choice(options)
    take_tickets(t, c["seance"], c["coup"], phase, 100, 1)
    add_tickets(t, c["seance"], c["coup"], phase, 10, 10)
    return {"EC661-02"}
