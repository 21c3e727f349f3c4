"""Nothing left behind, nothing live: the page's security points, each with
a real `ecarte-audit serve` process where it matters.

- the private folder removed on SIGTERM, SIGHUP and Ctrl-C, after an upload;
  the folders of servers killed outright (SIGKILL) removed at the next start;
- an upload streamed to disk: the server's resident memory stays bounded
  whatever the size of the upload;
- the private folder bounded: the oldest runs evicted;
- the browser opened through a private redirect file, never a token on its
  command line;
- reports served sandboxed: no report script runs on the API's origin.
"""

from __future__ import annotations

import os
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
    assert any(folder.rglob("report.html")) and any(folder.rglob("carnet-1.xlsx"))
    assert (folder / private.PID_FILE).read_text().split() == [str(server.proc.pid)]
    server.proc.send_signal(sig)
    out, err = server.proc.communicate(timeout=60)
    assert server.proc.returncode == -sig, err          # ended by its signal, as `kill` expects
    assert "Traceback" not in err
    assert "Page d'audit arrêtée ; fichiers temporaires effacés." in out
    assert not folder.exists()
    assert files_under(tmp_path / "tmp") == []


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
    first.audit([("a.xlsx", XLSX.read_bytes())])
    [left] = first.private_folders()
    first.proc.kill()                                   # SIGKILL: no clean-up possible
    first.proc.communicate(timeout=30)
    assert left.exists() and any(left.rglob("report.html"))
    running = Server(tmp_path / "tmp", "--jobs", "1")    # removes the dead one's
    try:
        assert not left.exists()
        [kept] = running.private_folders()
        third = Server(tmp_path / "tmp", "--jobs", "1")  # a running server's folder is not touched
        try:
            assert kept.exists() and len(third.private_folders()) == 2
        finally:
            third.stop()
    finally:
        running.stop()
    assert files_under(tmp_path / "tmp") == []


# -- unit: which folders are stale ---------------------------------------------------------

def test_stale_folders(tmp_path):
    dead = _fake_server_pid()
    mine = tmp_path / (private.PREFIX + "mine")
    mine.mkdir()
    (mine / private.PID_FILE).write_text(f"{os.getpid()}\n")
    gone = tmp_path / (private.PREFIX + "gone")
    gone.mkdir()
    (gone / private.PID_FILE).write_text(f"{dead}\n")
    fresh = tmp_path / (private.PREFIX + "fresh")       # being made: no pid file yet
    fresh.mkdir()
    old = tmp_path / (private.PREFIX + "old")           # an older server's, a day untouched
    old.mkdir()
    os.utime(old, (time.time() - 2 * private.UNMARKED_GRACE,) * 2)
    link = tmp_path / (private.PREFIX + "link")         # never followed
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / private.PID_FILE).write_text(f"{dead}\n")
    link.symlink_to(target)
    other = tmp_path / "unrelated"
    other.mkdir()
    assert private.stale(tmp_path) == [gone, old]
    assert private.remove_stale(tmp_path) == [gone, old]
    assert mine.exists() and fresh.exists() and target.exists() and link.exists() and other.exists()


def _fake_server_pid() -> int:
    """The id of a process that has ended."""
    import subprocess

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


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
def test_the_oldest_runs_are_evicted_past_the_room_given(tmp_path):
    """--keep-mb 1: each upload past the room removes the oldest finished
    runs (files and entry: 404); the last one finished is kept (the
    inspector still reads it while the new one runs)."""
    import json

    server = Server(tmp_path / "tmp", "--jobs", "1", "--keep-mb", "1")
    try:
        data = _padded(XLSX.read_bytes(), 400 * 1024)   # each run: > 0.8 MB (the carnet, its copy annotated)
        docs = [server.audit([(f"{n}.xlsx", data)]) for n in "abcd"]
        [folder] = server.private_folders()
        present = [server.request("GET", f"/api/runs/{d['run']}")[0] for d in docs]
        assert present == [404, 404, 200, 200]
        assert server.request("GET", "/" + docs[0]["carnets"][0]["report"])[0] == 404
        assert server.request("GET", "/" + docs[-1]["carnets"][0]["report"])[0] == 200
        assert len(list(folder.glob("run-*"))) == 2
        # Runs smaller than the room: kept together, the large ones go.
        small = [server.audit([(f"{n}.xlsx", XLSX.read_bytes())]) for n in "efg"]
        assert [server.request("GET", f"/api/runs/{d['run']}")[0] for d in small] == [200, 200, 200]
        assert server.request("GET", f"/api/runs/{docs[-1]['run']}")[0] == 404
    finally:
        server.stop()


def _padded(workbook: bytes, size: int) -> bytes:
    """The workbook with a part nobody reads, of `size` random bytes (stored)."""
    import io
    import zipfile

    out = io.BytesIO(workbook)
    out.seek(0, 2)
    with zipfile.ZipFile(out, "a") as zf:
        zf.writestr("docProps/padding.bin", os.urandom(size), compress_type=zipfile.ZIP_STORED)
    return out.getvalue()


def test_evict_keeps_running_runs_and_the_workspace(tmp_path):
    """Unit: a run under way is never evicted, nor one kept outside the
    private folder (the inspector's workspace), nor the newest finished."""
    from types import SimpleNamespace

    root, workspace = tmp_path / "private", tmp_path / "workspace"
    registry = {}
    for name, state, where in [("old", "done", root), ("saved", "done", workspace), ("busy", "running", root),
                               ("mid", "failed", root), ("new", "done", root)]:
        folder = where / name
        folder.mkdir(parents=True)
        (folder / "report.html").write_bytes(b"x" * 1000)
        registry[name] = SimpleNamespace(folder=folder, state=state)
    runs = SimpleNamespace(_runs=dict(registry), _lock=threading.Lock())
    assert private.evict(runs, root, keep_bytes=10_000, keep_runs=20) == []
    assert private.evict(runs, root, keep_bytes=10_000, keep_runs=20, incoming=9_000) == ["old", "mid"]
    assert list(runs._runs) == ["saved", "busy", "new"]
    assert not (root / "old").exists() and (workspace / "saved").exists() and (root / "busy").exists()
    assert private.evict(runs, root, keep_bytes=0, keep_runs=1) == []     # the newest stays


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
    finally:
        server.stop()
