"""Batches of tiny carnets for the rules across the carnets of a table:
each carnet of a case is written like a single-carnet fixture (source CSV
text completed by tests/carnet_fixture.py), read by the real reader and
normaliser, and handed to the batch checks through `batch_facts`."""

from __future__ import annotations

import random

from pathlib import Path

from auditor.catalogue import load_profile
from auditor.checks.archive import archive_codes, archive_statuses
from auditor.derived.batch_facts import batch_facts
from auditor.model import BatchCarnet
from auditor.normalise import normalise
from auditor.read import read_carnet
from auditor.checks import registered_batch
from carnet_fixture import Fixture


def build_batch(case: dict, folder: Path, container: str | None = None, names: dict | None = None,
                without_register: bool = False) -> list[BatchCarnet]:
    """The case's carnets, in the order it lists them, as batch facts. `names`
    renames carnets (id and folder), `container` forces one for all of them,
    `without_register` leaves `carnets_tickets` out."""
    batch = []
    profile = load_profile()
    for name, tables in case["carnets"].items():
        tables = dict(tables)
        if container:
            tables["container"] = container
        if without_register:
            tables.pop("carnets_tickets", None)
        shown = (names or {}).get(name, name)
        where = folder / shown
        where.mkdir(parents=True, exist_ok=True)
        path = Fixture(tables).write(where)
        rel = path.relative_to(folder).as_posix()
        batch.append(batch_facts(normalise(read_carnet(path)), shown, rel, profile))
    return batch


def run_batch(batch: list[BatchCarnet], codes=archive_codes()) -> list[dict]:
    """The findings of the rules across carnets as plain dicts: code, the
    carnet where each shows, its séance, coup, row, expected, found, impact
    and the other carnet."""
    profile = load_profile()
    out = []
    for code in codes:
        for v in registered_batch()[code].func(batch, profile):
            places = v.params["places"]
            out.append({"code": code, "carnet": places[0]["carnet"], "other": places[1]["carnet"],
                        "seance": v.seance, "coup": v.coup, "row": v.row,
                        "expected": None if v.expected is None else str(v.expected),
                        "found": None if v.found is None else str(v.found), "impact_cents": v.impact_cents,
                        "identity": v.params["identity"], "violation": v})
    return out


def statuses(batch: list[BatchCarnet], lang: str = "en"):
    return archive_statuses(batch, load_profile(), lang)


def shuffled(t: dict, seed: int) -> dict:
    """The same carnet, its séances' blocks of rows in another order."""
    rng = random.Random(seed)
    out = {k: (rng.sample(v, len(v)) if k in ("seances", "fiches", "carnets_tickets") else v) for k, v in t.items()}
    for name in ("coups", "mises"):
        blocks: dict[int, list] = {}
        for row in t[name]:
            blocks.setdefault(row["seance"], []).append(row)
        out[name] = [row for key in rng.sample(sorted(blocks), len(blocks)) for row in blocks[key]]
    return out
