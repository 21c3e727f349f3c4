"""Batches that survive faults: a killed worker, a hung carnet, a carnet that
grows too large, a full disk, a run stopped and resumed, a lost Dask worker.

Most tests run the real command in its own session, with the real clock (no
SOURCE_DATE_EPOCH), and check the same four things: no traceback, the right
exit status, every carnet accounted for in summary.json and index.html, no
partial file. Faults are made by tests/fault_hook.py, which the auditor calls
before each audit, in whichever process audits, through its one hook point
(ECARTE_AUDIT_HOOK, auditor/batch/executors.py).
"""

from __future__ import annotations

import errno
import json
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from auditor import atomic
from auditor.batch import pool
from auditor.batch import Options
from auditor.run import run as run_batch
from auditor.batch.executors import AUDIT_HOOK_ENV
from auditor.cli import main
from auditor.synth.generate import Spec, generate, write_csv_folder
from auditor.batch.plan import plan
from auditor.limits import Bounds
from fault_hook import FAULT_ENV, fault_env
from terminal import foreground_signals

ROOT = Path(__file__).resolve().parent.parent
NAMES = ["t1", "t2", "t3", "t4", "t5"]


def carnets(root: Path, names=NAMES) -> Path:
    for i, name in enumerate(names, 1):
        # One casino each: carnets of one casino share ticket books (EC82-03 across carnets).
        write_csv_folder(generate(Spec(seances=1, coups=4, seed=i, table=i, casino=f"Casino {name}")), root / name)
    return root


def start(*args, fault: str | None = None, tmp: Path | None = None, code: str | None = None) -> subprocess.Popen:
    """`ecarte-audit ARGS` in a session of its own, on the real clock (`tmp`:
    its temporary folder, TMPDIR; `code`: a script run instead of
    `python -m auditor`, with ARGS as its own)."""
    env = {k: v for k, v in os.environ.items() if k not in (AUDIT_HOOK_ENV, FAULT_ENV, "SOURCE_DATE_EPOCH")}
    # The project first; then what the test put on the path (worker_site's sitecustomize).
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))])
    if tmp is not None:
        env["TMPDIR"] = str(tmp)
    if fault:
        env.update(fault_env(fault, env))
    command = ["-c", code] if code is not None else ["-m", "auditor"]
    return subprocess.Popen([sys.executable, *command, *map(str, args)], env=env, text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=foreground_signals)


def finish(proc: subprocess.Popen, timeout: float = 120) -> tuple[int, str]:
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # Say which process of the command's session held on (the client, a
        # worker, a helper keeping stderr open), then end them all.
        left = [p for p in processes() if p[3] == proc.pid]
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        raise AssertionError(f"the command did not end in {timeout} s; its session held "
                             f"(pid, state, ppid, session, command): {left}; stderr: {err[-2000:]}") from None
    assert "Traceback" not in err, err
    assert not survivors(proc.pid), "a process of the command outlived it"
    return proc.returncode, err


def run(*args, fault: str | None = None, tmp: Path | None = None) -> tuple[int, str]:
    return finish(start(*args, fault=fault, tmp=tmp))


