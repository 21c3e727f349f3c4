"""A long carnet's rules run on two threads (auditor.audit, auditor.threads):
the audit must come out the same, finding for finding and status for status,
as on one thread, whatever the carnet (every sample in every container,
every breach, cells of every class); a fact two rules need is built once; a
rule's defect, the time limit or Ctrl-C stop both threads as they stop one."""

from __future__ import annotations

import os
import platform
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from auditor import audit as A, threads
from auditor.catalogue import load_profile
from auditor.checks import registered
from auditor.derived.cache import per_carnet
from auditor.synth.breaches import INJECTORS, inject
from auditor.synth.generate import Spec, generate, write_csv_folder

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_carnets"
CARNETS = sorted(p for p in SAMPLES.glob("*/*") if p.suffix in (".xlsx", ".ods", ".xls") or p.is_dir())
PREFIX = "ecarte-audit-rules"


def _threads_of(prefix: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(prefix)]


def _rule_threads() -> list[threading.Thread]:
    return _threads_of(PREFIX)


class _Seen(dict):
    """Rule code → the name of the thread it ran on; `began`: per side (this
    thread, the other), it has begun a rule."""

    def __init__(self):
        super().__init__()
        self.began = {False: threading.Event(), True: threading.Event()}

    def clear(self):
        super().clear()
        for event in self.began.values():
            event.clear()


@pytest.fixture
def watched():
    """The names of the threads each rule ran on, while the test runs. Each
    thread's first rule waits until the other thread has begun one too (of a
    carnet of few rules, one thread would else run them all before the other
    takes one), so that the comparisons are between two threads' work."""
    seen = _Seen()
    specs = registered()
    saved = {code: spec.func for code, spec in specs.items()}
    for code, spec in specs.items():
        def func(carnet, profile, _f=spec.func, _code=code):
            name = threading.current_thread().name
            seen[_code] = name
            other = name.startswith(PREFIX)
            seen.began[other].set()
            if other or _rule_threads():
                seen.began[not other].wait(5)
            return _f(carnet, profile)
        object.__setattr__(spec, "func", func)
    yield seen
    for code, spec in specs.items():
        object.__setattr__(spec, "func", saved[code])


def _audited(path: Path, on_threads: bool | None, monkeypatch, debug: bool = True):
    """The carnet at `path` audited with its rules on two threads (True), on
    one (False), or as the command decides (None: from PARALLEL_ROWS rows)."""
    if on_threads is not None:
        monkeypatch.setattr(A, "PARALLEL_ROWS", 0 if on_threads else 1 << 62)
    monkeypatch.setattr(A, "cores", lambda: 2)
    result = A.audit_path(path, load_profile(), debug=debug)
    monkeypatch.undo()
    return result


def _assert_same(a, b) -> None:
    assert a.findings == b.findings
    assert a.rules == b.rules
    assert a.summary == b.summary
    assert a.notes == b.notes


def _on_two(seen: dict[str, str]) -> bool:
    """The rules did run on both threads (else a comparison proves nothing)."""
    names = set(seen.values())
    return any(n.startswith(PREFIX) for n in names) and any(not n.startswith(PREFIX) for n in names)


@pytest.mark.parametrize("path", CARNETS, ids=lambda p: p.name)
def test_every_sample_audits_the_same_on_two_threads(path, monkeypatch, watched):
    threaded = _audited(path, True, monkeypatch)
    on_two = _on_two(watched)
    watched.clear()
    one = _audited(path, False, monkeypatch)
    assert not any(n.startswith(PREFIX) for n in watched.values())
    _assert_same(threaded, one)
    if sum(s.status.value == "checked" for s in one.rules) >= 2:
        assert on_two, watched
    assert not _rule_threads()


@pytest.mark.parametrize("chouette", [False, True])
def test_every_breach_audits_the_same_on_two_threads(tmp_path, monkeypatch, watched, chouette):
    """Every injector's breach at once, in a plain and a chouette carnet: the
    findings of every rule, whichever thread found them."""
    tables = generate(Spec(seances=3, coups=14, mises=6, seed=5, chouette=chouette))
    for code in sorted(INJECTORS):
        try:
            inject(tables, [code], seed=5)
        except Exception:   # a breach another one already made impossible, or chouette-only
            continue
    path = write_csv_folder(tables, tmp_path / "c")
    threaded = _audited(path, True, monkeypatch)
    assert _on_two(watched)
    one = _audited(path, False, monkeypatch)
    assert len({f.code for f in one.findings}) >= 10   # the breaches did make findings
    _assert_same(threaded, one)


