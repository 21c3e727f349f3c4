"""Checks over a whole batch: EC82-03 across the tables of one casino, the same
ticket (value and number) detached at two of them. Works on ticket runs
(intervals), never on single tickets."""

from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np
import pandas as pd

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
    if sum(1 for carnet in batch if carnet.ticket_runs) < 2:
        return
    frames = []
    for i, carnet in enumerate(batch):
        if carnet.ticket_runs:
            df = pd.DataFrame(carnet.ticket_runs, columns=COLUMNS, dtype="int64")
            df["carnet"] = i
            df["casino"] = carnet.casino
            frames.append(df)
    if not frames:
        return
    d = pd.concat(frames, ignore_index=True).sort_values(["casino", "valeur", "premier", "carnet", "row"],
                                                          kind="stable").reset_index(drop=True)
    group = d.groupby(["casino", "valeur"], sort=False).ngroup().to_numpy()
    premier, dernier, carnet = (d[c].to_numpy() for c in ("premier", "dernier", "carnet"))
    # The carnet holding each group's running maximum so far: the last run that reached it.
    reach, reacher = running_reach(dernier, group)
    owner = carnet[reacher]
    start = np.r_[True, group[1:] != group[:-1]]
    prev_reach, prev_owner = np.r_[0, reach[:-1]], np.r_[-1, owner[:-1]]
    hit = np.flatnonzero(~start & (premier <= prev_reach) & (prev_owner != carnet))
    for k in hit:
        here, other = d.iloc[k], int(prev_owner[k])
        first, last = int(here["premier"]), int(min(here["dernier"], prev_reach[k]))
        there = d[(d["carnet"] == other) & (d["valeur"] == here["valeur"]) & (d["premier"] <= last)
                  & (d["dernier"] >= first)].iloc[0]
        a, b = batch[int(here["carnet"])], batch[other]
        yield Violation(
            table="tickets", row=int(here["row"]), seance=int(here["seance"]), coup=int(here["coup"]),
            kind="cross_carnet",
            params={"valeur_cents": int(here["valeur"]), "span": str(first) if first == last else f"{first} … {last}",
                    "count": last - first + 1, "other": b.path,
                    # "?" when the other cover gives no table number (EC64-06 there).
                    "other_table": "?" if b.table is None or b.table == "" else str(b.table),
                    "casino": here["casino"], "first": first, "last": last,
                    "carnets": [
                        {"id": a.id, "path": a.path, "table": a.table, "seance": int(here["seance"]),
                         "coup": int(here["coup"]), "row": int(here["row"])},
                        {"id": b.id, "path": b.path, "table": b.table, "seance": int(there["seance"]),
                         "coup": int(there["coup"]), "row": int(there["row"])}]})
