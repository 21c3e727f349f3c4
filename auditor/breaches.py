"""Surgical breaches for generated carnets: each injector breaks one rule and
keeps the rest of the carnet intact, and says which codes the audit must then
give (sometimes a breach necessarily shows under two codes).

Used by `ecarte-audit generate --breaches`, the sample carnets, and the
metamorphic tests. Injectors work on the generator's tables (rows of Python
values, money in cents) and only touch simple coups.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Callable

Tables = dict[str, list[dict]]


class CannotInject(ValueError):
    """The carnet has no place where this breach can be made cleanly."""


def coup_rows(t: Tables, table: str, seance: int, coup: int) -> list[dict]:
    return [r for r in t[table] if r["seance"] == seance and r["coup"] == coup]


def simple_coups(t: Tables) -> list[dict]:
    return [c for c in t["coups"] if c["type"] == "simple"]


def pick(rng: random.Random, t: Tables, predicate: Callable[[dict, list[dict]], bool]) -> tuple[dict, list[dict]]:
    """A random simple coup (with its stakes) that satisfies `predicate`."""
    candidates = []
    for c in simple_coups(t):
        stakes = coup_rows(t, "mises", c["seance"], c["coup"])
        if predicate(c, stakes):
            candidates.append((c, stakes))
    if not candidates:
        raise CannotInject("no coup fits")
    return rng.choice(candidates)


def renumber_from(t: Tables, seance: int, first_coup: int, delta: int) -> None:
    """Shift coup numbers of a séance from `first_coup` on (coups, mises, tickets)."""
    for table in ("coups", "mises", "tickets"):
        for r in t[table]:
            if r["seance"] == seance and r["coup"] >= first_coup:
                r["coup"] += delta


def remove_ticket(t: Tables, seance: int, coup: int, value: int) -> None:
    """Take one ticket of `value` off a coup and close the gap it would leave in
    the series (later numbers of that value move down); the séance's counted
    cagnotte follows the stubs."""
    run = next(r for r in coup_rows(t, "tickets", seance, coup) if r["valeur"] == value)
    removed = run["dernier"]
    if run["dernier"] == run["premier"]:
        t["tickets"].remove(run)
    else:
        run["dernier"] -= 1
    for r in t["tickets"]:
        if r["valeur"] == value and r["premier"] > removed:
            r["premier"] -= 1
            r["dernier"] -= 1
    for s in t["seances"]:
        if s["seance"] == seance and s.get("cagnotte") is not None:
            s["cagnotte"] -= value


def _seance(t: Tables, number: int) -> dict:
    return next(s for s in t["seances"] if s["seance"] == number)


# -- injectors: each returns the set of codes the audit must give ------------

def coup_gap(t, rng):
    c, _ = pick(rng, t, lambda c, s: c["coup"] > 1)
    renumber_from(t, c["seance"], c["coup"], +1)
    return {"EC64-01"}


def rank_gap(t, rng):
    c, stakes = pick(rng, t, lambda c, s: len(s) >= 3)
    for m in stakes[-1:]:
        m["rang"] += 1
    return {"EC64-02"}


def stake_not_multiple(t, rng):
    _, stakes = pick(rng, t, lambda c, s: any(0 < m["restitue"] < m["montant"] for m in s))
    m = next(m for m in stakes if 0 < m["restitue"] < m["montant"])
    m["montant"] += 5   # the held amount stays the same: only the 0,10 € rule breaks
    m["restitue"] += 5
    return {"EC63-01"}


def zero_stake(t, rng):
    _, stakes = pick(rng, t, lambda c, s: any(m["restitue"] == m["montant"] for m in s))
    m = next(m for m in stakes if m["restitue"] == m["montant"])
    m["montant"] = m["restitue"] = 0
    return {"EC63-02"}


def wrong_total(t, rng):
    c, _ = pick(rng, t, lambda c, s: bool(s))
    c["total_a"] += 1000
    return {"EC64-03"}


def unequal_masses(t, rng):
    # The heavier side loses, so the winning mass (and the levy) is unchanged.
    def fits(c, s):
        back = [m for m in s if m["restitue"]]
        return bool(back) and c["gagnant"] != back[0]["cote"]
    c, stakes = pick(rng, t, fits)
    for m in stakes:
        m["restitue"] = 0
    return {"EC64-03", "EC64-04"}


def excess_to_wrong_bettor(t, rng):
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


def cover_without_table(t, rng):
    t["carnet"][0]["table"] = None
    return {"EC64-06", "EC00-02"}


def wrong_stamp(t, rng):
    s = rng.choice(t["seances"])
    s["timbre"] = s["date"] + dt.timedelta(days=1)
    return {"EC64-07"}


def backdated_seance(t, rng):
    if len(t["seances"]) < 2:
        raise CannotInject("needs two séances")
    ordered = sorted(t["seances"], key=lambda s: s["seance"])
    late = ordered[-1]
    new_day = ordered[-2]["date"] - dt.timedelta(days=1)
    late["date"] = late["timbre"] = new_day
    for f in t.get("fiches", []):
        if f["seance"] == late["seance"]:
            f["date"] = new_day
    return {"EC64-08"}


def coup_without_stakes(t, rng):
    c, stakes = pick(rng, t, lambda c, s: bool(s))
    for m in stakes:
        t["mises"].remove(m)
    return {"EC64-09"}


def short_levy(t, rng):
    c, _ = pick(rng, t, lambda c, s: c["prelevement"] % 100 >= 10)
    c["prelevement"] -= 10
    remove_ticket(t, c["seance"], c["coup"], 10)
    return {"EC66-01"}


def missing_ticket(t, rng):
    c, _ = pick(rng, t, lambda c, s: c["prelevement"] % 100 >= 10)
    remove_ticket(t, c["seance"], c["coup"], 10)
    return {"EC661-01"}


def unreadable_amount(t, rng):
    _, stakes = pick(rng, t, lambda c, s: bool(s))
    stakes[0]["montant"] = "12,555"
    return {"EC00-02"}


def orphan_stake(t, rng):
    seance = rng.choice(t["seances"])["seance"]
    last = max((c["coup"] for c in t["coups"] if c["seance"] == seance), default=0)
    t["mises"].append({"seance": seance, "coup": last + 1, "rang": 1, "fiche": 1, "cote": "a",
                       "montant": 500, "restitue": 0})
    return {"EC00-03"}


INJECTORS: dict[str, Callable[[Tables, random.Random], set[str]]] = {
    "EC00-02": unreadable_amount,
    "EC00-03": orphan_stake,
    "EC63-01": stake_not_multiple,
    "EC63-02": zero_stake,
    "EC64-01": coup_gap,
    "EC64-02": rank_gap,
    "EC64-03": wrong_total,
    "EC64-04": unequal_masses,
    "EC64-05": excess_to_wrong_bettor,
    "EC64-06": cover_without_table,
    "EC64-07": wrong_stamp,
    "EC64-08": backdated_seance,
    "EC64-09": coup_without_stakes,
    "EC66-01": short_levy,
    "EC661-01": missing_ticket,
}


def inject(tables: Tables, codes: list[str], seed: int = 0) -> set[str]:
    """Break each rule of `codes` once; return every code the audit must give."""
    rng = random.Random(seed)
    unknown = [c for c in codes if c not in INJECTORS]
    if unknown:
        raise CannotInject(f"no injector for {', '.join(unknown)} (available: {', '.join(sorted(INJECTORS))})")
    expected: set[str] = set()
    for code in codes:
        expected |= INJECTORS[code](tables, rng)
    return expected
