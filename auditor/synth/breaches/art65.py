"""Breaches of article 65: the chouette (adjudication, remise, saute, pontes on its side, en dehors).

They need a carnet generated with `Spec(chouette=True)` and raise
`CannotInject` without a chouette coup."""

from __future__ import annotations

from auditor.synth.breaches.registry import injector
from auditor.synth.breaches.tables import (
    in_run, later_in_run, pick_chouette, regulation_profile, set_event, set_levy)


@injector("EC65-01")
def run_without_adjudication(t, rng):
    """The first coup of a chouette run loses its adjudication (EC65-01)."""
    c, _ = pick_chouette(rng, t, lambda c, s: c["evenement"] == "adjudication" and not in_run(t, c))
    set_event(t, c, None)
    return {"EC65-01"}


@injector("EC65-02")
def remise_without_saute(t, rng):
    """A remise recorded inside a run where the chouette has not sauté (EC65-02)."""
    c, _ = pick_chouette(rng, t, lambda c, s: c["evenement"] is None and in_run(t, c))
    set_event(t, c, "remise")
    return {"EC65-02"}


@injector("EC65-03")
def goes_on_after_saute(t, rng):
    """A chouette goes on after a saute without its remise or new auction (EC65-03)."""
    # A remise after a saute left unrecorded (or, failing one, a new auction by the same
    # chouetteur not followed by a remise, which would then be a second one): the levy on
    # the chouette goes with the event.
    def fits(c, s):
        if not in_run(t, c):
            return False
        if c["evenement"] == "adjudication":
            return not any(n["evenement"] == "remise" for n in later_in_run(t, c))
        return c["evenement"] == "remise"
    c, _ = pick_chouette(rng, t, fits)
    set_event(t, c, None)
    return {"EC65-03"}


@injector("EC65-04")
def ponte_on_chouette_side(t, rng):
    """A ponte stakes on the chouette side while the chouette holds less than its amount (EC65-04)."""
    # A ponte stakes on the chouette side although the chouette does not hold all of it;
    # totals, en dehors and both levies are recorded as they then are.
    levy = regulation_profile().levy

    def fits(c, s):
        held_b = sum(m["montant"] - m["restitue"] for m in s if m["cote"] == "b")
        return not any(m["cote"] == "a" for m in s) and 100 < held_b < c["chouette"]
    c, stakes = pick_chouette(rng, t, fits)
    t["mises"].insert(t["mises"].index(stakes[-1]) + 1,
                      {"seance": c["seance"], "coup": c["coup"], "rang": len(stakes) + 1, "fiche": stakes[-1]["fiche"],
                       "cote": "a", "montant": 100, "restitue": 0})
    held_b = c["total_b"]
    sur = held_b - 100
    c["en_dehors"] = 100
    c["total_a"] = sur + 100
    set_levy(t, c, "prelevement", levy(100) + (levy(c["chouette"]) if c["evenement"] else 0))
    set_levy(t, c, "prelevement_apres", levy(sur) if c["gagnant"] == "b" else 0)
    return {"EC65-04"}


@injector("EC65-05")
def wrong_en_dehors(t, rng):
    """A chouette coup's recorded en dehors is 10,00 € more than its stakes hold (EC65-05)."""
    c, _ = pick_chouette(rng, t, lambda c, s: True)
    c["en_dehors"] = (c["en_dehors"] or 0) + 1000
    return {"EC65-05"}
