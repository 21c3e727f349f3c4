"""`ecarte-audit serve` over real HTTP: a real server process on 127.0.0.1,
its token and Host checks, uploads of every kind a carnet comes in, hostile
uploads, the files it serves, and a clean stop on Ctrl-C.

The page in a browser: tests/test_serve_browser.py.
"""

from __future__ import annotations

import json
import time
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from auditor.cli import main
from auditor.serve.app import REPORT_CSP
from auditor.serve.security import host_allowed
from auditor.serve.uploads import unsafe_member
from serve_helpers import Server, csv_folder, files_under, multipart, zip_of

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_carnets"
XLSX = SAMPLES / "infractions" / "numerotation-et-mises.xlsx"
CSV = SAMPLES / "infractions" / "prelevements"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("serve") / "tmp", "--max-file-mb", "1", "--jobs", "1")
    yield s
    s.stop()


def codes(server, run_doc, carnet="carnet-1") -> list[str]:
    status, _, data = server.request("GET", f"/runs/{run_doc['run']}/{carnet}/findings.json")
    assert status == 200
    return [f["code"] for f in json.loads(data)["findings"]]


def cli_codes(path: Path, tmp_path: Path) -> list[str]:
    main(["audit", str(path), "--out", str(tmp_path), "--quiet", "--format", "json", "--fail-on", "never",
          "--jobs", "1"])
    doc = json.loads(next(tmp_path.rglob("findings.json")).read_text(encoding="utf-8"))
    return [f["code"] for f in doc["findings"]]


# -- who may ask ---------------------------------------------------------------------

@pytest.mark.subprocess
def test_no_token_or_a_wrong_one_is_403(server):
    for path in ("/", "/assets/page.js", "/api/runs/0123456789abcdef", "/runs/x/carnet-1/report.html"):
        status, headers, body = server.request("GET", path, cookie=False)
        assert status == 403, path
        assert "jeton" in body.decode("utf-8")              # French first: says what to open instead
    assert server.request("GET", "/?token=wrong", cookie=False)[0] == 403
    assert server.request("GET", "/?token=", cookie=False)[0] == 403
    assert server.request("GET", "/", cookie=False,
                          headers={"Cookie": f"ecarte-audit-token-{server.port}=wrong"})[0] == 403
    # A cookie for another port's server is not this one's.
    assert server.request("GET", "/", cookie=False,
                          headers={"Cookie": f"ecarte-audit-token-1={server.token}"})[0] == 403
    body, ctype = multipart([("a.xlsx", XLSX.read_bytes())], {})
    assert server.request("POST", "/api/audit", body, {"Content-Type": ctype}, cookie=False)[0] == 403


@pytest.mark.subprocess
def test_the_token_once_then_a_cookie(server):
    status, headers, _ = server.request("GET", f"/?token={server.token}&lang=en", cookie=False)
    assert status == 303 and headers["location"] == "/?lang=en"    # the token leaves the address bar
    cookie = headers["set-cookie"]
    assert cookie.startswith(f"ecarte-audit-token-{server.port}={server.token};")
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    status, headers, body = server.request("GET", "/")
    assert status == 200 and b'<html lang="fr">' in body
    assert "script-src 'self'" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff" and headers["referrer-policy"] == "no-referrer"
    assert server.request("GET", "/", cookie=False, headers={"X-Ecarte-Token": server.token})[0] == 200


@pytest.mark.parametrize("host, allowed", [
    ("127.0.0.1", True), ("127.0.0.1:8765", True), ("localhost", True), ("LOCALHOST:1", True),
    ("evil.example", False), ("evil.example:8765", False), ("127.0.0.1.evil.example", False),
    ("localhost.evil.example", False), ("127.0.0.2", False), ("[::1]:8765", False), ("", False),
    ("127.0.0.1:", False), ("127.0.0.1:80:80", False), ("user@127.0.0.1", False), ("0.0.0.0", False),
])
def test_host_names(host, allowed):
    assert host_allowed(host) is allowed


