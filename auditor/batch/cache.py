"""The batch cache: each carnet's rendered result kept under a key made of
what decides its audit, so a nightly run re-audits only what changed."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import zipfile
from dataclasses import fields
from pathlib import Path

from auditor import __version__
from auditor.atomic import write_failure
from auditor.batch.plan import CarnetJob, JobOutput, Options
from auditor.catalogue import rules_root
from auditor.errors import WriteError
from auditor.read.raw import file_digest, sha256_of_digests
from auditor.render import restamp_outputs


def fingerprint(path: Path) -> str:
    """SHA-256 of a carnet's files, exactly as the reader computes it, hashed in
    blocks (a huge file is never held whole just to look it up in the cache)."""
    if path.is_dir():
        parts = [(p.name, _digest(p)) for p in sorted(path.iterdir(), key=lambda p: p.name)
                 if p.is_file() and p.suffix.lower() == ".csv"]
        return sha256_of_digests(parts)
    return _digest(path).hex()


def _digest(path: Path) -> bytes:
    digest = file_digest(path)
    if digest is None:
        raise OSError(f"cannot read {path}")
    return digest


def _rules_digest() -> str:
    h = hashlib.sha256()
    root = rules_root()
    for node in sorted([root.joinpath("profile.toml")] + list(root.joinpath("catalogue").iterdir()),
                       key=lambda n: n.name):
        h.update(node.name.encode() + b"\0" + node.read_bytes())
    return h.hexdigest()


# Options that never change what an audit finds or renders: the clock (a hit
# is re-stamped) and the debug switch.
NOT_IN_KEY = ("generated_at", "debug")


class Cache:
    """Results keyed by what decides the audit: the carnet's files, the tool
    version, the profile and catalogue, and every option that shapes the
    outputs (formats, language, limits, and any option added later), plus the
    carnet's id and path and what the run brings to it (baseline, reviews).
    Never the run's time: a nightly run hits, and the hit is re-stamped with
    this run's time."""

    def __init__(self, folder: Path, options: Options):
        self.folder = folder
        chosen = {f.name: repr(getattr(options, f.name)) for f in fields(options) if f.name not in NOT_IN_KEY}
        self.salt = json.dumps({"version": __version__, "rules": _rules_digest(), "options": chosen},
                               sort_keys=True)
        self.generated_at = options.generated_at

    def key(self, job: CarnetJob) -> str | None:
        """The job's cache key, or None when its files cannot be read (then it is audited, and the reader says why)."""
        try:
            content = fingerprint(job.path)
        except OSError:
            return None  # unreadable: audit it, the reader will say why
        text = json.dumps({"salt": self.salt, "content": content, "id": job.id, "shown": job.shown,
                           "context": job.context_digest()})
        return hashlib.sha256(text.encode()).hexdigest()

    def _dir(self, key: str) -> Path:
        return self.folder / key[:2] / key

    def load(self, key: str, index: int) -> JobOutput | None:
        """The cached output under `key`, re-stamped with this run's time; None on a miss or a damaged entry."""
        d = self._dir(key)
        meta = d / "result.json"
        if not meta.is_file():
            return None
        try:
            data = json.loads(meta.read_text(encoding="utf-8"))
            files = {name: (d / "files" / name).read_bytes() for name in data["files"]}
            files = restamp_outputs(files, data["at"], self.generated_at)
        except (OSError, ValueError, KeyError, zipfile.BadZipFile):
            return None  # a damaged entry is a miss
        return JobOutput(index, data["entry"], files, data["tickets"], data["worst"], cached=True,
                         history=data.get("history", []))

    def store(self, key: str, out: JobOutput) -> None:
        """Keep `out` under `key`, written whole or not at all."""
        d = self._dir(key)
        tmp = d.with_name(d.name + f".tmp{os.getpid()}")
        try:
            shutil.rmtree(tmp, ignore_errors=True)
            (tmp / "files").mkdir(parents=True)
            for name, data in out.files.items():
                (tmp / "files" / name).write_bytes(data)
            meta = {"entry": out.entry, "files": sorted(out.files), "at": self.generated_at,
                    "tickets": out.tickets, "worst": out.worst, "history": out.history}
            (tmp / "result.json").write_text(json.dumps(meta), encoding="utf-8")
            shutil.rmtree(d, ignore_errors=True)
            tmp.rename(d)  # atomic: a reader sees a whole entry or none
        except OSError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise WriteError(write_failure(d, exc)) from None
