"""The fiche register and the card holders of each coup, derived once per
carnet for the rules of art. 63."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from auditor.arrays import equals, ints_of, present_of
from auditor.carnet import Carnet
from auditor.derived.cache import per_carnet
from auditor.derived.chouette import play_order
from auditor.frames import find, first_each, pair_codes


@dataclass(frozen=True)
class Register:
    """The fiche register: `at`, the position in `fiches` of the first row of
    each readable (séance, fiche), in row order; their seance and fiche; and
    the séances whose register cannot be trusted to be complete (a row with
    an unreadable séance or number: a fiche "missing" there may be that very
    row): `all_uncertain` (a row without a readable séance makes every
    séance's register uncertain), else the `uncertain` séances."""

    at: np.ndarray
    seance: np.ndarray
    fiche: np.ndarray
    all_uncertain: bool
    uncertain: np.ndarray

    def unsure(self, seances: np.ndarray) -> np.ndarray:
        """Which of `seances` have a register that may be incomplete."""
        if self.all_uncertain:
            return np.ones(len(seances), dtype=bool)
        return np.isin(seances, self.uncertain)

    def find(self, seances: np.ndarray, fiches: np.ndarray) -> np.ndarray:
        """Index in the register (not in `fiches`) of each (séance, fiche), -1 where not registered."""
        reg, query = pair_codes((self.seance, self.fiche), (seances, fiches))
        return find(reg, query)


@per_carnet
def register(carnet: Carnet) -> Register:
    """The fiche register, as numpy arrays."""
    seance, s_ok = ints_of(carnet, "fiches", "seance")
    fiche, f_ok = ints_of(carnet, "fiches", "fiche")
    readable = s_ok & f_ok
    uncertain = np.unique(seance[~readable & s_ok])
    at = np.flatnonzero(readable)
    at = at[first_each(pair_codes((seance[at], fiche[at]))[0])]
    return Register(at, seance[at], fiche[at], bool((~readable & ~s_ok).any()), uncertain)


@dataclass(frozen=True)
class Holders:
    """Who holds the cards at each coup: one element per (coup, side) with a
    readable player, in carnet order (side a before side b): `play`, the
    index in `play_order`; `side` (0: a, 1: b); seance, pos, player;
    `chouetteur` marks joueur_a of a chouette coup (he holds the cards by
    adjudication, not by the call); `type_known`, the coup's type is readable."""

    play: np.ndarray
    side: np.ndarray
    seance: np.ndarray
    pos: np.ndarray
    player: np.ndarray
    chouetteur: np.ndarray
    type_known: np.ndarray


@per_carnet
def holders(carnet: Carnet) -> Holders:
    """Who holds the cards at each coup, as numpy arrays."""
    p = play_order(carnet)
    a, a_ok = ints_of(carnet, "coups", "joueur_a")
    b, b_ok = ints_of(carnet, "coups", "joueur_b")
    chouette = equals(carnet, "coups", "type", "chouette")[p.at]
    known = present_of(carnet, "coups", "type")[p.at]
    n = len(p.at)
    # Side a then side b of each coup: interleaved, then the unreadable ones left out.
    player = np.column_stack([a[p.at], b[p.at]]).reshape(-1)
    ok = np.column_stack([a_ok[p.at], b_ok[p.at]]).reshape(-1)
    play = np.repeat(np.arange(n), 2)[ok]
    side = np.tile(np.array([0, 1]), n)[ok]
    return Holders(play, side, p.seance[play], p.pos[play], player[ok],
                   (chouette[play] & (side == 0)), known[play])
