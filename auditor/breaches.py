"""Surgical breaches for generated carnets: each injector breaks one rule and
keeps the rest of the carnet intact, and says which codes the audit must then
give (sometimes a breach necessarily shows under two codes).

Used by `ecarte-audit generate --breaches`, the sample carnets, and the
metamorphic tests. Injectors work on the generator's tables (rows of Python
values, money in cents). The chouette injectors (EC65-*, EC66-02) need a carnet
generated with `Spec(chouette=True)` and raise `CannotInject` without a chouette
coup; the others touch simple coups, tickets, fiches or séances only. Ticket
changes go through `add_tickets` / `take_tickets` / `retick`, which keep each
value's series uninterrupted, the books registered and the cagnotte counted.
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
    _drop_last_ticket(t, run, seance)


def _drop_last_ticket(t: Tables, run: dict, seance: int) -> None:
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
    _adjust_cagnotte(t, seance, -value)


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



# -- ticket helpers: keep the series, books and cagnotte consistent -----------

def _profile():
    from auditor.catalogue import load_profile
    return load_profile()


def _phase_key(r: dict) -> tuple:
    return (r["seance"], r["coup"], r["phase"] != "avant")


def _adjust_cagnotte(t: Tables, seance: int, delta: int) -> None:
    for s in t["seances"]:
        if s["seance"] == seance and s.get("cagnotte") is not None:
            s["cagnotte"] += delta


def phase_tickets(t: Tables, seance: int, coup: int, phase: str) -> list[dict]:
    return [r for r in t["tickets"] if r["seance"] == seance and r["coup"] == coup and r["phase"] == phase]


def seance_values(t: Tables, seance: int) -> set[int]:
    return {r["valeur"] for r in t["tickets"] if r["seance"] == seance}


def add_tickets(t: Tables, seance: int, coup: int, phase: str, value: int, count: int) -> None:
    """Detach `count` more tickets of `value` at a coup and phase, in series order:
    later tickets of that value move up; books and the cagnotte follow."""
    if count <= 0:
        return
    here = (seance, coup, phase != "avant")
    rows = [r for r in t["tickets"] if r["valeur"] == value]
    before = [r for r in rows if _phase_key(r) <= here]
    if before:
        last = max(before, key=lambda r: (_phase_key(r), r["dernier"]))
        start = last["dernier"] + 1
    else:
        last = None
        start = min((r["premier"] for r in rows), default=1)
    for r in rows:
        if r["premier"] >= start:
            r["premier"] += count
            r["dernier"] += count
    if last is not None and _phase_key(last) == here:
        last["dernier"] += count
    else:
        at = max((i + 1 for i, r in enumerate(t["tickets"]) if _phase_key(r) <= here), default=0)
        t["tickets"].insert(at, {"seance": seance, "coup": coup, "phase": phase, "valeur": value,
                                 "premier": start, "dernier": start + count - 1})
    _adjust_cagnotte(t, seance, value * count)
    sync_books(t)


def take_tickets(t: Tables, seance: int, coup: int, phase: str, value: int, count: int) -> None:
    """Take `count` tickets of `value` off a coup and phase, closing the gaps."""
    for _ in range(count):
        run = [r for r in phase_tickets(t, seance, coup, phase) if r["valeur"] == value][-1]
        _drop_last_ticket(t, run, seance)


def retick(t: Tables, seance: int, coup: int, phase: str, amount: int) -> None:
    """Make the tickets of a coup and phase the fewest that give `amount`."""
    from auditor.generate import split_levy
    values = [v for v in _profile().ticket_values_cents if v <= 1000][:3]
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
    size = _profile().book_size
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
    return sorted((r for r in t["tickets"] if r["valeur"] == value), key=lambda r: (_phase_key(r), idx[id(r)]))


def _ticket_count(rows) -> int:
    return sum(r["dernier"] - r["premier"] + 1 for r in rows)


def fewest_tickets(amount: int, values) -> int | None:
    """Fewest tickets of `values` making `amount` (any set of values)."""
    best = [0] + [None] * amount
    for a in range(1, amount + 1):
        options = [best[a - v] for v in values if v <= a and best[a - v] is not None]
        best[a] = min(options) + 1 if options else None
    return best[amount]


def _all_minimal(t: Tables, seance: int) -> bool:
    values = seance_values(t, seance)
    by_phase: dict[tuple, list[dict]] = {}
    for r in t["tickets"]:
        if r["seance"] == seance:
            by_phase.setdefault(_phase_key(r), []).append(r)
    return all(_ticket_count(rows) == fewest_tickets(sum(r["valeur"] * (r["dernier"] - r["premier"] + 1)
                                                             for r in rows), values)
               for rows in by_phase.values())


# -- more injectors ----------------------------------------------------------

def _card_holders(t: Tables, seance: int) -> list[tuple[int, int]]:
    """Called players of a séance (not chouetteurs), each with the coup where he first
    holds the cards, in that order."""
    chouetteurs = {c["joueur_a"] for c in t["coups"] if c["seance"] == seance and c["type"] == "chouette"}
    seen: dict[int, int] = {}
    for c in sorted((c for c in t["coups"] if c["seance"] == seance), key=lambda c: c["coup"]):
        for p in (c["joueur_a"], c["joueur_b"]):
            if p is not None and p not in chouetteurs and p not in seen:
                seen[p] = c["coup"]
    return list(seen.items())


def _fiche(t: Tables, seance: int, number: int) -> dict:
    return next(f for f in t["fiches"] if f["seance"] == seance and f["fiche"] == number)


def unregistered_fiche(t, rng):
    _, stakes = pick(rng, t, lambda c, s: bool(s))
    m = rng.choice(stakes)
    m["fiche"] = max(f["fiche"] for f in t["fiches"] if f["seance"] == m["seance"]) + 1
    return {"EC63-03"}


def holder_without_rank(t, rng):
    seances = [s["seance"] for s in t["seances"] if _card_holders(t, s["seance"])]
    if not seances or not t.get("fiches"):
        raise CannotInject("no card holder")
    seance = rng.choice(seances)
    _fiche(t, seance, _card_holders(t, seance)[-1][0])["tenir_cartes"] = None
    return {"EC63-04"}


def loser_keeps_cards(t, rng):
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


def holders_out_of_order(t, rng):
    # Two newcomers who take the cards at different coups swap their inscription ranks.
    options = [(s["seance"], p, q) for s in t["seances"] for h in [_card_holders(t, s["seance"])]
               for (p, cp), (q, cq) in zip(h, h[1:]) if cp < cq]
    if not options or not t.get("fiches"):
        raise CannotInject("no two newcomers at different coups")
    seance, p, q = rng.choice(options)
    first, second = _fiche(t, seance, p), _fiche(t, seance, q)
    if first["tenir_cartes"] is None or second["tenir_cartes"] is None:
        raise CannotInject("card holder without rank")
    first["tenir_cartes"], second["tenir_cartes"] = second["tenir_cartes"], first["tenir_cartes"]
    return {"EC63-06"}


def two_decks_only(t, rng):
    s = rng.choice(t["seances"])
    s["jeux"] = " ".join(str(s["jeux"]).split()[:2])
    return {"EC63-07"}


def fiche_number_gap(t, rng):
    if not t.get("fiches"):
        raise CannotInject("no fiches")
    s = rng.choice(t["seances"])
    top = max(f["fiche"] for f in t["fiches"] if f["seance"] == s["seance"])
    t["fiches"].append({"seance": s["seance"], "fiche": top + 2, "date": s["date"], "tenir_cartes": None})
    return {"EC63-08"}


def cagnotte_miscounted(t, rng):
    s = rng.choice([s for s in t["seances"] if s.get("cagnotte") is not None] or [None])
    if s is None:
        raise CannotInject("no cagnotte")
    s["cagnotte"] -= 10
    return {"EC561-03"}


def unsigned_book(t, rng):
    used = {r["valeur"] for r in t["tickets"]}
    size = _profile().book_size
    books = [b for b in t.get("carnets_tickets", []) if any(
        r["valeur"] == b["valeur"] and r["premier"] < b["premier"] + size and r["dernier"] >= b["premier"]
        for r in t["tickets"])]
    if not books or not used:
        raise CannotInject("no book in use")
    rng.choice(books)["paraphe"] = "non"
    return {"EC83-03"}


def book_put_in_service_late(t, rng):
    size = _profile().book_size
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


def ticket_skipped(t, rng):
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


def ticket_reused(t, rng):
    # A ticket is detached again at a later coup instead of the next one of the series.
    options = []
    for v in sorted({r["valeur"] for r in t["tickets"]}):
        rows = ticket_rows(t, v)
        options += [(rows, k) for k in range(1, len(rows))
                    if rows[k]["premier"] == rows[k]["dernier"] and _phase_key(rows[k]) != _phase_key(rows[k - 1])]
    if not options:
        raise CannotInject("no single ticket to reuse")
    rows, k = rng.choice(options)
    for r in rows[k:]:
        r["premier"] -= 1
        r["dernier"] -= 1
    return {"EC82-03"}


def tickets_backwards(t, rng):
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


def ticket_number_too_high(t, rng):
    top = _profile().ticket_number_max
    options = [v for v in sorted({r["valeur"] for r in t["tickets"]}) if _ticket_count(ticket_rows(t, v)) >= 2]
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


def too_many_tickets(t, rng):
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



def _try_each(t: Tables, rng: random.Random, options: list, attempt: Callable[[Tables, object], bool]) -> None:
    """Apply `attempt` to a copy for each option in random order; keep the first that
    reports a clean breach (True). Options are (séance, coup, …) keys: `attempt` gets
    the copy's coup in their place."""
    import copy
    options = list(options)
    rng.shuffle(options)
    for seance, number, *rest in options:
        trial = copy.deepcopy(t)
        if attempt(trial, (_coup(trial, seance, number), *rest)):
            t.clear()
            t.update(trial)
            return
    raise CannotInject("no place fits")


