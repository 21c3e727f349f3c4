"""Reviews: what an inspector or controller decided about a finding.

One plain, append-only file (JSON Lines, one decision a line, keys sorted:
a diff shows only the lines added). A second decision on a finding is a new
line; nothing is ever rewritten. The local web page writes the same file
through `record_review`; `load_reviews` reads it back, never raising on a
bad line (it is reported, kept in the file, and left out).

Each line holds only what the user typed (status, justification, name) and
what the carnet's finding says (fingerprint, carnet id, code, séance, coup,
and the values the decision was made on: impact_cents, expected, found),
with the time it was recorded. A decision holds for what was reviewed: when
the finding's values differ from those it was made on, it is `stale`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from auditor.errors import Message, os_reason

FILE_NAME = "reviews.jsonl"
# `corrige` acknowledges a finding that is gone (absent, or in a vanished carnet).
STATUSES = ("a_verifier", "confirme", "justifie", "faux_positif", "corrige")
ACKNOWLEDGED = "corrige"
# A finding so reviewed no longer sets the exit status.
CLEARED = frozenset({"justifie", "faux_positif"})
STATUS_TEXT = {
    "fr": {"a_verifier": "à vérifier", "confirme": "confirmé", "justifie": "justifié", "faux_positif": "faux positif",
           "corrige": "corrigé"},
    "en": {"a_verifier": "to check", "confirme": "confirmed", "justifie": "justified", "faux_positif": "false positive",
           "corrige": "corrected"},
}
MAX_TEXT = 4000
# The finding's values a decision is made on: when one of them changes, the decision is stale.
REVIEWED_VALUES = ("impact_cents", "expected", "found")


class ReviewError(ValueError):
    """A decision that cannot be recorded (bad status, empty name…): the message says why."""


@dataclass
class ReviewFile:
    """A reviews file as read: its valid decisions, the lines left out and why, its bytes."""

    path: Path | None
    entries: list[dict] = field(default_factory=list)      # valid decisions, in file order
    problems: list[str] = field(default_factory=list)      # "reviews.jsonl, line 3: …" (lines kept, left out)
    raw: bytes = b""                                        # the file as it is, to carry forward whole


def record_review(path: Path | str, fingerprint: str, status: str, justification: str, by: str, *,
                  at: str | None = None, carnet: str | None = None, finding: dict | None = None) -> dict:
    """Append one decision to `path` (created if missing) and return it.

    `finding` (a finding of findings.json) gives the code, séance and coup the
    line shows beside the fingerprint, for whoever reads the file.
    """
    entry = make_entry(fingerprint, status, justification, by, at=at, carnet=carnet, finding=finding)
    line = json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n"
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # O_APPEND and one write: two writers never interleave inside a line.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        _lock(fd)
        size = os.fstat(fd).st_size
        prefix = b""
        if size:
            with open(path, "rb") as f:
                f.seek(size - 1)
                if f.read(1) != b"\n":
                    prefix = b"\n"   # a last line cut short stays as it is, on its own line
        os.write(fd, prefix + line.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    return entry


def make_entry(fingerprint: str, status: str, justification: str, by: str, *, at: str | None = None,
               carnet: str | None = None, finding: dict | None = None) -> dict:
    """One review decision as reviews.jsonl records it."""
    from auditor.clock import generated_at

    status = (status or "").strip()
    if status not in STATUSES:
        raise ReviewError(Message("review.unknown_status", status=status, choices=", ".join(STATUSES)))
    by, justification, fingerprint = (by or "").strip(), (justification or "").strip(), (fingerprint or "").strip()
    if not fingerprint:
        raise ReviewError(Message("review.needs_fingerprint"))
    if not by:
        raise ReviewError(Message("review.needs_by"))
    if not justification:
        raise ReviewError(Message("review.needs_comment"))
    if len(justification) > MAX_TEXT or len(by) > 200:
        raise ReviewError(Message("review.too_long", max_text=MAX_TEXT, max_name=200))
    entry = {"fingerprint": fingerprint, "status": status, "justification": justification, "by": by,
             "at": at or generated_at(), "carnet": carnet}
    f = finding or {}
    entry.update({"code": f.get("code"), "seance": f.get("seance"), "coup": f.get("coup")})
    if finding is not None:
        entry.update({k: f.get(k) for k in REVIEWED_VALUES})
    return entry


def _lock(fd: int) -> None:
    try:
        import fcntl
    except ImportError:   # Windows: O_APPEND alone
        return
    fcntl.flock(fd, fcntl.LOCK_EX)


def load_reviews(path: Path | str | None) -> ReviewFile:
    """Every valid decision of `path` (a missing file: none). Bad lines are
    listed in `problems` and left out; the file is never changed."""
    if path is None:
        return ReviewFile(None)
    path = Path(path)
    out = ReviewFile(path)
    try:
        out.raw = path.read_bytes()
    except FileNotFoundError:
        return out
    except OSError as exc:
        out.problems.append(Message("review.cannot_read", path=path, reason=os_reason(exc)))
        return out
    for n, line in enumerate(out.raw.decode("utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        why = None
        try:
            entry = json.loads(line)
        except ValueError:
            entry, why = None, Message("review.not_json")
        if why is None:
            why = _invalid(entry)
        if why:
            out.problems.append(Message("review.bad_line", path=path, n=n, why=why))
            continue
        out.entries.append(entry)
    return out


def _invalid(entry) -> str | None:
    if not isinstance(entry, dict):
        return Message("review.not_a_review")
    if not isinstance(entry.get("fingerprint"), str) or not entry["fingerprint"]:
        return Message("review.no_fingerprint")
    if entry.get("status") not in STATUSES:
        return Message("review.bad_status", status=entry.get("status"), choices=", ".join(STATUSES))
    for key in ("justification", "by", "at"):
        if not isinstance(entry.get(key), str):
            return Message("review.no_field", field=key)
    return None


def latest(entries: list[dict]) -> dict[str, dict]:
    """fingerprint → its latest decision, with the earlier ones (oldest first) in `history`."""
    by_fp: dict[str, list[dict]] = {}
    for e in entries:
        by_fp.setdefault(e["fingerprint"], []).append(e)
    out = {}
    for fp, decisions in by_fp.items():
        last = decisions[-1]   # file order is the order of decision
        out[fp] = {"status": last["status"], "justification": last["justification"], "by": last["by"],
                   "at": last["at"], "history": [_decision(d) for d in decisions[:-1]]}
    return out


def is_stale(entry: dict | None, finding: dict) -> bool:
    """Does the finding (as findings.json writes it) differ from the values
    the decision `entry` was made on? A decision recorded before the values
    were kept (no `impact_cents` in its line) cannot be judged: not stale."""
    if not entry or "impact_cents" not in entry:
        return False
    return any(entry.get(k) != finding.get(k) for k in REVIEWED_VALUES)


def last_entries(entries: list[dict]) -> dict[str, dict]:
    """fingerprint → its latest decision's line as recorded (with the values it was made on)."""
    return {e["fingerprint"]: e for e in entries}


def _decision(e: dict) -> dict:
    return {"status": e["status"], "justification": e["justification"], "by": e["by"], "at": e["at"]}
