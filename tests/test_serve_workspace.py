"""The local page's visit: the workspace (audits kept by casino, table and
date; the previous audit of a table), the settings filled once, the words an
inspector uses (sizes, local time, the carnet's column names, a drop with no
carnet), the cell view's snapshot, a folder that cannot be read."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from auditor.batch.plan import CarnetJob
from auditor.limits import MB
from auditor.serve.app import _not_a_carnet, size_words
from auditor.serve.cells import cell_view
from auditor.serve.runs import no_carnet_text, when_text
from auditor.serve.settings import PageSettings
from auditor.serve.workspace import (AuditRecord, CarnetRecord, Settings, Workspace, default_workspace,
                                     documents_folder, folder_name)

ROOT = Path(__file__).resolve().parent.parent
XLSX = ROOT / "sample_carnets" / "infractions" / "numerotation-et-mises.xlsx"
LABELS = {"unknown_casino": "Casino non identifié", "unknown_table": "Table non identifiée", "table": "Table {table}",
          "several_tables": "Plusieurs tables", "several_casinos": "Plusieurs casinos"}


def test_sizes_in_the_inspectors_words():
    assert size_words(200 * MB, "fr") == "200 Mo"
    assert size_words(200 * MB, "en") == "200 MB"
    assert size_words(MB + MB // 2, "fr") == "1,5 Mo"
    assert size_words(36 * 1024, "fr") == "36 ko"


def test_local_time_is_pariss_and_said_so():
    assert when_text("2026-01-01T23:30:00Z", "fr") == "02/01/2026 à 00:30 (heure de Paris)"
    assert when_text("2026-07-01T10:00:00Z", "en") == "2026-07-01 at 12:00 (Paris time)"


def test_a_drop_with_no_carnet_names_what_is_expected():
    text = no_carnet_text("fr")
    assert text.startswith("Aucun carnet dans ce qui a été déposé.")
    assert "coups.csv, mises.csv, " in text and ".xlsx" in text
    assert _not_a_carnet([("photo.jpg", b""), ("notes.csv", b"")]) == ["photo.jpg", "notes.csv"]
    assert _not_a_carnet([("photo.jpg", b""), ("Coups.csv", b"")]) == []
    assert _not_a_carnet([("a.zip", b"")]) == []


def test_documents_folder_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.delenv("XDG_DOCUMENTS_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert documents_folder() == tmp_path / "Documents"
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "user-dirs.dirs").write_text('XDG_DOCUMENTS_DIR="$HOME/Mes documents"\n', encoding="utf-8")
    assert documents_folder() == tmp_path / "Mes documents"
    assert default_workspace() == tmp_path / "Mes documents" / "Contrôles écarté"


def test_folder_names_every_system_accepts():
    assert folder_name("Casino de Forges-les-Eaux", "x") == "Casino de Forges-les-Eaux"
    assert folder_name("Casino: Nice/Ruhl?", "x") == "Casino Nice Ruhl"
    assert folder_name("..", "x") == "x" and folder_name("CON", "x") == "x" and folder_name("", "x") == "x"


def _record(audit_id: str, created: str, casino: str, table: int, verdict: str = "ok") -> AuditRecord:
    return AuditRecord(audit_id, created, "fr", carnets=[CarnetRecord("carnet-1", "a.xlsx", "in/carnet-1.xlsx",
                                                                      casino, table, verdict)])


def test_audits_kept_by_casino_table_and_date_and_the_previous_one(tmp_path):
    ws = Workspace(tmp_path / "ws")
    for audit_id, created, table in (("a" * 16, "2026-01-05T09:00:00Z", 2), ("b" * 16, "2026-02-05T09:00:00Z", 2),
                                     ("c" * 16, "2026-02-05T10:00:00Z", 3)):
        pending = ws.pending(audit_id)
        (pending / "out").mkdir(parents=True)
        ws.settle(pending, _record(audit_id, created, "Casino de Nice", table), LABELS)
    assert sorted(p.relative_to(ws.folder).as_posix() for p, _ in ws.audits()) == [
        "Casino de Nice/Table 2/2026-01-05 10h00m00", "Casino de Nice/Table 2/2026-02-05 10h00m00",
        "Casino de Nice/Table 3/2026-02-05 11h00m00"]            # Paris's time in the names
    folder, record, carnet = ws.previous("Casino de Nice", 2, "2026-03-01T00:00:00Z")
    assert record.id == "b" * 16 and carnet.id == "carnet-1"
    assert ws.previous("Casino de Nice", 2, "2026-02-05T09:00:00Z", exclude="b" * 16)[1].id == "a" * 16
    assert ws.previous("Casino de Nice", 4, "2026-03-01T00:00:00Z") is None
    assert ws.previous(None, 2, "2026-03-01T00:00:00Z") is None
    # A damaged audit.json is left out, never an error.
    (folder / "audit.json").write_text("{", encoding="utf-8")
    assert len(ws.audits()) == 2


def test_an_audit_of_several_tables(tmp_path):
    ws = Workspace(tmp_path)
    record = AuditRecord("d" * 16, "2026-01-05T09:00:00Z", "fr", carnets=[
        CarnetRecord("carnet-1", "a", None, "Casino A", 1), CarnetRecord("carnet-2", "b", None, "Casino A", 2)])
    assert ws.place(record, LABELS).relative_to(tmp_path).parts[:2] == ("Casino A", "Plusieurs tables")
    record.carnets.append(CarnetRecord("carnet-3", "c", None, "Casino B", 1))
    assert ws.place(record, LABELS).relative_to(tmp_path).parts[:2] == ("Plusieurs casinos", "Plusieurs tables")
    unreadable = AuditRecord("e" * 16, "2026-01-05T09:00:00Z", "fr", carnets=[CarnetRecord("carnet-1", "a", None)])
    assert ws.place(unreadable, LABELS).relative_to(tmp_path).parts[:2] == ("Casino non identifié",
                                                                           "Table non identifiée")


class _Answer:
    def __init__(self, status: int, body: bytes):
        self.status_code, self.body = status, body

    def json(self):
        return json.loads(self.body)


class _Client:
    """The application called as the server calls it (ASGI), with the token's cookie and a loopback Host."""

    def __init__(self, app):
        self.app = app

    def request(self, method: str, path: str, body: dict | None = None) -> _Answer:
        import asyncio

        data = json.dumps(body).encode() if body is not None else b""
        headers = [(b"host", b"127.0.0.1:8123"), (b"cookie", b"ecarte-audit-token-8123=jeton"),
                   (b"content-type", b"application/json"), (b"origin", b"http://127.0.0.1:8123")]
        scope = {"type": "http", "http_version": "1.1", "method": method, "path": path, "raw_path": path.encode(),
                 "query_string": b"", "headers": headers, "scheme": "http", "server": ("127.0.0.1", 8123),
                 "client": ("127.0.0.1", 5000), "root_path": ""}
        sent, got = [], {"status": 0}

        async def receive():
            if sent:
                return {"type": "http.disconnect"}
            sent.append(1)
            return {"type": "http.request", "body": data, "more_body": False}

        chunks = []

        async def send(message):
            if message["type"] == "http.response.start":
                got["status"] = message["status"]
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        asyncio.run(self.app(scope, receive, send))
        return _Answer(got["status"], b"".join(chunks))

    def get(self, path):
        return self.request("GET", path)

    def post(self, path, json=None):
        return self.request("POST", path, json)


