"""A long table's columns are parsed on several threads at once
(normalise._parse_columns): the carnet must come out the same, frame for
frame and problem for problem, as when they are parsed one after the other,
whatever the carnet (every sample, every container, cells of every class)."""

from __future__ import annotations

import threading
from pathlib import Path

import pandas as pd
import pytest

from auditor import normalise as N
from auditor.read import read_carnet
from auditor.synth.generate import Spec, generate, write_csv_folder

SAMPLES = Path(__file__).resolve().parent.parent / "sample_carnets"
CARNETS = sorted(p for p in SAMPLES.glob("*/*") if p.suffix in (".xlsx", ".ods", ".xls") or p.is_dir())


def _normalised(path: Path, threads: bool | None, monkeypatch, seen: set[str] | None = None):
    """The carnet at `path` normalised with every table's columns parsed on
    two threads (`threads`), one after the other (False), or as the audit
    does it (None: threads from PARALLEL_ROWS rows)."""
    if threads is not None:
        monkeypatch.setattr(N, "PARALLEL_ROWS", 0 if threads else 1 << 62)
    monkeypatch.setattr(N, "_cores", lambda: 2)
    if seen is not None:
        parse = N._ColumnJob.parse

        def watched(job):
            seen.add(threading.current_thread().name)
            return parse(job)

        monkeypatch.setattr(N._ColumnJob, "parse", watched)
    carnet = N.normalise(read_carnet(path), free_raw=True)
    monkeypatch.undo()
    return carnet


def _assert_same(a, b) -> None:
    assert a.tables.keys() == b.tables.keys()
    for name, table in a.tables.items():
        other = b.tables[name]
        pd.testing.assert_frame_equal(table.df, other.df, check_exact=True)
        assert (table.present, table.defaulted, table.ambiguous, table.formulas, table.sources) == \
            (other.present, other.defaulted, other.ambiguous, other.formulas, other.sources), name
    assert a.problems == b.problems


def _hostile_folder(folder: Path) -> Path:
    """A generated carnet whose stakes hold cells of every class a clerk or a
    spreadsheet writes: blanks, spaces, signs, grouping, junk, error values."""
    write_csv_folder(generate(Spec(seances=2, coups=30, mises=6, seed=7)), folder)
    cells = ["", " ", "12,5", "1 234,50", "+0,05", "-1", "x", "#N/A", "Err:502", "12,50 €", "١٢", "007", " 3 "]
    mises = folder / "mises.csv"
    lines = mises.read_text(encoding="utf-8").splitlines()
    out = [lines[0]]
    for i, line in enumerate(lines[1:]):
        parts = line.split(";")
        parts[i % len(parts)] = cells[i % len(cells)]
        out.append(";".join(parts))
    mises.write_text("\n".join(out) + "\n", encoding="utf-8")
    return folder


@pytest.mark.parametrize("path", CARNETS, ids=lambda p: p.name)
def test_every_sample_is_the_same_carnet_on_two_threads(path, monkeypatch):
    seen: set[str] = set()
    threaded = _normalised(path, True, monkeypatch, seen)
    one = _normalised(path, False, monkeypatch)
    _assert_same(threaded, one)
    if threaded.tables:
        # The threads did parse (else the comparison above proves nothing).
        assert any(name.startswith("ecarte-audit-normalise") for name in seen), seen


def test_cells_of_every_class_are_the_same_on_two_threads(tmp_path, monkeypatch):
    path = _hostile_folder(tmp_path / "c")
    seen: set[str] = set()
    threaded = _normalised(path, True, monkeypatch, seen)
    one = _normalised(path, False, monkeypatch)
    assert any(code == "EC00-02" for code, _ in one.problems)   # the cells above did make findings
    _assert_same(threaded, one)
    assert any(name.startswith("ecarte-audit-normalise") for name in seen)


