"""The levy each coup owes (art. 66 and 66-1), derived once per carnet and
profile: the rules compare it with what was recorded, the summary totals it."""

from __future__ import annotations

import numpy as np
import pandas as pd

from auditor.carnet import Carnet
from auditor.catalogue import Profile
from auditor.derived.amounts import coup_amounts
from auditor.derived.cache import per_carnet
from auditor.frames import eq


@per_carnet
def simple_levy(carnet: Carnet, profile: Profile) -> pd.DataFrame:
    """Expected levy of each verifiable simple coup: L(mass of the winning side).

    The mass comes from the stakes, or from the recorded total when the coup
    has no stake row (`coup_amounts` levy basis). Columns: lo, hi
    (accepted range), mass, plus the coup's.
    """
    c = carnet.df("coups")
    a = coup_amounts(carnet)
    ok = eq(c["type"], "simple") & c["gagnant"].notna() & ~a["unverifiable"]
    c, a = c[ok], a[ok]
    win_a = eq(c["gagnant"], "a")
    mass = pd.Series(a["levy_held_a"].where(win_a, a["levy_held_b"]), index=c.index, dtype="Int64")
    lo, hi = profile.levy.bounds_series(mass)
    out = c.assign(mass=mass, lo=lo, hi=hi)
    return out[out["mass"].notna()]


@per_carnet
def chouette_levy(carnet: Carnet, profile: Profile) -> pd.DataFrame:
    """Expected levies of each verifiable chouette coup, per phase.

    avant: L(held(a)) + L(chouette) at an adjudication or a remise (each
    component rounded on its own); apres: L(sur_chouette) when the pontes
    (side b) win, else 0. Amounts are the levy basis of
    `coup_amounts` (stakes, or recorded totals for a coup without
    stake rows). Columns lo_avant/hi_avant and lo_apres/hi_apres are <NA>
    where that phase cannot be computed.
    """
    c = carnet.df("coups")
    a = coup_amounts(carnet)
    ok = eq(c["type"], "chouette") & ~a["unverifiable"]
    c, a = c[ok], a[ok]
    levy = profile.levy
    lo_out, hi_out = levy.bounds_series(a["levy_held_a"])
    staked = eq(c["evenement"], "adjudication") | eq(c["evenement"], "remise")
    lo_ch, hi_ch = levy.bounds_series(c["chouette_cents"].where(staked, 0))
    # An unreadable evenement leaves open whether the chouette's own levy is due.
    known_event = ~carnet.unreadable_cells("coups", "evenement").loc[c.index]
    lo_avant = (lo_out + lo_ch).where(known_event)
    hi_avant = (hi_out + hi_ch).where(known_event)
    # The pontes cannot have won a negative sum on the chouette (that is EC64-04's business).
    won = a["levy_sur_chouette"].clip(lower=0).where(eq(c["gagnant"], "b"), 0).where(c["gagnant"].notna())
    lo_apres, hi_apres = levy.bounds_series(won)
    return c.assign(held_a=a["levy_held_a"], sur_chouette=a["levy_sur_chouette"],
                    lo_avant=lo_avant.astype("Int64"), hi_avant=hi_avant.astype("Int64"),
                    lo_apres=lo_apres, hi_apres=hi_apres)


def levy_totals(carnet: Carnet, profile: Profile) -> tuple[int, int]:
    """(expected, recorded) levy of the carnet, in cents.

    Expected: the levy the rules compute where a coup (and phase) can be
    verified, the recorded levy elsewhere (so the difference shows only what
    was checked).
    """
    c = carnet.df("coups")
    avant = c["prelevement_cents"].to_numpy(dtype=np.int64, na_value=0)
    apres = c["prelevement_apres_cents"].to_numpy(dtype=np.int64, na_value=0)
    recorded = int(avant.sum() + apres.sum())
    expected_avant, expected_apres = avant.copy(), apres.copy()
    s = simple_levy(carnet, profile)
    at = c.index.get_indexer(s.index)
    # An expected levy left unknown counts for nothing (as <NA> in a sum), and so does its coup.
    hi = s["hi"].to_numpy(dtype=np.int64, na_value=0)
    expected_avant[at] = hi
    expected_apres[at] = 0  # a simple coup owes nothing after the result
    ch = chouette_levy(carnet, profile)
    at = c.index.get_indexer(ch.index)
    for phase, expected in (("avant", expected_avant), ("apres", expected_apres)):
        hi = ch[f"hi_{phase}"]
        known = hi.notna().to_numpy(bool)
        expected[at[known]] = hi.to_numpy(dtype=np.int64, na_value=0)[known]
    return int(expected_avant.sum() + expected_apres.sum()), recorded
