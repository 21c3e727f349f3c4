"""The chouette state, computed once: runs, adjudications, sautes, remises.

A **run** is a maximal sequence of consecutive `chouette` coups of one séance
with the same `joueur_a` (the chouetteur). Within a run, an **adjudication
segment** starts at the run's first coup and at every later coup whose
`evenement` is `adjudication`: remises and sautes are counted per segment,
since art. 65 allows one remise per adjudication and sends the chouette back
to auction after its second saute. The chouette **sautes** at a coup where
side b wins and the chouette held all of its amount (`sur_chouette = chouette`).

`chouette_state` is vectorised over the coups (no loop at all), as numpy
arrays, computed once per carnet: the rules of art. 65, the levy and the
report's run list read it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from auditor.arrays import blind_cells, equals, ints_of, present_of
from auditor.carnet import Carnet
from auditor.derived.amounts import coup_amounts
from auditor.derived.cache import per_carnet
from auditor.frames import cat, pair_codes

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
    seance, s_ok = ints_of(carnet, "coups", "seance")
    coup, c_ok = ints_of(carnet, "coups", "coup")
    at = np.flatnonzero(s_ok & c_ok)
    seance, coup = seance[at], coup[at]
    key = pair_codes((seance, coup))[0]
    if not np.all(key[1:] >= key[:-1]):      # usually written in order already: then no sort
        order = np.argsort(key, kind="stable")
        at, seance, coup = at[order], seance[order], coup[order]
    n = len(at)
    new_seance = cat(True, seance[1:] != seance[:-1]) if n else np.zeros(0, dtype=bool)
    starts = np.flatnonzero(new_seance)
    pos = np.arange(n) - np.repeat(starts, np.diff(cat(starts, n)))
    follows = ~new_seance & (cat(0, coup[1:] - coup[:-1]) == 1) if n else np.zeros(0, dtype=bool)
    return Play(at, seance, coup, pos.astype(np.int64), follows, new_seance)


@dataclass(frozen=True)
class ChouetteState:
    """The chouette coups in the order of play (`Play`), one element each, as
    numpy: `at`, the coup's position in `coups` (carnet order); seance, coup;
    pos and follows (`Play`); run (id), run_start, run_end; segment
    (adjudication segment id); adjudicated (the `chouette` of the segment's
    adjudication coup, where `adjudicated_ok`: the segment started with one);
    held_a, sur_chouette (levy basis of `coup_amounts`, where `*_ok`); saute
    (where `saute_known`); prev_saute, the previous coup of the run sauté
    (where `prev_saute_known`; False at a run start); prev_coup, its number
    (none at a run start); sautes_upto_prev (known sautes of the segment up
    to the previous coup: an unknown one can only add to it); remises_before
    (remises of the segment before this coup); evenement_unreadable.
    Arrays, not a frame: the rules and the report read a few columns of a
    few dozen coups, and a frame of them cost more than the state itself."""

    at: np.ndarray
    seance: np.ndarray
    coup: np.ndarray
    pos: np.ndarray
    follows: np.ndarray
    run_start: np.ndarray
    run: np.ndarray
    run_end: np.ndarray
    segment: np.ndarray
    adjudicated: np.ndarray
    adjudicated_ok: np.ndarray
    held_a: np.ndarray
    held_a_ok: np.ndarray
    sur_chouette: np.ndarray
    sur_chouette_ok: np.ndarray
    saute: np.ndarray
    saute_known: np.ndarray
    prev_saute: np.ndarray
    prev_saute_known: np.ndarray
    prev_coup: np.ndarray
    sautes_upto_prev: np.ndarray
    remises_before: np.ndarray
    evenement_unreadable: np.ndarray

    def __len__(self) -> int:
        return len(self.at)

    @property
    def empty(self) -> bool:
        """No chouette coup."""
        return len(self.at) == 0

    def frame(self, carnet: Carnet) -> pd.DataFrame:
        """The state as one frame, one row per chouette coup (index of `coups`):
        the coup's own columns, then the state's (for tests and readers that
        want pandas; <NA> where a value is not known)."""
        coups = carnet.df("coups")
        at = self.at
        return pd.DataFrame(dict(
            {k: coups[k].array.take(at) for k in coups.columns},
            pos=self.pos, follows=self.follows, run_start=self.run_start, run=self.run, run_end=self.run_end,
            segment=self.segment, adjudicated=pd.arrays.IntegerArray(self.adjudicated.copy(), ~self.adjudicated_ok),
            held_a=pd.arrays.IntegerArray(self.held_a.copy(), ~self.held_a_ok),
            sur_chouette=pd.arrays.IntegerArray(self.sur_chouette.copy(), ~self.sur_chouette_ok),
            saute=pd.arrays.BooleanArray(self.saute.copy(), ~self.saute_known),
            prev_saute=pd.arrays.BooleanArray(self.prev_saute.copy(), ~self.prev_saute_known),
            prev_coup=pd.arrays.IntegerArray(self.prev_coup.copy(), self.run_start.copy()),
            sautes_upto_prev=self.sautes_upto_prev, remises_before=self.remises_before,
            evenement_unreadable=self.evenement_unreadable), index=coups.index[at])


@per_carnet
def chouette_state(carnet: Carnet) -> ChouetteState:
    """The chouette coups' runs, segments, sautes and remises (`ChouetteState`)."""
    p = play_order(carnet)
    is_chouette = equals(carnet, "coups", "type", "chouette")[p.at]
    prev_chouette = cat(False, is_chouette[:-1]) & ~p.new_seance
    a, a_ok = ints_of(carnet, "coups", "joueur_a")
    a, a_ok = a[p.at], a_ok[p.at]
    # An unreadable joueur_a continues the run: breaking it would invent a missing adjudication.
    changed = ~p.new_seance & a_ok & cat(False, a_ok[:-1]) & (a != cat(0, a[:-1]))
    run_start = (is_chouette & (~prev_chouette | changed))[is_chouette]
    at = p.at[is_chouette]
    n = len(at)
    amounts = coup_amounts(carnet)
    run = np.cumsum(run_start) - 1
    run_end = cat(run[1:] != run[:-1], True) if n else np.zeros(0, dtype=bool)
    adjudication = equals(carnet, "coups", "evenement", "adjudication")[at]
    segment = np.cumsum(run_start | adjudication) - 1
    # An adjudication can only open a segment, so the segment's one candidate is its first coup.
    chouette, chouette_ok = ints_of(carnet, "coups", "chouette_cents")
    chouette, chouette_ok = chouette[at], chouette_ok[at]
    seg_first = np.flatnonzero(cat(True, segment[1:] != segment[:-1])) if n else np.zeros(0, dtype=np.int64)
    of_segment = segment - segment[0] if n else segment
    adjudicated_ok = (adjudication & chouette_ok)[seg_first][of_segment]
    adjudicated = np.where(adjudicated_ok, chouette[seg_first][of_segment], 0)
    held_a, held_a_ok = amounts.levy_held_a[at], amounts.levy_held_a_ok[at]
    sur, sur_ok = amounts.levy_sur_chouette[at], amounts.levy_sur_chouette_ok[at]
    winner_known = present_of(carnet, "coups", "gagnant")[at]
    unknown = ~winner_known | ~chouette_ok | ~sur_ok | amounts.unverifiable[at]
    saute = equals(carnet, "coups", "gagnant", "b")[at] & (sur == chouette) & ~unknown
    prev_known = cat(False, ~unknown[:-1]) | run_start
    prev_saute = cat(False, saute[:-1]) & ~run_start
    coup = p.coup[is_chouette]
    n_saute = saute.astype(np.int64)
    n_remise = equals(carnet, "coups", "evenement", "remise")[at].astype(np.int64)
    new_segment = cat(True, segment[1:] != segment[:-1]) if n else np.zeros(0, dtype=bool)
    return ChouetteState(
        at=at, seance=p.seance[is_chouette], coup=coup, pos=p.pos[is_chouette], follows=p.follows[is_chouette],
        run_start=run_start, run=run, run_end=run_end, segment=segment,
        adjudicated=adjudicated, adjudicated_ok=adjudicated_ok, held_a=held_a, held_a_ok=held_a_ok,
        sur_chouette=sur, sur_chouette_ok=sur_ok, saute=saute, saute_known=~unknown,
        prev_saute=prev_saute, prev_saute_known=prev_known,
        prev_coup=cat(0, coup[:-1]) if n else coup,
        sautes_upto_prev=_within(n_saute, new_segment) - n_saute,
        remises_before=_within(n_remise, new_segment) - n_remise,
        evenement_unreadable=blind_cells(carnet, "coups", "evenement")[at])


def _within(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The running sum of `values`, starting again at each True of `starts`."""
    total = np.cumsum(values)
    if not len(values):
        return total
    begin = np.flatnonzero(starts)
    before = cat(0, total[begin[1:] - 1])
    return total - np.repeat(before, np.diff(cat(begin, len(values))))
