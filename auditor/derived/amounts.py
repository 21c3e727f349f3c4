"""The amounts derived from the stakes, defined once: what each side holds,
what the chouette holds against the pontes, the masses, the levy basis."""

from __future__ import annotations

import numpy as np
import pandas as pd

from auditor.arrays import could_be, equals, ints_of, present_of
from auditor.carnet import Carnet
from auditor.derived.cache import per_carnet
from dataclasses import dataclass

from auditor.frames import cat, group_sums, lookup, pair_codes


@per_carnet
def repeated_coups(carnet: Carnet) -> np.ndarray:
    """Rows of `coups` whose (séance, coup) is written on more than one row (a bool array)."""
    seance, s_ok = ints_of(carnet, "coups", "seance")
    coup, c_ok = ints_of(carnet, "coups", "coup")
    known = np.flatnonzero(s_ok & c_ok)
    out = np.zeros(len(s_ok), dtype=bool)
    if len(known):
        code = pair_codes((seance[known], coup[known]))[0]
        _, inverse, counts = np.unique(code, return_inverse=True, return_counts=True)
        out[known] = counts[inverse.reshape(-1)] > 1
    out.flags.writeable = False    # shared by every rule: read-only
    return out


@dataclass(frozen=True)
class CoupAmounts:
    """The stakes' sums of `coup_amounts`, one element per row of `coups`, as
    numpy: each amount is int64 values (0 where missing) with its own valid
    mask (`*_ok`). held_a, held_b, sur_chouette, mass_a, mass_b are valid
    where the coup has stakes (`found`)."""

    held_a: np.ndarray
    held_b: np.ndarray
    found: np.ndarray
    n_mises: np.ndarray
    unverifiable: np.ndarray
    sur_chouette: np.ndarray
    mass_a: np.ndarray
    levy_held_a: np.ndarray
    levy_held_a_ok: np.ndarray
    levy_held_b: np.ndarray
    levy_held_b_ok: np.ndarray
    levy_sur_chouette: np.ndarray
    levy_sur_chouette_ok: np.ndarray

    def frame(self, carnet: Carnet) -> pd.DataFrame:
        """The amounts as one frame, indexed like `coups` (tests and readers that want pandas)."""
        coups = carnet.df("coups")

        def money(values: np.ndarray, valid: np.ndarray) -> pd.arrays.IntegerArray:
            return pd.arrays.IntegerArray(values.copy(), ~valid)

        columns = {k: coups[k].array for k in ("seance", "coup", "type")}
        columns.update(_row=coups["_row"].to_numpy(), held_a=money(self.held_a, self.found),
                       held_b=money(self.held_b, self.found), n_mises=self.n_mises, unverifiable=self.unverifiable,
                       sur_chouette=money(self.sur_chouette, self.found), mass_a=money(self.mass_a, self.found),
                       mass_b=money(self.held_b, self.found),
                       levy_held_a=money(self.levy_held_a, self.levy_held_a_ok),
                       levy_held_b=money(self.levy_held_b, self.levy_held_b_ok),
                       levy_sur_chouette=money(self.levy_sur_chouette, self.levy_sur_chouette_ok))
        return pd.DataFrame(columns, index=coups.index)