def _coup(t: Tables, seance: int, number: int) -> dict | None:
    return next((c for c in t["coups"] if c["seance"] == seance and c["coup"] == number), None)


def _phase_amount(t: Tables, seance: int, coup: int, phase: str) -> int:
    return sum(r["valeur"] * (r["dernier"] - r["premier"] + 1) for r in phase_tickets(t, seance, coup, phase))


def fourth_ticket_value(t, rng):
    # Two big stakes at the head of a simple coup (one per side): the mass grows so that
    # the levy grows by the ticket values the séance does not use yet, detached at that coup.
    profile = _profile()

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
        return _all_minimal(t, c["seance"])

    _try_each(t, rng, [(c["seance"], c["coup"]) for c in simple_coups(t)
                       if coup_rows(t, "mises", c["seance"], c["coup"])], attempt)
    return {"EC59-01"}


def odd_ticket_value(t, rng):
    # The levy of a coup paid with one ticket of a value outside the regulation (its
    # amount exactly), in a séance with room for one more value.
    profile = _profile()

    def attempt(t, option):
        c, phase = option
        amount = _phase_amount(t, c["seance"], c["coup"], phase)
        if amount in profile.ticket_values_cents or amount % 10:
            return False
        if len(seance_values(t, c["seance"])) >= profile.max_ticket_values_per_seance:
            return False
        for r in phase_tickets(t, c["seance"], c["coup"], phase):
            take_tickets(t, c["seance"], c["coup"], phase, r["valeur"], r["dernier"] - r["premier"] + 1)
        add_tickets(t, c["seance"], c["coup"], phase, amount, 1)
        return _all_minimal(t, c["seance"])

    _try_each(t, rng, [(c["seance"], c["coup"], p) for c in t["coups"] for p in ("avant", "apres")
                       if _phase_amount(t, c["seance"], c["coup"], p) > 0], attempt)
    return {"EC82-01"}


