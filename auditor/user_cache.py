"""What every process would otherwise redo at start, kept once per user: the
report's templates compiled (jinja2's bytecode cache) and the TOML files
parsed (the rule catalogue's 45 files and the message catalogues). Each costs
a few hundredths of a second per process, as much as auditing a small
carnet's rules.

The folder is the user's cache folder (`$XDG_CACHE_HOME/ecarte-auditor`, by
default `~/.cache/ecarte-auditor`), private to the user (0700): never the temp
folder, which the local page leaves empty when it stops. No carnet data ever
goes there, only the package's own files, and an entry is found by the
SHA-256 of the text it was made from, so an edited file is never answered by
a stale entry. An entry that cannot be read is made afresh; a folder that
cannot be made, or is not the user's alone, means no cache at all.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import stat
import sys
import tempfile
import tomllib
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=None)
def folder(name: str) -> Path | None:
    """`name` under the user's cache folder, made private if new; None when
    it cannot be made or is not this user's alone."""
    try:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        own = Path(base) / "ecarte-auditor"
        own.parent.mkdir(parents=True, exist_ok=True)
        own.mkdir(mode=0o700, exist_ok=True)
        path = own / name
        path.mkdir(mode=0o700, exist_ok=True)
        for p in (own, path):
            st = os.lstat(p)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or stat.S_IMODE(st.st_mode) & 0o077:
                return None
        return path
    except (OSError, AttributeError, RuntimeError):   # no home, a read-only disk, no getuid (Windows)
        return None


def toml_loads(text: str) -> dict:
    """`tomllib.loads(text)`, from the cache when this text was parsed before."""
    where = folder("toml")
    if where is None:
        return tomllib.loads(text)
    key = hashlib.sha256(f"{sys.version_info[:2]}\n{text}".encode("utf-8")).hexdigest()
    path = where / f"{key}.pickle"
    try:
        data = path.read_bytes()
        digest, payload = data[:32], data[32:]
        # The payload's own digest: a torn or damaged entry is parsed afresh, never trusted.
        if hashlib.sha256(payload).digest() == digest:
            return pickle.loads(payload)
    except Exception:
        pass
    parsed = tomllib.loads(text)
    payload = pickle.dumps(parsed, protocol=pickle.HIGHEST_PROTOCOL)
    _write(path, hashlib.sha256(payload).digest() + payload)
    return parsed


def _write(path: Path, data: bytes) -> None:
    """Write whole or not at all (a temp file renamed), silently: a cache that
    cannot be written is only a slower start."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass
