"""Nothing left behind, nothing live: the page's security points, each with
a real `ecarte-audit serve` process where it matters.

- the private folder removed on SIGTERM, SIGHUP and Ctrl-C, after an upload;
  the folders of servers killed outright (SIGKILL) removed at the next start;
- an upload streamed to disk: the server's resident memory stays bounded
  whatever the size of the upload;
- the private folder bounded: the audits' cache past the room given evicted,
  least recently used first, never the workspace;
- the browser opened through a private redirect file, never a token on its
  command line;
- reports served sandboxed: no report script runs on the API's origin.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from auditor.serve import private
from serve_helpers import Server, csv_folder, files_under, multipart, zip_of
from test_browser import browser  # noqa: F401  (the fixture: Debian's Chromium, no download)

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_carnets"
XLSX = SAMPLES / "infractions" / "numerotation-et-mises.xlsx"
CSV = SAMPLES / "infractions" / "prelevements"
POSIX = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _signalled(tmp_path: Path, sig: int):
    server = Server(tmp_path / "tmp", "--jobs", "1")
    doc = server.audit([("a.xlsx", XLSX.read_bytes()), ("b.zip", zip_of(csv_folder(CSV, "b/")))])
    assert doc["state"] == "done", doc["message"]
    [folder] = server.private_folders()
    assert (folder / private.PID_FILE).read_text().split() == [str(server.proc.pid), "locked"]
    # What the private folder holds: the audits' cache, each carnet's audit
    # pickled with the casino's data, and an upload being received, in the spool.
    casino = doc["carnets"][0]["casino"]
    pickles = sorted(folder.glob("cache/*/*/carnet-audit.pickle"))
    assert len(pickles) == 2 and any(casino.encode() in p.read_bytes() for p in pickles)
    receiving = _upload_under_way(server, folder / "spool")
    # What the workspace holds: the audit, as the inspector keeps it.
    place = server.workspace / doc["place"]
    kept = files_under(place)
    assert {"in/carnet-1.xlsx", "in/carnet-2/coups.csv", "out/carnet-1/report.html", "audit.json"} <= set(kept)
    server.proc.send_signal(sig)
    out, err = server.proc.communicate(timeout=60)
    receiving.close()
    assert server.proc.returncode == -sig, err          # ended by its signal, as `kill` expects
    assert "Traceback" not in err
    assert "Page d'audit arrêtée ; fichiers temporaires effacés." in out
    assert not folder.exists()
    assert files_under(tmp_path / "tmp") == []
    assert files_under(place) == kept                   # the workspace keeps what the inspector saved


def _upload_under_way(server: Server, spool: Path):
    """A connection sending an upload of which the server has received a
    part (on disk in `spool`) and waits for the rest."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    head = (b"--b\r\nContent-Disposition: form-data; name=\"carnet\"; filename=\"c.xlsx\"\r\n"
            b"Content-Type: application/octet-stream\r\n\r\n")
    conn.putrequest("POST", "/api/audit", skip_host=True)
    for k, v in {"Host": f"127.0.0.1:{server.port}", "Cookie": server.cookie, "Content-Length": str(10 ** 7),
                 "Content-Type": "multipart/form-data; boundary=b"}.items():
        conn.putheader(k, v)
    conn.endheaders()
    conn.send(head + XLSX.read_bytes())
    deadline = time.monotonic() + 30
    while not [p for p in spool.iterdir() if p.stat().st_size > 0]:
        assert time.monotonic() < deadline, "the upload never reached the spool"
        time.sleep(0.05)
    return conn


@POSIX
@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_signal_removes_the_private_folder(tmp_path, name):
    _signalled(tmp_path, getattr(signal, name))