def processes():
    """(pid, state, ppid, session, cmdline) of every process."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        yield int(d.name), fields[0], int(fields[1]), int(fields[3]), cmd


def survivors(session: int, wait: float = 5.0) -> list:
    """Processes still in the command's session (running or defunct), once
    they have had `wait` seconds to end."""
    deadline = time.monotonic() + wait
    while True:
        left = [p for p in processes() if p[3] == session]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def workers_of(pid: int) -> list[int]:
    return [p[0] for p in processes() if p[2] == pid and "spawn_main" in p[4]]


def wait_for(condition, timeout: float = 90, what: str = ""):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def written(out: Path) -> int:
    return len(list(out.glob("*/findings.json")))


def cached(cache: Path) -> int:
    """Carnets whose audit the cache keeps (an entry is renamed into place whole)."""
    return len([p for p in cache.glob("*/*/carnet-audit.pickle") if ".tmp" not in p.parent.name])


def accounted(out: Path, names=NAMES) -> dict[str, dict]:
    """Every carnet in summary.json and index.html, and every file whole."""
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert sorted(c["id"] for c in summary["carnets"]) == sorted(names)
    assert summary["totals"]["carnets"] == len(names)
    index = (out / "index.html").read_text(encoding="utf-8")
    for name in names:
        assert f'href="{name}/report.html"' in index
    whole(out)
    return {c["id"]: c for c in summary["carnets"]}


def whole(out: Path) -> None:
    """No temporary file left, and every file under its real name complete."""
    assert not [p for p in out.rglob("*") if p.name.endswith(atomic.PART_SUFFIX)]
    for p in out.rglob("*.json"):
        json.loads(p.read_text(encoding="utf-8"))
    for p in out.rglob("*.html"):
        assert p.read_text(encoding="utf-8").rstrip().endswith("</html>"), p


def ec00_01(out: Path, name: str) -> str:
    doc = json.loads((out / name / "findings.json").read_text(encoding="utf-8"))
    [finding] = [f for f in doc["findings"] if f["code"] == "EC00-01"]
    return finding["message"]


# -- a lost worker ------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.subprocess
def test_worker_killed_mid_batch_its_carnet_is_retried_alone(tmp_path):
    root, out, cache = carnets(tmp_path / "in"), tmp_path / "out", tmp_path / "cache"
    # t3 hangs on its first try only; the others are audited meanwhile (the
    # files are written once the whole batch is known: the cache shows them done).
    proc = start("audit", root, "--out", out, "--cache", cache, "--jobs", "2", "--quiet", fault="stall:t3:300")
    wait_for(lambda: cached(cache) == 4, what="the other carnets")
    wait_for(lambda: workers_of(proc.pid), what="the workers")
    # Both at once, as the command sees them: with the command stopped
    # meanwhile, it cannot hand t3's retry to the idle worker between the two
    # kills (that worker would then die holding it, and t3 be lost twice).
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        for pid in workers_of(proc.pid):  # the one holding t3, and the idle one
            os.kill(pid, signal.SIGKILL)
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    code, err = finish(proc)
    assert code == 0, err
    assert "t3: the audit process was killed (SIGKILL); the carnet will be retried alone" in err
    assert "t3: retrying it alone" in err
    entries = accounted(out)
    assert {e["verdict"] for e in entries.values()} == {"ok"}


@pytest.mark.slow
@pytest.mark.subprocess
def test_the_carnet_a_night_from_the_cache_has_left_that_kills_its_worker_ends_only_itself(tmp_path):
    """Night after night, the carnet that kills its process is the only one
    not in the cache (a fault's audit is never kept): left alone to audit, it
    still goes to a worker, and the night writes every other carnet."""
    root, cache = carnets(tmp_path / "in"), tmp_path / "cache"
    for night in ("n1", "n2"):
        code, err = run("audit", root, "--out", tmp_path / night, "--cache", cache, "--jobs", "2", "--quiet",
                        fault="kill:t2")
        assert code == 1, (night, code, err)
        entries = accounted(tmp_path / night)
        assert entries["t2"]["verdict"] == "unreadable"
        assert all(entries[n]["verdict"] == "ok" for n in NAMES if n != "t2")
    assert "4 of 5 carnet(s) already audited (in the cache), 1 to audit" in err


@pytest.mark.slow
@pytest.mark.subprocess
def test_carnet_that_kills_its_worker_twice_is_an_ec00_01(tmp_path):
    root, out = carnets(tmp_path / "in"), tmp_path / "out"
    code, err = run("audit", root, "--out", out, "--jobs", "2", "--quiet", fault="kill:t2")
    assert code == 1, err
    assert err.count("t2: the audit process was killed (SIGKILL)") == 1
    entries = accounted(out)
    assert entries["t2"]["verdict"] == "unreadable"
    assert all(entries[n]["verdict"] == "ok" for n in NAMES if n != "t2")
    assert re.fullmatch(r"Le processus d'audit a été tué \(SIGKILL\) pendant l'audit de ce carnet, puis de "
                        r"nouveau quand il a été audité seul : probablement faute de mémoire "
                        r"\(carnet de \d+ KB\) ; carnet non audité", ec00_01(out, "t2"))


@pytest.mark.slow
@pytest.mark.subprocess
def test_workers_start_once_are_reused_and_reaped(tmp_path):
    root = carnets(tmp_path / "in", [f"c{i}" for i in range(6)])
    pids = []
    result = run_batch(plan([root]), tmp_path / "out", Options(), workers=2,
                       on_done=lambda job, o: pids.append(o.pid))
    assert len(result.entries) == 6 and len(pids) == 6
    assert None not in pids and len(set(pids)) <= 2  # two start-ups for six carnets
    assert not multiprocessing.active_children()
    mine = [p for p in processes() if p[2] == os.getpid()]
    assert not [p for p in mine if p[0] in pids or p[1] == "Z"]


@pytest.mark.slow
@pytest.mark.subprocess
def test_no_process_outlives_the_command(tmp_path):
    root, out = carnets(tmp_path / "in"), tmp_path / "out"
    proc = start("audit", root, "--out", out, "--jobs", "2", "--quiet")
    code, _ = finish(proc)  # finish() asserts that the session is empty
    assert code == 0
    accounted(out)



# -- workers started before the command imports the auditor ------------------------------

@pytest.mark.subprocess
def test_a_batch_starts_its_workers_before_the_auditor_is_imported(tmp_path):
    """The command plans the batch and starts its workers first, so that their
    start-up and its own imports overlap: pandas is not yet imported then."""
    root = carnets(tmp_path / "in", ["a", "b", "c"])
    script = (
        "import sys\n"
        "from auditor.batch import pool\n"
        "seen = []\n"
        "real = pool._spawn\n"
        "def spy(*args):\n"
        "    seen.append('pandas' in sys.modules)\n"
        "    return real(*args)\n"
        "pool._spawn = spy\n"
        "from auditor.cli import main\n"
        f"code = main(['audit', {str(root)!r}, '--out', {str(tmp_path / 'out')!r}, '--quiet', '--jobs', '2'])\n"
        "import json\n"
        "print(json.dumps([seen, code]))\n")
    env = {k: v for k, v in os.environ.items() if k not in (AUDIT_HOOK_ENV, FAULT_ENV, "SOURCE_DATE_EPOCH")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    seen, code = json.loads(proc.stdout)
    assert seen == [False, False] and code in (0, 1)
    accounted(tmp_path / "out", ["a", "b", "c"])


@pytest.mark.slow
@pytest.mark.subprocess
def test_workers_started_early_are_the_ones_that_audit(tmp_path):
    root = carnets(tmp_path / "in", [f"c{i}" for i in range(4)])
    started = pool.Started(2)
    early = {w.process.pid for w in started.workers}
    pids = []
    with started:
        result = run_batch(plan([root]), tmp_path / "out", Options(), workers=2, started=started,
                           on_done=lambda job, o: pids.append(o.pid))
    assert len(result.entries) == 4 and set(pids) <= early   # no worker started besides those
    assert not multiprocessing.active_children()


@pytest.mark.slow
@pytest.mark.subprocess
def test_workers_started_early_end_cleanly_when_the_run_stops_before_them(tmp_path, monkeypatch):
    """Stopped in its warm-up (held there by the fault hook), a worker never
    taken ends by itself and removes its warm-up folder from the temp folder."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    for key, value in fault_env("sleep:warm-up:300").items():
        monkeypatch.setenv(key, value)
    started = pool.Started(1)
    wait_for(lambda: any(temp.iterdir()), what="the worker's warm-up folder")
    started.close()
    assert not list(temp.iterdir()), "the warm-up folder was left in the temp folder"
    assert not multiprocessing.active_children()


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("early", [True, False], ids=["started-early", "started-by-the-pool"])
@pytest.mark.parametrize("kill", [True, False], ids=["run-failed", "run-over"])
def test_a_pool_closed_while_its_workers_warm_up_leaves_nothing(tmp_path, monkeypatch, early, kill):
    """A run stopped while its pool's workers still warm up (Ctrl-C in the
    command's first seconds: the pool is closed with kill=True; or a run over
    before they were needed): each was killed mid warm-up, its warm-up
    folder left in the temp folder."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    for key, value in fault_env("sleep:warm-up:300").items():
        monkeypatch.setenv(key, value)
    started = pool.Started(2) if early else None
    local = pool.LocalPool(2, Options(), Bounds(), fault=None, started=started)
    local._start()
    local._start()
    wait_for(lambda: len(warm_up_folders(temp)) == 2, what="the workers' warm-up folders")
    local.close(kill=kill)
    if started is not None:
        started.close()
    assert not list(temp.iterdir()), "a warm-up folder was left in the temp folder"
    assert not multiprocessing.active_children()


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_usage_error_after_the_workers_started_leaves_nothing(tmp_path, monkeypatch):
    """`--sign` without pdf is refused once the batch is planned and its
    workers started: they end with the command, leaving no process and
    nothing in the temp folder."""
    root, out = carnets(tmp_path / "in"), tmp_path / "out"
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    code, err = run("audit", root, "--out", out, "--jobs", "2", "--sign", tmp_path / "cert.p12", "--format", "html")
    assert code == 2 and "pdf" in err, err
    assert not list(temp.iterdir())


def worker_site(tmp_path: Path, monkeypatch, code: str, fault: str | None = None) -> tuple[Path, Path]:
    """Worker interpreters started from here on run `code` as their
    sitecustomize (and the fault hook's `fault`): (the folder where the code
    leaves a file to say it acted, ECARTE_TEST_HELD; the temp folder, TMPDIR)."""
    site, held, temp = tmp_path / "site", tmp_path / "held", tmp_path / "tmp"
    for folder in (site, held, temp):
        folder.mkdir()
    (site / "sitecustomize.py").write_text(code)
    env = fault_env(fault) if fault else {"PYTHONPATH": str(ROOT)}
    env["PYTHONPATH"] = os.pathsep.join([str(site), env["PYTHONPATH"]])
    for key, value in {**env, "ECARTE_TEST_HELD": str(held), "TMPDIR": str(temp)}.items():
        monkeypatch.setenv(key, value)
    return held, temp


def warm_up_folders(temp: Path) -> list[Path]:
    """The workers' warm-up folders in `temp` (not tempfile's probe of it: a file of a random name, a moment long)."""
    return [p for p in temp.iterdir() if p.name.startswith("ecarte-audit-warm-up-")]


def reaped(monkeypatch) -> list[int | None]:
    """The exit statuses of the workers the pools reap from here on, in order."""
    codes, reap = [], pool._reap
    monkeypatch.setattr(pool, "_reap", lambda w: codes.append(reap(w)) or codes[-1])
    return codes


_HELD_IN_THE_PROBE = """
import os, time
if b"spawn_main" in open("/proc/self/cmdline", "rb").read():
    # A worker's interpreter, held just after tempfile's probe of the temp
    # folder opened its file of a random name (tempfile._get_default_tempdir).
    _open = os.open
    def held_open(path, flags, *args, **kwargs):
        fd = _open(path, flags, *args, **kwargs)
        name = os.path.basename(os.fspath(path))
        if (os.path.dirname(os.fspath(path)) == os.environ["TMPDIR"] and len(name) == 8 and "." not in name
                and flags & os.O_EXCL):
            open(os.path.join(os.environ["ECARTE_TEST_HELD"], str(os.getpid())), "w").close()
            time.sleep(3)
        return fd
    os.open = held_open
