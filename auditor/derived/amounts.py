"""The amounts derived from the stakes, defined once: what each side holds,
what the chouette holds against the pontes, the masses, the levy basis."""

from __future__ import annotations

import numpy as np
import pandas as pd

from auditor.carnet import Carnet
from auditor.derived.cache import per_carnet
from dataclasses import dataclass

from auditor.frames import eq, group_sums, ints, lookup, pair_codes, shared_codes


@per_carnet
def repeated_coups(carnet: Carnet) -> pd.Series:
    """Rows of `coups` whose (séance, coup) is written on more than one row."""
    c = carnet.df("coups")
    known = (c["seance"].notna() & c["coup"].notna()).to_numpy()
    out = np.zeros(len(c), dtype=bool)
    if known.any():
        code = shared_codes(c[known])[0]
        out[known] = pd.Series(code).duplicated(keep=False).to_numpy()
    return pd.Series(out, index=c.index)


@per_carnet
def coup_amounts(carnet: Carnet) -> pd.DataFrame:
    """One row per coup of `coups` (same index), with the stakes' sums.

    held_a / held_b: Σ (montant − restitue) of the coup's stakes per side;
    n_mises: how many stake rows; unverifiable: a stake of the coup has an
    unreadable amount or side, or a stake whose séance or coup cannot be
    read may be the coup's, or the coup's number is repeated (mass, levy
    and ticket rules skip the coup);
    sur_chouette = held_b − held_a (chouette: what the chouette holds
    against the pontes); mass_a / mass_b: the masses of spec § Derived.

    levy_held_a / levy_held_b / levy_sur_chouette: the same amounts as the
    levy rules (and the chouette state) use them: from the stakes, or,
    for a coup without any stake row, from the recorded totals (simple:
    total_a / total_b; chouette: held(a) = en_dehors, held(b) = total_b).
    """
    coups = carnet.df("coups")
    keys = ["seance", "coup"]
    out = coups[keys + ["type", "_row"]].copy()
    recorded_a = coups["total_a_cents"].where(~eq(coups["type"], "chouette"), coups["en_dehors_cents"])
    recorded_b = coups["total_b_cents"]
    if "mises" in carnet.tables:
        m = carnet.df("mises")
        m = m[(m["seance"].notna() & m["coup"].notna()).to_numpy()]
        known = (coups["seance"].notna() & coups["coup"].notna()).to_numpy()
        m_codes, c_codes = shared_codes(m, coups[known])
        montant, restitue = m["montant_cents"], m["restitue_cents"]
        bad = (montant.isna() | restitue.isna() | m["cote"].isna()).to_numpy()
        held = np.where(bad, 0, montant.to_numpy(np.int64, na_value=0) - restitue.to_numpy(np.int64, na_value=0))
        side = m["cote"].to_numpy(object, na_value="")
        codes, counts, (held_a, held_b, n_bad) = group_sums(
            m_codes, np.where(side == "a", held, 0), np.where(side == "b", held, 0), bad.astype(np.int64))
        # Coups whose keys are unreadable, or without any stake row, get no sums (<NA>).
        at, found = np.zeros(len(coups), dtype=np.int64), np.zeros(len(coups), dtype=bool)
        at[known], found[known] = lookup(codes, c_codes)
        if len(codes):
            out["held_a"] = pd.arrays.IntegerArray(np.where(found, held_a[at], 0), ~found)
            out["held_b"] = pd.arrays.IntegerArray(np.where(found, held_b[at], 0), ~found)
            out["n_mises"] = np.where(found, counts[at], 0)
            out["unverifiable"] = found & (n_bad[at] > 0)
        else:
            out["held_a"], out["held_b"], out["n_mises"], out["unverifiable"] = pd.NA, pd.NA, 0, False
    else:
        out["held_a"], out["held_b"], out["n_mises"], out["unverifiable"] = pd.NA, pd.NA, 0, False
    out["held_a"] = out["held_a"].astype("Int64")
    out["held_b"] = out["held_b"].astype("Int64")
    out["n_mises"] = out["n_mises"].fillna(0).astype("int64")
    out["unverifiable"] = out["unverifiable"].astype("boolean").fillna(False).astype(bool)
    if "mises" in carnet.tables:
        # A stake whose séance or coup cannot be read may belong to the coup: its sums are unknown.
        out["unverifiable"] |= carnet.could_be("mises", ["seance", "coup"], coups).to_numpy()
    # Two coup rows with one (séance, coup) would pool their stakes and tickets:
    # EC64-01 reports the repeat, no amount is computed from the pool.
    out["unverifiable"] |= repeated_coups(carnet).to_numpy()
    out["sur_chouette"] = (out["held_b"] - out["held_a"]).astype("Int64")
    chouette = eq(out["type"], "chouette")
    out["mass_a"] = out["held_a"].where(~chouette, out["sur_chouette"] + out["held_a"])
    out["mass_b"] = out["held_b"]
    from_stakes = out["n_mises"] > 0
    out["levy_held_a"] = out["held_a"].where(from_stakes, recorded_a).astype("Int64")
    out["levy_held_b"] = out["held_b"].where(from_stakes, recorded_b).astype("Int64")
    out["levy_sur_chouette"] = (out["levy_held_b"] - out["levy_held_a"]).astype("Int64")
    return out


@per_carnet
def verifiable_coups(carnet: Carnet, kind: str) -> pd.DataFrame:
    """Coups of `kind` (simple or chouette) whose amounts come from readable
    stakes, with their held amounts and masses: the mass and total rules skip
    a coup without any stake row, or with an unreadable stake."""
    a = coup_amounts(carnet)
    ok = eq(a["type"], kind) & (a["n_mises"] > 0) & ~a["unverifiable"]
    return carnet.df("coups")[ok].join(a.loc[ok, ["held_a", "held_b", "sur_chouette", "mass_a", "mass_b"]])


@dataclass(frozen=True)
class Stakes:
    """The keys of `mises` as numpy arrays, one element per stake row: seance,
    coup, rang (0 where unreadable) and where each is readable (`*_ok`);
    `coup_code`, the (séance, coup) code shared with `coups` (`coup_codes`),
    meaningful where both are readable; `in_coups`, the stake's (séance,
    coup) is a coup of `coups`."""

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


@per_carnet
def stakes(carnet: Carnet) -> Stakes:
    """The stakes' keys, as numpy arrays, and whether their coup is in `coups`."""
    m = carnet.df("mises")
    seance, s_ok = ints(m["seance"])
    coup, c_ok = ints(m["coup"])
    rang, r_ok = ints(m["rang"])
    c = carnet.df("coups")
    c_seance, cs_ok = ints(c["seance"])
    c_coup, cc_ok = ints(c["coup"])
    known = cs_ok & cc_ok
    # Unreadable keys take 0: their code is never read (the `*_ok` masks say so).
    code, c_code = pair_codes((np.where(s_ok & c_ok, seance, 0), np.where(s_ok & c_ok, coup, 0)),
                              (c_seance[known], c_coup[known]))
    table, first = np.unique(c_code, return_index=True)
    at, found = lookup(table, code)
    # The codes order by séance first: a séance's rank goes up where the séance changes.
    table_seance = c_seance[known][first]
    seance_rank = np.cumsum(np.r_[True, table_seance[1:] != table_seance[:-1]]) - 1 if len(table) else table
    return Stakes(seance, s_ok, coup, c_ok, rang, r_ok, code, found & s_ok & c_ok, at,
                  seance_rank[at] if len(table) else np.zeros(len(code), dtype=np.int64))
