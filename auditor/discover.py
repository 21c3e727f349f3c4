"""Where the carnets are: which paths are carnets, and every carnet under a folder.

Plain `pathlib`, nothing of the readers: the command line plans its run
(auditor.batch.plan) before it imports the auditor itself, so that a batch
starts its workers at once (auditor.commands.audit). `auditor.read`
re-exports it. The SHA-256 of a carnet's files is here too: the cache looks
a carnet up by it without importing the readers (nor pandas).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterator

# Every workbook container calamine reads (spec: carnet-format.md, Containers), with its kind.
SUFFIXES = {".xlsx": "xlsx", ".xlsm": "xlsx", ".xlsb": "xlsb", ".xls": "xls", ".ods": "ods"}
WORKBOOK_SUFFIXES = tuple(SUFFIXES)


def _has_coups_csv(folder: Path) -> bool:
    try:
        return any(p.is_file() and p.name.lower() == "coups.csv" for p in folder.iterdir())
    except OSError:
        return False


def is_carnet(path: Path) -> bool:
    """`path` is a carnet: a workbook, or a folder holding coups.csv."""
    if path.is_file():
        return path.suffix.lower() in WORKBOOK_SUFFIXES
    return path.is_dir() and _has_coups_csv(path)


def carnets_under(root: Path) -> Iterator[Path]:
    """The carnets at or below `root` as the walk meets them (`discover` sorts
    them): a folder holding `coups.csv` is one carnet, its sub-folders are not
    searched; office lock files (`~$x.xlsx`, `.~lock.x.ods#`) are skipped."""
    if is_carnet(root):
        yield root
        return
    if not root.is_dir():
        return
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(folder.iterdir(), key=lambda p: p.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith("~$") or entry.name.startswith("."):
                continue
            if entry.is_dir() and not entry.is_symlink():
                if _has_coups_csv(entry):
                    yield entry
                else:
                    stack.append(entry)
            elif entry.is_file() and entry.suffix.lower() in WORKBOOK_SUFFIXES:
                yield entry


def discover(root: Path) -> list[Path]:
    """Every carnet at or below `root`, in a stable (sorted) order."""
    found = list(carnets_under(root))
    if found == [root]:
        return found
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def sha256_of_digests(parts: list[tuple[str, bytes]]) -> str:
    """The CSV-folder hash of `sha256_of`, from each file's own SHA-256 digest
    (so a file is hashed in blocks, never held whole)."""
    h = hashlib.sha256()
    for name, digest in parts:
        h.update(name.encode("utf-8", "surrogateescape") + b"\0")
        h.update(digest)
    return h.hexdigest()


def file_digest(path) -> bytes | None:
    """SHA-256 of a file, hashed in blocks (never held whole); None if unreadable."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    return h.digest()