def _client(tmp_path, monkeypatch):
    from auditor.serve.app import create_app

    root = tmp_path / "private"
    root.mkdir()
    return _Client(create_app(root, "jeton", 8123, workspace=tmp_path / "ws",
                              settings_file=tmp_path / "settings.json"))


def test_an_unreadable_folder_or_workspace_is_a_message_never_a_500(tmp_path, monkeypatch):
    import auditor.batch.plan
    import auditor.serve.workspace

    client = _client(tmp_path, monkeypatch)
    folder = tmp_path / "carnets"
    folder.mkdir()

    def refused(paths):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(sys.modules["auditor.batch.plan"], "plan", refused)
    answer = client.post("/api/folder", json={"folder": str(folder)})
    assert answer.status_code == 400
    assert answer.json()["error"] == f"Le dossier {folder} ne peut pas être lu (droits d'accès ?)."
    monkeypatch.setattr(auditor.serve.workspace.Workspace, "audits",
                        lambda self: (_ for _ in ()).throw(PermissionError(13, "Permission denied")))
    answer = client.get("/api/audits")
    assert answer.status_code == 400
    assert answer.json()["error"].startswith(f"Le dossier des contrôles {tmp_path / 'ws'} ne peut pas être utilisé")


def test_the_folder_walk_runs_off_the_request_loop(tmp_path, monkeypatch):
    import threading

    import auditor.batch.plan

    client = _client(tmp_path, monkeypatch)
    seen = []

    def plan(paths):
        seen.append(threading.current_thread().name)
        return []

    monkeypatch.setattr(sys.modules["auditor.batch.plan"], "plan", plan)
    answer = client.post("/api/folder", json={"folder": str(tmp_path)})
    # asyncio.run's loop runs in this (the main) thread: the walk ran in a worker thread.
    assert answer.status_code == 400 and seen and seen[0] != threading.main_thread().name