"""


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_worker_stopped_in_its_first_look_at_the_temp_folder_leaves_nothing(tmp_path, monkeypatch):
    """tempfile's first use probes the temp folder with a file it opens, writes
    and removes: a run stopped then (SIGTERM to a worker warming up) left that
    file in the temp folder (the full suite on a loaded machine met it)."""
    held, temp = worker_site(tmp_path, monkeypatch, _HELD_IN_THE_PROBE)
    started = pool.Started(1)
    wait_for(lambda: any(held.iterdir()), what="the worker in its probe of the temp folder")
    assert any(temp.iterdir())   # the probe's file, held open
    started.close()
    assert not list(temp.iterdir()), "the probe's file was left in the temp folder"
    assert not multiprocessing.active_children()


_FIRST_STOP_LOST = """
import os, signal, weakref
if b"spawn_main" in open("/proc/self/cmdline", "rb").read():
    # A worker's interpreter whose first SIGTERM comes while a weakref callback
    # runs (as a module lock's does during an import): what the handler raises
    # there, Python prints as "Exception ignored" and goes on.
    _signal = signal.signal
    def installing(signum, handler):
        if signum == signal.SIGTERM and callable(handler):
            real, seen = handler, []
            def first_lost(number, frame):
                seen.append(number)
                if len(seen) > 1:
                    return real(number, frame)
                class Lock:
                    pass
                lock = Lock()
                ref = weakref.ref(lock, lambda _: real(number, frame))
                del lock
                open(os.path.join(os.environ["ECARTE_TEST_HELD"], str(os.getpid())), "w").close()
            handler = first_lost
        return _signal(signum, handler)
    signal.signal = installing
