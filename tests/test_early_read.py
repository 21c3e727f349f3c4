"""A CSV folder alone is read in a thread while the command imports the
auditor (auditor.read.early): the read needs no pandas, is taken once by the
audit, gives what reading it then gives, and its failures are the audit's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from auditor.limits import DEFAULT_LIMITS
from auditor.read import early, read_carnet, read_early
from auditor.read.raw import bool_array, int64_array, text_array
from terminal import foreground_signals

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_carnets"
CSV_FOLDERS = sorted(p for p in SAMPLES.rglob("*") if p.is_dir() and any(p.glob("*.csv")))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",))), max_size=40))
def test_text_array_is_arrows_own(values):
    made = text_array(values)
    made.validate(full=True)
    assert made.equals(pa.array(values, pa.string()))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-2**63, 2**63 - 1), max_size=70), st.sampled_from([np.int64, np.int32]))
def test_int64_array_is_arrows_own(values, dtype):
    arr = np.array(values, dtype=np.int64)
    if dtype is np.int32:
        arr = np.clip(arr, -2**31, 2**31 - 1).astype(np.int32)
    made = int64_array(arr[::2] if len(arr) > 3 else arr)   # a strided view too
    made.validate(full=True)
    assert made.equals(pa.array((arr[::2] if len(arr) > 3 else arr).astype(np.int64)))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.booleans(), max_size=70))
def test_bool_array_is_arrows_own(values):
    made = bool_array(np.array(values, dtype=bool))
    made.validate(full=True)
    assert made.equals(pa.array(np.array(values, dtype=bool)))


def test_every_sample_csv_folder_is_read_without_pandas():
    """What the thread runs while the command imports pandas must not import
    it itself (it would wait on the command's import, or the command on it):
    every CSV folder of the samples, blank rows, totals and Windows-1252 ones."""
    from test_batch_memo import _imported_after

    assert len(CSV_FOLDERS) >= 5
    assert _imported_after("from pathlib import Path\nfrom auditor.read import read_carnet\n"
                           f"for p in {[str(p) for p in CSV_FOLDERS]!r}:\n    read_carnet(Path(p))",
                           ("pandas",)) == []


def _tables(raw) -> dict:
    return {name: (t.data.to_pydict() if isinstance(t.data, pa.Table) else t.df.to_dict("list"), t.rows_read,
                   t.totals_rows, t.sheet) for name, t in raw.tables.items()}


@pytest.mark.parametrize("folder", CSV_FOLDERS, ids=lambda p: p.name)
def test_the_early_read_is_the_read_and_is_taken_once(folder, monkeypatch):
    calls = []
    from auditor.read import csv_folder

    real = csv_folder.read_csv_folder
    monkeypatch.setattr("auditor.read.read_csv_folder", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    fresh = read_carnet(folder, DEFAULT_LIMITS)
    with read_early(folder, DEFAULT_LIMITS, None):
        taken = read_carnet(folder, DEFAULT_LIMITS)
        again = read_carnet(folder, DEFAULT_LIMITS)   # taken once: this one reads
    assert calls == [folder] * 3
    assert _tables(taken) == _tables(fresh) == _tables(again)
    assert (taken.sha256, taken.files, taken.problems) == (fresh.sha256, fresh.files, fresh.problems)


def test_an_early_read_with_other_arguments_is_not_taken(monkeypatch):
    folder = CSV_FOLDERS[0]
    other = DEFAULT_LIMITS.__class__(max_rows=3)
    with read_early(folder, DEFAULT_LIMITS, None):
        assert early.take(folder, other, None) is None
        assert early.take(folder.parent, DEFAULT_LIMITS, None) is None
        assert early.take(folder, DEFAULT_LIMITS, None) is not None
    with read_early(folder, DEFAULT_LIMITS, None):
        pass
    assert early.take(folder, DEFAULT_LIMITS, None) is None   # dropped at the block's end


def test_a_defect_of_the_early_read_is_the_carnets_ec00(monkeypatch):
    """The reader's exception, raised in the thread, reaches the audit as a
    read done there would: an EC00-01 finding, or the traceback with --debug."""
    from auditor.audit import audit_path
    from auditor.catalogue import load_profile

    def broken(*a, **k):
        raise RuntimeError("lecteur en panne")

    monkeypatch.setattr("auditor.read.read_csv_folder", broken)
    folder = CSV_FOLDERS[0]
    with read_early(folder, None, None):
        result = audit_path(folder, load_profile())
    [finding] = [f for f in result.findings if f.code == "EC00-01"]
    assert result.carnet.unreadable
    with read_early(folder, None, None), pytest.raises(RuntimeError, match="lecteur en panne"):
        audit_path(folder, load_profile(), debug=True)


@pytest.mark.subprocess
def test_the_command_reads_a_lone_csv_folder_early_and_writes_the_same_files(tmp_path):
    """The command on a CSV folder alone, as a user runs it (real clock): its
    read happens in the thread, once, and its findings are those of the
    carnet audited without it (the run's time aside)."""
    folder = next(p for p in CSV_FOLDERS if p.name == "deauville-table1")
    probe = ("import sys, threading\n"
             "from auditor.read import csv_folder\n"
             "seen = []\nreal = csv_folder.read_csv_folder\n"
             "def spy(*a, **k):\n    seen.append(threading.current_thread().name)\n    return real(*a, **k)\n"
             "csv_folder.read_csv_folder = spy\n"
             "import auditor.read\nauditor.read.read_csv_folder = spy\n"
             "from auditor.cli import main\nrc = main(sys.argv[1:])\nprint(seen, rc)\n")
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    outs = {}
    for name, extra in (("early", []), ("cached", ["--cache", str(tmp_path / "cache")])):
        done = subprocess.run([sys.executable, "-c", probe, "audit", str(folder), "--out", str(tmp_path / name),
                               "--quiet", "--fail-on", "never", *extra],
                              capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
        assert done.returncode == 0, done.stderr
        outs[name] = done.stdout.strip()
    # With a cache the carnet may be known: no early read, the audit reads it.
    assert outs == {"early": "['ecarte-audit-early-read'] 0", "cached": "['MainThread'] 0"}

    def findings(name: str) -> list:
        doc = json.loads((tmp_path / name / folder.name / "findings.json").read_text(encoding="utf-8"))
        return doc["findings"]

    assert findings("early") == findings("cached") != []


@pytest.mark.subprocess
def test_ctrl_c_while_the_carnet_is_read_early_stops_cleanly(tmp_path):
    """A user's Ctrl-C (a real SIGINT) while the thread still reads the carnet:
    the command says it was interrupted and ends with 130, no traceback; it
    waits for the read (its interpreter must not end while Arrow's threads
    parse: the process would abort), no longer than WAIT_AT_END_S. The Ctrl-C
    lands while the audit waits on the read: a join interrupted there once
    left the thread looking ended, and nothing was waited for."""
    import signal
    import time

    folder = CSV_FOLDERS[0]
    done = tmp_path / "read-done"
    probe = ("import sys, time, pathlib\n"
             "import auditor.read\n"
             "def slow(*a, **k):\n    print('reading', file=sys.stderr, flush=True)\n    time.sleep(3)\n"
             f"    pathlib.Path({str(done)!r}).touch()\n"
             "auditor.read.read_csv_folder = slow\n"
             "from auditor.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    proc = subprocess.Popen([sys.executable, "-c", probe, "audit", str(folder), "--out", str(tmp_path / "out")],
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, preexec_fn=foreground_signals)
    assert proc.stderr.readline().strip() == "reading"
    time.sleep(1.5)   # the command has imported the auditor and waits on the read
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    rest = proc.stderr.read()
    assert proc.wait(timeout=60) == 130, rest   # what the command said, should it end otherwise
    assert done.exists()   # the read was over before the interpreter ended
    assert time.monotonic() - started < 20
    assert "interrompu" in rest or "interrupted" in rest
    assert "Traceback" not in rest


@pytest.mark.subprocess
def test_a_command_that_stops_before_its_audit_does_not_exit_while_the_carnet_is_read(tmp_path):
    """The command can end before its audit takes the read it started early:
    here a signing certificate that cannot be read (a usage error found once
    the auditor is imported), likewise a wrong password, Ctrl-C, or
    the carnet's timeout while the audit waits on the read. The read must
    not be left running as the interpreter ends: Arrow's threads still at
    work then abort the process ("terminate called without an active
    exception", exit 134 instead of the usage error's 2; seen on a 7 MB
    carnet, once in some 20 runs under load). The command waits for it."""
    folder = CSV_FOLDERS[0]
    probe = ("import sys, time\n"
             "import auditor.read\n"
             "state = ['not started']\n"
             "def slow(*a, **k):\n    state[0] = 'reading'\n    time.sleep(2)\n    state[0] = 'read'\n"
             "    raise RuntimeError('never taken')\n"
             "auditor.read.read_csv_folder = slow\n"
             "from auditor.cli import main\nrc = main(sys.argv[1:])\nprint(state[0], rc)\n")
    done = subprocess.run([sys.executable, "-c", probe, "audit", str(folder), "--out", str(tmp_path / "out"),
                           "--format", "json,pdf", "--sign", str(tmp_path / "missing.p12")],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert "--sign" in done.stderr and "Traceback" not in done.stderr
    assert done.stdout.strip() == "read 2"


def test_the_early_read_has_ended_when_its_block_ends_untaken():
    """In-process (the local page, the tests): a read nobody took is over
    when its block ends, not left running beside what comes next."""
    import threading
    import time

    started = threading.Event()

    def slow():
        started.set()
        time.sleep(0.5)

    with early.reading(CSV_FOLDERS[0], None, None, slow):
        started.wait(10)
    assert not [t for t in threading.enumerate() if t.name == "ecarte-audit-early-read"]


def _arrow_owned(source) -> bool:
    """Memory Arrow allocated: a mutable buffer, or a slice of one (a bytes
    object's memory would be an immutable buffer)."""
    if not isinstance(source, pa.Buffer):
        return False
    while source.parent is not None:
        source = source.parent
    return source.is_mutable


def test_every_read_hands_arrow_memory_arrow_owns(monkeypatch, tmp_path):
    """Arrow's CSV reader lets go of its input on its own threads, after
    read_csv has returned. An input that is a Python object's memory (the
    file's bytes) then takes the GIL to let go: when the command ends right
    after the early read (a usage error found once the auditor is imported),
    the interpreter is ending, that thread is stopped inside Arrow's C++ and
    the process aborts (exit 134, "terminate called without an active
    exception"; its core shows arrow::py::PyBuffer::~PyBuffer on an Arrow
    worker). Every read gives Arrow its own memory (the file read into it, or
    a copy), in a thread or not; its tables are the same. Arrow's own memory
    is a mutable buffer; a bytes object's would be an immutable one."""
    import threading

    from auditor.read import csv_folder

    import shutil

    folder = shutil.copytree(next(p for p in CSV_FOLDERS if p.name == "deauville-table1"), tmp_path / "c")
    # The Arrow buffer sliced as the reader slices it: past a BOM, past a title line above the header.
    coups = folder / "coups.csv"
    coups.write_bytes(b"\xef\xbb\xbf" + coups.read_bytes())
    mises = folder / "mises.csv"
    mises.write_bytes(b"Carnet special\r\n" + mises.read_bytes())
    inputs = []
    real = pa.BufferReader

    def spy(source, *a, **k):
        inputs.append(source)
        return real(source, *a, **k)

    monkeypatch.setattr(csv_folder, "_SMALL_TEXT", 0)   # every file through Arrow's reader
    monkeypatch.setattr(pa, "BufferReader", spy)
    here = read_carnet(folder, DEFAULT_LIMITS, early=False)
    assert inputs and all(_arrow_owned(source) for source in inputs)
    assert sum(source.parent is not None for source in inputs) == 2   # the two slices
    assert here.tables["mises"].title_rows == [1]
    inputs.clear()
    out = []
    thread = threading.Thread(target=lambda: out.append(read_carnet(folder, DEFAULT_LIMITS, early=False)))
    thread.start()
    thread.join()
    assert inputs and all(_arrow_owned(source) for source in inputs)
    assert _tables(out[0]) == _tables(here)
