"""The chouette state, computed once: runs, adjudications, sautes, remises.

A **run** is a maximal sequence of consecutive `chouette` coups of one séance
with the same `joueur_a` (the chouetteur). Within a run, an **adjudication
segment** starts at the run's first coup and at every later coup whose
`evenement` is `adjudication`: remises and sautes are counted per segment,
since art. 65 allows one remise per adjudication and sends the chouette back
to auction after its second saute. The chouette **sautes** at a coup where
side b wins and the chouette held all of its amount (`sur_chouette = chouette`).

`chouette_state` is vectorised over the coups (no loop at all), computed once
per carnet: the rules of art. 65, the levy and the report's run list read it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from auditor.carnet import Carnet
from auditor.derived.amounts import coup_amounts
from auditor.derived.cache import per_carnet
from auditor.frames import eq, shared_codes

@per_carnet
def ordered_coups(carnet: Carnet) -> pd.DataFrame:
    """The coups with a séance and a number, in the order of play: séance, then
    coup number (rows out of numbering order are EC64-01's business only; a
    repeated number keeps its rows' order). `pos`: the coup's position within
    its séance (0, 1, 2 …); `follows`: the coup comes right after the
    previous one (its number is the previous number + 1), so that a rule
    about "the next coup" never bridges a gap, a repeat or an unreadable number."""
    c = carnet.df("coups")
    c = c[(c["seance"].notna() & c["coup"].notna()).to_numpy()]
    key = shared_codes(c)[0]
    if not np.all(key[1:] >= key[:-1]):      # usually written in order already: then no sort
        c = c.iloc[np.argsort(key, kind="stable")]
    g = c.groupby("seance", sort=False)
    return c.assign(pos=g.cumcount(), follows=(c["coup"] - g["coup"].shift() == 1).fillna(False).astype(bool))


@per_carnet
def chouette_state(carnet: Carnet) -> pd.DataFrame:
    """One row per chouette coup (index of `coups`), in carnet order.

    Columns, besides the coup's own: run (id), run_start, run_end (bool);
    segment (adjudication segment id), adjudicated (the `chouette` of the
    segment's adjudication coup, <NA> when the segment did not start with
    one); held_a, sur_chouette (levy basis of `coup_amounts`);
    saute (boolean, <NA> when it cannot be told); prev_saute (the previous
    coup of the run sauté; False at a run start); prev_coup (its number);
    sautes_upto_prev (known sautes of the segment up to the previous coup: an
    unknown one can only add to it); remises_before (remises of the segment
    before this coup); evenement_unreadable.
    """
    c = ordered_coups(carnet)
    is_chouette = eq(c["type"], "chouette")
    prev_chouette = is_chouette.groupby(c["seance"], sort=False).shift(fill_value=False).astype(bool)
    prev_a = c["joueur_a"].groupby(c["seance"], sort=False).shift()
    # An unreadable joueur_a continues the run: breaking it would invent a missing adjudication.
    changed = (c["joueur_a"] != prev_a).fillna(False).astype(bool)
    run_start = is_chouette & (~prev_chouette | changed)
    a = coup_amounts(carnet)
    s = c[is_chouette].copy()
    s["run_start"] = run_start[is_chouette]
    s["run"] = s["run_start"].cumsum() - 1
    s["run_end"] = s["run"] != s["run"].shift(-1)
    adjudication = eq(s["evenement"], "adjudication")
    s["segment"] = (s["run_start"] | adjudication).cumsum() - 1
    # An adjudication can only open a segment, so the segment's one candidate is its first coup.
    s["adjudicated"] = s["chouette_cents"].where(adjudication).groupby(s["segment"]).transform("first")
    s["held_a"] = a.loc[s.index, "levy_held_a"]
    s["sur_chouette"] = a.loc[s.index, "levy_sur_chouette"]
    unverifiable = a.loc[s.index, "unverifiable"]
    saute = (eq(s["gagnant"], "b") & (s["sur_chouette"] == s["chouette_cents"])).astype("boolean")
    unknown = (s["gagnant"].isna() | s["chouette_cents"].isna() | s["sur_chouette"].isna() | unverifiable)
    s["saute"] = saute.mask(unknown.to_numpy(), pd.NA)
    by_run = s.groupby("run", sort=False)
    s["prev_saute"] = by_run["saute"].shift().astype("boolean").mask(s["run_start"].to_numpy(), False)
    s["prev_coup"] = by_run["coup"].shift().astype("Int64")
    n_saute = s["saute"].fillna(False).astype(int)
    s["sautes_upto_prev"] = n_saute.groupby(s["segment"]).cumsum() - n_saute
    n_remise = eq(s["evenement"], "remise").astype(int)
    s["remises_before"] = n_remise.groupby(s["segment"]).cumsum() - n_remise
    s["evenement_unreadable"] = carnet.unreadable_cells("coups", "evenement").loc[s.index]
    return s