@pytest.mark.subprocess
def test_a_foreign_host_header_is_403_even_with_the_token(server):
    for host in ("evil.example", f"evil.example:{server.port}", "127.0.0.1.nip.io", "attacker.localhost"):
        status, _, body = server.request("GET", "/", host=host)
        assert status == 403, host
        assert "127.0.0.1" in body.decode("utf-8")
        assert server.request("GET", f"/?token={server.token}", cookie=False, host=host)[0] == 403
    assert server.request("GET", "/", host=f"localhost:{server.port}")[0] == 200


@pytest.mark.subprocess
def test_a_post_from_another_origin_is_403(server):
    body, ctype = multipart([("a.xlsx", XLSX.read_bytes())], {})
    status, _, _ = server.request("POST", "/api/audit", body, {"Content-Type": ctype,
                                                              "Origin": "http://evil.example"})
    assert status == 403


@pytest.mark.subprocess
def test_listens_on_loopback_only(server):
    """The kernel's own table of listening sockets: this port, on 127.0.0.1 only."""
    tables = [Path("/proc/net/tcp"), Path("/proc/net/tcp6")]
    if not tables[0].exists():
        pytest.skip("no /proc/net/tcp on this system")
    listening = []
    for table in tables:
        if table.exists():
            for line in table.read_text().splitlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                address, port = local.split(":")
                if state == "0A" and int(port, 16) == server.port:
                    listening.append(address)
    assert listening == ["0100007F"]     # 127.0.0.1, little-endian; nothing on 0.0.0.0 or ::


# -- what it audits ---------------------------------------------------------------------

@pytest.mark.subprocess
def test_a_workbook_gives_the_same_report_as_the_command_line(server, tmp_path):
    doc = server.audit([("numérotation et mises.xlsx", XLSX.read_bytes())])
    assert doc["state"] == "done" and not doc["batch"]
    [carnet] = doc["carnets"]
    assert carnet["shown"] == "numérotation et mises.xlsx" and carnet["verdict"] == "error"
    assert codes(server, doc) == cli_codes(XLSX, tmp_path)
    status, headers, body = server.request("GET", "/" + carnet["report"])
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert headers["content-security-policy"] == REPORT_CSP     # the report keeps its policy
    assert b'<meta http-equiv="Content-Security-Policy" content="default-src \'none\';' in body
    assert 'numérotation et mises.xlsx' in body.decode("utf-8")
    status, headers, data = server.request("GET", "/" + carnet["workbook"] + "?download=1")
    assert status == 200 and data[:2] == b"PK"
    assert headers["content-disposition"].startswith("attachment;")
    # Kept in the workspace by casino, table and date; only the names the server chose are on disk.
    run_folder = server.workspace / doc["place"]
    assert (run_folder / "out" / "carnet-1").is_dir() and (run_folder / "in" / "carnet-1.xlsx").is_file()
    assert doc["place"].startswith("Casino de Forges-les-Eaux/Table 2/")
    assert not any("numérotation" in name for name in files_under(run_folder))


@pytest.mark.subprocess
def test_the_csv_files_of_a_carnet_and_a_zip_of_its_folder(server, tmp_path):
    expected = cli_codes(CSV, tmp_path)
    loose = server.audit(list(csv_folder(CSV).items()) + [("notes.txt", b"x")])
    assert [c["verdict"] for c in loose["carnets"]] == ["error"] and codes(server, loose) == expected
    assert loose["ignored"] == ["notes.txt"]
    zipped = server.audit([("prelevements.zip", zip_of(csv_folder(CSV, "prelevements/")))])
    assert len(zipped["carnets"]) == 1 and codes(server, zipped) == expected
    assert zipped["carnets"][0]["shown"] == "prelevements.zip/prelevements"


