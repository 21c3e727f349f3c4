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

from auditor.arrays import ints_of
from auditor.carnet import Carnet
from auditor.derived.amounts import coup_amounts
from auditor.derived.cache import per_carnet
from auditor.frames import ints, is_value, pair_codes, present

@dataclass(frozen=True)
class Play:
    """The coups with a séance and a number in the order of play: séance, then
    coup number (rows out of numbering order are EC64-01's business only; a
    repeated number keeps its rows' order). One element per such coup: `at`,
    the coup's position in `coups`; seance, coup; `pos`, its position within
    its séance (0, 1, 2 …); `follows`, it comes right after the previous one
    (its number is the previous number + 1), so that a rule about "the next
    coup" never bridges a gap, a repeat or an unreadable number;
    `new_seance`, it is the séance's first coup."""

    at: np.ndarray
    seance: np.ndarray
    coup: np.ndarray
    pos: np.ndarray
    follows: np.ndarray
    new_seance: np.ndarray


@per_carnet
def play_order(carnet: Carnet) -> Play:
    """The order of play, as numpy arrays (`Play`)."""
    c = carnet.df("coups")
    seance, s_ok = ints_of(carnet, "coups", "seance")
    coup, c_ok = ints_of(carnet, "coups", "coup")
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
def chouette_state(carnet: Carnet) -> pd.DataFrame:
    """One row per chouette coup (index of `coups`), in carnet order.

    Columns, besides the coup's own and its `pos` and `follows` (`Play`): run (id), run_start, run_end (bool);
    segment (adjudication segment id), adjudicated (the `chouette` of the
    segment's adjudication coup, <NA> when the segment did not start with
    one); held_a, sur_chouette (levy basis of `coup_amounts`);
    saute (boolean, <NA> when it cannot be told); prev_saute (the previous
    coup of the run sauté; False at a run start); prev_coup (its number);
    sautes_upto_prev (known sautes of the segment up to the previous coup: an
    unknown one can only add to it); remises_before (remises of the segment
    before this coup); evenement_unreadable.
    """
    p = play_order(carnet)
    coups = carnet.df("coups")
    is_chouette = is_value(coups["type"], "chouette")[p.at]
    prev_chouette = np.r_[False, is_chouette[:-1]] & ~p.new_seance
    a, a_ok = ints_of(carnet, "coups", "joueur_a")
    a, a_ok = a[p.at], a_ok[p.at]
    # An unreadable joueur_a continues the run: breaking it would invent a missing adjudication.
    changed = ~p.new_seance & a_ok & np.r_[False, a_ok[:-1]] & (a != np.r_[0, a[:-1]])
    run_start = (is_chouette & (~prev_chouette | changed))[is_chouette]
    at = p.at[is_chouette]
    n = len(at)
    amounts = coup_amounts(carnet)
    run = np.cumsum(run_start) - 1
    run_end = np.r_[run[1:] != run[:-1], True] if n else np.zeros(0, dtype=bool)
    event = coups["evenement"]
    adjudication = is_value(event, "adjudication")[at]
    segment = np.cumsum(run_start | adjudication) - 1
    # An adjudication can only open a segment, so the segment's one candidate is its first coup.
    chouette, chouette_ok = ints_of(carnet, "coups", "chouette_cents")
    chouette, chouette_ok = chouette[at], chouette_ok[at]
    seg_first = np.flatnonzero(np.r_[True, segment[1:] != segment[:-1]]) if n else np.zeros(0, dtype=np.int64)
    of_segment = segment - segment[0] if n else segment
    adjudicated_ok = (adjudication & chouette_ok)[seg_first][of_segment]
    adjudicated = np.where(adjudicated_ok, chouette[seg_first][of_segment], 0)
    held_a = amounts["levy_held_a"].array.take(at)
    sur_chouette = amounts["levy_sur_chouette"].array.take(at)
    sur, sur_ok = sur_chouette.to_numpy(dtype=np.int64, na_value=0), ~sur_chouette.isna()
    winner_known = present(coups["gagnant"])[at]
    unknown = ~winner_known | ~chouette_ok | ~sur_ok | amounts["unverifiable"].to_numpy()[at]
    saute = is_value(coups["gagnant"], "b")[at] & (sur == chouette) & ~unknown
    prev_known = np.r_[False, ~unknown[:-1]] | run_start
    prev_saute = np.r_[False, saute[:-1]] & ~run_start
    coup = p.coup[is_chouette]
    n_saute = saute.astype(np.int64)
    n_remise = is_value(event, "remise")[at].astype(np.int64)
    new_segment = np.r_[True, segment[1:] != segment[:-1]] if n else np.zeros(0, dtype=bool)
    # One frame from whole columns (taking rows of each column costs less than of a frame, then assigning).
    return pd.DataFrame(dict(
        {k: coups[k].array.take(at) for k in coups.columns},
        pos=p.pos[is_chouette], follows=p.follows[is_chouette],
        run_start=run_start, run=run, run_end=run_end, segment=segment,
        adjudicated=pd.arrays.IntegerArray(adjudicated, ~adjudicated_ok),
        held_a=held_a, sur_chouette=sur_chouette,
        saute=pd.arrays.BooleanArray(saute, unknown),
        prev_saute=pd.arrays.BooleanArray(prev_saute, ~prev_known),
        prev_coup=pd.arrays.IntegerArray(np.r_[0, coup[:-1]] if n else coup, run_start.copy()),
        sautes_upto_prev=_within(n_saute, new_segment) - n_saute,
        remises_before=_within(n_remise, new_segment) - n_remise,
        evenement_unreadable=carnet.unreadable_cells("coups", "evenement").to_numpy()[at]), index=coups.index[at])


def _within(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The running sum of `values`, starting again at each True of `starts`."""
    total = np.cumsum(values)
    if not len(values):
        return total
    begin = np.flatnonzero(starts)
    before = np.r_[0, total[begin[1:] - 1]]
    return total - np.repeat(before, np.diff(np.r_[begin, len(values)]))
