"""The levy each coup owes (art. 66 and 66-1), derived once per carnet and
profile: the rules compare it with what was recorded, the summary totals it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from auditor.arrays import blind_cells, column, equals, ints_of, present_of, texts
from auditor.carnet import Carnet
from auditor.catalogue import Profile
from auditor.derived.amounts import coup_amounts
from auditor.derived.cache import per_carnet


NA = np.iinfo(np.int64).min      # a missing amount in a plain int64 array


def _na(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Values with a valid mask as one int64 array, NA where missing."""
    return np.where(valid, values, NA)


def _bounds(profile: Profile, *amounts: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The levy's accepted bounds of each amount array (NA stays NA), in one
    call of `Levy.bounds_array` for all of them."""
    values = np.concatenate(amounts)
    missing = values == NA
    lo, hi = (np.where(missing, NA, b) for b in profile.levy.bounds_array(np.where(missing, 0, values)))
    cuts = np.cumsum([len(v) for v in amounts])[:-1]
    return list(zip(np.split(lo, cuts), np.split(hi, cuts)))


@dataclass(frozen=True)
class SimpleLevy:
    """Expected levy of the verifiable simple coups: `at`, their positions in
    `coups` (row order); `mass`, the winning side's mass; `lo`, `hi`, the
    accepted range (int64 cents, every one known)."""

    at: np.ndarray
    mass: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


@dataclass(frozen=True)
class ChouetteLevy:
    """Expected levies of the verifiable chouette coups: `at`, their positions
    in `coups` (row order); `held_a` and `sur_chouette`, the levy basis; `lo`
    and `hi`, the accepted range per phase (`avant`, `apres`). int64 cents,
    NA where unknown."""

    at: np.ndarray
    held_a: np.ndarray
    sur_chouette: np.ndarray
    lo: dict[str, np.ndarray]
    hi: dict[str, np.ndarray]
    chouette: np.ndarray | None = None   # the chouette staked at an adjudication or a remise, else 0 (NA: unread)
    won_b: np.ndarray | None = None      # the pontes (side b) won the coup


@per_carnet
def simple_levy(carnet: Carnet, profile: Profile) -> SimpleLevy:
    """Expected levy of each verifiable simple coup: L(mass of the winning side).

    The mass comes from the stakes, or from the recorded total when the coup
    has no stake row (`coup_amounts` levy basis). Arrays, not a frame: the
    rule cuts the coups' rows only for the coups it reports.
    """
    a = coup_amounts(carnet)
    ok = (equals(carnet, "coups", "type", "simple") & present_of(carnet, "coups", "gagnant") & ~a.unverifiable)
    win_a = equals(carnet, "coups", "gagnant", "a")
    mass = np.where(win_a, _na(a.levy_held_a, a.levy_held_a_ok), _na(a.levy_held_b, a.levy_held_b_ok))
    at = np.flatnonzero(ok & (mass != NA))
    mass = mass[at]
    [(lo, hi)] = _bounds(profile, mass)
    return SimpleLevy(at, mass, lo, hi)


@per_carnet
def chouette_levy(carnet: Carnet, profile: Profile) -> ChouetteLevy:
    """Expected levies of each verifiable chouette coup, per phase.

    avant: L(held(a)) + L(chouette) at an adjudication or a remise (each
    component rounded on its own); apres: L(sur_chouette) when the pontes
    (side b) win, else 0. Amounts are the levy basis of
    `coup_amounts` (stakes, or recorded totals for a coup without
    stake rows). A phase's range is NA where it cannot be computed.
    """
    a = coup_amounts(carnet)
    at = np.flatnonzero(equals(carnet, "coups", "type", "chouette") & ~a.unverifiable)
    held_a = _na(a.levy_held_a, a.levy_held_a_ok)[at]
    event = texts(carnet, "coups", "evenement", at)
    staked = (event == "adjudication") | (event == "remise")
    chouette = np.where(staked, column(carnet, "coups", "chouette_cents")[at], 0)
    # An unreadable evenement leaves open whether the chouette's own levy is due.
    known_event = ~blind_cells(carnet, "coups", "evenement")[at]
    # The pontes cannot have won a negative sum on the chouette (that is EC64-04's business).
    won_b, decided = equals(carnet, "coups", "gagnant", "b")[at], present_of(carnet, "coups", "gagnant")[at]
    sur = _na(a.levy_sur_chouette, a.levy_sur_chouette_ok)[at]
    won = np.where(~decided, NA, np.where(won_b, np.where(sur == NA, NA, np.maximum(sur, 0)), 0))
    (lo_out, hi_out), (lo_ch, hi_ch), (lo_apres, hi_apres) = _bounds(profile, held_a, chouette, won)

    def avant(out: np.ndarray, ch: np.ndarray) -> np.ndarray:
        return np.where((out == NA) | (ch == NA) | ~known_event, NA, out + ch)

    return ChouetteLevy(at, held_a, sur, lo={"avant": avant(lo_out, lo_ch), "apres": lo_apres},
                        hi={"avant": avant(hi_out, hi_ch), "apres": hi_apres}, chouette=chouette,
                        won_b=decided & won_b)


def levy_totals(carnet: Carnet, profile: Profile) -> tuple[int, int]:
    """(expected, recorded) levy of the carnet, in cents.

    Expected: the levy the rules compute where a coup (and phase) can be
    verified, the recorded levy elsewhere (so the difference shows only what
    was checked).
    """
    expected, recorded = levy_by_coup(carnet, profile)
    return int(expected.sum()), int(recorded.sum())


def levy_by_coup(carnet: Carnet, profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """(expected, recorded) levy of each row of `coups`, both phases, in cents
    (as `levy_totals` counts them): the history totals them per séance."""
    avant = ints_of(carnet, "coups", "prelevement_cents")[0]
    apres = ints_of(carnet, "coups", "prelevement_apres_cents")[0]
    recorded = avant + apres
    expected_avant, expected_apres = avant.copy(), apres.copy()
    s = simple_levy(carnet, profile)
    expected_avant[s.at] = s.hi
    expected_apres[s.at] = 0  # a simple coup owes nothing after the result
    ch = chouette_levy(carnet, profile)
    # An expected levy left unknown counts for nothing (as <NA> in a sum), and so does its coup.
    for phase, expected in (("avant", expected_avant), ("apres", expected_apres)):
        hi = ch.hi[phase]
        known = hi != NA
        expected[ch.at[known]] = hi[known]
    return expected_avant + expected_apres, recorded