@pytest.mark.slow
@pytest.mark.subprocess
def test_several_carnets_make_a_batch_with_its_index(server):
    doc = server.audit([("a.xlsx", XLSX.read_bytes()), ("b.xlsx", (SAMPLES / "compliant" / "forges-table3.xlsx")
                                                        .read_bytes())])
    assert doc["batch"] and [c["verdict"] for c in doc["carnets"]] == ["error", "ok"]
    status, headers, body = server.request("GET", "/" + doc["index"])
    assert status == 200 and b'href="carnet-2/report.html"' in body
    assert headers["content-security-policy"] == REPORT_CSP


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_folder_of_this_machine(server):
    status, _, data = server.request("POST", "/api/folder",
                                     json.dumps({"folder": str(SAMPLES / "compliant")}).encode(),
                                     {"Content-Type": "application/json"})
    assert status == 202
    doc = server.wait(json.loads(data)["run"])
    assert doc["batch"] and len(doc["carnets"]) == 4 and {c["verdict"] for c in doc["carnets"]} == {"ok"}
    status, _, data = server.request("POST", "/api/folder", json.dumps({"folder": "/nulle/part"}).encode(),
                                     {"Content-Type": "application/json"})
    assert status == 400 and json.loads(data)["error"] == "Dossier introuvable : /nulle/part"


@pytest.mark.subprocess
def test_nothing_outside_the_run_folder_is_served(server):
    doc = server.audit([("a.xlsx", XLSX.read_bytes())])
    run = doc["run"]
    for path in (f"/runs/{run}/../../etc/passwd", f"/runs/{run}/carnet-1/..%2f..%2fin%2fcarnet-1.xlsx",
                 f"/runs/{run}/%2e%2e/in/carnet-1.xlsx", f"/runs/{run}/carnet-1/.hidden",
                 f"/runs/{run}/carnet-1", "/runs/0000000000000000/carnet-1/report.html"):
        assert server.request("GET", path)[0] == 404, path


# -- hostile uploads ---------------------------------------------------------------------

@pytest.mark.subprocess
def test_an_oversized_upload_is_refused_with_a_clear_message(server):
    before = files_under(server.tmp)
    status, _, data = server.upload([("gros.xlsx", b"PK" + b"\0" * (1024 * 1024 + 10))])
    assert status == 413
    assert json.loads(data)["error"] == "Fichier « gros.xlsx » refusé : il dépasse la limite de 1 Mo par fichier."
    assert files_under(server.tmp) == before        # nothing kept, not even in the spool


@pytest.mark.subprocess
@pytest.mark.parametrize("name", ["../evil.csv", "../../coups.csv", "/etc/coups.csv", "a/../../coups.csv",
                                  "C:/coups.csv", "..\\coups.csv"])
def test_a_zip_with_names_leaving_its_folder_is_an_ec00_01(server, name, tmp_path):
    marker = b"evil-marker-" + name.encode().hex().encode()
    members = {**csv_folder(CSV, "carnet/"), name: b"seance;coup\n1;1\n" + marker}
    doc = server.audit([("piege.zip", zip_of(members))])
    [carnet] = doc["carnets"]
    assert carnet["verdict"] == "unreadable"
    status, _, data = server.request("GET", f"/runs/{doc['run']}/carnet-1/findings.json")
    findings = json.loads(data)["findings"]
    assert [f["code"] for f in findings] == ["EC00-01"]
    assert "sortirait de son dossier" in findings[0]["message"] and name in findings[0]["message"]
    # Nothing of the archive was written, in the private folder or anywhere near it.
    for p in server.tmp.parent.rglob("*"):
        assert p.name != "evil.csv"
        if p.is_file() and p.suffix == ".csv":
            assert marker not in p.read_bytes(), p
    [private] = server.private_folders()
    assert all(p == private or p.is_relative_to(private) for p in server.tmp.rglob("*"))


