"""The fiche register and the card holders of each coup, derived once per
carnet for the rules of art. 63."""

from __future__ import annotations

import pandas as pd

from auditor.carnet import Carnet
from auditor.derived.cache import per_carnet
from auditor.derived.chouette import ordered_coups
from auditor.frames import eq


@per_carnet
def fiche_register(carnet: Carnet) -> tuple[pd.DataFrame, pd.Series]:
    """The fiche register, first row per (séance, fiche), and the séances whose
    register cannot be trusted to be complete (a row with an unreadable séance
    or number: a fiche "missing" there may be that very row).

    Returns (register with seance, fiche, date, tenir_cartes, rank_unreadable, _row;
    a boolean Series `uncertain` indexed by séance, plus key -1 = every séance).
    """
    f = carnet.df("fiches")
    f = f.assign(rank_unreadable=carnet.unreadable_cells("fiches", "tenir_cartes"))
    blind = f["seance"].isna() | f["fiche"].isna()
    uncertain = set(f.loc[blind & f["seance"].notna(), "seance"].tolist())
    if (blind & f["seance"].isna()).any():
        uncertain.add(-1)
    reg = f[~blind].drop_duplicates(["seance", "fiche"], keep="first")
    return reg, pd.Series(sorted(uncertain), dtype="Int64")


@per_carnet
def card_holders(carnet: Carnet) -> pd.DataFrame:
    """Who holds the cards at each coup: one row per (coup, side) with the
    player's fiche, in carnet order. `chouetteur` marks joueur_a of a chouette
    coup (he holds the cards by adjudication, not by the call)."""
    c = ordered_coups(carnet)
    parts = []
    for side in ("a", "b"):
        column = f"joueur_{side}"
        p = c[["seance", "coup", "pos", "_row", "type", column]].rename(columns={column: "player"})
        p = p.assign(column=column, side=side,
                     chouetteur=eq(c["type"], "chouette") & (side == "a"), type_known=c["type"].notna())
        parts.append(p[p["player"].notna()])
    return pd.concat(parts).sort_values(["seance", "pos", "side"], kind="stable")