@POSIX
@pytest.mark.slow
@pytest.mark.subprocess
def test_a_signal_while_an_upload_is_audited_still_cleans_up(tmp_path):
    """SIGTERM in the middle of an audit: the audit stops, the folder goes."""
    server = Server(tmp_path / "tmp", "--jobs", "1")
    status, _, data = server.upload([(f"c{i}.xlsx", XLSX.read_bytes()) for i in range(6)])
    assert status == 202
    [folder] = server.private_folders()
    server.proc.send_signal(signal.SIGTERM)
    out, err = server.proc.communicate(timeout=120)
    assert server.proc.returncode == -signal.SIGTERM, err
    assert not folder.exists() and files_under(tmp_path / "tmp") == []


@POSIX
@pytest.mark.slow
@pytest.mark.subprocess
def test_the_folder_of_a_killed_server_is_removed_at_the_next_start(tmp_path):
    first = Server(tmp_path / "tmp", "--jobs", "1")
    doc = first.audit([("a.xlsx", XLSX.read_bytes())])
    [left] = first.private_folders()
    first.proc.kill()                                   # SIGKILL: no clean-up possible
    first.proc.communicate(timeout=30)
    [pickle] = left.glob("cache/*/*/carnet-audit.pickle")
    assert doc["carnets"][0]["casino"].encode() in pickle.read_bytes()   # the casino's data, left behind
    running = Server(tmp_path / "tmp", "--jobs", "1")    # removes the dead one's
    try:
        assert not left.exists()
        [kept] = running.private_folders()
        # The workspace keeps the audit the killed server made: the new one opens it.
        assert (first.workspace / doc["place"] / "in" / "carnet-1.xlsx").is_file()
        assert running.request("GET", f"/api/runs/{doc['run']}")[0] == 200
        assert running.request("GET", "/" + doc["carnets"][0]["report"])[0] == 200
        third = Server(tmp_path / "tmp", "--jobs", "1")  # a running server's folder is not touched
        try:
            assert kept.exists() and len(third.private_folders()) == 2
        finally:
            third.stop()
    finally:
        running.stop()
    assert files_under(tmp_path / "tmp") == []


def test_the_windows_console_close_waits_for_the_clean_up(tmp_path):
    """The handler SetConsoleCtrlHandler gets (called here as Windows would,
    from another thread): a close stops the server and waits for its
    clean-up; if the clean-up does not come in time, it removes the folder
    itself; Ctrl-C and Ctrl-Break are left to Python."""
    root = tmp_path / "private"
    root.mkdir()
    (root / "carnet.xlsx").write_bytes(b"x")
    stopped, cleaned = [], threading.Event()

    def stop():
        stopped.append(True)
        threading.Timer(0.05, lambda: (private.remove(root), cleaned.set())).start()

    handler = private.console_handler(stop, cleaned, root)
    assert handler(0) is False and handler(1) is False and not stopped
    assert handler(private.CTRL_CLOSE_EVENT) is True
    assert stopped and cleaned.is_set() and not root.exists()
    root.mkdir()
    late = private.console_handler(lambda: None, threading.Event(), root)
    private.CLOSE_WAIT, saved = 0.01, private.CLOSE_WAIT
    try:
        assert late(private.CTRL_LOGOFF_EVENT) is True
    finally:
        private.CLOSE_WAIT = saved
    assert not root.exists()


# -- an upload streamed to disk ---------------------------------------------------------------

def _peak_resident_mb(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def _streamed_upload(server: Server, files: list[tuple[str, int]], small: list[tuple[str, bytes]]):
    """POST /api/audit with `files` (name, size) of generated bytes, sent
    chunk by chunk (the test holds none of them whole), and `small` as they are."""
    import http.client
    import uuid

    boundary = uuid.uuid4().hex
    heads = [f'--{boundary}\r\nContent-Disposition: form-data; name="carnet"; filename="{name}"\r\n'
             f"Content-Type: application/octet-stream\r\n\r\n".encode() for name, _ in files]
    body_small, _ = multipart(small, {"lang": "fr"})
    body_small = body_small.replace(body_small.split(b"\r\n", 1)[0], b"--" + boundary.encode())
    length = sum(len(h) + size + 2 for h, (_, size) in zip(heads, files)) + len(body_small)
    block = bytes(range(256)) * 4096    # 1 MB

    def body():
        for head, (_, size) in zip(heads, files):
            yield head
            for start in range(0, size, len(block)):
                yield block[:min(len(block), size - start)]
            yield b"\r\n"
        yield body_small

    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=600)
    conn.putrequest("POST", "/api/audit", skip_host=True)
    for k, v in {"Host": f"127.0.0.1:{server.port}", "Cookie": server.cookie, "Content-Length": str(length),
                 "Content-Type": f"multipart/form-data; boundary={boundary}"}.items():
        conn.putheader(k, v)
    conn.endheaders()
    for piece in body():
        conn.send(piece)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