@pytest.mark.subprocess
def test_a_zip_bomb_is_an_ec00_01(server):
    bomb = zip_of({"carnet/coups.csv": b"seance;coup\n" + b"0" * (60 * 1024 * 1024)})
    assert len(bomb) < 1024 * 1024
    doc = server.audit([("bombe.zip", bomb)])
    status, _, data = server.request("GET", f"/runs/{doc['run']}/carnet-1/findings.json")
    [finding] = json.loads(data)["findings"]
    assert finding["code"] == "EC00-01" and "bombe zip" in finding["message"]


@pytest.mark.subprocess
def test_a_zip_lying_about_its_sizes_is_an_ec00_01(server):
    """Declared small, inflating large: counted as it inflates, refused."""
    import struct

    data = bytearray(zip_of({"carnet/coups.csv": b"seance;coup\n" + b"1;1\n" * 500_000}))
    central = data.rindex(b"PK\x01\x02")
    struct.pack_into("<I", data, central + 24, 100)          # the central directory's uncompressed size
    doc = server.audit([("menteur.zip", bytes(data))])
    status, _, body = server.request("GET", f"/runs/{doc['run']}/carnet-1/findings.json")
    [finding] = json.loads(body)["findings"]
    assert finding["code"] == "EC00-01" and "taille ou à son CRC" in finding["message"]


@pytest.mark.subprocess
def test_a_damaged_zip_and_an_unknown_file(server):
    doc = server.audit([("abime.zip", b"PK\x03\x04 not really a zip"), ("photo.jpg", b"\xff\xd8")])
    assert doc["ignored"] == ["photo.jpg"]
    status, _, data = server.request("GET", f"/runs/{doc['run']}/carnet-1/findings.json")
    [finding] = json.loads(data)["findings"]
    assert finding["code"] == "EC00-01" and "zip lisible" in finding["message"]
    # Nothing dropped is a carnet: said at once, with the names a carnet has.
    status, _, data = server.upload([("photo.jpg", b"\xff\xd8"), ("notes.csv", b"a;b")])
    assert status == 400
    message = json.loads(data)["error"]
    assert message.startswith("Aucun carnet dans ce qui a été déposé.")
    assert "coups.csv, mises.csv" in message and ".xlsx" in message
    assert server.request("POST", "/api/audit", b"garbage", {"Content-Type": "multipart/form-data; boundary=x"}
                          )[0] == 400


@pytest.mark.parametrize("name, unsafe", [
    ("carnet/coups.csv", False), ("coups.csv", False), ("a..b/coups.csv", False), ("..coups.csv", False),
    ("../coups.csv", True), ("a/../coups.csv", True), ("/coups.csv", True), ("\\coups.csv", True),
    ("c:coups.csv", True), ("a\\..\\coups.csv", True), ("", True), ("a\0b.csv", True), ("..", True),
])
def test_unsafe_member_names(name, unsafe):
    assert unsafe_member(name) is unsafe


# -- stopping ---------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.subprocess
def test_ctrl_c_stops_cleanly_and_leaves_no_file():
    # A short TMPDIR: the batch's worker processes (default --jobs) put their
    # forkserver's Unix socket there, whose path is limited to 108 bytes.
    short = Path(tempfile.mkdtemp(prefix="ecs-"))
    try:
        _ctrl_c(short)
    finally:
        shutil.rmtree(short, ignore_errors=True)


def _ctrl_c(tmp_path: Path):
    server = Server(tmp_path / "tmp")
    doc = server.audit([("a.xlsx", XLSX.read_bytes()), ("b.zip", zip_of(csv_folder(CSV, "b/")))])
    assert doc["state"] == "done", doc["message"]
    [private] = server.private_folders()
    assert private.stat().st_mode & 0o777 == 0o700        # this user's only
    assert any(server.workspace.rglob("report.html"))      # kept: the inspector's record
    code, out, err = server.interrupt()
    assert code == 0, err
    assert "Page d'audit arrêtée ; fichiers temporaires effacés." in out
    assert "Traceback" not in err
    assert files_under(tmp_path / "tmp") == []