# -- chouette injectors --------------------------------------------------------

def chouette_coups(t: Tables) -> list[dict]:
    return [c for c in t["coups"] if c["type"] == "chouette"]


def in_run(t: Tables, c: dict) -> bool:
    """The coup continues the chouette run of the coup before it."""
    prev = _coup(t, c["seance"], c["coup"] - 1)
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


def _set_levy(t: Tables, c: dict, column: str, amount: int) -> None:
    c[column] = amount
    retick(t, c["seance"], c["coup"], "avant" if column == "prelevement" else "apres", amount)


def _set_event(t: Tables, c: dict, event: str | None) -> None:
    """Change a chouette coup's event; its levy on the chouette follows (art. 66)."""
    levy = _profile().levy
    owed = levy(c["chouette"]) if event else 0
    was = levy(c["chouette"]) if c["evenement"] else 0
    c["evenement"] = event
    _set_levy(t, c, "prelevement", c["prelevement"] - was + owed)


def run_without_adjudication(t, rng):
    c, _ = pick_chouette(rng, t, lambda c, s: c["evenement"] == "adjudication" and not in_run(t, c))
    _set_event(t, c, None)
    return {"EC65-01"}


def remise_without_saute(t, rng):
    c, _ = pick_chouette(rng, t, lambda c, s: c["evenement"] is None and in_run(t, c))
    _set_event(t, c, "remise")
    return {"EC65-02"}


