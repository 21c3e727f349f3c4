"""What the breach injectors share: finding a coup that fits, renumbering, and
changing tickets while keeping each value's series uninterrupted, the books
registered and the cagnotte counted (`add_tickets`, `take_tickets`, `retick`).

Injectors work on the generator's tables: rows of Python values, money in cents.
"""

from __future__ import annotations

import random
from typing import Callable

from auditor.synth.breaches.registry import CannotInject, Tables


def coup_rows(t: Tables, table: str, seance: int, coup: int) -> list[dict]:
    """The rows of `table` (mises, tickets) that belong to one coup."""
    return [r for r in t[table] if r["seance"] == seance and r["coup"] == coup]


def simple_coups(t: Tables) -> list[dict]:
    """The simple (not chouette) coups."""
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
    drop_last_ticket(t, run, seance)


def drop_last_ticket(t: Tables, run: dict, seance: int) -> None:
    """Drop a run's last ticket, move the value's later numbers down one, and
    take its face value off the séance's cagnotte."""
    value, removed = run["valeur"], run["dernier"]
    if run["dernier"] == run["premier"]:
        t["tickets"].remove(run)
    else:
        run["dernier"] -= 1
    for r in t["tickets"]:
        if r["valeur"] == value and r["premier"] > removed:
            r["premier"] -= 1
            r["dernier"] -= 1
    adjust_cagnotte(t, seance, -value)


def regulation_profile():
    """The regulation profile the generated carnet follows (values, book size, levy)."""
    from auditor.catalogue import load_profile
    return load_profile()


def phase_key(r: dict) -> tuple:
    """Where a ticket row sits in carnet order: séance, coup, avant before après."""
    return (r["seance"], r["coup"], r["phase"] != "avant")


def adjust_cagnotte(t: Tables, seance: int, delta: int) -> None:
    """Add `delta` cents to a séance's counted cagnotte (when it has one)."""
    for s in t["seances"]:
        if s["seance"] == seance and s.get("cagnotte") is not None:
            s["cagnotte"] += delta


def phase_tickets(t: Tables, seance: int, coup: int, phase: str) -> list[dict]:
    """The ticket rows of one coup and phase."""
    return [r for r in t["tickets"] if r["seance"] == seance and r["coup"] == coup and r["phase"] == phase]


def seance_values(t: Tables, seance: int) -> set[int]:
    """The ticket values a séance uses."""
    return {r["valeur"] for r in t["tickets"] if r["seance"] == seance}


def add_tickets(t: Tables, seance: int, coup: int, phase: str, value: int, count: int) -> None:
    """Detach `count` more tickets of `value` at a coup and phase, in series order:
    later tickets of that value move up; books and the cagnotte follow."""
    if count <= 0:
        return
    here = (seance, coup, phase != "avant")
    rows = [r for r in t["tickets"] if r["valeur"] == value]
    before = [r for r in rows if phase_key(r) <= here]
    if before:
        last = max(before, key=lambda r: (phase_key(r), r["dernier"]))
        start = last["dernier"] + 1
    else:
        last = None
        start = min((r["premier"] for r in rows), default=1)
    for r in rows:
        if r["premier"] >= start:
            r["premier"] += count
            r["dernier"] += count
    if last is not None and phase_key(last) == here:
        last["dernier"] += count
    else:
        at = max((i + 1 for i, r in enumerate(t["tickets"]) if phase_key(r) <= here), default=0)
        t["tickets"].insert(at, {"seance": seance, "coup": coup, "phase": phase, "valeur": value,
                                 "premier": start, "dernier": start + count - 1})
    adjust_cagnotte(t, seance, value * count)
    sync_books(t)


def take_tickets(t: Tables, seance: int, coup: int, phase: str, value: int, count: int) -> None:
    """Take `count` tickets of `value` off a coup and phase, closing the gaps."""
    for _ in range(count):
        run = [r for r in phase_tickets(t, seance, coup, phase) if r["valeur"] == value][-1]
        drop_last_ticket(t, run, seance)


