"""Article 66: the 5 % levy for the cagnotte."""

from __future__ import annotations

from typing import Iterator

import pandas as pd

from auditor.carnet import Carnet, per_carnet
from auditor.catalogue import Profile
from auditor.checks._util import emit
from auditor.frames import eq
from auditor.model import Cents, Violation
from auditor.money import accepted
from auditor.registry import check
from auditor.checks._needs import STAKES


@per_carnet
def simple_levy(carnet: Carnet, profile: Profile) -> pd.DataFrame:
    """Expected levy of each verifiable simple coup: L(mass of the winning side).

    The mass comes from the stakes, or from the recorded total when the coup
    has no stake row (`Carnet.coup_amounts` levy basis). Columns: lo, hi
    (accepted range), mass, plus the coup's.
    """
    c = carnet.df("coups")
    a = carnet.coup_amounts
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
    `Carnet.coup_amounts` (stakes, or recorded totals for a coup without
    stake rows). Columns lo_avant/hi_avant and lo_apres/hi_apres are <NA>
    where that phase cannot be computed.
    """
    c = carnet.df("coups")
    a = carnet.coup_amounts
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
    avant = c["prelevement_cents"].fillna(0).astype("Int64")
    apres = c["prelevement_apres_cents"].fillna(0).astype("Int64")
    recorded = avant + apres
    s = simple_levy(carnet, profile)
    expected_avant, expected_apres = avant.copy(), apres.copy()
    expected_avant.loc[s.index] = s["hi"]
    expected_apres.loc[s.index] = 0  # a simple coup owes nothing after the result
    ch = chouette_levy(carnet, profile)
    for phase, expected in (("avant", expected_avant), ("apres", expected_apres)):
        known = ch[f"hi_{phase}"].notna()
        expected.loc[ch.index[known]] = ch.loc[known, f"hi_{phase}"]
    return int((expected_avant + expected_apres).sum()), int(recorded.sum())


@check("EC66-01", needs=("coups.type,gagnant,prelevement,total_a,total_b", *STAKES))
def simple_levy_exact(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """The levy of a simple coup is 5 % of the winning side, rounded to 0.10 €.

    Why: art. 66 and 59 — the levy is the base of what the casino owes the State.
    Non-compliant: 0,40 € recorded on a winning side of 10,00 € (0,50 € due).
    Compliant: 0,50 € on 10,00 €; 0,10 € on 1,00 € (the tie rounds up).
    """
    s = simple_levy(carnet, profile)
    s = s[s["prelevement_cents"].notna()]
    wrong = s[~accepted(s["prelevement_cents"], s["lo"], s["hi"], profile.levy_step_cents).astype(bool)]
    yield from emit(wrong, lambda r: Violation(
        table="coups", row=r["_row"], column="prelevement_cents", seance=r["seance"], coup=r["coup"],
        kind="avant", expected=Cents(r["hi"]), found=Cents(r["prelevement_cents"]),
        impact_cents=r["hi"] - r["prelevement_cents"],
        params={"mass_cents": r["mass"], "side": r["gagnant"]}))
    c = carnet.df("coups")
    apres = c[eq(c["type"], "simple") & (c["prelevement_apres_cents"] != 0).fillna(False).astype(bool)]
    yield from emit(apres, lambda r: Violation(
        table="coups", row=r["_row"], column="prelevement_apres_cents", seance=r["seance"], coup=r["coup"],
        kind="apres", expected=Cents(0), found=Cents(r["prelevement_apres_cents"]),
        impact_cents=-r["prelevement_apres_cents"]))


@check("EC66-02", needs=("coups.type,gagnant,prelevement,total_b", *STAKES))
def chouette_levy_exact(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """The levy of a chouette coup: before the deal, 5 % of the sums held outside
    the chouette, plus 5 % of the chouette at an adjudication or remise; after
    the result, 5 % of what the chouette held when the pontes win.

    Why: art. 66 and 66-1 — the chouette pays its levy once per adjudication and remise, the pontes at every coup.
    Non-compliant: 5,00 € levied again on a chouette of 100 € that has not sauté; nothing after the pontes won.
    Compliant: 5,00 € at the adjudication of 100 €, then 0 before the deal and 5 % of the pontes' gains after.
    """
    ch = chouette_levy(carnet, profile)
    step = profile.levy_step_cents
    for phase, column in (("avant", "prelevement_cents"), ("apres", "prelevement_apres_cents")):
        lo, hi = f"lo_{phase}", f"hi_{phase}"
        d = ch[ch[column].notna() & ch[hi].notna()]
        wrong = d[~accepted(d[column], d[lo], d[hi], step).astype(bool)]
        yield from emit(wrong, lambda r, p=phase, col=column, h=hi: Violation(
            table="coups", row=r["_row"], column=col, seance=r["seance"], coup=r["coup"],
            kind=p if p == "apres" or r["evenement"] is None else f"avant_{r['evenement']}",
            expected=Cents(r[h]), found=Cents(r[col]), impact_cents=r[h] - r[col],
            params={"held_a_cents": r["held_a"], "sur_chouette_cents": r["sur_chouette"],
                    "chouette_cents": r["chouette_cents"], "side": r["gagnant"]}))
