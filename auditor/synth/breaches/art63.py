"""Breaches of article 63: stakes (step, minimum), fiches, card holders, decks."""

from __future__ import annotations

from auditor.synth.breaches.registry import CannotInject, injector
from auditor.synth.breaches.tables import card_holders, fiche_row, pick


@injector("EC63-01")
def stake_not_multiple(t, rng):
    """A stake of 0,05 € more, returned too, so only the 0,10 € step breaks (EC63-01)."""
    _, stakes = pick(rng, t, lambda c, s: any(0 < m["restitue"] < m["montant"] for m in s))
    m = next(m for m in stakes if 0 < m["restitue"] < m["montant"])
    m["montant"] += 5   # the held amount stays the same: only the 0,10 € rule breaks
    m["restitue"] += 5
    return {"EC63-01"}


@injector("EC63-02")
def zero_stake(t, rng):
    """A stake returned in full becomes a stake of 0 (EC63-02)."""
    _, stakes = pick(rng, t, lambda c, s: any(m["restitue"] == m["montant"] for m in s))
    m = next(m for m in stakes if m["restitue"] == m["montant"])
    m["montant"] = m["restitue"] = 0
    return {"EC63-02"}


@injector("EC63-03")
def unregistered_fiche(t, rng):
    """A stake under a fiche number the séance's register does not hold (EC63-03)."""
    _, stakes = pick(rng, t, lambda c, s: bool(s))
    m = rng.choice(stakes)
    m["fiche"] = max(f["fiche"] for f in t["fiches"] if f["seance"] == m["seance"]) + 1
    return {"EC63-03"}


@injector("EC63-04")
def holder_without_rank(t, rng):
    """The last card holder of a séance loses his rank in the call order (EC63-04)."""
    seances = [s["seance"] for s in t["seances"] if card_holders(t, s["seance"])]
    if not seances or not t.get("fiches"):
        raise CannotInject("no card holder")
    seance = rng.choice(seances)
    fiche_row(t, seance, card_holders(t, seance)[-1][0])["tenir_cartes"] = None
    return {"EC63-04"}


@injector("EC63-05")
def loser_keeps_cards(t, rng):
    """A coup's result is swapped, so the player who stays at the table is the loser (EC63-05)."""
    # The winner of a simple coup who stays is recorded as the loser instead
    # (equal masses: the levy does not change).
    def fits(c, s):
        nxt = [n for n in t["coups"] if n["seance"] == c["seance"] and n["coup"] == c["coup"] + 1]
        if not nxt or c["gagnant"] not in ("a", "b"):
            return False
        stayer = c["joueur_a"] if c["gagnant"] == "a" else c["joueur_b"]
        return stayer in (nxt[0]["joueur_a"], nxt[0]["joueur_b"])
    c, _ = pick(rng, t, fits)
    c["gagnant"] = "b" if c["gagnant"] == "a" else "a"
    return {"EC63-05"}


@injector("EC63-06")
def holders_out_of_order(t, rng):
    """Two newcomers who take the cards at different coups swap their ranks (EC63-06)."""
    # Two newcomers who take the cards at different coups swap their inscription ranks.
    options = [(s["seance"], p, q) for s in t["seances"] for h in [card_holders(t, s["seance"])]
               for (p, cp), (q, cq) in zip(h, h[1:]) if cp < cq]
    if not options or not t.get("fiches"):
        raise CannotInject("no two newcomers at different coups")
    seance, p, q = rng.choice(options)
    first, second = fiche_row(t, seance, p), fiche_row(t, seance, q)
    if first["tenir_cartes"] is None or second["tenir_cartes"] is None:
        raise CannotInject("card holder without rank")
    first["tenir_cartes"], second["tenir_cartes"] = second["tenir_cartes"], first["tenir_cartes"]
    return {"EC63-06"}


@injector("EC63-07")
def two_decks_only(t, rng):
    """A séance records two decks instead of three (EC63-07)."""
    s = rng.choice(t["seances"])
    s["jeux"] = " ".join(str(s["jeux"]).split()[:2])
    return {"EC63-07"}


@injector("EC63-08")
def fiche_number_gap(t, rng):
    """A fiche numbered two past the séance's last one, leaving a gap (EC63-08)."""
    if not t.get("fiches"):
        raise CannotInject("no fiches")
    s = rng.choice(t["seances"])
    top = max(f["fiche"] for f in t["fiches"] if f["seance"] == s["seance"])
    t["fiches"].append({"seance": s["seance"], "fiche": top + 2, "date": s["date"], "tenir_cartes": None})
    return {"EC63-08"}
