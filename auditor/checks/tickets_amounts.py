"""Articles 66-1, 59 and 56-1: the tickets' amounts per coup and per séance."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from auditor.arrays import column, could_be
from auditor.carnet import Carnet
from auditor.catalogue import Profile
from auditor.derived.amounts import coup_amounts, repeated_coups
from auditor.tickets.ledger import NA_INT, PHASES, ledger
from auditor.model import Cents, Violation
from auditor.registry import check
from auditor.frames import cat, find, pair_codes
from auditor.checks._needs import COUP_KEYS, STAKES, TICKET_PHASES, TICKET_RUNS, TICKETS

PHASE_LEVY = {"avant": "prelevement_cents", "apres": "prelevement_apres_cents"}


@check("EC661-01", needs=("coups.prelevement,prelevement_apres", *STAKES, *TICKET_PHASES))
def tickets_represent_levy(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """The tickets detached for a coup and phase add up to the recorded levy.

    Why: art. 66-1 — tickets represent the levy; a levy without its tickets escapes the count.
    Non-compliant: 1,50 € recorded, tickets for 1,00 € detached.
    Compliant: 1,50 € recorded, one 1 € ticket and five 0,10 € tickets.
    """
    # A coup with a run whose value, numbers or phase cannot be read is unverifiable
    # (a run of unknown phase may belong to either), and so is a coup that a run of
    # unreadable séance or coup may belong to.
    g = ledger(carnet, profile).by_phase
    g_seance, g_coup, g_phase = g["seance"], g["coup"], g["phase"]
    g_face, g_bad = g["face"], g["unreadable"].astype(bool)
    seance, coup = column(carnet, "coups", "seance"), column(carnet, "coups", "coup")
    keep = ~(coup_amounts(carnet).unverifiable
             | could_be(carnet, "tickets", ["seance", "coup"], carnet.df("coups")))
    keep &= (seance != NA_INT) & (coup != NA_INT)
    at = np.flatnonzero(keep)
    coup_codes, group_codes = pair_codes((seance[at], coup[at]), (g_seance, g_coup))
    at = at[~np.isin(coup_codes, group_codes[g_bad])]
    coup_codes = coup_codes[~np.isin(coup_codes, group_codes[g_bad])]
    row = column(carnet, "coups", "_row")
    for code, phase in enumerate(PHASES):
        field = PHASE_LEVY[phase]
        recorded = column(carnet, "coups", field)[at]
        has = recorded != NA_INT
        # (séance, coup, phase) is one group of `by_phase` at most: its face, 0 without tickets.
        mine = np.flatnonzero(g_phase == code)
        order = np.argsort(group_codes[mine], kind="stable")
        j = find(group_codes[mine][order], coup_codes[has])
        face = np.where(j >= 0, g_face[mine[order]][np.maximum(j, 0)] if len(mine) else 0, 0)
        wrong = np.flatnonzero(face != recorded[has])
        if not len(wrong):
            continue
        sel = at[has][wrong]
        for r, s_, c_, rec, f in zip(row[sel].tolist(), seance[sel].tolist(), coup[sel].tolist(),
                                     recorded[has][wrong].tolist(), face[wrong].tolist()):
            yield Violation(table="coups", row=r, column=field, seance=s_, coup=c_, kind=phase,
                            expected=Cents(rec), found=Cents(f), impact_cents=max(rec - f, 0),
                            params={"recorded_cents": rec, "face_cents": f})


@check("EC661-02", needs=(*TICKET_PHASES, COUP_KEYS))
def fewest_tickets(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """A coup's tickets (per phase) are the fewest that make their amount with the séance's values.

    Why: art. 66-1 and 59 — the employee detaches the tickets *necessary*; extra small tickets blur the count.
    Non-compliant: ten 0,10 € tickets for 1,00 € in a séance where 1 € tickets are used.
    Compliant: ten 0,10 € tickets for 1,00 € in a séance that uses no 1 € ticket.
    """
    led = ledger(carnet, profile)
    r = led.rows
    g = led.by_phase
    # One unreadable row (value, numbers or phase) makes its whole coup unverifiable.
    bad = (g["unreadable"] | g["off_profile"]).astype(np.int64)
    coup_bad = np.bincount(g["coup_id"], weights=bad) > 0
    keep = ~coup_bad[g["coup_id"]]
    # A repeated coup number pools two coups' tickets: not a count to judge.
    repeated = repeated_coups(carnet)
    if repeated.any():
        seance, coup = column(carnet, "coups", "seance"), column(carnet, "coups", "coup")
        repeated = repeated & (seance != NA_INT) & (coup != NA_INT)
        rep_codes, group_codes = pair_codes((seance[repeated], coup[repeated]), (g["seance"], g["coup"]))
        keep &= ~np.isin(group_codes, rep_codes)
    at = np.flatnonzero(keep)
    g_seance = g["seance"][at]
    # Values seen among the séance's tickets, both phases (spec, clarification on EC661-02).
    r_seance, r_valeur = r["seance"], r["valeur_cents"]
    r_known = r_seance != NA_INT
    rest = g["face"][at].copy()
    fewest = np.zeros(len(at), dtype=np.int64)
    for value in led.values[::-1]:     # a loop over the ≤ 4 values; greedy is optimal for 10/100/1000/10000
        has = np.isin(g_seance, r_seance[r_known & (r_valeur == value)])
        n = np.where(has, rest // value, 0)
        rest -= n * value
        fewest += n
    count = g["count"][at]
    hit = np.flatnonzero((rest == 0) & (count > fewest))
    hit = hit[np.argsort(g["pos"][at][hit], kind="stable")]
    sel = at[hit]
    for row, s_, c_, ph, f, n, face in zip(g["_row"][sel].tolist(), g["seance"][sel].tolist(),
                                           g["coup"][sel].tolist(), g["phase"][sel].tolist(),
                                           fewest[hit].tolist(), count[hit].tolist(), g["face"][sel].tolist()):
        yield Violation(table="tickets", row=row, column="valeur_cents", seance=s_, coup=c_,
                        kind=PHASES[ph], expected=str(f), found=str(n),
                        params={"count": n, "fewest": f, "face_cents": face})


@check("EC59-01", needs=(TICKETS,))
def three_values_per_seance(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """No more than three ticket values are used at the table in one séance.

    Why: art. 59 (applied by art. 66-1) — at most three values in service at once at one table.
    Non-compliant: 0,10 €, 1 €, 10 € and 100 € tickets all detached in séance 2.
    Compliant: 0,10 €, 1 € and 10 € tickets in séance 2, 100 € tickets only in séance 3.
    """
    r = ledger(carnet, profile).rows
    seance, valeur = r["seance"], r["valeur_cents"]
    at = np.flatnonzero((seance != NA_INT) & (valeur != NA_INT))
    at = at[np.argsort(r["pos"][at], kind="stable")]
    # The first row of each (séance, value), in carnet order.
    _, first = np.unique(pair_codes((seance[at], valeur[at]))[0], return_index=True)
    firsts = at[np.sort(first)]
    ids, inv, n = np.unique(seance[firsts], return_inverse=True, return_counts=True)
    most = profile.max_ticket_values_per_seance
    if not len(n) or n.max() <= most:
        return
    # Rank of each first row among its séance's (carnet order).
    by_seance = np.argsort(inv, kind="stable")
    starts = cat(0, np.cumsum(n)[:-1])
    rank = np.empty(len(firsts), dtype=np.int64)
    rank[by_seance] = np.arange(len(firsts)) - np.repeat(starts, n)
    # Located where the first value beyond the limit appears.
    hit = np.flatnonzero(rank == most)
    sel = firsts[hit]
    for row, s_, c_, k, v in zip(r["_row"][sel].tolist(), seance[sel].tolist(), r["coup"][sel].tolist(),
                                 n[inv[hit]].tolist(), valeur[sel].tolist()):
        yield Violation(table="tickets", row=row, column="valeur_cents", seance=s_,
                        coup=None if c_ == NA_INT else c_, expected=f"≤ {most}", found=str(k),
                        params={"count": k, "max": most, "valeur_cents": v})


@check("EC561-03", needs=(*TICKET_RUNS, "seances.seance,cagnotte"))
def cagnotte_matches_tickets(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """The cagnotte counted for a séance equals the face value of the tickets detached in it.

    Why: art. 56-1 — the stubs of a séance's tickets give its cagnotte; money without stubs is unexplained.
    Non-compliant: tickets for 12,50 € detached in séance 3, cagnotte counted 12,00 €.
    Compliant: tickets for 12,50 €, cagnotte 12,50 €.
    """
    r = ledger(carnet, profile).rows
    known = r["seance"] != NA_INT
    ids, inv = np.unique(r["seance"][known], return_inverse=True)
    per_face = np.zeros(len(ids), dtype=np.int64)
    np.add.at(per_face, inv, r["face"][known])
    unreadable = np.bincount(inv[~r["readable"][known]], minlength=len(ids)) > 0
    # A ticket row whose séance cannot be read may be any séance's.
    seance, counted = column(carnet, "seances", "seance"), column(carnet, "seances", "cagnotte_cents")
    at = np.flatnonzero(~could_be(carnet, "tickets", ["seance"], carnet.df("seances"))
                        & (seance != NA_INT) & (counted != NA_INT))
    j = find(ids, seance[at])
    face = np.where(j >= 0, per_face[np.maximum(j, 0)] if len(ids) else 0, 0)
    # A séance with an unreadable ticket row cannot be totalled (its EC00-02 is reported).
    ok = (j < 0) | ~(unreadable[np.maximum(j, 0)] if len(ids) else False)
    hit = np.flatnonzero(ok & (face != counted[at]))
    sel = at[hit]
    for row, s_, f, c in zip(column(carnet, "seances", "_row")[sel].tolist(), seance[sel].tolist(),
                             face[hit].tolist(), counted[sel].tolist()):
        yield Violation(table="seances", row=row, column="cagnotte_cents", seance=s_,
                        expected=Cents(f), found=Cents(c), impact_cents=max(f - c, 0),
                        params={"face_cents": f, "counted_cents": c})
