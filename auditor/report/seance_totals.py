"""What the history keeps of each séance: its day, its coups, the stakes'
winning mass, the levy expected and recorded, the cagnotte counted and the
tickets' face value, in integer cents, computed where the carnet is audited
(the carnet itself never leaves the worker)."""

from __future__ import annotations

import numpy as np

from auditor.arrays import NA_INT, column
from auditor.carnet import Carnet
from auditor.catalogue import Profile
from auditor.derived.levy import chouette_levy, levy_by_coup, simple_levy

FIELDS = ("seance", "seance_date", "coups", "winning_mass_cents", "levy_expected_cents", "levy_recorded_cents",
          "cagnotte_cents", "tickets_face_cents")


def _per_seance(ids: np.ndarray, seance: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Σ `values` per séance of `ids` (rows of unreadable séance left out)."""
    out = np.zeros(len(ids), dtype=np.int64)
    known = seance != NA_INT
    if len(ids) and known.any():
        np.add.at(out, np.searchsorted(ids, seance[known]), values[known])
    return out


def winning_mass(carnet: Carnet, profile: Profile) -> np.ndarray:
    """Per row of `coups`, the amount its levy is computed from (0 where the coup
    cannot be verified): a simple coup's winning side's mass; for a chouette,
    the sums held outside it, the chouette at an adjudication or a remise, and
    what the pontes won on it when they won (spec § Derived amounts)."""
    c = carnet.df("coups")
    out = np.zeros(len(c), dtype=np.int64)
    s = simple_levy(carnet, profile)
    out[s.at] = s.mass
    ch = chouette_levy(carnet, profile)
    if len(ch.at):
        def known(a: np.ndarray) -> np.ndarray:   # an unknown amount counts for nothing
            return np.where(a == NA_INT, 0, a)

        out[ch.at] = (known(ch.held_a) + known(ch.chouette)
                      + np.where(ch.won_b, np.maximum(known(ch.sur_chouette), 0), 0))
    return out


def seance_totals(carnet: Carnet, profile: Profile, dates: dict[int, str]) -> list[dict]:
    """One row per séance (those of `seances` and those `coups` names), in
    séance order, with FIELDS; a total that cannot be read is None."""
    has_coups = "coups" in carnet.tables
    has_seances = "seances" in carnet.tables and "seance" in carnet.df("seances")
    coup_seance = column(carnet, "coups", "seance") if has_coups else np.zeros(0, dtype=np.int64)
    row_seance = column(carnet, "seances", "seance") if has_seances else np.zeros(0, dtype=np.int64)
    ids = np.unique(np.concatenate([coup_seance[coup_seance != NA_INT], row_seance[row_seance != NA_INT]]))
    if not len(ids):
        return []
    n = len(ids)
    coups = mass = expected = recorded = np.zeros(n, dtype=np.int64)
    if has_coups:
        coups = _per_seance(ids, coup_seance, np.ones(len(coup_seance), dtype=np.int64))
        try:
            mass = _per_seance(ids, coup_seance, winning_mass(carnet, profile))
            by_coup = levy_by_coup(carnet, profile)
            expected = _per_seance(ids, coup_seance, by_coup[0])
            recorded = _per_seance(ids, coup_seance, by_coup[1])
        except (KeyError, ValueError):
            pass   # a carnet too damaged for its amounts: the séances keep their counts
    cagnotte: list[int | None] = [None] * n
    if has_seances and "cagnotte_cents" in carnet.df("seances"):
        counted = column(carnet, "seances", "cagnotte_cents")
        for s, c in zip(row_seance.tolist(), counted.tolist()):
            if s != NA_INT and c != NA_INT:
                i = int(np.searchsorted(ids, s))
                cagnotte[i] = c if cagnotte[i] is None else cagnotte[i]   # the first row, as the dates
    face = np.zeros(n, dtype=np.int64)
    if "tickets" in carnet.tables:
        from auditor.tickets.ledger import ledger

        rows = ledger(carnet, profile).rows
        inside = np.isin(rows["seance"], ids)
        face = _per_seance(ids, np.where(inside, rows["seance"], NA_INT), rows["face"])
    return [{"seance": int(s), "seance_date": dates.get(int(s)), "coups": int(k), "winning_mass_cents": int(m),
             "levy_expected_cents": int(e), "levy_recorded_cents": int(r), "cagnotte_cents": c,
             "tickets_face_cents": int(f)}
            for s, k, m, e, r, c, f in zip(ids.tolist(), coups, mass, expected, recorded, cagnotte, face)]
