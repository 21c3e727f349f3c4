"""Article 66: the 5 % levy for the cagnotte."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from auditor.carnet import Carnet
from auditor.catalogue import Profile
from auditor.checks._util import emit_at, records
from auditor.derived.levy import NA, chouette_levy, simple_levy
from auditor.arrays import equals, ints_of
from auditor.model import Cents, Violation
from auditor.registry import check
from auditor.checks._needs import STAKES


def _accepted(recorded: np.ndarray, lo: np.ndarray, hi: np.ndarray, step: int) -> np.ndarray:
    """`money.accepted` on int64 arrays (where all three are known)."""
    return (recorded >= lo) & (recorded <= hi) & ((recorded - lo) % step == 0)


@check("EC66-01", needs=("coups.type,gagnant,prelevement,prelevement_apres,total_a,total_b", *STAKES))
def simple_levy_exact(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """The levy of a simple coup is 5 % of the winning side, rounded to 0.10 €.

    Why: art. 66 and 59 — the levy is the base of what the casino owes the State.
    Non-compliant: 0,40 € recorded on a winning side of 10,00 € (0,50 € due).
    Compliant: 0,50 € on 10,00 €; 0,10 € on 1,00 € (the tie rounds up).
    """
    s = simple_levy(carnet, profile)
    c = carnet.df("coups")
    recorded, ok = ints_of(carnet, "coups", "prelevement_cents")
    recorded, ok = recorded[s.at], ok[s.at]
    wrong = np.flatnonzero(ok & ~_accepted(recorded, s.lo, s.hi, profile.levy_step_cents))
    # Rows of the coups cut only for the coups reported (usually none).
    for k, r in zip(wrong, records(c.iloc[s.at[wrong]]) if len(wrong) else ()):
        hi, mass = int(s.hi[k]), int(s.mass[k])
        yield Violation(
            table="coups", row=r["_row"], column="prelevement_cents", seance=r["seance"], coup=r["coup"],
            kind="avant", expected=Cents(hi), found=Cents(r["prelevement_cents"]),
            impact_cents=hi - r["prelevement_cents"],
            params={"mass_cents": mass, "side": r["gagnant"]})
    after, after_ok = ints_of(carnet, "coups", "prelevement_apres_cents")
    apres = equals(carnet, "coups", "type", "simple") & after_ok & (after != 0)
    yield from emit_at(c, np.flatnonzero(apres), lambda r: Violation(
        table="coups", row=r["_row"], column="prelevement_apres_cents", seance=r["seance"], coup=r["coup"],
        kind="apres", expected=Cents(0), found=Cents(r["prelevement_apres_cents"]),
        impact_cents=-r["prelevement_apres_cents"]))


@check("EC66-02", needs=("coups.type,gagnant,prelevement,prelevement_apres,total_b", *STAKES))
def chouette_levy_exact(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """The levy of a chouette coup: before the deal, 5 % of the sums held outside
    the chouette, plus 5 % of the chouette at an adjudication or remise; after
    the result, 5 % of what the chouette held when the pontes win.

    Why: art. 66 and 66-1 — the chouette pays its levy once per adjudication and remise, the pontes at every coup.
    Non-compliant: 5,00 € levied again on a chouette of 100 € that has not sauté; nothing after the pontes won.
    Compliant: 5,00 € at the adjudication of 100 €, then 0 before the deal and 5 % of the pontes' gains after.
    """
    ch = chouette_levy(carnet, profile)
    c = carnet.df("coups")
    step = profile.levy_step_cents
    for phase, column in (("avant", "prelevement_cents"), ("apres", "prelevement_apres_cents")):
        recorded, ok = ints_of(carnet, "coups", column)
        recorded, ok = recorded[ch.at], ok[ch.at]
        lo, hi = ch.lo[phase], ch.hi[phase]
        known = hi != NA
        wrong = np.flatnonzero(ok & known & ~_accepted(recorded, np.where(known, lo, 0), np.where(known, hi, 0), step))
        for k, r in zip(wrong, records(c.iloc[ch.at[wrong]]) if len(wrong) else ()):
            expected = int(hi[k])
            yield Violation(
                table="coups", row=r["_row"], column=column, seance=r["seance"], coup=r["coup"],
                kind=phase if phase == "apres" or r["evenement"] is None else f"avant_{r['evenement']}",
                expected=Cents(expected), found=Cents(r[column]), impact_cents=expected - r[column],
                params={"held_a_cents": _known(ch.held_a[k]), "sur_chouette_cents": _known(ch.sur_chouette[k]),
                        "chouette_cents": r["chouette_cents"], "side": r["gagnant"]})


def _known(value) -> int | None:
    """An int64 amount of the derived levy as a Python int, None where unknown."""
    return None if value == NA else int(value)
