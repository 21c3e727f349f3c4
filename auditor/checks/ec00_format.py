"""Format (EC00): the carnet can be read, its cells typed, its references resolved."""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pandas as pd

from auditor.carnet import Carnet
from auditor.catalogue import Profile
from auditor.checks._util import emit
from auditor.frames import shared_codes
from auditor.model import Violation
from auditor.registry import check
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


def _orphans(child: pd.DataFrame, parent: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    c = child[child[keys].notna().all(axis=1).to_numpy()]
    p = parent[parent[keys].notna().all(axis=1).to_numpy()]
    child_codes, parent_codes = shared_codes(c, p, keys=tuple(keys))
    return c[~np.isin(child_codes, parent_codes)]


@check("EC00-03", needs=(COUP_KEYS, "mises.seance,coup", "tickets.seance,coup", "seances.seance"))
def references_resolve(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """Stakes and tickets refer to a recorded coup; coups to a recorded séance.

    Why: a stake outside any coup escapes the mass and levy checks.
    Non-compliant: a stake of coup 9 of séance 1 when `coups` stops at coup 8.
    Compliant: every (séance, coup) of `mises` and `tickets` is in `coups`.
    """
    coups = carnet.df("coups")
    for table in ("mises", "tickets"):
        if table in carnet.tables:
            hit = _orphans(carnet.df(table), coups, ["seance", "coup"])
            # A coup row whose séance or number cannot be read may be the one referred to.
            hit = hit[~carnet.could_be("coups", ["seance", "coup"], hit).to_numpy()]
            yield from emit(hit, lambda r, t=table: Violation(
                table=t, row=r["_row"], column="coup", seance=r["seance"], coup=r["coup"],
                rang=r.get("rang"), kind="no_coup", found=str(r["coup"])))
    if "seances" in carnet.tables:
        hit = _orphans(coups, carnet.df("seances"), ["seance"])
        hit = hit[~carnet.could_be("seances", ["seance"], hit).to_numpy()]
        yield from emit(hit, lambda r: Violation(
            table="coups", row=r["_row"], column="seance", seance=r["seance"], coup=r["coup"],
            kind="no_seance", found=str(r["seance"])))
