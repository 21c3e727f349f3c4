"""The batch cache: each carnet's audit, as data, kept under a key made of
what decides it, so a nightly run re-audits only what changed; the run
renders every file from it with what it applies after the audit."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import shutil
import pickle
import sys
import time
from dataclasses import dataclass, fields
from importlib.resources import files
from pathlib import Path

from auditor import __version__
from auditor.atomic import write_failure
from auditor.batch.plan import CarnetJob, Options
from auditor.catalogue import rules_digest
from auditor.discover import file_digest, sha256_of_digests
from auditor.errors import WriteError
from auditor.outputs import CarnetAudit
from auditor.names import shown_name


def fingerprint(path: Path) -> str:
    """SHA-256 of a carnet's files, exactly as the reader computes it, hashed in
    blocks (a huge file is never held whole just to look it up in the cache)."""
    if path.is_dir():
        parts = [(shown_name(p.name), _digest(p)) for p in sorted(path.iterdir(), key=lambda p: p.name)
                 if p.is_file() and p.suffix.lower() == ".csv"]
        return sha256_of_digests(parts)
    return _digest(path).hex()


def _digest(path: Path) -> bytes:
    digest = file_digest(path)
    if digest is None:
        raise OSError(f"cannot read {path}")
    return digest


def _templates_digest() -> str:
    """The report templates and labels: the drafts hold texts taken from them."""
    h = hashlib.sha256()
    root = files("auditor").joinpath("templates")
    stack = [root]
    while stack:
        node = stack.pop()
        for child in sorted(node.iterdir(), key=lambda n: n.name):
            if child.is_dir():
                stack.append(child)
            elif child.name.endswith((".j2", ".css", ".js", ".toml")):
                h.update(child.name.encode() + b"\0" + child.read_bytes())
    return h.hexdigest()


def _code_digest() -> str:
    """The package's own code: the version alone does not move between two
    releases, and an audit kept by one build must never be read back as
    another's (a rule mended, a fact added to what a carnet hands back)."""
    h = hashlib.sha256()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [d for d in subfolders if d != "__pycache__"]
        found += [os.path.join(folder, n) for n in names if n.endswith(".py")]
    for path in sorted(found):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:   # an editor's lock file (a dangling `.#name.py` link) is no code
            continue
        h.update(os.path.relpath(path, root).replace(os.sep, "/").encode() + b"\0" + data)
    return h.hexdigest()


# Options that never change what an audit finds: the clock (the run stamps
# the files it writes), the debug switch, and what the run applies after the
# audit (--fail-on-new against the baseline).
NOT_IN_KEY = ("generated_at", "debug", "fail_on_new")
AUDIT_FILE, HEAD_FILE = "carnet-audit.pickle", "carnet-head.pickle"
# What a batch made of its carnets' cached audits (its checks over the batch,
# its summary and index), kept for the next run over the same carnets. Bumped
# when what is kept changes: older ones are not recalled (3: a carnet alone is
# not checked across carnets; the files carry their SHA-256; the checks carry
# the codes of the rules across a table's carnets).
BATCH_FOLDER, BATCH_VERSION = "batches", 3
# A controller's nights are one batch or a few (one per casino or table): the
# newest this many are kept, the others removed as new ones are written.
KEEP_BATCHES = 16
STALE_PART_S = 3600   # a batch file being kept for longer than this was left by a stopped run
# A batch file starts with this and the SHA-256 of the pickle that follows (keep_batch, recall_batch).
BATCH_MAGIC = b"ecarte-batch\n"
# So do a carnet's entry, its kept files and the run's spool files (write_pickle, read_pickle).
ENTRY_MAGIC = b"ecarte-entry\n"


@dataclass
class Hit:
    """What the run keeps of a cached carnet until it writes its files: its
    summary row and the facts the checks over the batch need; the whole audit
    is read again from `path` when its files are made."""

    entry: dict
    facts: object
    path: Path
    fingerprints: frozenset[str] = frozenset()   # its own findings' (what reviews it can be reached by)


