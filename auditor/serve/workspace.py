"""The visit's workspace: a folder the inspector chooses once, where every
audit made on the page is kept — its inputs copied, its outputs, its
reviews — by casino, table and date, and the settings the page fills once
(who audits, their grade, the place: the procès-verbal's).

    <workspace>/<casino>/Table <n>/<YYYY-MM-DD HHhMMmSS>/
        audit.json        what the page lists (carnets, verdicts, the previous audit)
        in/               the carnets as audited (a snapshot: the cell view reads these)
        out/              the reports, findings.json, workbooks, procès-verbaux
        baseline/         the previous visit's findings of each carnet, by this audit's carnet id
        reviews.jsonl     the decisions (carried from the previous visit, then the page's)

An audit is first made in `<workspace>/.en-cours/<id>` and moved to its
place once its carnets' casino and table are known. The settings live in the
user's configuration folder (`~/.config/ecarte-audit/settings.json`,
`%APPDATA%\\ecarte-audit\\settings.json`), never in the workspace: the
workspace is what they choose.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from auditor.atomic import write_atomic
from auditor.reviews import FILE_NAME as REVIEWS_FILE

AUDIT_FILE = "audit" + ".json"   # (spelt so: it is a file name, not a label key)
SETTINGS_FILE = "settings.json"
PENDING = ".en-cours"
LOCAL_ZONE = "Europe/Paris"
# One name whatever the page's language: a server started in English must find the visits kept in French.
DEFAULT_NAME = "Contrôles écarté"
# Characters no file name may hold on Windows (and `/` anywhere), and control characters.
UNSAFE = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]+')
MAX_TEXT = 200


# -- where things are ------------------------------------------------------------

def documents_folder() -> Path:
    """The user's documents folder: XDG_DOCUMENTS_DIR on Linux (user-dirs.dirs),
    the Documents known folder on Windows, ~/Documents elsewhere."""
    home = Path.home()
    if sys.platform == "win32":
        found = _windows_documents()
        if found is not None:
            return found
        return home / "Documents"
    env = os.environ.get("XDG_DOCUMENTS_DIR")
    if env:
        return Path(os.path.expandvars(env)).expanduser()
    config = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    try:
        for line in (config / "user-dirs.dirs").read_text(encoding="utf-8").splitlines():
            m = re.match(r'\s*XDG_DOCUMENTS_DIR\s*=\s*"(.*)"\s*$', line)
            if m:
                return Path(m[1].replace("$HOME", str(home))).expanduser()
    except OSError:
        pass
    return home / "Documents"


def _windows_documents() -> Path | None:
    try:   # SHGetKnownFolderPath(FOLDERID_Documents): the folder the user moved it to, if they did
        import ctypes
        import uuid

        class GUID(ctypes.Structure):
            _fields_ = [("data", ctypes.c_byte * 16)]

        guid = GUID()
        ctypes.memmove(ctypes.byref(guid), uuid.UUID("{FDD39AD0-238F-46AF-ADB4-6C85480369C7}").bytes_le, 16)
        out = ctypes.c_wchar_p()
        if ctypes.windll.shell32.SHGetKnownFolderPath(ctypes.byref(guid), 0, None, ctypes.byref(out)) != 0:
            return None
        path = Path(out.value)
        ctypes.windll.ole32.CoTaskMemFree(out)
        return path
    except Exception:   # no shell32 (not Windows, or a stripped one): the default
        return None


def default_workspace() -> Path:
    """`~/Documents/Contrôles écarté`."""
    return documents_folder() / DEFAULT_NAME


def config_folder() -> Path:
    """Where the page keeps its settings (the user's, not the workspace's)."""
    if sys.platform == "win32":
        base = os.environ.get("APPDATA")
        return (Path(base) if base else Path.home() / "AppData" / "Roaming") / "ecarte-audit"
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "ecarte-audit"


# -- the settings ------------------------------------------------------------------

@dataclass
class Settings:
    """What the page asks once: the workspace, who audits, their grade, the
    place; the signing certificate (its password is never written)."""

    workspace: str = ""
    inspector: str = ""
    grade: str = ""
    place: str = ""
    certificate: str = ""

    @classmethod
    def load(cls, path: Path) -> "Settings":
        """The settings at `path` (missing or damaged: empty ones; unknown keys ignored)."""
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return cls()
        if not isinstance(doc, dict):
            return cls()
        return cls(**{k: clean(doc.get(k)) for k in cls.__dataclass_fields__})

    def save(self, path: Path) -> None:
        """Written whole or not at all (OSError when it cannot be)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(asdict(self), ensure_ascii=False, indent=2, sort_keys=True) + "\n"
        write_atomic(path, text.encode("utf-8"))

    def filled(self) -> bool:
        """The procès-verbal's fields are given."""
        return bool(self.inspector and self.place)


