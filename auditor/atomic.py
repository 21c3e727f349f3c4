"""Files written whole or not at all.

Each file is written under a temporary name in its own folder (same file
system, so the rename is atomic) and renamed over its real name once complete:
a reader, or a run stopped half-way (disk full, Ctrl-C, a crash), never sees a
truncated report under a real name. The temporary name starts with a dot and
ends in `.part`, so a leftover can never pass for a report; the next run that
writes into that folder removes it.
"""

from __future__ import annotations

import os
from pathlib import Path

from auditor.errors import Message, WriteError, os_reason

PART_SUFFIX = ".part"


def write_atomic(path: Path, data: bytes | str) -> None:
    """Write `data` to `path` atomically; any OS error becomes a WriteError."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.{os.getpid()}{PART_SUFFIX}")
    try:
        with open(tmp, "wb") as f:
            f.write(raw)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise WriteError(write_failure(path, exc)) from None
        raise


def make_folder(folder: Path) -> None:
    """Create `folder` (and its parents), clearing leftovers of a stopped run."""
    try:
        try:
            folder.mkdir(parents=True)
            return      # a folder just made holds no leftovers
        except FileExistsError:
            if not folder.is_dir():
                raise   # a file in its place: the error mkdir(exist_ok=True) gives
        for stale in folder.glob(f".*{PART_SUFFIX}"):
            stale.unlink(missing_ok=True)
    except OSError as exc:
        raise WriteError(write_failure(folder, exc)) from None


def write_failure(path: Path, exc: OSError) -> Message:
    """The message of a file that could not be written."""
    return Message("main.cannot_write", path=path, reason=os_reason(exc))