@pytest.mark.slow
@pytest.mark.subprocess
def test_serve_prints_its_address_in_the_users_language(tmp_path):
    english = Server(tmp_path / "tmp", env={"LANG": "en_GB.UTF-8"})
    english.stop()
    assert english.lines[0].startswith("Audit page open at: http://127.0.0.1:")
    french = Server(tmp_path / "tmp2")
    french.stop()
    assert re.match(r"Page d'audit ouverte à l'adresse : http://127\.0\.0\.1:\d+/\?token=\S{40,}$",
                    french.lines[0].strip())


def test_a_port_in_use_is_a_usage_error(tmp_path, capsys, monkeypatch):
    import socket

    monkeypatch.setenv("LANG", "fr_FR.UTF-8")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        assert main(["serve", "--no-browser", "--port", str(port)]) == 2
    assert f"impossible d'écouter sur 127.0.0.1:{port}" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.subprocess
def test_reviews_are_checked_before_anything_is_written(tmp_path):
    from auditor import reviews

    review_file = tmp_path / "reviews.jsonl"
    server = Server(tmp_path / "tmp", "--reviews", str(review_file))
    try:
        doc = server.audit([("a.xlsx", XLSX.read_bytes())])
        path = f"/api/runs/{doc['run']}/carnet-1/review"
        post = lambda body: server.request("POST", path, json.dumps(body).encode(),  # noqa: E731
                                           {"Content-Type": "application/json"})
        good = {"index": 0, "status": "confirme", "justification": "vu", "by": "X"}
        cases = [({**good, "status": "ok"}, "Choisissez un statut d'examen."),
                 ({**good, "justification": " "}, "Un examen demande une justification."),
                 ({**good, "by": ""}, "Un examen demande le nom de qui l'a décidé."),
                 ({**good, "index": 10_000}, "Requête illisible."), ({**good, "index": "0"}, "Requête illisible."),
                 ({**good, "index": True}, "Requête illisible."), ([1], "Requête illisible.")]
        for body, message in cases:
            status, _, data = post(body)
            assert (status, json.loads(data)["error"]) == (400, message), body
        assert not review_file.exists()
        assert server.request("POST", f"/api/runs/{doc['run']}/carnet-9/review", b"{}",
                              {"Content-Type": "application/json"})[0] == 404
        status, _, data = post(good)
        assert status == 200
        [entry] = reviews.load_reviews(review_file).entries
        assert entry["status"] == "confirme" and entry["carnet"] == "a.xlsx"
        # The audit's own file, in the workspace, holds it too (the files are made again from it).
        assert reviews.load_reviews(server.workspace / doc["place"] / "reviews.jsonl").entries == [entry]
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.subprocess
def test_make_serve_starts_it_and_opens_the_browser(tmp_path):
    """`make serve` from the checkout, as an inspector's helper would type it:
    the address is printed, the default browser ($BROWSER, as Python's
    webbrowser reads it) is opened on it, and Ctrl-C — SIGINT to the whole
    foreground process group, as a terminal sends it — stops everything."""
    import os
    import signal
    import subprocess

    opened = tmp_path / "opened.txt"
    recorder = tmp_path / "browser.sh"
    recorder.write_text(f'#!/bin/sh\nprintf "%s\\n" "$1" >> {opened}\n')
    recorder.chmod(0o755)
    env = {**os.environ, "BROWSER": f"{recorder} %s", "LANG": "fr_FR.UTF-8", "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen(["make", "--no-print-directory", "serve"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        address = None
        for _ in range(200):   # make may first bring .venv up to date
            line = proc.stdout.readline()
            if not line:
                break
            m = re.search(r"http://127\.0\.0\.1:\d+/\?token=\S+", line)
            if m:
                address = m[0]
                break
        assert address, proc.stderr.read() if proc.poll() is not None else "no address printed"
        for _ in range(300):
            if opened.exists() and opened.read_text().strip():
                break
            time.sleep(0.1)
        # The browser's command line holds a private file of ours, never the token.
        [uri] = opened.read_text().split()
        assert uri.startswith("file:///") and "token" not in uri
        from urllib.parse import unquote, urlparse

        redirect = Path(unquote(urlparse(uri).path))
        assert redirect.stat().st_mode & 0o777 == 0o600
        assert f'content="0;url={address}"' in redirect.read_text(encoding="utf-8")
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert "Page d'audit arrêtée" in out, err
    assert not list(tmp_path.glob("ecarte-audit-serve-*"))


# -- the visit: counts, findings across carnets, reviews ----------------------------------

@pytest.mark.slow
@pytest.mark.subprocess
def test_counts_equal_the_reports_and_the_index_and_a_finding_across_carnets_is_reviewable(server, tmp_path):
    from auditor.synth.generate import Spec, generate, write_csv_folder, write_xlsx

    # Two carnets of one casino whose tickets were generated alike: EC82-03 across carnets.
    write_xlsx(generate(Spec(seances=1, coups=6, seed=1, table=1)), tmp_path / "t1.xlsx")
    write_csv_folder(generate(Spec(seances=1, coups=6, seed=2, table=2)), tmp_path / "t2")
    doc = server.audit([("t1.xlsx", (tmp_path / "t1.xlsx").read_bytes()),
                        *csv_folder(tmp_path / "t2", "t2/").items()])
    assert doc["batch"] and len(doc["carnets"]) == 2
    index = json.loads(server.request("GET", f"/runs/{doc['run']}/summary.json")[2])
    listed = json.loads(server.request("GET", "/api/audits")[2])
    [kept] = [a for v in listed["visits"] for a in v["audits"] if a["id"] == doc["run"]]
    across = None
    for shown, row, kept_row in zip(doc["carnets"], index["carnets"], kept["carnets"]):
        findings = json.loads(server.request("GET", "/" + shown["findings"])[2])
        report = server.request("GET", "/" + shown["report"])[2].decode("utf-8")
        # The page's counts are the report's and the index's, findings across carnets included.
        assert shown["summary"]["errors"] == findings["summary"]["errors"] == row["summary"]["errors"] \
            == kept_row["errors"]
        assert shown["summary"]["warnings"] == findings["summary"]["warnings"] == row["summary"]["warnings"]
        mine = [f for f in findings["findings"] if f.get("across")]
        assert mine and all(f'data-fingerprint="{f["fingerprint"]}"' in report for f in mine)
        across = mine[0]
    path = f"/api/runs/{doc['run']}/{doc['carnets'][0]['id']}/review"
    status, _, data = server.request("POST", path, json.dumps({
        "fingerprint": across["fingerprint"], "status": "confirme", "justification": "tickets en double",
        "by": "Claire Dupont"}).encode(), {"Content-Type": "application/json"})
    assert status == 200, data
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        now = json.loads(server.request("GET", f"/api/runs/{doc['run']}")[2])
        if now["version"] > doc["version"] and not now["rendering"]:
            break
        time.sleep(0.2)
    for shown in doc["carnets"]:   # the one decision reaches every carnet the finding involves
        findings = json.loads(server.request("GET", "/" + shown["findings"])[2])
        [f] = [f for f in findings["findings"] if f["fingerprint"] == across["fingerprint"]]
        assert f["review"]["justification"] == "tickets en double"
    status, _, data = server.request("POST", path, json.dumps({
        "fingerprint": "0" * 20, "status": "confirme", "justification": "x", "by": "y"}).encode(),
        {"Content-Type": "application/json"})
    assert (status, json.loads(data)["error"]) == (400, "Requête illisible.")


@pytest.mark.subprocess
def test_an_audit_kept_in_the_workspace_survives_the_server(tmp_path):
    """A second server on the same workspace lists the first one's audit and serves its files."""
    first = Server(tmp_path / "tmp1")
    try:
        doc = first.audit([("a.xlsx", XLSX.read_bytes())])
    finally:
        first.stop()
    second = Server(tmp_path / "tmp2", "--workspace", str(first.workspace))
    try:
        listed = json.loads(second.request("GET", "/api/audits")[2])
        assert [a["id"] for v in listed["visits"] for a in v["audits"]] == [doc["run"]]
        again = json.loads(second.request("GET", f"/api/runs/{doc['run']}")[2])
        assert again["state"] == "done" and again["place"] == doc["place"]
        status, _, body = second.request("GET", "/" + again["carnets"][0]["report"])
        assert status == 200 and b"a.xlsx" in body
        status, _, body = second.request("GET", f"/runs/{doc['run']}/carnet-1/cell?table=coups&row=3&column=")
        assert status == 200
    finally:
        second.stop()


@pytest.mark.slow
@pytest.mark.subprocess
def test_the_page_makes_a_signed_procès_verbal_with_its_settings(tmp_path):
    """Settings filled on the page (a certificate and its password, typed
    there), a carnet dropped: its procès-verbal names the inspector and the
    place, is signed, and `verify` finds it whole; the password is in no file."""
    pytest.importorskip("pyhanko")
    from auditor.verify import verify
    from test_pv import PASSWORD, make_p12

    p12 = make_p12(tmp_path / "test.p12")
    server = Server(tmp_path / "tmp")
    try:
        status, _, data = server.request("POST", "/api/settings", json.dumps({
            "inspector": "Claire Dupont", "grade": "Inspectrice des jeux", "place": "Forges-les-Eaux",
            "certificate": str(p12), "password": "mauvais"}).encode(), {"Content-Type": "application/json"})
        assert status == 400 and "mot de passe" in json.loads(data)["error"].lower()
        status, _, data = server.request("POST", "/api/settings", json.dumps({
            "inspector": "Claire Dupont", "grade": "Inspectrice des jeux", "place": "Forges-les-Eaux",
            "certificate": str(p12), "password": PASSWORD}).encode(), {"Content-Type": "application/json"})
        assert status == 200 and json.loads(data)["signing"] is True
        doc = server.audit([("a.xlsx", XLSX.read_bytes())])
        pv = server.workspace / doc["place"] / "out" / "carnet-1" / "proces-verbal.pdf"
        verdict = verify(pv, [server.workspace / doc["place"] / "in" / "carnet-1.xlsx"])
        assert verdict.ok, verdict.lines
        said = {message.key for _, message in verdict.lines}
        assert {"verify.signature_untrusted", "verify.attachment_intact", "verify.source_same"} <= said
        import io

        import pypdf

        text = " ".join(p.extract_text() for p in pypdf.PdfReader(io.BytesIO(pv.read_bytes())).pages)
        assert "Claire Dupont" in text and "Forges-les-Eaux" in text
        settings = server.config / "ecarte-audit" / "settings.json"
        assert PASSWORD not in settings.read_text(encoding="utf-8")
        assert not any(PASSWORD.encode() in p.read_bytes() for p in server.workspace.rglob("*") if p.is_file())
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_second_visit_of_the_table_is_compared_with_the_first(tmp_path):
    """The same table audited again (the carnet renamed, one finding decided
    at the first visit): its baseline is the first audit, the page and the PV
    say what changed, the decision is carried; another table has no baseline."""
    import io

    import pypdf

    server = Server(tmp_path / "tmp")
    try:
        first = server.audit([("janvier.xlsx", XLSX.read_bytes())])
        findings = json.loads(server.request("GET", "/" + first["carnets"][0]["findings"])[2])["findings"]
        decided = findings[0]
        status, _, _ = server.request("POST", f"/api/runs/{first['run']}/carnet-1/review", json.dumps({
            "fingerprint": decided["fingerprint"], "status": "justifie", "justification": "corrigé sur la fiche",
            "by": "Claire Dupont"}).encode(), {"Content-Type": "application/json"})
        assert status == 200
        second = server.audit([("fevrier.xlsx", XLSX.read_bytes())])
        [carnet] = second["carnets"]
        assert carnet["previous"]["audit"] == first["run"]
        assert carnet["previous"]["created_text"].endswith("(heure de Paris)")
        assert carnet["baseline_counts"] == {"new": 0, "updated": 0, "unchanged": len(findings), "absent": 0}
        doc = json.loads(server.request("GET", "/" + carnet["findings"])[2])
        [again] = [f for f in doc["findings"] if f["fingerprint"] == decided["fingerprint"]]
        assert again["baseline_state"] == "unchanged" and again["review"]["justification"] == "corrigé sur la fiche"
        pv = server.request("GET", "/" + carnet["pv"])[2]
        text = " ".join(" ".join(p.extract_text() for p in pypdf.PdfReader(io.BytesIO(pv)).pages).split())
        assert "Depuis le contrôle précédent" in text and "corrigé sur la fiche" in text
        other = server.audit([("autre.xlsx", (SAMPLES / "compliant" / "forges-table3.xlsx").read_bytes())])
        assert other["carnets"][0]["previous"] is None and other["carnets"][0]["baseline_counts"] is None
        listed = json.loads(server.request("GET", "/api/audits")[2])
        assert [len(v["audits"]) for v in listed["visits"]] == [3] and listed["visits"][0]["today"]
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_folder_is_audited_from_its_snapshot_and_an_oversized_file_is_not_copied(tmp_path):
    folder = tmp_path / "carnets"
    folder.mkdir()
    shutil.copy(XLSX, folder / "a.xlsx")
    (folder / "gros.xlsx").write_bytes(b"PK" + b"\0" * (2 * 1024 * 1024))
    server = Server(tmp_path / "tmp", "--max-file-mb", "1")
    try:
        status, _, data = server.request("POST", "/api/folder", json.dumps({"folder": str(folder)}).encode(),
                                         {"Content-Type": "application/json"})
        assert status == 202
        doc = server.wait(json.loads(data)["run"])
        verdicts = {c["shown"].rsplit("/", 1)[-1]: c["verdict"] for c in doc["carnets"]}
        assert verdicts == {"a.xlsx": "error", "gros.xlsx": "unreadable"}
        kept = server.workspace / doc["place"] / "in"
        assert [p.relative_to(kept).as_posix() for p in kept.rglob("*") if p.is_file()] == ["a.xlsx/a.xlsx"]   # not the refused one
        # The live file changed afterwards: the cell view still shows what was audited.
        (folder / "a.xlsx").write_bytes(b"changed")
        cid = next(c["id"] for c in doc["carnets"] if c["shown"].endswith("a.xlsx"))
        status, _, body = server.request("GET", f"/runs/{doc['run']}/{cid}/cell?table=coups&row=3&column=")
        assert status == 200 and b'id="cell-rows"' in body
    finally:
        server.stop()


@pytest.mark.subprocess
def test_by_default_the_visits_are_kept_in_the_users_documents(tmp_path):
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    (home / ".config" / "user-dirs.dirs").write_text('XDG_DOCUMENTS_DIR="$HOME/Mes documents"\n', encoding="utf-8")
    server = Server(tmp_path / "tmp", env={"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
                                           "NO_WORKSPACE": "1"})
    try:
        settings = json.loads(server.request("GET", "/api/settings")[2])
        assert settings["workspace"] == str(home / "Mes documents" / "Contrôles écarté")
        doc = server.audit([("a.xlsx", XLSX.read_bytes())])
        assert (home / "Mes documents" / "Contrôles écarté" / doc["place"] / "out" / "carnet-1" / "report.html").is_file()
    finally:
        server.stop()