"""


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("early", [True, False], ids=["started-early", "started-by-the-pool"])
@pytest.mark.parametrize("held", [True, False], ids=["held-in-the-warm-up", "warm-up-going-on"])
def test_a_worker_whose_first_stop_was_lost_still_ends_cleanly(tmp_path, monkeypatch, early, held):
    """A SIGTERM that lands in a weakref callback (a module lock's, in an import
    of the warm-up) raised SystemExit where Python ignores it: the worker went
    on warming up, or waited for the run's options, until it was killed 5 s
    later, its warm-up folder left in the temp folder (the full suite met it)."""
    lost, temp = worker_site(tmp_path, monkeypatch, _FIRST_STOP_LOST,
                             "sleep:warm-up:300" if held else "sleep:warm-up:1")
    codes = reaped(monkeypatch)
    started = pool.Started(1) if early else None
    local = pool.LocalPool(1, Options(), Bounds(), fault=None, started=started)
    local._start()
    wait_for(lambda: warm_up_folders(temp), what="the worker's warm-up folder")
    local.close()
    if started is not None:
        started.close()
    assert any(lost.iterdir()), "the worker's first SIGTERM was not the lost one"
    assert codes == [0], f"the worker did not end by itself: {codes}"
    assert not list(temp.iterdir()), "the warm-up folder was left in the temp folder"
    assert not multiprocessing.active_children()


_SLOW_TO_LEAVE = """
import atexit, os, time
if b"spawn_main" in open("/proc/self/cmdline", "rb").read():
    # A worker's interpreter slow to end (a loaded machine): its last steps
    # take longer than the run waits before it sends SIGTERM again.
    atexit.register(time.sleep, 1.5)
