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

from dataclasses import dataclass

import numpy as np
import pandas as pd

from auditor.carnet import Carnet
from auditor.derived.amounts import coup_amounts
from auditor.derived.cache import per_carnet
from auditor.frames import eq, ints, pair_codes

@dataclass(frozen=True)
class Play:
    """The coups with a séance and a number in the order of play, as numpy
    arrays (one element per such coup): `at`, the coup's position in `coups`;
    seance, coup; `pos`, its position within its séance (0, 1, 2 …);
    `follows`, its number is the previous coup's + 1 in the séance;
    `new_seance`, it is the séance's first coup. See `ordered_coups`."""

    at: np.ndarray
    seance: np.ndarray
    coup: np.ndarray
    pos: np.ndarray
    follows: np.ndarray
    new_seance: np.ndarray


@per_carnet
def play_order(carnet: Carnet) -> Play:
    """The order of play of `ordered_coups`, as numpy arrays."""
    c = carnet.df("coups")
    seance, s_ok = ints(c["seance"])
    coup, c_ok = ints(c["coup"])
    at = np.flatnonzero(s_ok & c_ok)
    seance, coup = seance[at], coup[at]
    key = pair_codes((seance, coup))[0]
    if not np.all(key[1:] >= key[:-1]):      # usually written in order already: then no sort
        order = np.argsort(key, kind="stable")
        at, seance, coup = at[order], seance[order], coup[order]
    n = len(at)
    new_seance = np.r_[True, seance[1:] != seance[:-1]] if n else np.zeros(0, dtype=bool)
    starts = np.flatnonzero(new_seance)
    pos = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))
    follows = ~new_seance & (np.r_[0, coup[1:] - coup[:-1]] == 1) if n else np.zeros(0, dtype=bool)
    return Play(at, seance, coup, pos.astype(np.int64), follows, new_seance)


@per_carnet
def ordered_coups(carnet: Carnet) -> pd.DataFrame:
    """The coups with a séance and a number, in the order of play: séance, then
    coup number (rows out of numbering order are EC64-01's business only; a
    repeated number keeps its rows' order). `pos`: the coup's position within
    its séance (0, 1, 2 …); `follows`: the coup comes right after the
    previous one (its number is the previous number + 1), so that a rule
    about "the next coup" never bridges a gap, a repeat or an unreadable number."""
    p = play_order(carnet)
    return carnet.df("coups").iloc[p.at].assign(pos=p.pos, follows=p.follows)


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
