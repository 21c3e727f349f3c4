"""A table's archive: successive daily carnets of one table whose séance
numbers and ticket series go on from one carnet to the next (art. 64, 56-1),
optionally with chosen breaches across carnets. Used by `ecarte-audit
generate --archive`, the sample archives and the tests of the rules across
the carnets of a table.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from auditor.catalogue import Profile, load_profile
from auditor.errors import Message
from auditor.synth.breaches.registry import CannotInject
from auditor.synth.generate import Spec, generate, write_csv_folder, write_xlsx

# What each breach does, at one carnet k (never the first or the last, so it has both neighbours):
#   EC64-11  carnet k's séance numbers skip two (séances missing between k − 1 and k);
#   EC83-04  carnet k's 0,10 € series resumes three numbers later (tickets missing between k − 1 and k);
#   EC561-04 carnet k's 0,10 € series restarts at a fresh book far below (numbers going backwards);
#   EC64-10  carnet k − 1's last séance is dated two days later (k starts before k − 1 ends).
BREACHES = ("EC64-10", "EC64-11", "EC83-04", "EC561-04")
SKIPPED_SEANCES = 2
SKIPPED_TICKETS = 3
LOW_START = 1                      # where EC561-04's series restarts (a book's first number)


@dataclass
class ArchiveSpec:
    """What archive to write: `carnets` daily carnets of one table, each of
    `carnet` (séances, coups, stakes per carnet), starting on `carnet.start`,
    with the breaches of `breaches` (codes of the rules across carnets)."""

    carnets: int
    carnet: Spec = field(default_factory=lambda: Spec(seances=2, coups=4, mises=3,
                                                      ticket_start={10: 400001, 100: 400001, 1000: 400001}))
    breaches: tuple[str, ...] = ()
    # Each day's carnet spec, changed (e.g. fewer stakes written for a month:
    # the indicators' planted anomaly); None: every day alike.
    adjust: Callable[[Spec], Spec] | None = None


def carnets_needed(breaches) -> int:
    """The fewest carnets an archive made with `breaches` can have: each
    breach three carnets from the next one and from either end (`breach_places`)."""
    return 3 * (len(dict.fromkeys(breaches)) + 1)


def breach_places(spec: ArchiveSpec) -> dict[str, int]:
    """The carnet each breach is made at: spread over the archive, three
    carnets apart at least so that no breach touches another's pairs."""
    codes = list(dict.fromkeys(spec.breaches))
    unknown = [c for c in codes if c not in BREACHES]
    if unknown:
        raise CannotInject(Message("generate.no_injector", codes=", ".join(unknown),
                                   available=", ".join(BREACHES)))
    if codes and spec.carnets < carnets_needed(codes):
        raise CannotInject(Message("generate.archive_too_short", n=spec.carnets, codes=", ".join(codes),
                                   need=carnets_needed(codes)))
    if "EC64-10" in codes and spec.carnet.seances < 2:
        raise CannotInject(Message("generate.archive_overlap_needs_two"))
    return {code: (j + 1) * spec.carnets // (len(codes) + 1) for j, code in enumerate(codes)}


def _next_tickets(tables: dict[str, list[dict]], starts: dict[int, int]) -> dict[int, int]:
    """Where each value's series goes on in the next carnet: after this carnet's highest number."""
    out = dict(starts)
    for row in tables["tickets"]:
        out[row["valeur"]] = max(out[row["valeur"]], row["dernier"] + 1)
    return out


def generate_archive(spec: ArchiveSpec, profile: Profile | None = None) -> list[tuple[dt.date, dict]]:
    """The archive's carnets in order, each with its day: their tables as `generate` makes them.
    Raises CannotInject for breaches it cannot deliver."""
    profile = profile or load_profile()
    places = breach_places(spec)
    at = {k: code for code, k in places.items()}
    base = spec.carnet
    starts = dict(base.ticket_start)
    seance = base.first_seance
    out: list[tuple[dt.date, dict]] = []
    for k in range(spec.carnets):
        day = base.start + dt.timedelta(days=k)
        code = at.get(k)
        if code == "EC64-11":
            seance += SKIPPED_SEANCES
        if code == "EC83-04":
            starts[10] += SKIPPED_TICKETS
        if code == "EC561-04":
            starts[10] = LOW_START
        one = replace(base, seed=base.seed * 100_003 + k, start=day, first_seance=seance,
                      ticket_start=dict(starts), same_day=True)
        if spec.adjust is not None:
            one = spec.adjust(one)
        tables = generate(one, profile)
        if code == "EC561-04" and not any(r["valeur"] == 10 for r in tables["tickets"]):
            raise CannotInject(Message("generate.archive_no_tickets", day=day.isoformat()))
        out.append((day, tables))
        seance += base.seances
        starts = _next_tickets(tables, starts)
    if "EC561-04" in places and starts[10] > base.ticket_start[10]:
        # The restarted series would run into numbers already used: a duplicate, not only a step back.
        raise CannotInject(Message("generate.archive_series_collide"))
    if "EC64-10" in places:
        # The carnet before k ends two days later than it should: k starts before it ends.
        tables = out[places["EC64-10"] - 1][1]
        last = tables["seances"][-1]
        later = last["date"] + dt.timedelta(days=2)
        last["date"] = last["timbre"] = later
        for row in tables["fiches"]:
            if row["seance"] == last["seance"]:
                row["date"] = later
    if any(max((r["dernier"] for r in t["tickets"]), default=0) > profile.ticket_number_max for _, t in out):
        raise CannotInject(Message("generate.archive_series_full"))
    return out


def write_archive(carnets: list[tuple[dt.date, dict]], out: Path, container: str = "csv") -> list[Path]:
    """Write each carnet under `out`, named by its day (`2026-03-02.xlsx` or the folder `2026-03-02/`)."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for day, tables in carnets:
        name = day.isoformat()
        paths.append(write_xlsx(tables, out / f"{name}.xlsx") if container == "xlsx"
                     else write_csv_folder(tables, out / name))
    return paths