def clean(value) -> str:
    """A text typed on the page, as kept: one line, trimmed, bounded."""
    text = " ".join(str(value or "").split())
    return text[:MAX_TEXT]


# -- the audits --------------------------------------------------------------------

def folder_name(text: str, fallback: str) -> str:
    """`text` as a folder name every system accepts (no separator, no
    reserved character, no trailing dot or space), or `fallback`."""
    name = UNSAFE.sub(" ", text or "").strip(" .")
    name = " ".join(name.split())[:80].strip(" .")
    if not name or name.upper().split(".")[0] in {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(10)),
                                                   *(f"LPT{i}" for i in range(10))}:
        return fallback
    return name


def local_moment(stamp: str) -> datetime:
    """The run's UTC time stamp (`2026-01-01T23:30:00Z`) in Paris (UTC when the
    zone database is missing)."""
    moment = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    try:
        from zoneinfo import ZoneInfo

        return moment.astimezone(ZoneInfo(LOCAL_ZONE))
    except Exception:   # no tz database (Windows without tzdata): UTC, and the page says UTC
        return moment


def zone_known() -> bool:
    """Paris's zone can be used (else times are UTC and said so)."""
    try:
        from zoneinfo import ZoneInfo

        ZoneInfo(LOCAL_ZONE)
        return True
    except Exception:
        return False


@dataclass
class CarnetRecord:
    """One carnet of an audit, as audit.json keeps it."""

    id: str
    shown: str
    input: str | None                  # its copy under in/ (None: refused before reading)
    casino: str | None = None
    table: int | None = None
    verdict: str | None = None
    summary: dict = field(default_factory=dict)
    previous: dict | None = None       # {"audit": its id, "carnet": its carnet id, "created": …}
    start: str | None = None           # its first séance's date (the cover's date_debut)
    baseline_counts: dict | None = None


@dataclass
class AuditRecord:
    """An audit kept in the workspace (audit.json)."""

    id: str
    created: str                       # the run's UTC time stamp
    lang: str
    batch: bool = False
    carnets: list[CarnetRecord] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    refusals: dict = field(default_factory=dict)   # carnet id → why it was refused before reading
    signed: bool = False

    def as_json(self) -> dict:
        """audit.json's content."""
        return asdict(self)

    @classmethod
    def from_json(cls, doc: dict) -> "AuditRecord":
        """The record audit.json holds (KeyError/TypeError when it is not one)."""
        carnets = [CarnetRecord(**{k: c.get(k) for k in CarnetRecord.__dataclass_fields__ if k in c})
                   for c in doc.get("carnets") or []]
        return cls(doc["id"], doc["created"], doc.get("lang") or "fr", bool(doc.get("batch")), carnets,
                   list(doc.get("ignored") or []), dict(doc.get("refusals") or {}), bool(doc.get("signed")))

    def tables(self) -> list[tuple[str, int | None]]:
        """The (casino, table) pairs of its carnets, in order, once each."""
        seen = []
        for c in self.carnets:
            pair = (c.casino or "", c.table)
            if c.casino and pair not in seen:
                seen.append(pair)
        return seen


