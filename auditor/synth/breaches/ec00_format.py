"""Breaches of the EC00 rules: a cell that cannot be read, a stake of a coup that does not exist."""

from __future__ import annotations

from auditor.synth.breaches.registry import injector
from auditor.synth.breaches.tables import pick


@injector("EC00-02")
def unreadable_amount(t, rng):
    """A stake's amount written with three decimals, which cannot be read (EC00-02)."""
    _, stakes = pick(rng, t, lambda c, s: bool(s))
    stakes[0]["montant"] = "12,555"
    return {"EC00-02"}


@injector("EC00-03")
def orphan_stake(t, rng):
    """A stake of a coup the séance does not have (EC00-03)."""
    seance = rng.choice(t["seances"])["seance"]
    last = max((c["coup"] for c in t["coups"] if c["seance"] == seance), default=0)
    t["mises"].append({"seance": seance, "coup": last + 1, "rang": 1, "fiche": 1, "cote": "a",
                       "montant": 500, "restitue": 0})
    return {"EC00-03"}