@pytest.mark.slow
@pytest.mark.subprocess
def test_a_large_upload_is_streamed_to_disk_never_held_in_memory(tmp_path):
    """Three files of 120 MB and a carnet in one upload: the server's peak
    resident memory grows by far less than one of them (before: the upload
    was read whole, 936 MB resident for five 150 MB files)."""
    import json

    server = Server(tmp_path / "tmp", "--jobs", "1", "--max-file-mb", "150")
    try:
        carnet = [("a.xlsx", XLSX.read_bytes())]
        server.audit(carnet)                            # the audit's own memory, taken once
        before = _peak_resident_mb(server.proc.pid)
        size = 120 * 1024 * 1024
        status, data = _streamed_upload(server, [(f"photo-{i}.bin", size) for i in range(3)], carnet)
        assert status == 202, data
        doc = server.wait(json.loads(data)["run"])
        assert [c["verdict"] for c in doc["carnets"]] == ["error"]
        assert sorted(doc["ignored"]) == ["photo-0.bin", "photo-1.bin", "photo-2.bin"]
        grown = _peak_resident_mb(server.proc.pid) - before
        assert grown < 48, f"peak resident memory grew by {grown:.0f} MB for a 360 MB upload"
        [folder] = server.private_folders()
        assert not [p for p in folder.rglob("*") if p.is_file() and p.stat().st_size >= size]   # not kept
    finally:
        server.stop()


