"""Format (EC00): the carnet can be read, its cells typed, its references resolved."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from auditor.arrays import NA_INT, column, could_be, value
from auditor.carnet import Carnet
from auditor.catalogue import Profile
from auditor.model import Violation
from auditor.registry import check
from auditor.frames import cat, find, pair_codes
from auditor.checks._needs import COUP_KEYS


@check("EC00-01")
def carnet_readable(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """The carnet can be read and has every required table and column.

    Why: what cannot be read cannot be audited; each missing piece is named.
    Non-compliant: a workbook without a `mises` sheet.
    Compliant: the five required tables with their required columns.
    """
    return (v for code, v in carnet.problems if code == "EC00-01")


@check("EC00-02")
def cells_parse(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """Every cell parses as its column's type; required cells are filled.

    Why: an amount that cannot be read exactly cannot be checked; it is never rounded.
    Non-compliant: `montant` = `12,555` or `douze`.
    Compliant: `12,50`, `12.5`, `1 234,50 €`.
    """
    return (v for code, v in carnet.problems if code == "EC00-02")


def _orphans(carnet: Carnet, child: str, parent: str, keys: list[str]) -> np.ndarray:
    """Positions of the rows of `child` whose keys are all read and match no
    row of `parent` whose keys are all read (integer codes, no merge)."""
    c = [column(carnet, child, k) for k in keys]
    p = [column(carnet, parent, k) for k in keys]
    c_ok = np.logical_and.reduce([a != NA_INT for a in c])
    p_ok = np.logical_and.reduce([a != NA_INT for a in p])
    if len(keys) == 1:
        child_codes, parent_codes = c[0][c_ok], p[0][p_ok]
    else:
        child_codes, parent_codes = pair_codes((c[0][c_ok], c[1][c_ok]), (p[0][p_ok], p[1][p_ok]))
    return np.flatnonzero(c_ok)[_absent(child_codes, parent_codes)]


def _absent(codes: np.ndarray, among: np.ndarray) -> np.ndarray:
    """Mask of the codes not in `among`: a binary search in its distinct codes
    (cheaper than isin's sort of both sides); children written in order, as
    they nearly always are, are searched once per distinct code."""
    if not np.all(among[1:] > among[:-1]):
        among = np.unique(among)
    if len(codes) and np.all(codes[1:] >= codes[:-1]):
        starts = np.flatnonzero(cat(True, codes[1:] != codes[:-1]))
        return np.repeat(find(among, codes[starts]) < 0, np.diff(cat(starts, len(codes))))
    return find(among, codes) < 0


@check("EC00-03", needs=(COUP_KEYS, "mises.seance,coup", "tickets.seance,coup", "seances.seance"))
def references_resolve(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """Stakes and tickets refer to a recorded coup; coups to a recorded séance.

    Why: a stake outside any coup escapes the mass and levy checks.
    Non-compliant: a stake of coup 9 of séance 1 when `coups` stops at coup 8.
    Compliant: every (séance, coup) of `mises` and `tickets` is in `coups`.
    """
    for table in ("mises", "tickets"):
        if table in carnet.tables:
            at = _orphans(carnet, table, "coups", ["seance", "coup"])
            # A coup row whose séance or number cannot be read may be the one referred to.
            at = at[~could_be(carnet, "coups", ["seance", "coup"], carnet.df(table), at)]
            if not len(at):
                continue
            rang = column(carnet, table, "rang")[at] if "rang" in carnet.df(table).columns else None
            for i, (row, seance, coup) in enumerate(zip(column(carnet, table, "_row")[at].tolist(),
                                                        column(carnet, table, "seance")[at].tolist(),
                                                        column(carnet, table, "coup")[at].tolist())):
                yield Violation(table=table, row=row, column="coup", seance=seance, coup=coup,
                                rang=None if rang is None else value(rang[i]), kind="no_coup", found=str(coup))
    if "seances" in carnet.tables:
        at = _orphans(carnet, "coups", "seances", ["seance"])
        at = at[~could_be(carnet, "seances", ["seance"], carnet.df("coups"), at)]
        for row, seance, coup in zip(column(carnet, "coups", "_row")[at].tolist(),
                                     column(carnet, "coups", "seance")[at].tolist(), column(carnet, "coups", "coup")[at]):
            yield Violation(table="coups", row=row, column="seance", seance=seance, coup=value(coup),
                            kind="no_seance", found=str(seance))