def test_settings_through_the_page(tmp_path, monkeypatch):
    client = _client(tmp_path, monkeypatch)
    assert client.get("/api/settings").json()["workspace"] == str(tmp_path / "ws")
    answer = client.post("/api/settings", json={"inspector": "Claire Dupont", "place": "Nice"})
    assert answer.status_code == 200 and answer.json()["filled"]
    assert json.loads((tmp_path / "settings.json").read_text(encoding="utf-8"))["inspector"] == "Claire Dupont"


def test_settings_filled_once_kept_in_the_users_configuration(tmp_path):
    path = tmp_path / "cfg" / "settings.json"
    page = PageSettings(path, None, "fr")
    assert not page.as_json()["filled"]
    page.update({"inspector": "  Claire   Dupont ", "grade": "Inspectrice", "place": "Nice\n",
                 "workspace": str(tmp_path / "visites")})
    again = PageSettings(path, None, "fr")
    assert again.values == Settings(str(tmp_path / "visites"), "Claire Dupont", "Inspectrice", "Nice", "")
    assert again.workspace().folder == tmp_path / "visites"
    visit, signer = again.pv()
    assert (visit.inspector, visit.grade, visit.place, signer) == ("Claire Dupont", "Inspectrice", "Nice", None)
    # `serve --workspace DIR` holds for the session, whatever the file says.
    assert PageSettings(path, tmp_path / "ailleurs", "fr").workspace().folder == tmp_path / "ailleurs"
    path.write_text("[1, 2]", encoding="utf-8")
    assert PageSettings(path, None, "fr").values == Settings()      # a damaged file: asked again
    assert "password" not in json.dumps(again.as_json())


def test_a_certificate_password_typed_on_the_page_signs_and_is_never_written(tmp_path):
    pytest.importorskip("pyhanko")
    from test_pv import PASSWORD, make_p12

    cert = make_p12(tmp_path / "test.p12")
    path = tmp_path / "settings.json"
    page = PageSettings(path, None, "fr")
    from auditor.errors import UsageError

    with pytest.raises(UsageError):
        page.update({"inspector": "X", "place": "Y", "certificate": str(cert), "password": "wrong"})
    page.update({"inspector": "X", "place": "Y", "certificate": str(cert), "password": PASSWORD})
    assert page.as_json()["signing"] is True and page.pv()[1] is not None
    assert PASSWORD not in path.read_text(encoding="utf-8")