class Workspace:
    """The folder of the visits (created when first written to)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder).expanduser()

    def pending(self, audit_id: str) -> Path:
        """Where an audit is made before its place is known."""
        return self.folder / PENDING / audit_id

    def place(self, record: AuditRecord, labels: dict[str, str]) -> Path:
        """Where the audit is kept: by casino, table and local date and time."""
        pairs = record.tables()
        casinos = {c for c, _ in pairs}
        if len(casinos) == 1:
            casino = folder_name(pairs[0][0], labels["unknown_casino"])
            tables = {t for _, t in pairs}
            table = (labels["table"].format(table=pairs[0][1]) if len(tables) == 1 and pairs[0][1] is not None
                     else labels["several_tables"])
        else:
            casino = labels["several_casinos"] if casinos else labels["unknown_casino"]
            table = labels["several_tables"] if casinos else labels["unknown_table"]
        moment = local_moment(record.created).strftime("%Y-%m-%d %Hh%Mm%S")
        return self.folder / casino / folder_name(table, "table") / moment

    def settle(self, pending: Path, record: AuditRecord, labels: dict[str, str]) -> Path:
        """Move a finished audit from its pending folder to its place (a
        suffix when two audits share the second) and write its audit.json."""
        target = self.place(record, labels)
        target.parent.mkdir(parents=True, exist_ok=True)
        final, n = target, 1
        while final.exists():
            n += 1
            final = target.with_name(f"{target.name} ({n})")
        os.replace(pending, final)
        self.write_record(final, record)
        return final

    @staticmethod
    def write_record(folder: Path, record: AuditRecord) -> None:
        """The audit's audit.json, written whole or not at all."""
        text = json.dumps(record.as_json(), ensure_ascii=False, indent=1, sort_keys=True) + "\n"
        write_atomic(folder / AUDIT_FILE, text.encode("utf-8"))

    def audits(self) -> list[tuple[Path, AuditRecord]]:
        """Every audit kept (folder, record), newest first; a damaged
        audit.json is left out, never an error. Raises OSError when the
        workspace itself cannot be listed."""
        if not self.folder.exists():
            return []
        found = []
        for path in self.folder.glob(f"*/*/*/{AUDIT_FILE}"):
            if PENDING in path.parts:
                continue
            try:
                record = AuditRecord.from_json(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                continue
            found.append((path.parent, record))
        found.sort(key=lambda item: (item[1].created, str(item[0])), reverse=True)
        return found

    def previous(self, casino: str | None, table: int | None, before: str,
                 audits: list[tuple[Path, AuditRecord]] | None = None,
                 exclude: str | None = None, start: str | None = None) -> tuple[Path, AuditRecord, CarnetRecord] | None:
        """The last audit made before `before` (or in the same second), other
        than the audit `exclude`, with a carnet of this casino and table (its
        folder, record and that carnet: the one that starts on `start` — the
        same carnet audited again —, else the latest of that table in it), or
        None."""
        if not casino:
            return None
        for folder, record in audits if audits is not None else self.audits():
            if record.created > before or record.id == exclude:
                continue
            mine = [c for c in record.carnets if c.casino == casino and c.table == table and c.verdict]
            if mine:
                same = [c for c in mine if start and c.start == start]
                latest = max(mine, key=lambda c: c.start or "")
                return folder, record, same[0] if same else latest
        return None

    def clear_pending(self, older_than: float = 86400.0) -> None:
        """Audits a stopped server left half made (a day old: another server
        on the same workspace may be making one now)."""
        import time

        try:
            stale = [p for p in (self.folder / PENDING).iterdir() if time.time() - p.stat().st_mtime > older_than]
        except OSError:
            return
        for path in stale:
            shutil.rmtree(path, ignore_errors=True)


def reviews_file(folder: Path) -> Path:
    """An audit's decisions."""
    return folder / REVIEWS_FILE
