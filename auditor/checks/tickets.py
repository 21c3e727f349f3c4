"""Articles 66-1, 59, 56-1, 82 and 83: the tickets that represent the levy."""

from __future__ import annotations

from typing import Iterator

import pandas as pd

from auditor.carnet import Carnet
from auditor.catalogue import Profile
from auditor.checks._util import emit
from auditor.model import Cents, Violation
from auditor.registry import check

PHASE_LEVY = {"avant": "prelevement_cents", "apres": "prelevement_apres_cents"}


def ticket_face_values(carnet: Carnet) -> pd.DataFrame:
    """Face value detached per (séance, coup, phase), over runs, not tickets.

    `unverifiable` marks a group with a run whose value, numbers or phase
    could not be read (or whose `dernier` precedes `premier`).
    """
    t = carnet.df("tickets")
    t = t[t["seance"].notna() & t["coup"].notna()]
    count = (t["dernier"] - t["premier"] + 1).astype("Int64")
    bad = t["valeur_cents"].isna() | count.isna() | (count < 1).fillna(True) | t["phase"].isna()
    face = (t["valeur_cents"] * count).where(~bad, 0).fillna(0)
    g = pd.DataFrame({"seance": t["seance"], "coup": t["coup"], "phase": t["phase"].fillna("?"),
                      "face": face.astype("int64"), "unverifiable": bad.astype(bool)})
    return g.groupby(["seance", "coup", "phase"], sort=False).agg(
        face=("face", "sum"), unverifiable=("unverifiable", "any")).reset_index()


@check("EC661-01", needs=("coups", "tickets"))
def tickets_represent_levy(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """The tickets detached for a coup and phase add up to the recorded levy.

    Why: art. 66-1 — tickets represent the levy; a levy without its tickets escapes the count.
    Non-compliant: 1,50 € recorded, tickets for 1,00 € detached.
    Compliant: 1,50 € recorded, one 1 € ticket and five 0,10 € tickets.
    """
    coups = carnet.df("coups")
    coups = coups[coups["seance"].notna() & coups["coup"].notna()]
    faces = ticket_face_values(carnet)
    skip = carnet.coup_amounts.loc[coups.index, "unverifiable"]
    coups = coups[~skip.to_numpy()]
    for phase, column in PHASE_LEVY.items():
        rec = coups[["seance", "coup", "_row", column]].rename(columns={column: "recorded"})
        f = faces[faces["phase"] == phase]
        m = rec.merge(f, on=["seance", "coup"], how="left")
        m["face"] = m["face"].fillna(0).astype("int64")
        m = m[m["recorded"].notna() & ~m["unverifiable"].fillna(False).astype(bool)]
        wrong = m[(m["face"] != m["recorded"])]
        yield from emit(wrong, lambda r, p=phase, col=column: Violation(
            table="coups", row=r["_row"], column=col, seance=r["seance"], coup=r["coup"], kind=p,
            expected=Cents(r["recorded"]), found=Cents(r["face"]),
            impact_cents=max(r["recorded"] - r["face"], 0),
            params={"recorded_cents": r["recorded"], "face_cents": r["face"]}))