"""


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_worker_slow_to_end_is_not_stopped_twice(tmp_path, monkeypatch, capfd):
    """SIGTERM is sent again to a worker still there 0.5 s after it was asked
    to end (its first stop may have been lost): one already on its way out
    must take it quietly, not raise SystemExit in its last steps (Python then
    prints "Exception ignored" on the inspector's terminal)."""
    _, temp = worker_site(tmp_path, monkeypatch, _SLOW_TO_LEAVE, "sleep:warm-up:300")
    codes = reaped(monkeypatch)
    started = pool.Started(1)
    wait_for(lambda: warm_up_folders(temp), what="the worker's warm-up folder")
    started.close()
    # Python puts SIGTERM back to its default in its very last steps, after
    # every clean-up of ours: a SIGTERM sent again then ends it there.
    assert codes in ([0], [-signal.SIGTERM]), f"the worker did not end by itself: {codes}"
    err = capfd.readouterr().err
    assert "Exception ignored" not in err and "Traceback" not in err, err
    assert not list(temp.iterdir())


_RUN_KILLED_AS_IT_ANSWERS = """
import os, signal, time
if b"spawn_main" in open("/proc/self/cmdline", "rb").read():
    # A worker whose run is killed outright (SIGKILL, the out-of-memory
    # killer) just as the worker answers it: the answer meets a pipe nobody
    # reads any more. (The watchdog, which ends a worker whose run is gone
    # within 0.05 s, is told nothing of the run: it would otherwise win the
    # race this test makes certain.)
    from auditor.batch import pool

    watch = pool.Watchdog.__init__
    pool.Watchdog.__init__ = lambda self, limit_mb, *, hard_exit, parent_pid=None: watch(
        self, limit_mb, hard_exit=hard_exit)
    answer = pool._answer

    def answer_a_run_killed(conn, message):
        if message[:1] == ("done",):
            run = os.getppid()
            open(os.path.join(os.environ["ECARTE_TEST_HELD"], str(os.getpid())), "w").close()
            os.kill(run, signal.SIGKILL)
            while os.getppid() == run:
                time.sleep(0.01)
        return answer(conn, message)

    pool._answer = answer_a_run_killed
"""


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_worker_whose_run_was_killed_as_it_answers_ends_quietly(tmp_path, monkeypatch):
    """The run is killed outright while a worker sends it a carnet's audit
    (the full suite met it: the crash case of the resume test below): the
    worker ends, without a traceback of the broken pipe on the terminal."""
    acted, temp = worker_site(tmp_path, monkeypatch, _RUN_KILLED_AS_IT_ANSWERS)
    root = carnets(tmp_path / "in", ["t1", "t2"])
    code, err = finish(start("audit", root, "--out", tmp_path / "out", "--jobs", "1", "--quiet"))
    assert code == -signal.SIGKILL
    assert any(acted.iterdir()), "the worker did not kill its run"
    assert "Error" not in err, err


_HELD_AT_START = """
import os, time
if b"spawn_main" in open("/proc/self/cmdline", "rb").read():
    # A worker's interpreter, held in its start-up (its site import), where
    # Python already turns SIGINT into KeyboardInterrupt.
    open(os.path.join(os.environ["ECARTE_TEST_HELD"], str(os.getpid())), "w").close()
    time.sleep(1.5)
"""


@pytest.mark.slow
@pytest.mark.subprocess
def test_ctrl_c_while_the_early_workers_start_is_one_message(tmp_path):
    """Ctrl-C reaches the whole process group: hit while a worker's
    interpreter is still starting (the command's first half-second, now that
    the workers start before the auditor is imported), the worker printed a
    traceback of its own before it could ignore SIGINT."""
    root, out = carnets(tmp_path / "in", ["a", "b", "c"]), tmp_path / "out"
    site, held, temp = tmp_path / "site", tmp_path / "held", tmp_path / "tmp"
    for folder in (site, held, temp):
        folder.mkdir()
    (site / "sitecustomize.py").write_text(_HELD_AT_START)
    env = {k: v for k, v in os.environ.items() if k not in (AUDIT_HOOK_ENV, FAULT_ENV, "SOURCE_DATE_EPOCH")}
    env.update(PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]), ECARTE_TEST_HELD=str(held), TMPDIR=str(temp))
    proc = subprocess.Popen([sys.executable, "-m", "auditor", "audit", str(root), "--out", str(out), "--jobs", "3"],
                            env=env, text=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True, preexec_fn=foreground_signals)
    wait_for(lambda: any(held.iterdir()) or proc.poll() is not None, what="a worker starting")
    os.killpg(proc.pid, signal.SIGINT)   # as a terminal's Ctrl-C
    code, err = finish(proc, timeout=60)
    lines = err.strip().splitlines()
    assert code == 130 and len(lines) == 1 and lines[0].startswith("ecarte-audit: interrupted"), err
    assert not list(temp.iterdir())


# -- bounds per carnet ------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.subprocess
def test_carnet_past_its_timeout(tmp_path):
    root, out = carnets(tmp_path / "in"), tmp_path / "out"
    started = time.monotonic()
    code, err = run("audit", root, "--out", out, "--jobs", "2", "--quiet", "--timeout-per-carnet", "10",
                    fault="sleep:t4:300")
    assert time.monotonic() - started < 100
    assert code == 1, err
    entries = accounted(out)
    assert entries["t4"]["verdict"] == "unreadable"
    assert all(entries[n]["verdict"] == "ok" for n in NAMES if n != "t4")
    assert ec00_01(out, "t4").startswith("Audit arrêté au bout de 10 s (limite --timeout-per-carnet)")


def test_one_carnet_past_its_timeout_in_process(tmp_path, monkeypatch, capsys):
    root = carnets(tmp_path / "in", ["slow"])
    for name, value in fault_env("sleep:slow:300").items():
        monkeypatch.setenv(name, value)
    out = tmp_path / "out"
    assert main(["audit", str(root / "slow"), "--out", str(out), "--quiet", "--lang", "en",
                 "--timeout-per-carnet", "1"]) == 1
    assert ec00_01(out, "slow").startswith("Audit stopped after 1 s (the --timeout-per-carnet limit)")
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.subprocess
def test_audit_stuck_in_native_code_is_killed_by_the_parent(tmp_path, monkeypatch):
    # The alarm is blocked, as in a long native call: the parent kills the worker.
    root = carnets(tmp_path / "in", ["a", "b"])
    for name, value in fault_env("sleep-masked:b:300").items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(pool, "HARD_KILL_GRACE_S", 0.5)
    result = run_batch(plan([root]), tmp_path / "out", Options(), workers=2, bounds=Bounds(timeout_s=5))
    verdicts = {e["id"]: e["verdict"] for e in result.entries}
    assert verdicts == {"a": "ok", "b": "unreadable"}
    assert ec00_01(tmp_path / "out", "b").startswith("Audit arrêté au bout de 5 s")


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("action", ["alloc", "alloc-masked"])
def test_carnet_past_the_memory_limit(tmp_path, action):
    # alloc: the watchdog stops the audit in its worker; alloc-masked: the
    # audit cannot be interrupted, the worker ends itself and the parent says why.
    root, out = carnets(tmp_path / "in"), tmp_path / "out"
    code, err = run("audit", root, "--out", out, "--jobs", "2", "--quiet", "--max-memory-mb", "500",
                    fault=f"{action}:t5:4000")
    assert code == 1, err
    entries = accounted(out)
    assert entries["t5"]["verdict"] == "unreadable"
    assert all(entries[n]["verdict"] == "ok" for n in NAMES if n != "t5")
    assert ec00_01(out, "t5").startswith("Audit arrêté : la mémoire du processus d'audit a dépassé "
                                         "la limite de 500 Mo (--max-memory-mb)")


