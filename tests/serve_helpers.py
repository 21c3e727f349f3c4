"""A real `ecarte-audit serve` in a subprocess, and plain HTTP to it (the
Host header, cookies and bodies exactly as a test wants them)."""

from __future__ import annotations

import http.client
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
import zipfile
from pathlib import Path

ADDRESS = re.compile(r"http://127\.0\.0\.1:(\d+)/\?token=(\S+)")


class Server:
    """`python -m auditor serve` with its own TMPDIR, so every file it writes
    can be looked for, and none may be found after it stops."""

    def __init__(self, tmp: Path, *args: str, env: dict | None = None):
        self.tmp = tmp
        self.tmp.mkdir(parents=True, exist_ok=True)
        environ = {k: v for k, v in os.environ.items() if k not in ("LANGUAGE", "LC_ALL", "LC_MESSAGES")}
        # The visit's workspace and the settings: the test's own, never the user's Documents or configuration.
        self.workspace = tmp.parent / f"{tmp.name}-workspace"
        self.config = tmp.parent / f"{tmp.name}-config"
        environ.update({"TMPDIR": str(tmp), "LANG": "fr_FR.UTF-8", "XDG_CONFIG_HOME": str(self.config),
                        **(env or {})})
        if "--workspace" not in args and not (env or {}).get("NO_WORKSPACE"):
            args = ("--workspace", str(self.workspace), *args)
        self.proc = subprocess.Popen([sys.executable, "-m", "auditor", "serve", "--no-browser", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ)
        self.lines: list[str] = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"serve ended: {self.proc.stderr.read()}")
            self.lines.append(line)
            m = ADDRESS.search(line)
            if m:
                self.port, self.token = int(m[1]), m[2]
                self.url = m[0]
                self.proc.stdout.readline()   # the Ctrl-C hint
                break
        else:
            raise RuntimeError("serve printed no address")
        self.cookie = f"ecarte-audit-token-{self.port}={self.token}"

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None,
                cookie: bool = True, host: str | None = None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        h = {"Host": host or f"127.0.0.1:{self.port}"}
        if cookie:
            h["Cookie"] = self.cookie
        h.update(headers or {})
        conn.request(method, path, body=body, headers=h)
        response = conn.getresponse()
        data = response.read()
        conn.close()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, data

    def upload(self, files: list[tuple[str, bytes]], lang: str = "fr"):
        body, ctype = multipart(files, {"lang": lang})
        return self.request("POST", "/api/audit", body, {"Content-Type": ctype})

    def wait(self, run: str, timeout: float = 240) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status, _, data = self.request("GET", f"/api/runs/{run}")
            doc = json.loads(data)
            if doc["state"] in ("done", "failed"):
                assert doc["state"] == "done", doc["message"]
                return doc
            time.sleep(0.2)
        raise TimeoutError(run)

    def audit(self, files: list[tuple[str, bytes]], lang: str = "fr") -> dict:
        status, _, data = self.upload(files, lang)
        assert status == 202, data
        return self.wait(json.loads(data)["run"])

    def private_folders(self) -> list[Path]:
        return sorted(self.tmp.glob("ecarte-audit-serve-*"))

    def interrupt(self, timeout: float = 60) -> tuple[int, str, str]:
        self.proc.send_signal(signal.SIGINT)
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err

    def stop(self):
        if self.proc.poll() is None:
            self.interrupt()


def multipart(files: list[tuple[str, bytes]], fields: dict[str, str]) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    out = io.BytesIO()
    for name, value in fields.items():
        out.write(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    for filename, data in files:
        out.write(f'--{boundary}\r\nContent-Disposition: form-data; name="carnet"; filename="{filename}"\r\n'
                  f"Content-Type: application/octet-stream\r\n\r\n".encode("utf-8"))
        out.write(data + b"\r\n")
    out.write(f"--{boundary}--\r\n".encode())
    return out.getvalue(), f"multipart/form-data; boundary={boundary}"


def zip_of(members: dict[str, bytes], compression=zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        for name, data in members.items():
            zf.writestr(zipfile.ZipInfo(name, (2026, 1, 1, 0, 0, 0)), data, compress_type=compression)
    return buf.getvalue()


def csv_folder(folder: Path, prefix: str = "") -> dict[str, bytes]:
    return {prefix + p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.suffix == ".csv"}


def files_under(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))
