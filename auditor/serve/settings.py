"""The page's settings, filled once: the workspace, who audits, their
grade, the place of the visit — the procès-verbal's — and the signing
certificate. Kept in the user's configuration folder; the certificate's
password is typed on the page and held in this process's memory only
(or read from ECARTE_AUDIT_SIGN_PASSWORD), never written."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from auditor.serve.workspace import SETTINGS_FILE, Settings, Workspace, clean, config_folder, default_workspace


class PageSettings:
    """The settings file and what is made of it (the workspace, the visit, the signer)."""

    def __init__(self, path: Path | None = None, workspace: Path | None = None, lang: str = "fr"):
        self.path = path or config_folder() / SETTINGS_FILE
        self.values = Settings.load(self.path)
        self.lang = lang
        # `serve --workspace DIR`: this session's, whatever the file says.
        self.override = Path(workspace).expanduser() if workspace else None
        self._signer = None
        self._lock = threading.Lock()
        if self.values.certificate:
            # A password in the environment signs from the start; else the page asks for it.
            try:
                self._signer = self._load_signer(Path(self.values.certificate).expanduser(), None)
            except Exception:   # a moved certificate, a wrong password: unsigned until the page fixes it
                self._signer = None

    def workspace(self) -> Workspace:
        """The visit's folder: the command line's, the page's choice, or the default."""
        if self.override is not None:
            return Workspace(self.override)
        if self.values.workspace:
            return Workspace(Path(self.values.workspace))
        return Workspace(default_workspace())

    def as_json(self) -> dict:
        """What the page shows (never the password)."""
        v = self.values
        return {"workspace": str(self.workspace().folder), "inspector": v.inspector, "grade": v.grade,
                "place": v.place, "certificate": v.certificate, "signing": self._signer is not None,
                "filled": v.filled(), "file": str(self.path)}

    def update(self, body: dict) -> None:
        """Take the page's form (OSError/WriteError when the file cannot be
        written; UsageError when the certificate cannot be opened)."""
        with self._lock:
            values = Settings(**{k: clean(body.get(k, getattr(self.values, k)))
                                 for k in Settings.__dataclass_fields__})
            if "workspace" in body and clean(body.get("workspace")):
                self.override = None   # chosen on the page: it holds from now on
            password = body.get("password")
            signer = self._signer if values.certificate == self.values.certificate else None
            if values.certificate and (password or signer is None):
                signer = self._load_signer(Path(values.certificate).expanduser(),
                                           str(password) if password else None)
            if not values.certificate:
                signer = None
            values.save(self.path)
            self.values, self._signer = values, signer

    def _load_signer(self, path: Path, password: str | None):
        from auditor.sign import PASSWORD_VARIABLE, load_signer

        if password is None and os.environ.get(PASSWORD_VARIABLE) is None:
            return None   # no password yet: the PV is made unsigned until one is typed
        return load_signer(path, self.lang, password=password if password is not None
                           else os.environ[PASSWORD_VARIABLE])

    def pv(self):
        """(Visit, signer or None) for the run starting now."""
        from auditor.report.pv import Visit

        v = self.values
        return Visit(v.inspector, v.grade, v.place), self._signer
