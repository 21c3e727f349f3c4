"""Uploaded files → carnets on disk, in the run's private folder.

An uploaded file's name is only ever *compared*: with the workbook suffixes
the reader knows, with `.csv` and `.zip`, and (for CSV files) with the carnet
format's table names. Every path written is built from our own words:
`carnet-3.xlsx`, `carnet-4/coups.csv`. The name the user gave is kept as the
carnet's label in the report, never as a file name.

A zip holds a CSV folder: its members are checked (count, names, sizes,
compression ratio, CRC) with the reader's limits and inflated chunk by chunk
through `auditor.zippkg` (the reader's own guarded open and `inflate`); an archive that fails any check is a
carnet that cannot be read (EC00-01), and nothing of it is written.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from auditor.limits import Limits, size_text
from auditor.read import WORKBOOK_SUFFIXES, canonical_name
from auditor.read.raw import ReadProblem
from auditor.serve.labels import page_label
from auditor.zippkg import Refused, inflate, open_zip


@dataclass
class Staged:
    """One carnet made from uploaded files."""

    shown: str                          # what the user sees (the uploaded name)
    path: Path | None = None            # where it was written (None: refused)
    problem: ReadProblem | None = None  # why it cannot be read (refused archive)
    sha256: str = ""                    # of the refused archive


@dataclass
class Staging:
    """The carnets made from one upload, and the files that were no part of one."""

    carnets: list[Staged] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)   # uploaded names that are no part of a carnet


def base_name(uploaded: str) -> str:
    """The last component of an uploaded name (browsers may send a relative
    path, Windows ones with backslashes); for comparing and showing only."""
    return re.split(r"[\\/]", uploaded or "")[-1]


def folder_of(uploaded: str) -> str:
    """The folder part of an uploaded name (`a/b/coups.csv` → `a/b`), for grouping only."""
    parts = [p for p in re.split(r"[\\/]", uploaded or "") if p]
    return "/".join(parts[:-1])


def suffix(uploaded: str) -> str:
    """The uploaded name's suffix, lower case (`.xlsx`), for comparing only."""
    name = base_name(uploaded)
    return name[name.rfind("."):].lower() if "." in name else ""


def stage(files: list[tuple[str, bytes]], folder: Path, tables: frozenset[str], limits: Limits,
          lang: str = "fr") -> Staging:
    """Lay the uploaded (name, content) pairs out as carnets under `folder`.

    Each workbook is a carnet; the CSV files given together form one carnet
    per folder they came from; each zip is a CSV folder (one carnet per folder
    inside it that holds CSV tables).
    """
    staging = Staging()
    counter = iter(range(1, 1_000_000))
    csv_groups: dict[str, dict[str, bytes]] = {}
    for name, data in files:
        kind = suffix(name)
        if kind in WORKBOOK_SUFFIXES:
            path = folder / f"carnet-{next(counter)}{kind}"
            path.write_bytes(data)
            staging.carnets.append(Staged(base_name(name), path))
        elif kind == ".csv":
            table = canonical_name(base_name(name)[:-4])
            group = csv_groups.setdefault(folder_of(name), {})
            if table in tables and table not in group:
                group[table] = data
            else:
                staging.ignored.append(name)
        elif kind == ".zip":
            staging.carnets.extend(_stage_zip(base_name(name), data, folder, counter, tables, limits, staging, lang))
        else:
            staging.ignored.append(name)
    for where, group in csv_groups.items():
        if group:
            staging.carnets.append(_write_csv_carnet(where or "CSV", group, folder, counter))
    return staging


def _write_csv_carnet(shown: str, group: dict[str, bytes], folder: Path, counter) -> Staged:
    target = folder / f"carnet-{next(counter)}"
    target.mkdir()
    for table, data in sorted(group.items()):
        (target / f"{table}.csv").write_bytes(data)
    return Staged(shown, target)


# Parts of a member name that would leave the folder it is unpacked into, or
# name a device: `..`, an absolute path, a drive (`C:`), a NUL.
def unsafe_member(name: str) -> bool:
    """A zip member name that would leave its folder or name a device."""
    if not name or "\0" in name or name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        return True
    return any(part == ".." for part in re.split(r"[\\/]", name))


def _check_name(name: str) -> None:
    if unsafe_member(name):
        raise Refused("unreadable", reason="unsafe_name", member=name)


def _stage_zip(shown: str, data: bytes, folder: Path, counter, tables: frozenset[str], limits: Limits,
               staging: Staging, lang: str) -> list[Staged]:
    try:
        groups = _read_zip(data, tables, limits, staging, shown)
    except Refused as exc:
        params = dict(exc.params)
        if exc.kind == "unreadable":   # our own reasons, in the report's language
            params = {"reason": page_label(f"reasons.{params['reason']}", lang, **params)}
        return [Staged(shown, problem=ReadProblem("EC00-01", exc.kind, params=params),
                       sha256=hashlib.sha256(data).hexdigest())]
    if not groups:
        return [Staged(shown, problem=ReadProblem("EC00-01", "missing_table", params={"table": "coups"}),
                       sha256=hashlib.sha256(data).hexdigest())]
    return [_write_csv_carnet(f"{shown}/{where}" if where else shown, group, folder, counter)
            for where, group in sorted(groups.items())]


def _read_zip(data: bytes, tables: frozenset[str], limits: Limits, staging: Staging,
              shown: str) -> dict[str, dict[str, bytes]]:
    """The CSV tables of an archive by folder, every check passed; else Refused."""
    zf, _ = open_zip(data, limits, required=None, not_kind="unreadable", not_params={"reason": "not_zip"},
                     check_name=_check_name, archive=shown)   # every name is checked before anything is inflated
    budget = [limits.max_unzipped_bytes]
    groups: dict[str, dict[str, bytes]] = {}
    for info in zf.infolist():
        if info.is_dir():
            continue
        name = PurePosixPath(info.filename.replace("\\", "/"))
        table = canonical_name(name.stem) if name.suffix.lower() == ".csv" else None
        group = groups.setdefault(name.parent.as_posix().strip("."), {})
        if table not in tables or table in group or name.name.startswith(("._", "~$")):
            staging.ignored.append(f"{shown}/{info.filename}")
            continue
        if info.file_size > limits.max_file_bytes:
                raise Refused("file_too_large", file=info.filename, size=size_text(info.file_size),
                          limit=size_text(limits.max_file_bytes))
        group[table] = b"".join(inflate(data, info, limits, budget))
    return {where: g for where, g in groups.items() if g}