def retick(t: Tables, seance: int, coup: int, phase: str, amount: int) -> None:
    """Make the tickets of a coup and phase the fewest that give `amount`."""
    from auditor.synth.generate import split_levy
    values = [v for v in regulation_profile().ticket_values_cents if v <= 1000][:3]
    want = dict(split_levy(amount, values))
    have: dict[int, int] = {}
    for r in phase_tickets(t, seance, coup, phase):
        have[r["valeur"]] = have.get(r["valeur"], 0) + r["dernier"] - r["premier"] + 1
    for v in set(want) | set(have):
        delta = want.get(v, 0) - have.get(v, 0)
        if delta > 0:
            add_tickets(t, seance, coup, phase, v, delta)
        elif delta < 0:
            take_tickets(t, seance, coup, phase, v, -delta)


def sync_books(t: Tables) -> None:
    """Register the (aligned) books the tickets now reach into, each in service by
    the day of its first ticket."""
    if "carnets_tickets" not in t:
        return
    size = regulation_profile().book_size
    first_day = min((s["date"] for s in t["seances"]), default=None)
    day_of = {s["seance"]: s["date"] for s in t["seances"]}
    for b in t["carnets_tickets"]:
        days = [day_of[r["seance"]] for r in t["tickets"] if r["valeur"] == b["valeur"] and r["seance"] in day_of
                and r["premier"] < b["premier"] + size and r["dernier"] >= b["premier"]]
        if days and b["mise_en_service"] is not None and min(days) < b["mise_en_service"]:
            b["mise_en_service"] = min(days)
    for value in sorted({r["valeur"] for r in t["tickets"]}):
        books = [b for b in t["carnets_tickets"] if b["valeur"] == value]
        known = {b["premier"] for b in books}
        day = min((b["mise_en_service"] for b in books), default=first_day)
        for r in t["tickets"]:
            if r["valeur"] != value or r["dernier"] < r["premier"]:
                continue
            for book in range((r["premier"] - 1) // size * size + 1, r["dernier"] + 1, size):
                if book not in known:
                    known.add(book)
                    t["carnets_tickets"].append({"valeur": value, "premier": book, "mise_en_service": day,
                                                 "paraphe": "oui"})


def ticket_rows(t: Tables, value: int) -> list[dict]:
    """The rows of one value in carnet order."""
    idx = {id(r): i for i, r in enumerate(t["tickets"])}
    return sorted((r for r in t["tickets"] if r["valeur"] == value), key=lambda r: (phase_key(r), idx[id(r)]))


def ticket_count(rows) -> int:
    """How many tickets the runs `rows` hold."""
    return sum(r["dernier"] - r["premier"] + 1 for r in rows)


def fewest_ticket_count(amount: int, values) -> int | None:
    """Fewest tickets of `values` making `amount` (any set of values)."""
    best = [0] + [None] * amount
    for a in range(1, amount + 1):
        options = [best[a - v] for v in values if v <= a and best[a - v] is not None]
        best[a] = min(options) + 1 if options else None
    return best[amount]


def all_minimal(t: Tables, seance: int) -> bool:
    """Every coup and phase of the séance pays its levy with the fewest tickets."""
    values = seance_values(t, seance)
    by_phase: dict[tuple, list[dict]] = {}
    for r in t["tickets"]:
        if r["seance"] == seance:
            by_phase.setdefault(phase_key(r), []).append(r)
    return all(ticket_count(rows) == fewest_ticket_count(sum(r["valeur"] * (r["dernier"] - r["premier"] + 1)
                                                             for r in rows), values)
               for rows in by_phase.values())


def card_holders(t: Tables, seance: int) -> list[tuple[int, int]]:
    """Called players of a séance (not chouetteurs), each with the coup where he first
    holds the cards, in that order."""
    chouetteurs = {c["joueur_a"] for c in t["coups"] if c["seance"] == seance and c["type"] == "chouette"}
    seen: dict[int, int] = {}
    for c in sorted((c for c in t["coups"] if c["seance"] == seance), key=lambda c: c["coup"]):
        for p in (c["joueur_a"], c["joueur_b"]):
            if p is not None and p not in chouetteurs and p not in seen:
                seen[p] = c["coup"]
    return list(seen.items())


def fiche_row(t: Tables, seance: int, number: int) -> dict:
    """The register row of a séance's fiche."""
    return next(f for f in t["fiches"] if f["seance"] == seance and f["fiche"] == number)


def try_each(t: Tables, rng: random.Random, options: list, attempt: Callable[[Tables, object], bool]) -> None:
    """Apply `attempt` to a copy for each option in random order; keep the first that
    reports a clean breach (True). Options are (séance, coup, …) keys: `attempt` gets
    the copy's coup in their place."""
    import copy
    options = list(options)
    rng.shuffle(options)
    for seance, number, *rest in options:
        trial = copy.deepcopy(t)
        if attempt(trial, (coup_row(trial, seance, number), *rest)):
            t.clear()
            t.update(trial)
            return
    raise CannotInject("no place fits")


def coup_row(t: Tables, seance: int, number: int) -> dict | None:
    """The coup of that séance and number, or None."""
    return next((c for c in t["coups"] if c["seance"] == seance and c["coup"] == number), None)


def phase_amount(t: Tables, seance: int, coup: int, phase: str) -> int:
    """The face value of the tickets of one coup and phase."""
    return sum(r["valeur"] * (r["dernier"] - r["premier"] + 1) for r in phase_tickets(t, seance, coup, phase))


def chouette_coups(t: Tables) -> list[dict]:
    """The chouette coups."""
    return [c for c in t["coups"] if c["type"] == "chouette"]


def in_run(t: Tables, c: dict) -> bool:
    """The coup continues the chouette run of the coup before it."""
    prev = coup_row(t, c["seance"], c["coup"] - 1)
    return prev is not None and prev["type"] == "chouette" and prev["joueur_a"] == c["joueur_a"]


def pick_chouette(rng: random.Random, t: Tables, predicate: Callable[[dict, list[dict]], bool]) -> tuple[dict, list[dict]]:
    """A random chouette coup (with its stakes) that satisfies `predicate`."""
    if not chouette_coups(t):
        raise CannotInject("no chouette coup")
    candidates = []
    for c in chouette_coups(t):
        stakes = coup_rows(t, "mises", c["seance"], c["coup"])
        if stakes and predicate(c, stakes):
            candidates.append((c, stakes))
    if not candidates:
        raise CannotInject("no chouette coup fits")
    return rng.choice(candidates)


def set_levy(t: Tables, c: dict, column: str, amount: int) -> None:
    """Record a coup's levy for a phase and give it the tickets that represent it."""
    c[column] = amount
    retick(t, c["seance"], c["coup"], "avant" if column == "prelevement" else "apres", amount)


def set_event(t: Tables, c: dict, event: str | None) -> None:
    """Change a chouette coup's event; its levy on the chouette follows (art. 66)."""
    levy = regulation_profile().levy
    owed = levy(c["chouette"]) if event else 0
    was = levy(c["chouette"]) if c["evenement"] else 0
    c["evenement"] = event
    set_levy(t, c, "prelevement", c["prelevement"] - was + owed)


def later_in_run(t: Tables, c: dict) -> list[dict]:
    """The coups after `c` in its chouette run."""
    out = []
    nxt = coup_row(t, c["seance"], c["coup"] + 1)
    while nxt is not None and in_run(t, nxt):
        out.append(nxt)
        nxt = coup_row(t, nxt["seance"], nxt["coup"] + 1)
    return out
