"""Articles 66-1, 59 and 56-1: the tickets' amounts per coup and per séance."""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pandas as pd

from auditor.carnet import Carnet
from auditor.catalogue import Profile
from auditor.checks._util import emit
from auditor.derived.amounts import coup_amounts, repeated_coups
from auditor.tickets.ledger import NA_INT, PHASES, ints, ledger
from auditor.model import Cents, Violation
from auditor.registry import check
from auditor.tickets.arrays import column, could_be, find, pair_codes
from auditor.checks._needs import COUP_KEYS, STAKES, TICKETS

PHASE_LEVY = {"avant": "prelevement_cents", "apres": "prelevement_apres_cents"}


def _coups_keys(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Rows whose keys are all read, with the keys as plain int64 (to join `rows`)."""
    df = df[df[keys].notna().all(axis=1)]
    return df.assign(**{k: ints(df[k]) for k in keys})


@check("EC661-01", needs=("coups.prelevement", *STAKES, TICKETS))
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
    g_seance, g_coup, g_phase = g["seance"].to_numpy(), g["coup"].to_numpy(), g["phase"].to_numpy()
    g_face, g_bad = g["face"].to_numpy(), g["unreadable"].to_numpy(bool)
    seance, coup = column(carnet, "coups", "seance"), column(carnet, "coups", "coup")
    keep = ~(coup_amounts(carnet)["unverifiable"].to_numpy(bool)
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


@check("EC661-02", needs=(TICKETS, COUP_KEYS))
def fewest_tickets(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """A coup's tickets (per phase) are the fewest that make their amount with the séance's values.

    Why: art. 66-1 and 59 — the employee detaches the tickets *necessary*; extra small tickets blur the count.
    Non-compliant: ten 0,10 € tickets for 1,00 € in a séance where 1 € tickets are used.
    Compliant: ten 0,10 € tickets for 1,00 € in a séance that uses no 1 € ticket.
    """
    led = ledger(carnet, profile)
    r = led.rows
    # Values seen among the séance's tickets, both phases (spec, clarification on EC661-02).
    seen = r.loc[(r["seance"].to_numpy() != NA_INT) & np.isin(r["valeur_cents"].to_numpy(), led.values),
                 ["seance", "valeur_cents"]].drop_duplicates()
    groups = led.by_phase
    # One unreadable row (value, numbers or phase) makes its whole coup unverifiable.
    bad = (groups["unreadable"] | groups["off_profile"]).to_numpy()
    coup_bad = np.bincount(groups["coup_id"].to_numpy(), weights=bad.astype(np.int64)) > 0
    groups = groups[~coup_bad[groups["coup_id"].to_numpy()]]
    # A repeated coup number pools two coups' tickets: not a count to judge.
    coups = carnet.df("coups")
    repeated = coups.loc[repeated_coups(carnet).to_numpy(), ["seance", "coup"]].drop_duplicates()
    if len(repeated):
        hit = groups[["seance", "coup"]].merge(_coups_keys(repeated, ["seance", "coup"]), how="left",
                                               indicator=True)
        groups = groups[(hit["_merge"] != "both").to_numpy()]
    rest = groups["face"].to_numpy().copy()
    fewest = np.zeros(len(groups), dtype=np.int64)
    for value in led.values[::-1]:     # a loop over the ≤ 4 values; greedy is optimal for 10/100/1000/10000
        has = groups["seance"].isin(seen.loc[seen["valeur_cents"] == value, "seance"]).to_numpy(bool)
        n = np.where(has, rest // value, 0)
        rest -= n * value
        fewest += n
    hit = groups.assign(fewest=fewest)[(rest == 0) & (groups["count"].to_numpy() > fewest)]
    yield from emit(hit.sort_values("pos"), lambda r: Violation(
        table="tickets", row=r["_row"], column="valeur_cents", seance=r["seance"], coup=r["coup"],
        kind=PHASES[r["phase"]], expected=str(r["fewest"]), found=str(r["count"]),
        params={"count": r["count"], "fewest": r["fewest"], "face_cents": r["face"]}))


@check("EC59-01", needs=(TICKETS,))
def three_values_per_seance(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """No more than three ticket values are used at the table in one séance.

    Why: art. 59 (applied by art. 66-1) — at most three values in service at once at one table.
    Non-compliant: 0,10 €, 1 €, 10 € and 100 € tickets all detached in séance 2.
    Compliant: 0,10 €, 1 € and 10 € tickets in séance 2, 100 € tickets only in séance 3.
    """
    r = ledger(carnet, profile).rows
    r = r[(r["seance"] != NA_INT) & (r["valeur_cents"] != NA_INT)].sort_values("pos", kind="stable")
    firsts = r.drop_duplicates(["seance", "valeur_cents"], keep="first")
    n = firsts.groupby("seance", sort=False)["valeur_cents"].transform("size")
    rank = firsts.groupby("seance", sort=False).cumcount()
    most = profile.max_ticket_values_per_seance
    # Located where the first value beyond the limit appears.
    hit = firsts.assign(n=n)[(rank == most).to_numpy()]
    yield from emit(hit, lambda r: Violation(
        table="tickets", row=r["_row"], column="valeur_cents", seance=r["seance"],
        coup=None if r["coup"] == NA_INT else r["coup"], expected=f"≤ {most}", found=str(r["n"]),
        params={"count": r["n"], "max": most, "valeur_cents": r["valeur_cents"]}))


@check("EC561-03", needs=(TICKETS, "seances.seance,cagnotte"))
def cagnotte_matches_tickets(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """The cagnotte counted for a séance equals the face value of the tickets detached in it.

    Why: art. 56-1 — the stubs of a séance's tickets give its cagnotte; money without stubs is unexplained.
    Non-compliant: tickets for 12,50 € detached in séance 3, cagnotte counted 12,00 €.
    Compliant: tickets for 12,50 €, cagnotte 12,50 €.
    """
    r = ledger(carnet, profile).rows
    known = r["seance"].to_numpy() != NA_INT
    ids, inv = np.unique(r["seance"].to_numpy()[known], return_inverse=True)
    per_face = np.zeros(len(ids), dtype=np.int64)
    np.add.at(per_face, inv, r["face"].to_numpy()[known])
    unreadable = np.bincount(inv[~r["readable"].to_numpy(bool)[known]], minlength=len(ids)) > 0
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