def test_cells_of_every_class_audit_the_same_on_two_threads(tmp_path, monkeypatch, watched):
    from tests.test_normalise_threads import _hostile_folder

    path = _hostile_folder(tmp_path / "c")
    threaded = _audited(path, True, monkeypatch)
    assert _on_two(watched)
    one = _audited(path, False, monkeypatch)
    assert any(f.code == "EC00-02" for f in one.findings)
    _assert_same(threaded, one)


@pytest.mark.slow
def test_a_long_carnet_runs_its_rules_on_two_threads_as_the_audit_reads_it(tmp_path, monkeypatch, watched):
    path = write_csv_folder(generate(Spec(seances=2, coups=3000, mises=25, seed=11)), tmp_path / "long")
    threaded = _audited(path, None, monkeypatch)
    assert _on_two(watched)
    _assert_same(threaded, _audited(path, False, monkeypatch))


def _one_rule_raises(code: str):
    spec = registered()[code]
    real = spec.func

    def broken(carnet, profile):
        raise ZeroDivisionError("boom")

    object.__setattr__(spec, "func", broken)
    return lambda: object.__setattr__(spec, "func", real)


@pytest.mark.parametrize("code", ["EC00-01", "EC63-03", "EC82-03"])
def test_a_rule_that_raises_on_either_thread_is_that_rules_not_checked(code, tmp_path, monkeypatch):
    path = SAMPLES / "compliant" / "deauville-table1"
    if code not in registered():
        pytest.skip(f"{code} is not a rule of one carnet")
    restore = _one_rule_raises(code)
    try:
        threaded = _audited(path, True, monkeypatch, debug=False)
        one = _audited(path, False, monkeypatch, debug=False)
        _assert_same(threaded, one)
        status = next(s for s in one.rules if s.code == code)
        assert status.status.value == "not_checked" and "ZeroDivisionError" in status.reason
        assert sum(s.status.value == "checked" for s in one.rules) > 20
        # --debug lets it through, from whichever thread ran it.
        for on_threads in (True, False):
            with pytest.raises(ZeroDivisionError, match="boom"):
                _audited(path, on_threads, monkeypatch, debug=True)
    finally:
        restore()
    assert not _rule_threads()


def test_a_rule_that_raises_lets_go_of_its_memory_at_once(monkeypatch):
    """A rule's defect leaves its words (`not_checked`), not its exception:
    the exception's traceback would keep the rule's frames, and the columns
    they hold (tens of MB on a long carnet), until every other rule has run."""
    import weakref

    class Big:
        pass

    held: list = []
    seen: list = []
    specs = registered()
    first, later = specs["EC00-03"], specs["EC63-03"]
    saved = first.func, later.func

    def broken(carnet, profile):
        big = Big()
        held.append(weakref.ref(big))
        raise MemoryError

    def looking(carnet, profile):
        seen.append(held[0]() is None)
        return saved[1](carnet, profile)

    object.__setattr__(first, "func", broken)
    object.__setattr__(later, "func", looking)
    try:
        result = _audited(SAMPLES / "compliant" / "deauville-table1", False, monkeypatch, debug=False)
    finally:
        object.__setattr__(first, "func", saved[0])
        object.__setattr__(later, "func", saved[1])
    assert "MemoryError" in next(s.reason for s in result.rules if s.code == "EC00-03")
    assert seen == [True]


def test_a_rule_that_raises_on_the_other_thread_under_debug_comes_out_here(monkeypatch, watched):
    """--debug: the defect of a rule the other thread ran is raised by the
    audit. Every rule fails there, and only there (run by this thread it is
    no defect): whichever the other thread takes (`watched` makes sure it
    takes one) is the one."""
    specs = registered()
    real = {code: spec.func for code, spec in specs.items()}
    for code, spec in specs.items():
        def broken(carnet, profile, _f=real[code]):
            got = _f(carnet, profile)   # `watched`'s wait: both threads have begun a rule
            if threading.current_thread().name.startswith(PREFIX):
                raise ZeroDivisionError("boom")
            return got
        object.__setattr__(spec, "func", broken)
    try:
        with pytest.raises(ZeroDivisionError, match="boom"):
            _audited(SAMPLES / "compliant" / "deauville-table1", True, monkeypatch, debug=True)
    finally:
        for code, spec in specs.items():
            object.__setattr__(spec, "func", real[code])
    assert not _rule_threads()


