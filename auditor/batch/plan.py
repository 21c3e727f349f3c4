"""What a batch audits and how: the carnets found under the paths given, each
with a unique output id (`plan`), and the options every carnet is audited with."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from auditor.limits import Limits
from auditor.discover import discover
from auditor.names import shown_name


@dataclass(frozen=True)
class Options:
    """How every carnet of a batch is audited and rendered."""

    formats: tuple[str, ...] = ("html", "json")
    lang: str = "fr"
    debug: bool = False
    generated_at: str = ""
    limits: Limits | None = None      # the reader's size limits (None: the defaults)
    fail_on_new: bool = False         # only new findings (against the baseline) set the exit status
    columns: object = None            # the --columns mapping (auditor.read.ColumnMap), if any


@dataclass
class CarnetJob:
    """One carnet of a batch: where it is, how outputs show it, its output folder."""

    path: Path          # where the carnet is
    shown: str          # the path as shown in outputs (relative to what the user gave)
    id: str             # output sub-folder
    # An upload the local page refused before reading (a hostile archive):
    # audited as an unreadable carnet with this EC00-01 problem, never read.
    refusal: tuple | None = None
    sha256: str = ""    # the refused upload's digest (its file is not kept)


# Names the batch writes beside the carnet folders, and names Windows refuses.
RESERVED_IDS = {"index.html", "summary.json", "con", "prn", "aux", "nul",
                *(f"com{i}" for i in range(1, 10)), *(f"lpt{i}" for i in range(1, 10))}
MAX_ID_LENGTH = 120   # well under the 255 bytes of a file name, with room for `-2`


def carnet_id(relative: str) -> str:
    """outputs.md: `/` → `__`, anything outside [A-Za-z0-9._-] → `_`.

    So an id is one plain path component: never empty, `.` or `..`, never a
    name the batch writes itself (`index.html`) or Windows reserves (`CON`),
    and short enough for any file system (a long id keeps its start and ends
    with a hash of the whole path, so two long ids stay distinct).
    """
    cid = re.sub(r"[^A-Za-z0-9._-]", "_", relative.replace("\\", "/").replace("/", "__"))
    if cid.strip(".") == "":
        cid = cid.replace(".", "_") or "_"
    if cid.lower() in RESERVED_IDS or cid.split(".")[0].lower() in RESERVED_IDS:
        cid = f"_{cid}"
    if len(cid) > MAX_ID_LENGTH:
        digest = hashlib.sha256(relative.encode("utf-8", "surrogateescape")).hexdigest()[:12]
        cid = f"{cid[:MAX_ID_LENGTH - 13]}_{digest}"
    return cid


def plan(paths: list[Path]) -> list[CarnetJob]:
    """The carnets to audit, with unique output ids, in a stable order.

    Ids are unique case-insensitively (two carnets `A` and `a` would share a
    folder on macOS or Windows), and a `-2` suffix never takes an id that
    another carnet has on its own.
    """
    jobs: list[CarnetJob] = []
    taken: set[str] = set()
    for given in paths:
        found = discover(given)
        for p in found:
            if p == given:
                shown, rel = str(given), given.name or given.resolve().name
            else:
                rel = p.relative_to(given).as_posix()
                shown = (given / rel).as_posix()
            base = carnet_id(rel)
            cid, n = base, 1
            while cid.lower() in taken:
                n += 1
                cid = f"{base}-{n}"
            taken.add(cid.lower())
            jobs.append(CarnetJob(p, shown_name(shown), cid))
    return jobs
