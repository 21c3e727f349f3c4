"""Checks over a whole batch: EC82-03 across the tables of one casino, the same
ticket (value and number) detached at two of them. Works on ticket runs
(intervals), never on single tickets."""

from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np

from auditor.catalogue import Profile
from auditor.model import BatchCarnet, Violation
from auditor.registry import batch_check
from auditor.tickets.intervals import running_reach

COLUMNS = ["valeur", "premier", "dernier", "seance", "coup", "row"]


@batch_check("EC82-03")
def ticket_detached_at_one_table(batch: Sequence[BatchCarnet], profile: Profile) -> Iterator[Violation]:
    """A ticket (value and number) is detached at one table of a casino only.

    Why: art. 82 — the casino may never hold two tickets of one value with the
    same number; each table draws from its own books.
    Non-compliant: ticket 0,10 € n° 44820 detached at table 3 and at table 5 of one casino.
    Compliant: tables 3 and 5 detach 0,10 € tickets from different books.
    """
    # A ticket at two tables needs two carnets with tickets: a batch of one
    # (the audit of a single carnet) has nothing to compare.
    holding = [i for i, carnet in enumerate(batch) if carnet.ticket_runs]
    if len(holding) < 2:
        return
    # Every run of the batch as plain arrays (a thousand carnets' frames and
    # their concatenation cost a second; these cost milliseconds).
    runs = np.concatenate([np.asarray(batch[i].ticket_runs, dtype=np.int64).reshape(-1, len(COLUMNS))
                           for i in holding])
    sizes = [len(batch[i].ticket_runs) for i in holding]
    carnet = np.repeat(np.asarray(holding, dtype=np.int64), sizes)
    names = sorted({batch[i].casino for i in holding})    # casinos by name, as codes in that order
    rank = {name: code for code, name in enumerate(names)}
    casino = np.repeat(np.asarray([rank[batch[i].casino] for i in holding], dtype=np.int64), sizes)
    valeur, premier, dernier, seance, coup, row = runs.T
    # By casino, value, first number, carnet, row; ties keep the batch's order.
    order = np.lexsort((row, carnet, premier, valeur, casino))
    casino, valeur, premier, dernier, seance, coup, row, carnet = (
        x[order] for x in (casino, valeur, premier, dernier, seance, coup, row, carnet))
    start = np.r_[True, (casino[1:] != casino[:-1]) | (valeur[1:] != valeur[:-1])]
    group = np.cumsum(start) - 1
    # The carnet holding each group's running maximum so far: the last run that reached it.
    reach, reacher = running_reach(dernier, group)
    owner = carnet[reacher]
    prev_reach, prev_owner = np.r_[0, reach[:-1]], np.r_[-1, owner[:-1]]
    hit = np.flatnonzero(~start & (premier <= prev_reach) & (prev_owner != carnet))
    for k in hit:
        other = int(prev_owner[k])
        first, last = int(premier[k]), int(min(dernier[k], prev_reach[k]))
        at = np.flatnonzero((carnet == other) & (valeur == valeur[k]) & (premier <= last) & (dernier >= first))[0]
        a, b = batch[int(carnet[k])], batch[other]
        yield Violation(
            table="tickets", row=int(row[k]), seance=int(seance[k]), coup=int(coup[k]),
            kind="cross_carnet",
            params={"valeur_cents": int(valeur[k]), "span": str(first) if first == last else f"{first} … {last}",
                    "count": last - first + 1, "other": b.path,
                    # "?" when the other cover gives no table number (EC64-06 there).
                    "other_table": "?" if b.table is None or b.table == "" else str(b.table),
                    "casino": names[int(casino[k])], "first": first, "last": last,
                    "carnets": [
                        {"id": a.id, "path": a.path, "table": a.table, "seance": int(seance[k]),
                         "coup": int(coup[k]), "row": int(row[k])},
                        {"id": b.id, "path": b.path, "table": b.table, "seance": int(seance[at]),
                         "coup": int(coup[at]), "row": int(row[at])}]})