# -- run_all ----------------------------------------------------------------------------------------

def test_run_all_gives_every_result_in_order_from_both_threads():
    names = []

    def call(i):
        def f():
            names.append(threading.current_thread().name)
            time.sleep(0.002)
            return i * i
        return f

    assert threads.run_all([call(i) for i in range(40)], 2, "test") == [i * i for i in range(40)]
    assert {n.startswith("ecarte-audit-test") for n in names} == {True, False}
    assert not _threads_of("ecarte-audit-test")


def _split_calls(n: int, here: Callable, there: Callable, begun: list) -> list[Callable]:
    """`n` calls for run_all: each notes its number in `begun`, then runs
    `here(i)` in this thread and `there(i)` in the other."""
    main = threading.current_thread()

    def call(i):
        def f():
            begun.append(i)
            return (here if threading.current_thread() is main else there)(i)
        return f
    return [call(i) for i in range(n)]


def test_run_all_stops_the_other_thread_in_its_call_when_a_call_here_raises():
    """The time limit, Ctrl-C or a defect in this thread: no call begins
    after, and the other thread, in a call of its own that would last half a
    minute, is stopped there (threads.Stopped) rather than waited for."""
    begun: list = []
    blocked = threading.Event()

    def here(i):
        blocked.wait(5)   # the other thread is in its call by now
        raise KeyError(i)

    def there(i):
        blocked.set()
        for _ in range(3000):   # half a minute of Python steps (a rule's loop over coups)
            time.sleep(0.01)
        return i

    started = time.monotonic()
    with pytest.raises(KeyError):
        threads.run_all(_split_calls(100, here, there, begun), 2, "test")
    assert time.monotonic() - started < 10
    assert len(begun) == 2
    assert not _threads_of("ecarte-audit-test")


def test_run_all_raises_here_what_a_call_raised_in_the_other_thread():
    """A defect in the other thread (--debug): this thread ends its call,
    begins no other, and raises it."""
    begun: list = []
    raised = threading.Event()

    def here(i):
        raised.wait(5)
        time.sleep(0.05)   # the other thread has set the stop
        return i

    def there(i):
        raised.set()
        raise KeyError(i)

    with pytest.raises(KeyError):
        threads.run_all(_split_calls(100, here, there, begun), 2, "test")
    assert len(begun) <= 2   # the other's call, and this thread's if it began one first
    assert not _threads_of("ecarte-audit-test")


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="POSIX timers")
def test_run_all_raises_only_once_the_other_thread_has_ended():
    """The time limit's signal while this thread waits for the other, which
    is in a native call (where no Stopped can land): raised once that call is
    back and the thread gone. (A join that a signal interrupts marks the
    thread as ended while it still runs: Python 3.11.)"""
    main = threading.current_thread()
    in_call = threading.Event()

    class Alarm(Exception):
        pass

    def call(i):
        def f():
            if threading.current_thread() is main:
                in_call.wait(5)
                return i
            in_call.set()
            time.sleep(2)
            return i
        return f

    def on_alarm(signum, frame):
        raise Alarm

    before = signal.signal(signal.SIGALRM, on_alarm)
    started = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(Alarm):
            threads.run_all([call(i) for i in range(2)], 2, "test")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
    assert time.monotonic() - started >= 1.9
    assert not _threads_of("ecarte-audit-test")


def test_run_all_without_a_thread_to_spare_makes_every_call_here(monkeypatch):
    def refused(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refused)
    names = []
    calls = [lambda i=i: names.append(threading.current_thread().name) or i for i in range(5)]
    assert threads.run_all(calls, 2, "test") == list(range(5))
    assert set(names) == {threading.current_thread().name}


# -- facts built once -------------------------------------------------------------------------------

def test_a_fact_two_threads_ask_for_is_built_once():
    from auditor.carnet import Carnet, Source

    built = []

    @per_carnet
    def slow(carnet):
        built.append(threading.current_thread().name)
        time.sleep(0.05)
        return object()

    carnet = Carnet(Source("x", "", "csv"))
    with threads.sharing(carnet.__dict__):
        got = threads.run_all([lambda: slow(carnet)] * 4, 2, "test")
    assert len(built) == 1 and all(g is got[0] for g in got)
    assert "_building" not in carnet.__dict__   # the locks go with the threads: the carnet is as before