@pytest.mark.slow
def test_a_long_table_is_parsed_on_threads_as_the_audit_reads_it(tmp_path, monkeypatch):
    """A carnet past PARALLEL_ROWS stakes, read as the command reads it: its
    columns go to threads on their own, and come out as on one thread."""
    path = write_csv_folder(generate(Spec(seances=2, coups=3000, mises=25, seed=11)), tmp_path / "long")
    assert read_carnet(path).tables["mises"].num_rows >= N.PARALLEL_ROWS
    seen: set[str] = set()
    threaded = _normalised(path, None, monkeypatch, seen)
    assert any(name.startswith("ecarte-audit-normalise") for name in seen)
    _assert_same(threaded, _normalised(path, False, monkeypatch))


def test_a_parse_that_raises_on_a_thread_stops_normalise_as_on_one(tmp_path, monkeypatch):
    """A defect in one column's parse comes out of normalise as it would one
    column after the other (the audit makes it the carnet's fault); the
    columns not begun are not parsed, and no parse thread is left."""
    path = _hostile_folder(tmp_path / "c")
    parse = N._ColumnJob.parse

    def failing(job):
        if job.kind == "amount":
            raise RuntimeError("boom")
        return parse(job)

    for threads in (True, False):
        monkeypatch.setattr(N, "PARALLEL_ROWS", 0 if threads else 1 << 62)
        monkeypatch.setattr(N, "_cores", lambda: 2)
        monkeypatch.setattr(N._ColumnJob, "parse", failing)
        with pytest.raises(RuntimeError, match="boom"):
            N.normalise(read_carnet(path), free_raw=True)
        monkeypatch.undo()
    assert not [t for t in threading.enumerate() if t.name.startswith("ecarte-audit-normalise")]


def test_a_stop_while_a_column_is_taken_ends_the_parse_threads(tmp_path, monkeypatch):
    """The time limit or Ctrl-C may land while normalise takes a parsed
    column (its bad cells, its check) rather than while it waits for one:
    the columns not begun are not parsed, and no parse thread outlives it."""
    path = _hostile_folder(tmp_path / "c")
    monkeypatch.setattr(N, "PARALLEL_ROWS", 0)
    monkeypatch.setattr(N, "_cores", lambda: 2)
    monkeypatch.setattr(N, "FREE_ROWS", 0)   # every column is checked once parsed (`_column_valid`)
    calls = []

    def stopped(column, values):
        calls.append(column)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return True

    monkeypatch.setattr(N, "_column_valid", stopped)
    with pytest.raises(KeyboardInterrupt) as stop:
        N.normalise(read_carnet(path), free_raw=True)
    # Still handling the stop (its traceback, and normalise's frames with it, alive): the threads are gone.
    assert stop.traceback and not [t for t in threading.enumerate() if t.name.startswith("ecarte-audit-normalise")]


def test_no_thread_to_be_had_parses_one_column_after_the_other(tmp_path, monkeypatch):
    """A process that may start no more threads still reads its long carnet."""
    from concurrent.futures import ThreadPoolExecutor

    path = _hostile_folder(tmp_path / "c")
    one = _normalised(path, False, monkeypatch)
    submit = ThreadPoolExecutor.submit
    submitted = []

    def limited(pool, *args, **kwargs):
        if submitted:
            raise RuntimeError("can't start new thread")
        submitted.append(args)
        return submit(pool, *args, **kwargs)

    monkeypatch.setattr(ThreadPoolExecutor, "submit", limited)
    _assert_same(_normalised(path, True, monkeypatch), one)
    assert len(submitted) == 1


def test_a_python_without_ctypes_still_normalises_a_long_table(tmp_path, monkeypatch):
    import builtins

    path = _hostile_folder(tmp_path / "c")
    one = _normalised(path, False, monkeypatch)
    real = builtins.__import__

    def without_ctypes(name, *args, **kwargs):
        if name == "ctypes":
            raise ImportError("No module named '_ctypes'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_ctypes)
    threaded = _normalised(path, True, monkeypatch)
    _assert_same(threaded, one)
