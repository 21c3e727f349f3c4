"""Article 66: the 5 % levy for the cagnotte."""

from __future__ import annotations

from typing import Iterator

from auditor.carnet import Carnet
from auditor.catalogue import Profile
from auditor.checks._util import emit
from auditor.derived.levy import chouette_levy, simple_levy
from auditor.frames import eq
from auditor.model import Cents, Violation
from auditor.money import accepted
from auditor.registry import check
from auditor.checks._needs import STAKES


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