def test_a_column_two_threads_ask_for_is_built_once(monkeypatch):
    from auditor import arrays
    from auditor.normalise import normalise
    from auditor.read import read_carnet

    carnet = normalise(read_carnet(SAMPLES / "compliant" / "deauville-table1"))
    real, built = arrays._int_parts, []

    def slow(*args):
        built.append(args[1:3])
        time.sleep(0.05)
        return real(*args)

    monkeypatch.setattr(arrays, "_int_parts", slow)
    with threads.sharing(carnet.__dict__):
        got = threads.run_all([lambda: arrays.column(carnet, "mises", "coup")] * 4, 2, "test")
    assert built == [("mises", "coup")] and all(g is got[0] for g in got)


# -- in the user's conditions -----------------------------------------------------------------------

_STUCK_HOOK = """
import threading, time
from auditor import audit as A
from auditor.checks import registered

def stuck(job, retry):
    # Every carnet's rules on two threads; one rule stuck in Python code on
    # the other thread, one on this one: the time limit must stop both.
    A.PARALLEL_ROWS = 0
    A.cores = lambda: 2
    for code in ("EC63-03", "EC64-03"):
        spec = registered()[code]
        def func(carnet, profile, _code=code):
            while True:
                time.sleep(0.01)
            yield
        object.__setattr__(spec, "func", func)
"""