class Cache:
    """Each carnet's audit as data (auditor.outputs.CarnetAudit), keyed by what
    decides it: the carnet's files, its id and path as shown, the tool
    version, the profile and catalogue, the report templates, and every
    option that shapes the audit (formats, language, limits, column mapping,
    and any option added later). Never what the run applies after the audit
    — the baseline, the reviews, the time stamp —: a review recorded during
    the day, or a new night, is still a hit.

    An entry is a Python pickle: the cache folder is the user's own, as
    trusted as the program (never point --cache at a folder others write)."""

    def __init__(self, folder: Path, options: Options):
        self.folder = folder
        chosen = {f.name: repr(getattr(options, f.name)) for f in fields(options) if f.name not in NOT_IN_KEY}
        self.salt = json.dumps({"version": __version__, "code": _code_digest(), "rules": rules_digest(),
                                "templates": _templates_digest(),
                                "python": sys.version_info[:2], "options": chosen}, sort_keys=True)

    def key(self, job: CarnetJob) -> str | None:
        """The job's cache key, or None when its files cannot be read (then it is audited, and the reader says why)."""
        if job.refusal is not None:
            return None
        try:
            content = fingerprint(job.path)
        except OSError:
            return None  # unreadable: audit it, the reader will say why
        text = json.dumps({"salt": self.salt, "content": content, "id": job.id, "shown": job.shown})
        return hashlib.sha256(text.encode()).hexdigest()

    def _dir(self, key: str) -> Path:
        return self.folder / key[:2] / key

    def load(self, key: str) -> Hit | None:
        """The cached carnet under `key`: its row and batch facts; None on a miss or a damaged entry."""
        d = self._dir(key)
        head = read_pickle(d / HEAD_FILE)   # none, or a damaged entry: a miss
        if not isinstance(head, tuple) or len(head) != 3 or not (d / AUDIT_FILE).is_file():
            return None
        entry, facts, fingerprints = head
        return Hit(entry, facts, d / AUDIT_FILE, fingerprints)

    def store(self, key: str, audit: CarnetAudit) -> Path:
        """Keep `audit` under `key`, written whole or not at all; the path of its audit file."""
        return store_entry(self._dir(key), audit)

    def remove_stale_parts(self) -> int:
        """Remove the half-written entries (`<key>.tmp<pid>`) that workers
        killed outright while they kept an audit left behind; how many. Only
        those older than `STALE_PART_S`: an entry is written in milliseconds,
        so a younger one may be another run's, being written now."""
        removed, before = 0, time.time() - STALE_PART_S
        try:
            prefixes = [e for e in os.scandir(self.folder) if len(e.name) == 2 and e.is_dir(follow_symlinks=False)]
        except OSError:
            return 0
        for prefix in prefixes:
            try:
                parts = [e for e in os.scandir(prefix.path) if ".tmp" in e.name]
            except OSError:
                continue
            for part in parts:
                with contextlib.suppress(OSError):
                    if part.stat(follow_symlinks=False).st_mtime < before:
                        if part.is_dir(follow_symlinks=False):
                            shutil.rmtree(part.path)
                        else:
                            os.unlink(part.path)
                        removed += 1
        return removed

    def entry_dir(self, key: str) -> Path:
        """The folder of the entry under `key` (where a worker keeps the audit it made)."""
        return self._dir(key)

    def batch_file(self, keys: list[str], kind: str) -> Path:
        """Where what the batch of the carnets under `keys` (in the jobs' order:
        each key holds its carnet's content, id and path as shown) made of
        them is kept: `kind` "checks" (`BatchChecks`) or "files" (its summary
        and index with their time slots)."""
        text = json.dumps({"salt": self.salt, "batch": BATCH_VERSION, "carnets": keys})
        return self.folder / BATCH_FOLDER / f"{hashlib.sha256(text.encode()).hexdigest()}.{kind}.pickle"


@dataclass
class BatchChecks:
    """What the checks over a batch made of its carnets' facts, kept beside
    the cache: a night whose carnets all come from the cache makes none of it
    again (on a 1,000-carnet night, seconds of the few it takes)."""

    cross: list                     # the findings across carnets (across.CrossFinding), each carnet's view made
    checked: dict                   # per carnet, the statuses of the rules across a table's carnets
    tables: list                    # summary.json's tables, as index.html draws them
    across_digests: dict            # per carnet, the digest of its findings across carnets (finishing.across_digest)
    archive_codes: tuple = ()       # the rules across a table's carnets (what the dashboard shows of them)


@dataclass
class BatchMemo:
    """A batch's summary.json and index.html kept as made, with their time
    slots (auditor.outputs.Stamped), under the digest of what they were made from."""

    path: Path

    def recall(self, digest: str) -> dict | None:
        """The files kept for `digest` (None: none, or made from other inputs)."""
        kept = recall_batch(self.path)
        return kept[1] if isinstance(kept, tuple) and len(kept) == 2 and kept[0] == digest else None

    def keep(self, digest: str, files: dict) -> None:
        """Keep `files`, made from the inputs of `digest`."""
        keep_batch(self.path, (digest, files))


def previous_memo(cache: Path, out: Path) -> BatchMemo:
    """Where a run's output folder `out`, as a baseline reads it, is kept in
    the cache folder `cache`: a controller's next night reads it back
    instead of the run's JSON files (baseline.read_previous)."""
    where = hashlib.sha256(str(out.resolve()).encode("utf-8", "surrogateescape")).hexdigest()
    return BatchMemo(cache / BATCH_FOLDER / f"previous-{where}.pickle")