@per_carnet
def coup_amounts(carnet: Carnet) -> CoupAmounts:
    """The stakes' sums of each coup of `coups` (same positions), as numpy (`CoupAmounts`).

    held_a / held_b: Σ (montant − restitue) of the coup's stakes per side;
    n_mises: how many stake rows; unverifiable: a stake of the coup has an
    unreadable amount or side, or a stake whose séance or coup cannot be
    read may be the coup's, or the coup's number is repeated (mass, levy
    and ticket rules skip the coup);
    sur_chouette = held_b − held_a (chouette: what the chouette holds
    against the pontes); mass_a / mass_b: the masses of spec § Derived
    (mass_b is held_b).

    levy_held_a / levy_held_b / levy_sur_chouette: the same amounts as the
    levy rules (and the chouette state) use them: from the stakes, or,
    for a coup without any stake row, from the recorded totals (simple:
    total_a / total_b; chouette: held(a) = en_dehors, held(b) = total_b).
    Plain arrays, not a frame: on a small carnet building a frame of these
    cost more than all the sums.
    """
    n = len(carnet.df("coups"))
    chouette = equals(carnet, "coups", "type", "chouette")
    total_a, total_a_ok = ints_of(carnet, "coups", "total_a_cents")
    out_a, out_a_ok = ints_of(carnet, "coups", "en_dehors_cents")
    recorded_a = np.where(chouette, out_a, total_a), np.where(chouette, out_a_ok, total_a_ok)
    recorded_b = ints_of(carnet, "coups", "total_b_cents")
    held_a = held_b = np.zeros(n, dtype=np.int64)
    found = unverifiable = np.zeros(n, dtype=bool)
    n_mises = np.zeros(n, dtype=np.int64)
    if "mises" in carnet.tables:
        st = stakes(carnet)
        montant, montant_ok = ints_of(carnet, "mises", "montant_cents")
        restitue, restitue_ok = ints_of(carnet, "mises", "restitue_cents")
        bad = ~montant_ok | ~restitue_ok | ~present_of(carnet, "mises", "cote")
        held = montant - restitue
        held[bad] = 0
        # Stakes of a coup absent from `coups` total no coup: only the others are summed
        # (usually every stake: then nothing is copied, and each side's sums are made in
        # place, where a million stakes made some 50 MB of temporaries).
        whole = bool(st.in_coups.all())
        sel = None if whole else np.flatnonzero(st.in_coups)
        on_a, on_b = equals(carnet, "mises", "cote", "a"), equals(carnet, "mises", "cote", "b")
        if not whole:
            on_a, on_b, held, bad = on_a[sel], on_b[sel], held[sel], bad[sel]
        held_on_a = np.where(on_a, held, 0)
        held[~on_b] = 0
        ranks, counts, (sum_a, sum_b, n_bad) = group_sums(
            st.coup_rank if whole else st.coup_rank[sel], held_on_a, held, bad.astype(np.int32))
        # Coups whose keys are unreadable, or without any stake row, get no sums (<NA>).
        known = np.flatnonzero(st.coups_rank >= 0)
        at, hit = lookup(ranks, st.coups_rank[known])
        found = np.zeros(n, dtype=bool)
        found[known] = hit
        where = np.zeros(n, dtype=np.int64)
        where[known] = at
        if len(ranks):
            held_a = np.where(found, sum_a[where], 0)
            held_b = np.where(found, sum_b[where], 0)
            n_mises = np.where(found, counts[where], 0)
            unverifiable = found & (n_bad[where] > 0)
        # A stake whose séance or coup cannot be read may belong to the coup: its sums are unknown.
        unverifiable = unverifiable | could_be(carnet, "mises", ["seance", "coup"], carnet.df("coups"))
    # Two coup rows with one (séance, coup) would pool their stakes and tickets:
    # EC64-01 reports the repeat, no amount is computed from the pool.
    unverifiable = unverifiable | repeated_coups(carnet)
    sur = held_b - held_a
    mass_a = np.where(chouette, sur + held_a, held_a)
    from_stakes = n_mises > 0
    levy_a = np.where(from_stakes, held_a, recorded_a[0])
    levy_a_ok = np.where(from_stakes, found, recorded_a[1])
    levy_b = np.where(from_stakes, held_b, recorded_b[0])
    levy_b_ok = np.where(from_stakes, found, recorded_b[1])
    levy_ok = levy_a_ok & levy_b_ok

    def zeroed(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
        out = np.where(valid, values, 0)
        out.flags.writeable = False    # shared by every rule: read-only
        return out

    for shared in (found, n_mises, unverifiable, levy_a_ok, levy_b_ok, levy_ok):
        shared.flags.writeable = False

    return CoupAmounts(
        held_a=zeroed(held_a, found), held_b=zeroed(held_b, found), found=found, n_mises=n_mises,
        unverifiable=unverifiable, sur_chouette=zeroed(sur, found), mass_a=zeroed(mass_a, found),
        levy_held_a=zeroed(levy_a, levy_a_ok), levy_held_a_ok=levy_a_ok,
        levy_held_b=zeroed(levy_b, levy_b_ok), levy_held_b_ok=levy_b_ok,
        levy_sur_chouette=zeroed(levy_b - levy_a, levy_ok), levy_sur_chouette_ok=levy_ok)


@dataclass(frozen=True)
class Stakes:
    """The keys of `mises` as numpy arrays, one element per stake row: seance,
    coup, rang (0 where unreadable) and where each is readable (`*_ok`);
    `coup_code`, an integer that orders and compares like (séance, coup),
    meaningful where both are readable; `in_coups`, the stake's (séance,
    coup) is a coup of `coups`; where it is, `coup_rank` and `seance_rank`
    number its coup and its séance in the order of play (0, 1, 2 …, dense);
    `coups_rank`, the same coup number for each row of `coups` (-1 where its
    séance or number cannot be read)."""

    seance: np.ndarray
    seance_ok: np.ndarray
    coup: np.ndarray
    coup_ok: np.ndarray
    rang: np.ndarray
    rang_ok: np.ndarray
    coup_code: np.ndarray
    in_coups: np.ndarray
    coup_rank: np.ndarray
    seance_rank: np.ndarray
    coups_rank: np.ndarray


@per_carnet
def stakes(carnet: Carnet) -> Stakes:
    """The stakes' keys, as numpy arrays, and whether their coup is in `coups`."""
    m = carnet.df("mises")
    seance, s_ok = ints_of(carnet, "mises", "seance")
    coup, c_ok = ints_of(carnet, "mises", "coup")
    rang, r_ok = ints_of(carnet, "mises", "rang")
    c = carnet.df("coups")
    c_seance, cs_ok = ints_of(carnet, "coups", "seance")
    c_coup, cc_ok = ints_of(carnet, "coups", "coup")
    known = cs_ok & cc_ok
    keyed = s_ok & c_ok
    # Unreadable keys take 0: their code is never read (the `*_ok` masks say so).
    pair = (seance, coup) if keyed.all() else (np.where(keyed, seance, 0), np.where(keyed, coup, 0))
    code, c_code = pair_codes(pair, (c_seance[known], c_coup[known]))
    table, first = np.unique(c_code, return_index=True)
    # The codes order by séance first: a séance's rank goes up where the séance changes.
    table_seance = c_seance[known][first]
    seance_rank = np.cumsum(cat(True, table_seance[1:] != table_seance[:-1])) - 1 if len(table) else table
    # A coup's stakes are usually written together: look each run of one code up once.
    starts = np.flatnonzero(cat(True, code[1:] != code[:-1])) if len(code) else np.zeros(0, dtype=np.int64)
    sizes = np.diff(cat(starts, len(code)))
    at, found = lookup(table, code[starts])
    s_rank = seance_rank[at] if len(table) else np.zeros(len(at), dtype=np.int64)
    at, found, s_rank = np.repeat(at, sizes), np.repeat(found, sizes), np.repeat(s_rank, sizes)
    coups_rank = np.full(len(c), -1, dtype=np.int64)
    coups_rank[known] = np.searchsorted(table, c_code)
    return Stakes(seance, s_ok, coup, c_ok, rang, r_ok, code, found & keyed, at, s_rank, coups_rank)


@per_carnet
def verifiable_at(carnet: Carnet, kind: str) -> np.ndarray:
    """Coups of `kind` (simple or chouette) whose amounts come from readable
    stakes, as positions in `coups`, in row order: the mass and total rules
    skip a coup without any stake row, or with an unreadable stake."""
    a = coup_amounts(carnet)
    ok = equals(carnet, "coups", "type", kind) & (a.n_mises > 0) & ~a.unverifiable
    return np.flatnonzero(ok)


@per_carnet
def amount_arrays(carnet: Carnet) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The amounts of `coup_amounts` by name (values with 0 where missing, valid)."""
    a = coup_amounts(carnet)
    return {"held_a": (a.held_a, a.found), "held_b": (a.held_b, a.found), "sur_chouette": (a.sur_chouette, a.found),
            "mass_a": (a.mass_a, a.found), "mass_b": (a.held_b, a.found)}