@pytest.mark.slow
@pytest.mark.subprocess
def test_the_time_limit_stops_rules_stuck_on_both_threads(tmp_path):
    """The console command, a real SIGALRM: a carnet whose rules are stuck on
    both threads ends at its --timeout-per-carnet as an EC00-01, promptly,
    with no traceback."""
    from auditor.batch.executors import AUDIT_HOOK_ENV

    (tmp_path / "stuck_hook.py").write_text(textwrap.dedent(_STUCK_HOOK))
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    env.update({AUDIT_HOOK_ENV: "stuck_hook:stuck",
                "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT), env.get("PYTHONPATH", "")])})
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "auditor", "audit", str(SAMPLES / "compliant" / "deauville-table1"),
                           "--out", str(out), "--lang", "en", "--timeout-per-carnet", "2"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert time.monotonic() - started < 30
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception in thread" not in proc.stderr, proc.stderr
    findings = (out / "deauville-table1" / "findings.json").read_text(encoding="utf-8")
    assert "Audit stopped after 2 s (the --timeout-per-carnet limit)" in findings


# -- one malloc arena -------------------------------------------------------------------------------

_ARENAS = """
import ctypes, os, sys, tempfile, threading
sys.path.insert(0, sys.argv[1])
if sys.argv[2] == "one":
    from auditor import threads
    threads.one_malloc_arena()
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
def allocate():
    for _ in range(100):
        libc.free(libc.malloc(200_000))
workers = [threading.Thread(target=allocate) for _ in range(3)]
for w in workers:
    w.start()
for w in workers:
    w.join()
path = tempfile.mktemp()
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
fp = libc.fopen(path.encode(), b"w")
libc.malloc_info(0, fp)
libc.fclose(fp)
print(open(path).read().count("<heap nr="), os.environ.get("MALLOC_ARENA_MAX"))
os.unlink(path)
"""


@pytest.mark.subprocess
@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's arenas")
def test_one_malloc_arena_for_every_thread(tmp_path):
    """With one_malloc_arena (the console command's, the page's and each
    worker's first step), threads allocate from the main arena; without,
    each has its own (so the test can fail). No variable is set for the
    programs the process starts; a user's own MALLOC_ARENA_MAX is left as it is."""
    script = tmp_path / "arenas.py"
    script.write_text(_ARENAS)
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}

    def heaps(mode, **extra):
        out = subprocess.run([sys.executable, str(script), str(ROOT), mode], env={**env, **extra},
                             capture_output=True, text=True, check=True).stdout.split()
        return int(out[0]), out[1]

    assert heaps("one") == (1, "None")
    assert heaps("default")[0] >= 2
    count, told = heaps("one", MALLOC_ARENA_MAX="4")
    assert count >= 2 and told == "4"


# -- a batch's workers share the cores --------------------------------------------------------------

_CORES_HOOK = """
import os, signal
from auditor import threads

def record(job, retry):
    with open(os.environ["ECARTE_TEST_CORES"], "a", encoding="utf-8") as fh:
        fh.write(f"{os.getpid()} {threads.cores()} {job.path.name} {retry}\\n")
    if job.path.name == os.environ.get("ECARTE_TEST_KILL") and not retry:
        os.kill(os.getpid(), signal.SIGKILL)   # its worker lost: the carnet is retried alone, at the end
"""


def _cores_seen(tmp_path, jobs: int, kill: str = "") -> list[tuple[int, str, bool]]:
    """(cores, carnet, retried) as each worker of `audit --jobs N` counted
    them for a carnet of three, at the first try or alone after its worker
    was killed (`kill`)."""
    import shutil

    from auditor.batch.executors import AUDIT_HOOK_ENV

    (tmp_path / "cores_hook.py").write_text(textwrap.dedent(_CORES_HOOK))
    root = tmp_path / "in"
    for name in ("a", "b", "c"):
        shutil.copytree(SAMPLES / "compliant" / "deauville-table1", root / name)
    seen = tmp_path / "cores.txt"
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    env.update({AUDIT_HOOK_ENV: "cores_hook:record", "ECARTE_TEST_CORES": str(seen), "ECARTE_TEST_KILL": kill,
                "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT), env.get("PYTHONPATH", "")])})
    proc = subprocess.run([sys.executable, "-m", "auditor", "audit", str(root), "--out", str(tmp_path / "out"),
                           "--quiet", "--jobs", str(jobs), "--fail-on", "never"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = [line.split() for line in seen.read_text(encoding="utf-8").splitlines()]
    assert all(pid != str(os.getpid()) for pid, *_ in lines)   # all audited in the workers
    # The three carnets, the retry if any (each worker's warm-up carnet is none of them).
    return [(int(n), name, retry == "True") for _, n, name, retry in lines if name in ("a", "b", "c")]


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.skipif(threads.cores() < 2, reason="one core: nothing to share")
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_batchs_workers_share_the_cores_for_their_threads(tmp_path, jobs):
    """The console command's batch on `--jobs N`: each worker counts
    cores // N for a long carnet's threads (N workers each starting a thread
    per core would crowd the machine), at least one."""
    seen = _cores_seen(tmp_path, jobs)
    assert sorted(name for _, name, _ in seen) == ["a", "b", "c"]
    assert {n for n, _, _ in seen} == {max(1, len(os.sched_getaffinity(0)) // jobs)}


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.skipif(threads.cores() < 2, reason="one core: nothing to share")
def test_a_carnet_retried_alone_has_the_cores_to_itself(tmp_path):
    """A carnet whose worker was killed is retried alone, once the others are
    done: its worker then runs beside no other, and counts every core."""
    seen = _cores_seen(tmp_path, 2, kill="b")
    cores = len(os.sched_getaffinity(0))
    assert [(n, name) for n, name, retried in seen if retried] == [(cores, "b")]
    # At the first tries, two workers, or one once the pool has let the other go (the last carnet).
    assert {n for n, _, retried in seen if not retried} <= {max(1, cores // 2), cores}


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.skipif(threads.cores() < 2, reason="one core: nothing to share")
def test_a_dask_workers_threads_share_its_cores(tmp_path, monkeypatch):
    """On a Dask worker of two threads, each auditing a carnet, a long
    carnet's own threads take half the cores (as a local pool's workers)."""
    import shutil

    distributed = pytest.importorskip("dask.distributed")
    from auditor.batch.executors import AUDIT_HOOK_ENV
    from auditor.cli import main

    (tmp_path / "cores_hook.py").write_text(textwrap.dedent(_CORES_HOOK))
    monkeypatch.syspath_prepend(str(tmp_path))
    root = tmp_path / "in"
    for name in ("a", "b", "c"):
        shutil.copytree(SAMPLES / "compliant" / "deauville-table1", root / name)
    seen = tmp_path / "cores.txt"
    monkeypatch.setenv(AUDIT_HOOK_ENV, "cores_hook:record")
    monkeypatch.setenv("ECARTE_TEST_CORES", str(seen))
    before = threads.cores()
    try:
        with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                      dashboard_address=None) as cluster:
            assert main(["audit", str(root), "--out", str(tmp_path / "out"), "--quiet", "--fail-on", "never",
                         "--scheduler", cluster.scheduler_address]) == 0
    finally:
        threads.share_cores(1)   # the cluster's threads were this process's: as it was
    lines = [line.split() for line in seen.read_text(encoding="utf-8").splitlines()]
    assert sorted(name for _, _, name, _ in lines) == ["a", "b", "c"]
    assert {int(n) for _, n, _, _ in lines} == {max(1, before // 2)}
