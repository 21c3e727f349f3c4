"""Article 63: stakes, fiches and card holders."""

from __future__ import annotations

from typing import Iterator

from auditor.carnet import Carnet
from auditor.catalogue import Profile
from auditor.checks._util import emit
from auditor.model import Cents, Violation
from auditor.registry import check


@check("EC63-01", needs=("mises",))
def stakes_multiple_of_step(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """`montant` and `restitue` are multiples of 0.10 €.

    Why: art. 63 — stakes must be multiples of 10 centimes.
    Non-compliant: a stake of 12,55 €.
    Compliant: a stake of 12,50 €, a return of 2,30 €.
    """
    m = carnet.df("mises")
    step = profile.stake_step_cents
    for field in ("montant_cents", "restitue_cents"):
        hit = m[(m[field] % step != 0).fillna(False).astype(bool)]
        yield from emit(hit, lambda r, f=field: Violation(
            table="mises", row=r["_row"], column=f, seance=r["seance"], coup=r["coup"], rang=r["rang"],
            found=Cents(r[f]), kind=f.removesuffix("_cents"), params={"amount_cents": r[f], "step_cents": step}))


@check("EC63-02", needs=("mises",))
def stakes_at_least_minimum(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """`montant` ≥ 0.10 €; 0 ≤ `restitue` ≤ `montant`.

    Why: art. 63 sets a minimum stake of 10 centimes; a return cannot exceed the stake.
    Non-compliant: a stake of 0,00 €, or 5 € returned on a 4 € stake.
    Compliant: a stake of 0,10 €, with 0 € returned.
    """
    m = carnet.df("mises")
    low = profile.min_stake_cents
    cases = (
        ("below_min", "montant_cents", (m["montant_cents"] < low), lambda r: Cents(low)),
        ("restitue_negative", "restitue_cents", (m["restitue_cents"] < 0), lambda r: Cents(0)),
        ("restitue_over", "restitue_cents", (m["restitue_cents"] > m["montant_cents"]),
         lambda r: Cents(r["montant_cents"])),
    )
    for kind, field, mask, expected in cases:
        hit = m[mask.fillna(False).astype(bool)]
        yield from emit(hit, lambda r, k=kind, f=field, e=expected: Violation(
            table="mises", row=r["_row"], column=f, seance=r["seance"], coup=r["coup"], rang=r["rang"],
            expected=e(r), found=Cents(r[f]), kind=k,
            params={"amount_cents": r[f], "montant_cents": r["montant_cents"], "min_cents": low}))
