"""Breaches of article 64: numbering, totals and masses, the excess, the cover and the séances."""

from __future__ import annotations

import datetime as dt

from auditor.synth.breaches.registry import CannotInject, injector
from auditor.synth.breaches.tables import pick, renumber_from, sync_books


@injector("EC64-01")
def coup_gap(t, rng):
    """The coup numbers of a séance jump by one from some coup on (EC64-01)."""
    c, _ = pick(rng, t, lambda c, s: c["coup"] > 1)
    renumber_from(t, c["seance"], c["coup"], +1)
    return {"EC64-01"}


@injector("EC64-02")
def rank_gap(t, rng):
    """The last stake of a coup skips a rank (EC64-02)."""
    c, stakes = pick(rng, t, lambda c, s: len(s) >= 3)
    for m in stakes[-1:]:
        m["rang"] += 1
    return {"EC64-02"}


@injector("EC64-03")
def wrong_total(t, rng):
    """A simple coup's total for side a is 10,00 € too high (EC64-03)."""
    c, _ = pick(rng, t, lambda c, s: bool(s))
    c["total_a"] += 1000
    return {"EC64-03"}


@injector("EC64-04")
def unequal_masses(t, rng):
    """The excess of a coup is not returned: masses unequal, totals wrong (EC64-03, EC64-04)."""
    # The heavier side loses, so the winning mass (and the levy) is unchanged.
    def fits(c, s):
        back = [m for m in s if m["restitue"]]
        return bool(back) and c["gagnant"] != back[0]["cote"]
    c, stakes = pick(rng, t, fits)
    for m in stakes:
        m["restitue"] = 0
    return {"EC64-03", "EC64-04"}


@injector("EC64-05")
def excess_to_wrong_bettor(t, rng):
    """The excess is returned to an earlier bettor of the side instead of the last (EC64-05)."""
    def fits(c, s):
        back = [m for m in s if m["restitue"]]
        if len(back) != 1:
            return False
        return any(m["cote"] == back[0]["cote"] and m["rang"] < back[0]["rang"] and not m["restitue"]
                   and m["montant"] > back[0]["restitue"] for m in s)
    _, stakes = pick(rng, t, fits)
    last = next(m for m in stakes if m["restitue"])
    early = next(m for m in stakes if m["cote"] == last["cote"] and m["rang"] < last["rang"]
                 and not m["restitue"] and m["montant"] > last["restitue"])
    early["restitue"], last["restitue"] = last["restitue"], 0
    return {"EC64-05"}


@injector("EC64-06")
def cover_without_table(t, rng):
    """The cover loses its table number (EC64-06, and the empty cell is EC00-02)."""
    t["carnet"][0]["table"] = None
    return {"EC64-06", "EC00-02"}


@injector("EC64-07")
def wrong_stamp(t, rng):
    """A séance's date stamp is a day after its date (EC64-07)."""
    s = rng.choice(t["seances"])
    s["timbre"] = s["date"] + dt.timedelta(days=1)
    return {"EC64-07"}


@injector("EC64-08")
def backdated_seance(t, rng):
    """The last séance is dated the day before the one it follows (EC64-08)."""
    ordered = sorted(t["seances"], key=lambda s: s["seance"])
    if len(ordered) < 2:
        raise CannotInject("needs two séances")
    late = ordered[-1]
    new_day = ordered[-2]["date"] - dt.timedelta(days=1)
    if new_day < t["carnet"][0]["date_debut"]:
        raise CannotInject("would also predate the cover (EC64-06)")
    late["date"] = late["timbre"] = new_day
    for f in t.get("fiches", []):
        if f["seance"] == late["seance"]:
            f["date"] = new_day
    sync_books(t)  # its books were put in service no later than its first ticket
    return {"EC64-08"}


@injector("EC64-09")
def coup_without_stakes(t, rng):
    """Every stake of a coup is taken out (EC64-09)."""
    c, stakes = pick(rng, t, lambda c, s: bool(s))
    for m in stakes:
        t["mises"].remove(m)
    return {"EC64-09"}
