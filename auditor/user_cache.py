"""What every process would otherwise redo at start, kept once per user: the
report's templates compiled (jinja2's bytecode cache), the TOML files
parsed (the rule catalogue's 45 files and the message catalogues) and the
package's dataclasses' methods compiled (`keep_dataclass_methods`). Each
costs a few hundredths of a second per process, as much as auditing a small
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
        return parse_toml(text)
    key = hashlib.sha256(f"{sys.version_info[:2]}\n{text}".encode("utf-8")).hexdigest()
    path = where / f"{key}.pickle"
    payload = _read_sealed(path)
    if payload is not None:
        try:
            return pickle.loads(payload)
        except Exception:
            pass
    parsed = parse_toml(text)
    _write_sealed(path, pickle.dumps(parsed, protocol=pickle.HIGHEST_PROTOCOL))
    return parsed


def _read_sealed(path: Path | None) -> bytes | None:
    """The payload `_write_sealed` wrote, or None: no file, or one whose
    payload does not match its digest (torn or damaged: made afresh, never trusted)."""
    try:
        data = path.read_bytes()
    except (OSError, AttributeError):
        return None
    digest, payload = data[:32], data[32:]
    return payload if hashlib.sha256(payload).digest() == digest else None


def _write_sealed(path: Path, payload: bytes) -> None:
    """`payload` after its SHA-256, written whole or not at all."""
    _write(path, hashlib.sha256(payload).digest() + payload)


def parse_toml(text: str) -> dict:
    """`tomllib.loads(text)`, parsed now (a user's own file, or a text the cache does not hold)."""
    import tomllib   # imported for a text not parsed before only: its import compiles a dozen patterns

    return tomllib.loads(text)


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


# -- dataclasses' methods, compiled once -------------------------------------------------
#
# `@dataclass` writes each class's methods (__init__, __repr__, __eq__ and,
# for a frozen one, __setattr__, __delattr__, __hash__) as source text and
# compiles it, in every process: before Python 3.13, one compilation per
# method. The 80 classes a one-carnet audit imports cost 30–50 ms of it, a
# tenth of the whole command and as much as auditing the carnet. The text is
# the same from one process to the next, so its compiled code is kept, as
# Python keeps a module's in its .pyc: the `exec` that `dataclasses` calls
# finds the code compiled for that very text (the text is the key: an edited
# class is compiled afresh). Only the package's own classes; any other
# source goes to the built-in `exec` untouched.

OWNERS = ("auditor", "ecarte_schemas")
# Past this many texts kept (the package's classes make some 530), only those
# this process used are written back: texts of classes since edited go.
KEEP_CODES = 800
# The file's format: bumped when the same text would be compiled otherwise
# (2: without this module's __future__ flags).
CODES_VERSION = 2


class CompiledMethods:
    """The `exec` of `dataclasses` in this process (`keep_dataclass_methods`)."""

    def __init__(self):
        self.codes: dict[str, object] | None = None
        self.used: set[str] = set()
        self.misses = 0

    def exec(self, source, globals=None, locals=None, /):
        """The built-in `exec`, with the package's dataclass methods' code compiled once per user."""
        import builtins

        if not isinstance(source, str):
            return builtins.exec(source, globals, locals)
        if not (isinstance(globals, dict) and _ours(globals.get("__name__"))):
            # Compiled as `dataclasses` would: a text compiled here would take
            # this module's `from __future__ import annotations` (string annotations).
            return builtins.exec(compile(source, "<string>", "exec", dont_inherit=True), globals, locals)
        codes = self._codes()
        code = codes.get(source)
        if code is None:
            code = codes[source] = compile(source, "<string>", "exec", dont_inherit=True)
            self.misses += 1
        self.used.add(source)
        return builtins.exec(code, globals, locals)

    def _path(self) -> Path | None:
        # Compiled code is only good for the interpreter that made it: named,
        # as .pyc files are checked, by its cache tag and its bytecode's magic number.
        from importlib.util import MAGIC_NUMBER

        tag = sys.implementation.cache_tag
        where = folder("code") if tag else None
        return None if where is None else where / f"dataclasses-{tag}-{MAGIC_NUMBER.hex()}-{CODES_VERSION}.marshal"

    def _codes(self) -> dict:
        if self.codes is None:
            self.codes = {}
            payload = _read_sealed(self._path())
            if payload is not None:
                import marshal

                try:
                    codes = marshal.loads(payload)
                except Exception:
                    codes = None
                if isinstance(codes, dict):
                    self.codes = codes
        return self.codes

    def save(self) -> None:
        """Write the codes back when this process compiled any (at its exit)."""
        if not self.misses or self.codes is None:
            return
        path = self._path()
        if path is None:
            return
        import marshal

        codes = self.codes if len(self.codes) <= KEEP_CODES else {k: self.codes[k] for k in self.used}
        _write_sealed(path, marshal.dumps(codes))
        self.misses = 0


def _ours(module) -> bool:
    return isinstance(module, str) and any(module == o or module.startswith(o + ".") for o in OWNERS)


METHODS = CompiledMethods()


def keep_dataclass_methods() -> None:
    """From now on in this process, the package's dataclasses take their
    methods' compiled code from the user's cache, and what is compiled anew
    is written there at exit. Once per process (a second call does nothing)."""
    import atexit
    import dataclasses

    if getattr(dataclasses, "exec", None) == METHODS.exec:   # bound methods: equal, never the same object
        return
    # A module global named `exec` is what `dataclasses` calls before the built-in one.
    dataclasses.exec = METHODS.exec
    atexit.register(METHODS.save)