@pytest.mark.slow
@pytest.mark.subprocess
def test_default_bounds_never_bite_on_a_real_carnet(tmp_path):
    assert pool.DEFAULT_BOUNDS.timeout_s >= 600 and pool.DEFAULT_BOUNDS.memory_mb >= 4096
    root, out = carnets(tmp_path / "in", ["a", "b"]), tmp_path / "out"
    result = run_batch(plan([root]), out, Options(), workers=2, bounds=pool.DEFAULT_BOUNDS)
    assert {e["verdict"] for e in result.entries} == {"ok"}


# -- outputs whole or not at all --------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path):
    """A 400 KB file system, if this test may mount one (root)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(mount)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small file system here (the monkeypatched test covers ENOSPC)")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.mark.slow
@pytest.mark.subprocess
def test_full_disk_stops_the_run_then_the_cache_resumes_it(tmp_path, small_disk):
    names = [f"c{i:02d}" for i in range(12)]
    root, cache, out = carnets(tmp_path / "in", names), tmp_path / "cache", small_disk / "out"
    code, err = run("audit", root, "--out", out, "--cache", cache, "--jobs", "2", "--quiet")
    assert code == 2, err
    [line] = err.strip().splitlines()
    assert line.startswith(f"ecarte-audit: cannot write {out}/") and "no space left on the disk" in line
    # Every carnet was audited and kept before the first file was written.
    assert cached(cache) == len(names)
    done = int(re.search(r"The run stopped after (\d+) of 12 carnet\(s\); run the same command again", line)[1])
    assert done < len(names)
    assert not (out / "summary.json").exists()
    whole(out)
    # Space again: the same command with the same cache audits nothing again.
    code, err = run("audit", root, "--out", tmp_path / "out2", "--cache", cache, "--jobs", "2", "--quiet")
    assert code == 0, err
    assert "12 of 12 carnet(s) already audited (in the cache), 0 to audit" in err
    accounted(tmp_path / "out2", names)


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("error, reason", [(errno.ENOSPC, "no space left on the disk"),
                                           (errno.EACCES, "permission denied")])
def test_write_error_is_one_message_and_exit_2(tmp_path, monkeypatch, capsys, error, reason):
    """A write error in this process: a night whose carnets are all in the
    cache makes their files here (no worker is started for them)."""
    root, out, cache = carnets(tmp_path / "in"), tmp_path / "out", tmp_path / "cache"
    assert main(["audit", str(root), "--out", str(tmp_path / "night1"), "--cache", str(cache), "--jobs", "2",
                 "--quiet", "--fail-on", "never"]) == 0
    third = sorted(NAMES)[2]
    real_replace, calls = os.replace, []

    def failing_replace(src, dst):
        calls.append(dst)
        if Path(dst).parent.name == third and Path(dst).name in ("report.html", "findings.json"):
            raise OSError(error, os.strerror(error))   # the third carnet's first file
        return real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", failing_replace)
    # Left by an earlier run: a summary (not this run's) and a stopped write.
    (out / "t1").mkdir(parents=True)
    (out / "t1" / f".report.html.999{atomic.PART_SUFFIX}").write_text("<html>half")
    (out / "summary.json").write_text('{"carnets": []}')
    capsys.readouterr()
    assert main(["audit", str(root), "--out", str(out), "--cache", str(cache), "--jobs", "2", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    cached_notice, line = err.strip().splitlines()
    assert cached_notice.endswith("5 of 5 carnet(s) already audited (in the cache), 0 to audit")
    failed = next(c for c in calls if Path(c).parent.name == third)
    assert line.startswith(f"ecarte-audit: cannot write {failed}: {reason}. ")
    assert "The run stopped after 2 of 5 carnet(s); run the same command again" in line
    assert not Path(failed).exists() and not (out / "summary.json").exists()
    whole(out)


@pytest.mark.slow
def test_write_error_in_a_worker_making_files_is_one_message_and_exit_2(tmp_path, capsys):
    """Many carnets: their files are made by the pool's workers (auditor/batch/finishing.py); one
    carnet's folder cannot be made (a file stands in its place): one message, exit 2, no summary,
    every file written whole."""
    from auditor.batch import POOL_FINISH_FROM

    names = [f"c{i:02d}" for i in range(POOL_FINISH_FROM + 2)]
    root, out = carnets(tmp_path / "in", names), tmp_path / "out"
    out.mkdir()
    (out / "c07").write_text("not a folder")
    assert main(["audit", str(root), "--out", str(out), "--jobs", "2", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    [line] = err.strip().splitlines()
    assert line.startswith(f"ecarte-audit: cannot write {out / 'c07'}")
    assert not (out / "summary.json").exists()
    whole(out)


# -- resume --------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=["ctrl-c", "sigterm", "crash"])
def test_stopped_run_resumes_from_the_cache(tmp_path, stop):
    """…and leaves nothing in the temporary folder: a run stopped by Ctrl-C
    or SIGTERM removes its spool (the audits it made, the casino's data) and
    says how to resume, SIGTERM then ending the process by its signal; a run
    killed outright cannot, and the next run removes it."""
    root, out, cache = carnets(tmp_path / "in"), tmp_path / "out", tmp_path / "cache"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = start("audit", root, "--out", out, "--cache", cache, "--jobs", "2", "--quiet", fault="sleep:t2:300",
                 tmp=tmp)
    wait_for(lambda: cached(cache) == 4, what="four carnets in the cache")
    os.kill(proc.pid, stop)
    code, err = finish(proc, timeout=60)
    if stop != signal.SIGKILL:
        assert code == (130 if stop == signal.SIGINT else -signal.SIGTERM)
        assert err.strip().endswith("ecarte-audit: interrupted after 4 of 5 carnet(s); "
                                    "run the same command again to audit only the rest")
        assert list(tmp.iterdir()) == []
    else:
        assert code == -signal.SIGKILL
        left = [p.name for p in tmp.iterdir()]
        assert [name for name in left if name.startswith("ecarte-audit-run-")], left
    assert not (out / "summary.json").exists()
    whole(out)
    code, err = run("audit", root, "--out", out, "--cache", cache, "--jobs", "2", "--quiet", tmp=tmp)
    assert code == 0, err
    assert "ecarte-audit: 4 of 5 carnet(s) already audited (in the cache), 1 to audit" in err
    accounted(out)
    assert list(tmp.iterdir()) == []


_KILLED_AS_IT_KEEPS = """
import os, signal
if b"spawn_main" in open("/proc/self/cmdline", "rb").read():
    # A worker killed outright (SIGKILL, the out-of-memory killer) while it
    # writes a carnet's audit into the cache: its half-written entry stays.
    from auditor.batch import cache

    write = cache.write_pickle

    def killed_as_it_keeps(path, value):
        held = os.environ["ECARTE_TEST_HELD"]
        if ".tmp" in path.parent.name and not os.listdir(held):
            open(os.path.join(held, str(os.getpid())), "w").close()
            write(path, value)
            os.kill(os.getpid(), signal.SIGKILL)
        return write(path, value)

    cache.write_pickle = killed_as_it_keeps
"""


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_half_written_cache_entry_of_a_killed_worker_is_removed_by_a_later_run(tmp_path, monkeypatch):
    """A worker killed while it kept an audit in the cache left its
    `<key>.tmp<pid>` folder for good: a controller's cache grew by one at
    each such night. A later run that writes entries removes those an hour
    old (an hour later: a younger one may be another run's, being written)."""
    acted, temp = worker_site(tmp_path, monkeypatch, _KILLED_AS_IT_KEEPS)
    root, out, cache = carnets(tmp_path / "in", ["t1", "t2", "t3"]), tmp_path / "out", tmp_path / "cache"
    code, err = finish(start("audit", root, "--out", out, "--cache", cache, "--jobs", "1", "--quiet"))
    assert code == 0, err
    assert any(acted.iterdir()), "no worker was killed as it kept an audit"
    accounted(out, ["t1", "t2", "t3"])
    [left] = [p for p in cache.glob("*/*") if ".tmp" in p.name]
    assert cached(cache) == 3
    # The next night, an hour on, with one carnet recorded anew and one more added.
    hour_ago = time.time() - 3700
    os.utime(left, (hour_ago, hour_ago))
    young = left.with_name(left.name.rsplit(".tmp", 1)[0] + ".tmp999999")
    young.mkdir()   # another run's, being written now
    monkeypatch.setenv("PYTHONPATH", str(ROOT))   # the workers' sitecustomize gone: no kill this night
    carnets(tmp_path / "in", ["t1", "t2", "t3", "t4"])
    code, err = finish(start("audit", root, "--out", out, "--cache", cache, "--jobs", "1", "--quiet"))
    assert code == 0, err
    assert not left.exists() and young.is_dir()
    assert cached(cache) == 4
    accounted(out, ["t1", "t2", "t3", "t4"])


# -- Dask -------------------------------------------------------------------------------------

@pytest.fixture
def dask_cluster(monkeypatch, request):
    """A two-worker LocalCluster whose workers see the fault hook `request.param`."""
    distributed = pytest.importorskip("dask.distributed")
    import dask

    for name, value in fault_env(request.param).items():
        monkeypatch.setenv(name, value)
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                     dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield cluster, client


@pytest.mark.subprocess
@pytest.mark.slow
@pytest.mark.parametrize("dask_cluster", ["sleep:t3:3"], indirect=True)
def test_dask_worker_lost_mid_run_is_survived(tmp_path, dask_cluster, capsys):
    from concurrent.futures import ThreadPoolExecutor

    cluster, client = dask_cluster
    root, out = carnets(tmp_path / "in"), tmp_path / "out"

    def holder():
        for address, keys in client.processing().items():
            if any("-t3" in str(k) for k in keys):
                return address
        return None

    with ThreadPoolExecutor(1) as ex:
        batch = ex.submit(main, ["audit", str(root), "--out", str(out), "--quiet",
                                 "--scheduler", cluster.scheduler_address])
        wait_for(lambda: holder() or batch.done(), what="t3 on a worker")
        address = holder()
        assert address, "t3 was done before a worker could be lost"
        pid = client.run(os.getpid, workers=[address])[address]
        os.kill(pid, signal.SIGKILL)  # the worker holding t3 is lost
        code = batch.result(timeout=120)
    assert code == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    # The carnet given to another worker is named in the command's output (--quiet or not).
    assert re.search(r"t3: audited again, its Dask worker was lost", err), err
    assert {e["verdict"] for e in accounted(out).values()} == {"ok"}


@pytest.mark.subprocess
@pytest.mark.slow
def test_dask_cluster_without_workers_stops_with_a_clear_message(tmp_path, capsys):
    distributed = pytest.importorskip("dask.distributed")
    root, out = carnets(tmp_path / "in", ["t1", "t2"]), tmp_path / "out"
    # A scheduler with no worker at all (all gone, or never started): not a silent wait.
    with distributed.LocalCluster(n_workers=0, processes=True, host="127.0.0.1", dashboard_address=None) as cluster:
        started = time.monotonic()
        code = main(["audit", str(root), "--out", str(out), "--quiet", "--lang", "en",
                     "--scheduler", cluster.scheduler_address, "--cluster-wait", "3"])
        waited = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert f"the Dask cluster {cluster.scheduler_address} has had no worker for 3 s (--cluster-wait)" in err
    assert waited < 60   # it stopped: the run did not wait without limit


@pytest.mark.subprocess
@pytest.mark.slow
@pytest.mark.parametrize("dask_cluster", ["kill:t1"], indirect=True)
def test_dask_task_that_keeps_killing_workers_is_an_ec00_01(tmp_path, dask_cluster, capsys):
    cluster, _ = dask_cluster
    root, out = carnets(tmp_path / "in"), tmp_path / "out"
    assert main(["audit", str(root), "--out", str(out), "--quiet", "--scheduler", cluster.scheduler_address]) == 1
    assert "Traceback" not in capsys.readouterr().err
    entries = accounted(out)
    assert entries["t1"]["verdict"] == "unreadable"
    assert all(entries[n]["verdict"] == "ok" for n in NAMES if n != "t1")
    assert ec00_01(out, "t1").startswith("Les processus de la grappe Dask qui auditaient ce carnet "
                                         "ont été tués à chaque essai")


def test_an_answer_to_a_run_gone_is_false_and_one_that_cannot_be_pickled_raises():
    """`_answer` says a run gone (its end of the pipe closed: the worker ends
    quietly), and only that: an answer that cannot be pickled is a defect of
    ours, raised as before, never taken for a lost run."""
    class ReadWhenPickled:   # an audit holding something read from disk as it is pickled
        def __reduce__(self):
            raise OSError(5, "Input/output error")

    ours, theirs = multiprocessing.Pipe()
    with pytest.raises(OSError, match="Input/output error"):
        pool._answer(ours, ("done", ReadWhenPickled(), False))
    assert pool._answer(ours, ("started",)) is True and theirs.recv() == ("started",)
    theirs.close()
    assert pool._answer(ours, ("done", "x" * 100_000, False)) is False


_SIGTERM_AS_A_WORKER_STARTS = """
import os, signal, sys
from multiprocessing import popen_spawn_posix, util

spawn = util.spawnv_passfds

def spawned_then_stopped(path, args, passfds):
    # A worker's interpreter exists (not the resource tracker's); its
    # start-up data is not written yet.
    pid = spawn(path, args, passfds)
    if any("spawn_main" in os.fsdecode(a) for a in args) and not stopped:
        stopped.append(pid)
        os.kill(os.getpid(), signal.SIGTERM)
    return pid

stopped = []

popen_spawn_posix.util.spawnv_passfds = spawned_then_stopped
from auditor import cli
sys.argv = ["ecarte-audit", *sys.argv[1:]]
cli.run()
"""


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_sigterm_while_a_worker_starts_leaves_no_traceback_and_nothing_behind(tmp_path):
    """SIGTERM lands while the command starts a worker (its interpreter made,
    its start-up data not yet sent): the stop waits until the worker has it,
    then the command stops as for any SIGTERM. Before, the stop cut the start
    short and the worker printed an EOFError's traceback (found by a review:
    1 run in 31, SIGTERM sent 0.1–0.2 s after the command started)."""
    root, tmp = carnets(tmp_path / "in"), tmp_path / "tmp"
    tmp.mkdir()
    proc = start("audit", root, "--out", tmp_path / "out", "--jobs", "2", "--quiet", tmp=tmp,
                 code=_SIGTERM_AS_A_WORKER_STARTS)
    code, err = finish(proc, timeout=60)
    assert code == -signal.SIGTERM, err
    assert "Error" not in err, err
    assert list(tmp.iterdir()) == []