@pytest.mark.slow
def test_a_zip_is_inflated_member_by_member_to_disk(tmp_path):
    """Staging a 32 MB CSV table zipped: Python's allocations stay a few MB
    (tracemalloc); the member is on disk, whole and exact."""
    import tracemalloc
    import zipfile

    from auditor.limits import DEFAULT_LIMITS
    from auditor.read import table_names
    from auditor.serve.uploads import stage

    import random

    rng = random.Random(5)
    # Rows that differ as a real carnet's do (a zip of one row repeated would be a bomb).
    rows = b"".join(f"{s};{c};simple;{rng.randrange(1, 40)};{rng.randrange(1, 40)};{rng.randrange(100, 99999)},00;"
                    f"{rng.randrange(100, 99999)},00;;;;a;{rng.randrange(1, 999)},{rng.randrange(100):02d};0,00\n"
                    .encode() for s in range(1, 41) for c in range(1, 501))
    size = 32 * 1024 * 1024
    archive = tmp_path / "upload-1"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("carnet/coups.csv", "w") as member:
            member.write(b"seance;coup;type;joueur_a;joueur_b;total_a;total_b;chouette;en_dehors;evenement;"
                         b"gagnant;prelevement;prelevement_apres\n")
            for i in range(size // len(rows)):
                member.write(rows)
    assert archive.stat().st_size < DEFAULT_LIMITS.max_zip_ratio * size
    folder = tmp_path / "in"
    folder.mkdir()
    tracemalloc.start()
    try:
        staging = stage([("carnet.zip", archive)], folder, table_names(), DEFAULT_LIMITS)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    [carnet] = staging.carnets
    assert carnet.problem is None and (carnet.path / "coups.csv").stat().st_size > size - len(rows)
    assert peak < 8 * 1024 * 1024, f"{peak / 1024 / 1024:.1f} MB allocated"
    assert not archive.exists()                          # the upload consumed
    assert sorted(p.name for p in folder.iterdir()) == ["carnet-1"]   # no scratch left


# -- the private folder bounded ------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.subprocess
def test_the_audits_cache_is_bounded_and_the_workspace_kept(tmp_path):
    """--keep-mb 1: three uploads of seven carnets each would leave more in
    the private folder's audits' cache than the room given; the least
    recently used entries go (the last upload's all stay, then the
    second's, then the first's, as the room holds them), the folder stays
    within the room, and every audit is still in the workspace, opened and
    decided on from the page (a decision on an audit whose cache entries
    went audits its carnets again from the workspace's copy)."""
    import json

    from auditor.limits import MB

    server = Server(tmp_path / "tmp", "--jobs", "1", "--keep-mb", "1")
    try:
        docs, started = [], []
        for batch in "abc":
            started.append(time.time())
            docs.append(server.audit([(f"{batch}{i}.xlsx", XLSX.read_bytes()) for i in range(1, 8)]))
        [folder] = server.private_folders()
        entries = list((folder / "cache").glob("*/*"))
        one = private.size_of(entries[0])
        assert 3 * 7 * one > MB                          # without eviction: past the room
        assert MB - one < private.size_of(folder) <= MB  # within it, and no more went than needed
        times = sorted(e.stat().st_mtime for e in entries)
        assert 7 <= len(times) < 3 * 7
        # The least recently used went first: the last upload's all kept, then as many of the second's
        # as the room holds, then of the first's (how many depends on an entry's size).
        assert len([t for t in times if t >= started[2]]) == 7
        assert len([t for t in times if t >= started[1]]) == min(2 * 7, len(times))
        assert list((folder / "spool").iterdir()) == []
        for doc in docs:                                 # the workspace keeps every audit
            place = server.workspace / doc["place"]
            assert len(list((place / "in").glob("carnet-*.xlsx"))) == 7
            assert server.request("GET", f"/api/runs/{doc['run']}")[0] == 200
            assert all(server.request("GET", "/" + c["report"])[0] == 200 for c in doc["carnets"])
        first = docs[0]
        findings = json.loads(server.request("GET", "/" + first["carnets"][0]["findings"])[2])["findings"]
        status, _, data = server.request("POST", f"/api/runs/{first['run']}/carnet-1/review", json.dumps({
            "fingerprint": findings[0]["fingerprint"], "status": "justifie", "justification": "vu sur place",
            "by": "Claire Dupont"}).encode(), {"Content-Type": "application/json"})
        assert status == 200, data
        deadline = time.monotonic() + 240
        while True:
            doc = json.loads(server.request("GET", f"/api/runs/{first['run']}")[2])
            if not doc["rendering"] and doc["version"] > 1:
                break
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert doc["message"] is None
        again = json.loads(server.request("GET", "/" + doc["carnets"][0]["findings"])[2])["findings"]
        assert again[0]["review"]["justification"] == "vu sur place"
        assert private.size_of(folder) <= MB
    finally:
        server.stop()


def test_evict_bounds_the_private_folder_never_the_workspace(tmp_path):
    """Unit: past the room, the finished runs made in the private folder go
    first (never one under way, nor the newest finished), then the cache's
    half-written leftovers, then its entries least recently used first
    (never one the run just used); the uploads waiting in the spool count
    but stay, and nothing of the workspace goes, even inside the folder."""
    from types import SimpleNamespace

    root = tmp_path / "private"
    workspace = SimpleNamespace(folder=root / "workspace")

    def put(folder: Path, size: int) -> Path:
        folder.mkdir(parents=True)
        (folder / "data").write_bytes(b"x" * size)
        return folder

    registry = {}
    for name, state, where in [("old", "done", root), ("saved", "done", workspace.folder),
                               ("busy", "running", root), ("new", "done", root)]:
        registry[name] = SimpleNamespace(folder=put(where / name, 1000), state=state)
    entries = []
    for i in range(4):
        entry = put(root / "cache" / f"{i:02d}" / (f"{i:02d}" + "e" * 62), 1000)
        os.utime(entry, (1_000_000 + i,) * 2)
        entries.append(entry)
    leftover = put(root / "cache" / "03" / (entries[3].name + ".tmp4242"), 1000)
    put(root / "spool", 500)
    runs = SimpleNamespace(_runs=dict(registry), _lock=threading.Lock(), workspace=workspace)
    # 3 runs (3000) + the cache (5000) + the spool (500); the workspace's run not counted.
    assert private.evict(runs, root, keep_bytes=8500) == []
    assert private.evict(runs, root, keep_bytes=5500, protect=[entries[0]]) == ["old", leftover.name,
                                                                                 entries[1].name]
    assert list(runs._runs) == ["saved", "busy", "new"]
    assert private.evict(runs, root, keep_bytes=0, protect=[entries[0]]) == [entries[2].name, entries[3].name]
    assert [e.exists() for e in entries] == [True, False, False, False]
    assert (workspace.folder / "saved" / "data").is_file() and (root / "busy").exists() and (root / "new").exists()
    assert (root / "spool" / "data").is_file() and list(runs._runs) == ["saved", "busy", "new"]
    assert private.size_of(root, skip=workspace.folder) == 2000 + 1000 + 500   # busy, new; entry 0; the spool


# -- the browser opened through a private file --------------------------------------------------

def test_the_redirect_file_is_private_and_sends_the_browser_on(tmp_path):
    from html.parser import HTMLParser

    from auditor.serve.server import redirect_file

    url = 'http://127.0.0.1:8765/?token=abc"><script>x</script>'
    path = redirect_file(tmp_path, url, "fr")
    assert path.stat().st_mode & 0o777 == 0o600
    text = path.read_text(encoding="utf-8")
    assert "<script>" not in text and "Ouverture de la page" in text

    class Read(HTMLParser):
        refresh, links = None, []

        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if tag == "meta" and attrs.get("http-equiv") == "refresh":
                Read.refresh = attrs["content"]
            if tag == "a":
                Read.links.append(attrs["href"])

    Read().feed(text)
    assert Read.refresh == f"0;url={url}" and Read.links == [url]
    assert "If it does not open" in redirect_file(tmp_path, url, "en").read_text(encoding="utf-8")


# -- reports sandboxed ---------------------------------------------------------------------------

def test_reports_are_served_sandboxed():
    from auditor.serve.security import REPORT_CSP

    directives = {d.split()[0]: d.split()[1:] for d in REPORT_CSP.split("; ")}
    assert "allow-scripts" in directives["sandbox"]
    assert "allow-same-origin" not in directives["sandbox"]      # never the API's origin
    assert directives["frame-ancestors"] == ["'self'"] and directives["default-src"] == ["'none'"]


@pytest.mark.browser
@pytest.mark.subprocess
def test_a_report_script_runs_in_an_origin_of_its_own(browser, tmp_path):
    """In Chromium: the framed report's own script works (its filters), in
    an opaque origin: it cannot read the page, nor call the API with the
    cookie; the page's links into the report and the index still work."""
    server = Server(tmp_path / "tmp", "--jobs", "1")
    try:
        if True:
            context = browser.new_context()
            page = context.new_page()
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(server.url)
            page.set_input_files("#files", [str(XLSX), str(SAMPLES / "compliant" / "forges-table3.xlsx")])
            page.wait_for_selector("#carnets tbody tr", timeout=240_000)
            frame = page.frame_locator("#report")
            links = frame.locator("#carnets a[href$='report.html']")
            links.first.wait_for()
            links.first.click()                                    # the index's link, inside the sandbox
            frame.locator("#filters").wait_for(state="visible")
            report = next(f for f in page.frames if f.url.endswith("/report.html"))
            assert report.evaluate("() => window.origin") == "null"
            rows = frame.locator("#findings details.group tbody tr:not([hidden])")
            before = rows.count()
            frame.locator("#filters input[value=error]").click()   # the report's own script
            assert rows.count() < before
            assert report.evaluate("""() => { try { return window.parent.document.title; }
                                             catch (e) { return 'refused'; } }""") == "refused"
            answer = report.evaluate("""async () => { try {
                const r = await fetch('/api/runs/0000000000000000', {credentials: 'include'});
                return r.status; } catch (e) { return 'refused'; } }""")
            assert answer in (403, "refused")
            assert errors == []
            context.close()
    finally:
        server.stop()


@pytest.mark.subprocess
def test_a_runs_id_opens_its_files_and_nothing_else(tmp_path):
    """What a sandboxed report's links need (no cookie from its opaque
    origin): a GET of the run's files by the run's id; never the API, never
    a POST, never another run."""
    server = Server(tmp_path / "tmp", "--jobs", "1")
    try:
        doc = server.audit([("a.xlsx", XLSX.read_bytes())])
        run = doc["run"]
        status, headers, _ = server.request("GET", f"/runs/{run}/carnet-1/report.html", cookie=False)
        assert status == 200 and headers["content-security-policy"].startswith("sandbox allow-scripts")
        assert server.request("GET", f"/runs/{'0' * 16}/carnet-1/report.html", cookie=False)[0] == 404
        assert server.request("GET", f"/api/runs/{run}", cookie=False)[0] == 403
        assert server.request("POST", f"/runs/{run}/carnet-1/report.html", b"", cookie=False)[0] == 403
        assert server.request("GET", f"/runs/{run}/carnet-1/report.html", cookie=False, host="evil.example")[0] \
            == 403
    finally:
        server.stop()


@pytest.mark.subprocess
def test_nothing_of_a_refused_or_empty_upload_stays_in_the_spool(tmp_path):
    server = Server(tmp_path / "tmp", "--jobs", "1", "--max-file-mb", "1")
    try:
        [folder] = server.private_folders()
        spool = folder / "spool"
        body, ctype = multipart([("", b"a part without a name" * 1000)], {"lang": "fr"})
        assert server.request("POST", "/api/audit", body, {"Content-Type": ctype})[0] == 400
        status, _, _ = server.upload([("a.xlsx", XLSX.read_bytes()), ("gros.xlsx", b"PK" + bytes(2 * 1024 * 1024))])
        assert status == 413
        assert server.request("POST", "/api/audit", body[: len(body) // 2], {"Content-Type": ctype})[0] == 400
        doc = server.audit([("a.xlsx", XLSX.read_bytes()), ("notes.txt", b"x" * 100_000)])
        assert doc["ignored"] == ["notes.txt"]
        assert list(spool.iterdir()) == []
        # The workspace cannot take the audit: the page says why, and the upload is not kept either.
        from auditor.serve.workspace import PENDING

        blocked = server.workspace / PENDING
        shutil.rmtree(blocked)
        blocked.write_bytes(b"")
        status, _, data = server.upload([("a.xlsx", XLSX.read_bytes())])
        assert status == 400 and str(server.workspace) in json.loads(data)["error"]
        assert list(spool.iterdir()) == []
    finally:
        server.stop()


def test_uploads_of_runs_cancelled_at_stop_leave_nothing_in_the_spool(tmp_path):
    """Runs still waiting when the server stops are cancelled: their uploads,
    handed over but never staged, are removed with them; the one running had
    taken its own (staged in the workspace)."""
    from auditor.serve.runs import Runs
    from auditor.serve.workspace import Workspace

    spool = tmp_path / "private" / "spool"
    spool.mkdir(parents=True)
    runs = Runs(tmp_path / "private", workspace=Workspace(tmp_path / "workspace"))
    handed = []
    for i in range(3):
        path = spool / f"upload-{i}"
        path.write_bytes(XLSX.read_bytes())
        handed.append(runs.upload([(f"c{i}.xlsx", path)], "fr"))
    deadline = time.monotonic() + 60
    while handed[0].state == "queued":   # the first one taken by the worker before the stop
        assert time.monotonic() < deadline
        time.sleep(0.01)
    runs.close()
    assert list(spool.iterdir()) == []
    assert [r.state for r in handed[1:]] == ["queued", "queued"]                  # never started
    assert (handed[0].folder / "in" / "carnet-1.xlsx").is_file() and handed[0].total == 1   # staged, audited