def test_the_cell_view_shows_the_audited_snapshot_and_the_carnets_column_names(tmp_path):
    snapshot = tmp_path / "audit" / "in" / "carnet-1.xlsx"
    snapshot.parent.mkdir(parents=True)
    shutil.copy(XLSX, snapshot)
    job = CarnetJob(snapshot, "numerotation-et-mises.xlsx", "carnet-1")
    from auditor.read import read_carnet

    raw = read_carnet(snapshot)
    table = "coups"
    written = [s.text for s in raw.tables[table].source_columns if s.column]
    first = next(c for c in raw.tables[table].source_columns if c.column)
    view = cell_view(job, table, "3", first.column)
    assert view["column"] == first.text and [here for _, here in view["columns"]].count(True) == 1
    assert view["found"] and [name for name, _ in view["columns"]][:len(written)] == written[:len(view["columns"])]
    # The same path written again (a corrected carnet audited again): read again, never the old reading.
    before = [r["cells"] for r in view["rows"]]
    from openpyxl import load_workbook

    wb = load_workbook(snapshot)
    sheet = next(ws for ws in wb.worksheets if ws.title.lower().startswith("coups"))
    sheet.cell(3, 1).value = "999"
    wb.save(snapshot)
    after = [r["cells"] for r in cell_view(job, table, "3", "")["rows"]]
    assert after != before


def test_the_previous_carnet_of_a_table_is_the_same_carnet_else_the_latest(tmp_path):
    ws = Workspace(tmp_path / "ws")
    record = AuditRecord("f" * 16, "2026-01-05T09:00:00Z", "fr", batch=True, carnets=[
        CarnetRecord("carnet-1", "janvier.xlsx", None, "Casino A", 1, "ok", start="2026-01-01"),
        CarnetRecord("carnet-2", "fevrier.xlsx", None, "Casino A", 1, "ok", start="2026-02-01"),
        CarnetRecord("carnet-3", "mars.xlsx", None, "Casino A", 1, "ok", start="2026-03-01")])
    pending = ws.pending(record.id)
    pending.mkdir(parents=True)
    ws.settle(pending, record, LABELS)
    pick = lambda start: ws.previous("Casino A", 1, "2026-06-01T00:00:00Z", start=start)[2].id  # noqa: E731
    assert pick("2026-02-01") == "carnet-2"      # the same carnet audited again
    assert pick("2026-04-01") == "carnet-3"      # the next carnet of the table: the latest before it
    assert pick(None) == "carnet-3"


def test_half_made_audits_of_a_stopped_server_are_cleared_once_stale(tmp_path):
    ws = Workspace(tmp_path)
    old, new = ws.pending("1" * 16), ws.pending("2" * 16)
    for folder in (old, new):
        (folder / "in").mkdir(parents=True)
    os.utime(old, (0, 0))
    ws.clear_pending()
    assert not old.exists() and new.exists()     # another server's audit under way is left alone


def test_the_cell_view_names_columns_as_the_carnets_header_writes_them(tmp_path):
    snapshot = tmp_path / "in" / "carnet-1"
    shutil.copytree(ROOT / "sample_carnets" / "infractions" / "prelevements", snapshot)
    coups = snapshot / "coups.csv"
    lines = coups.read_text(encoding="utf-8").split("\n")
    lines[0] = lines[0].replace("seance,coup,", "Séance,N° Coup,", 1)
    coups.write_text("\n".join(lines), encoding="utf-8")
    view = cell_view(CarnetJob(snapshot, "prelevements", "carnet-1"), "coups", "2", "coup")
    assert [name for name, _ in view["columns"]][:3] == ["Séance", "N° Coup", "type"]
    assert view["column"] == "N° Coup" and [here for _, here in view["columns"]][:3] == [False, True, False]


def test_a_workspace_that_cannot_be_written_is_said_in_words(tmp_path, monkeypatch):
    from auditor.serve.runs import Runs

    ws = Workspace(tmp_path / "ws")

    def refuse(self, pending, record, labels):
        raise PermissionError(13, "Permission denied", str(self.folder / "Casino"))

    monkeypatch.setattr(Workspace, "settle", refuse)
    (tmp_path / "private").mkdir()
    runs = Runs(tmp_path / "private", workspace=ws)
    run = runs.folder(XLSX, "fr")
    runs._pool.submit(lambda: None).result(timeout=240)   # the one worker thread: the audit is over
    runs.close()
    assert run.state == "failed"
    assert run.message.startswith(f"Le dossier des contrôles {ws.folder} ne peut pas être utilisé : ")
    assert "Error" not in run.message