def _later_in_run(t: Tables, c: dict) -> list[dict]:
    out = []
    nxt = _coup(t, c["seance"], c["coup"] + 1)
    while nxt is not None and in_run(t, nxt):
        out.append(nxt)
        nxt = _coup(t, nxt["seance"], nxt["coup"] + 1)
    return out


def goes_on_after_saute(t, rng):
    # A remise after a saute left unrecorded (or, failing one, a new auction by the same
    # chouetteur not followed by a remise, which would then be a second one): the levy on
    # the chouette goes with the event.
    def fits(c, s):
        if not in_run(t, c):
            return False
        if c["evenement"] == "adjudication":
            return not any(n["evenement"] == "remise" for n in _later_in_run(t, c))
        return c["evenement"] == "remise"
    c, _ = pick_chouette(rng, t, fits)
    _set_event(t, c, None)
    return {"EC65-03"}


def ponte_on_chouette_side(t, rng):
    # A ponte stakes on the chouette side although the chouette does not hold all of it;
    # totals, en dehors and both levies are recorded as they then are.
    levy = _profile().levy

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
    _set_levy(t, c, "prelevement", levy(100) + (levy(c["chouette"]) if c["evenement"] else 0))
    _set_levy(t, c, "prelevement_apres", levy(sur) if c["gagnant"] == "b" else 0)
    return {"EC65-04"}


def wrong_en_dehors(t, rng):
    c, _ = pick_chouette(rng, t, lambda c, s: True)
    c["en_dehors"] = (c["en_dehors"] or 0) + 1000
    return {"EC65-05"}


def short_levy_after(t, rng):
    c, _ = pick_chouette(rng, t, lambda c, s: c["prelevement_apres"] >= 10)
    _set_levy(t, c, "prelevement_apres", c["prelevement_apres"] - 10)
    return {"EC66-02"}


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
    "EC63-03": unregistered_fiche,
    "EC63-04": holder_without_rank,
    "EC63-05": loser_keeps_cards,
    "EC63-06": holders_out_of_order,
    "EC63-07": two_decks_only,
    "EC63-08": fiche_number_gap,
    "EC561-01": book_put_in_service_late,
    "EC561-02": tickets_backwards,
    "EC561-03": cagnotte_miscounted,
    "EC661-02": too_many_tickets,
    "EC82-02": ticket_number_too_high,
    "EC82-03": ticket_reused,
    "EC83-01": ticket_skipped,
    "EC83-03": unsigned_book,
    "EC59-01": fourth_ticket_value,
    "EC82-01": odd_ticket_value,
    "EC65-01": run_without_adjudication,
    "EC65-02": remise_without_saute,
    "EC65-03": goes_on_after_saute,
    "EC65-04": ponte_on_chouette_side,
    "EC65-05": wrong_en_dehors,
    "EC66-02": short_levy_after,
}


def inject(tables: Tables, codes: list[str], seed: int = 0) -> set[str]:
    """Break each rule of `codes` once; return every code the audit must give."""
    rng = random.Random(seed)
    unknown = [c for c in codes if c not in INJECTORS]
    if unknown:
        raise CannotInject(f"no injector for {', '.join(unknown)} (available: {', '.join(sorted(INJECTORS))})")
    expected: set[str] = set()
    for code in codes:
        try:
            expected |= INJECTORS[code](tables, rng)
        except CannotInject as exc:
            raise CannotInject(f"{code} cannot be made on this carnet ({exc}): nothing written") from None
    return expected