def keep_batch(path: Path, value) -> None:
    """Keep `value` at `path` (a batch file of the cache), whole or not at
    all, and remove the oldest beyond `KEEP_BATCHES` batches; a failure to
    keep it costs only the next run's time."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_sealed(tmp, value, BATCH_MAGIC)
        os.replace(tmp, path)
        kept = sorted(path.parent.glob("*.pickle"), key=_age, reverse=True)
        for old in kept[2 * KEEP_BATCHES:]:
            old.unlink(missing_ok=True)
        # A run stopped while it kept one (Ctrl-C, a full disk) left its part
        # file: gone once surely no run is still writing it.
        for part in path.parent.glob(".*.part"):
            if _age(part) < time.time() - STALE_PART_S:
                part.unlink(missing_ok=True)
    except OSError:
        # The part file may be unreachable too (`batches` a file, not a folder:
        # unlink says ENOTDIR, not "missing"): the run goes on without it.
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def recall_batch(path: Path):
    """What `keep_batch` kept at `path` (None: none, or damaged); marked as
    used, so that the batches run every night are the ones kept. Its
    SHA-256, kept before it, must hold: a byte changed inside a summary's
    text or a place's path still unpickles, and would be written out as it
    reads (or fail where it is used)."""
    value = _read_sealed(path, BATCH_MAGIC)
    if value is not None:
        with contextlib.suppress(OSError):
            os.utime(path)
    return value


def _age(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def store_entry(d: Path, audit: CarnetAudit, fingerprints: frozenset[str] | None = None) -> Path:
    """Keep `audit` as the cache entry `d`, written whole or not at all; the
    path of its audit file. `fingerprints`: its findings', if known already."""
    if fingerprints is None:
        fingerprints = frozenset(f.fingerprint for f in audit.findings)
    tmp = d.with_name(d.name + f".tmp{os.getpid()}")
    try:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        write_pickle(tmp / AUDIT_FILE, audit)
        write_pickle(tmp / HEAD_FILE, (audit.entry, audit.facts, fingerprints))
        shutil.rmtree(d, ignore_errors=True)
        tmp.rename(d)  # atomic: a reader sees a whole entry or none
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise WriteError(write_failure(d, exc)) from None
    return d / AUDIT_FILE


@dataclass
class AuditOrder:
    """A carnet to audit in a local worker, and where the worker keeps its
    audit: the cache entry `entry` (a folder), else the run's spool file
    `spool`. The worker hands back only a `Kept`: the audit crosses no pipe
    and is pickled once, in the worker, beside the others being made."""

    job: CarnetJob
    spool: Path
    entry: Path | None = None

    @property
    def shown(self) -> str:
        """The carnet as outputs show it (the pool's messages name it)."""
        return self.job.shown

    def keep(self, audit: CarnetAudit) -> "Kept":
        """Write `audit` where this order says; what the run keeps of it."""
        fingerprints = frozenset(f.fingerprint for f in audit.findings)
        if self.entry is not None:
            path, in_cache = store_entry(self.entry, audit, fingerprints), True
        else:
            write_pickle(self.spool, audit)
            path, in_cache = self.spool, False
        return Kept(audit.index, audit.entry, audit.facts, fingerprints, path, in_cache)


@dataclass
class Kept:
    """A carnet audited and kept on disk by its worker: what the run holds of it until its files are made."""

    index: int
    entry: dict
    facts: object
    fingerprints: frozenset[str]
    path: Path
    in_cache: bool
    fault: str | None = None   # never set: a fault's audit comes back whole
    pid: int | None = None


def load_audit(path: Path) -> CarnetAudit | None:
    """A carnet's audit kept by the cache or the run's spool (None: damaged or gone)."""
    audit = read_pickle(path)
    return audit if isinstance(audit, CarnetAudit) else None


def write_pickle(path: Path, value) -> None:
    """`value` pickled into `path` (what the cache and the run's spool keep), after its SHA-256."""
    _write_sealed(path, value, ENTRY_MAGIC)


def read_pickle(path: Path):
    """What `write_pickle` kept at `path`; None when it is gone or damaged.
    Its SHA-256 must hold: a byte changed inside a finding's text or a
    report's still unpickles, and would reach the outputs as it reads (a
    miss instead: the carnet is audited, or its files made, again). Also
    None: cut short, written by another version of the program, a length
    field damaged (the unpickler then raises OverflowError or MemoryError)."""
    return _read_sealed(path, ENTRY_MAGIC)


def _write_sealed(path: Path, value, magic: bytes) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    with path.open("wb") as fh:   # three writes: a large audit's pickle is not copied once more
        fh.write(magic)
        fh.write(hashlib.sha256(data).digest())
        fh.write(data)


def _read_sealed(path: Path, magic: bytes):
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head = len(magic) + hashlib.sha256().digest_size
    body = memoryview(data)[head:]
    if data[:len(magic)] != magic or hashlib.sha256(body).digest() != data[len(magic):head]:
        return None
    return loads_pickle(body)


def loads_pickle(data: bytes):
    """The value pickled in `data`; None when it is damaged (see read_pickle).
    The collector waits meanwhile: the objects made here are all alive, and a
    night's kept checks (some 100,000 objects) otherwise set off full
    collections over everything already read (0.3 → 0.5–0.8 s here)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return pickle.loads(data)
    except (OSError, pickle.UnpicklingError, ValueError, TypeError, EOFError, AttributeError, ImportError,
            OverflowError, MemoryError):
        return None
    finally:
        if paused:
            gc.enable()
