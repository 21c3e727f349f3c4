"""Article 66: the 5 % levy for the cagnotte."""

from __future__ import annotations

from typing import Iterator

import pandas as pd

from auditor.carnet import Carnet
from auditor.catalogue import Profile
from auditor.checks._util import emit
from auditor.frames import eq
from auditor.model import Cents, Violation
from auditor.money import accepted
from auditor.registry import check


def simple_levy(carnet: Carnet, profile: Profile) -> pd.DataFrame:
    """Expected levy of each verifiable simple coup: L(mass of the winning side).

    The mass comes from the stakes, or from the recorded total when the coup
    has no stake row. Columns: lo, hi (accepted range), mass, plus the coup's.
    """
    c = carnet.df("coups")
    a = carnet.coup_amounts
    ok = eq(c["type"], "simple") & c["gagnant"].notna() & ~a["unverifiable"]
    c, a = c[ok], a[ok]
    win_a = eq(c["gagnant"], "a")
    from_stakes = a["n_mises"] > 0
    mass = pd.Series(
        a["held_a"].where(win_a, a["held_b"]).where(from_stakes, c["total_a_cents"].where(win_a, c["total_b_cents"])),
        index=c.index, dtype="Int64")
    lo, hi = profile.levy.bounds_series(mass)
    out = c.assign(mass=mass, lo=lo, hi=hi)
    return out[out["mass"].notna()]


def levy_totals(carnet: Carnet, profile: Profile) -> tuple[int, int]:
    """(expected, recorded) levy of the carnet, in cents.

    Expected: the levy the rules compute where a coup can be verified, the
    recorded levy elsewhere (so the difference shows only what was checked).
    """
    c = carnet.df("coups")
    recorded = (c["prelevement_cents"].fillna(0) + c["prelevement_apres_cents"].fillna(0)).astype("Int64")
    s = simple_levy(carnet, profile)
    expected = recorded.copy()
    expected.loc[s.index] = s["hi"]  # a simple coup owes nothing after the result
    return int(expected.sum()), int(recorded.sum())


@check("EC66-01", needs=("coups",), passes_over=("chouette",))
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
