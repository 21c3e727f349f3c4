"""The garbage collector paused while a process imports (auditor.collector):
off during the console command's and each batch worker's start, on again
(what the imports made frozen) before any carnet is audited, and never
touched in a process that calls the auditor again and again."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap

import pytest

from auditor import collector
from auditor.cli import main
from auditor.synth.generate import Spec, generate, write_csv_folder


@pytest.fixture
def collector_restored():
    """A test that pauses the collector in this process leaves it as it found it."""
    yield
    collector._state.paused = False
    gc.unfreeze()
    gc.enable()


def test_resume_freezes_and_turns_on_only_what_pause_turned_off(collector_restored):
    collector.resume()                      # no pause before: nothing done
    assert gc.isenabled() and gc.get_freeze_count() == 0
    collector.pause()
    assert not gc.isenabled()
    collector.resume()
    assert gc.isenabled() and gc.get_freeze_count() > 0
    frozen = gc.get_freeze_count()
    collector.resume()                      # once only
    assert gc.get_freeze_count() == frozen


def test_a_collector_already_off_is_left_off(collector_restored):
    gc.disable()
    collector.pause()
    collector.resume()
    assert not gc.isenabled() and gc.get_freeze_count() == 0


@pytest.mark.parametrize("argv", [["rules"], ["rules", "--explain", "EC63-01"]])
def test_every_other_command_runs_with_the_collector_on(argv, collector_restored, capsys):
    collector.pause()
    assert main(argv) == 0
    assert gc.isenabled()


def test_the_audit_runs_with_the_collector_on(tmp_path, monkeypatch, collector_restored):
    import auditor.run

    carnet = write_csv_folder(generate(Spec(seances=1, coups=3, mises=2, seed=5)), tmp_path / "c")
    seen = []
    real = auditor.run.run

    def watched(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(auditor.run, "run", watched)
    collector.pause()
    assert main(["audit", str(carnet), "--out", str(tmp_path / "out"), "--quiet", "--fail-on", "never"]) == 0
    assert seen == [True] and gc.get_freeze_count() > 0


# The console command as a user starts it, a carnet alone (audited in the
# command's process) and a batch on two workers (spawned interpreters, which
# import this script again as __mp_main__, and so see the same watch).
PROBE = textwrap.dedent("""
    import gc, json, os, sys
    from pathlib import Path

    import auditor.batch.pool as pool

    real = pool.audit_guarded

    def audit_guarded(*args, **kwargs):
        heavy = [m for m in ("pandas", "jinja2") if m in sys.modules]
        Path(os.environ["PROBE_OUT"], f"{os.getpid()}-{args[0]}.json").write_text(json.dumps(
            {"enabled": gc.isenabled(), "frozen": gc.get_freeze_count(), "heavy": heavy}))
        return real(*args, **kwargs)

    pool.audit_guarded = audit_guarded

    if __name__ == "__main__":
        from auditor.cli import run

        sys.argv = ["ecarte-audit", *sys.argv[1:]]
        run()
""")


@pytest.mark.subprocess
def test_the_command_and_its_workers_audit_with_the_collector_on(tmp_path):
    for name, seed in (("a", 1), ("b", 2)):
        write_csv_folder(generate(Spec(seances=1, coups=3, mises=2, seed=seed, table=seed)), tmp_path / "batch" / name)
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE, encoding="utf-8")
    env = {**os.environ, "PROBE_OUT": str(tmp_path / "seen")}
    (tmp_path / "seen").mkdir()
    runs = {"alone": [str(tmp_path / "batch" / "a")], "batch": [str(tmp_path / "batch"), "--jobs", "2"]}
    for what, paths in runs.items():
        done = subprocess.run([sys.executable, str(probe), "audit", *paths, "--out", str(tmp_path / what),
                               "--quiet", "--fail-on", "never"], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    seen = {p.name: json.loads(p.read_text()) for p in (tmp_path / "seen").iterdir()}
    pids = {name.split("-")[0] for name in seen}
    assert len(seen) == 3 and len(pids) >= 2   # the carnet alone, then each of the batch's in a worker
    for name, state in seen.items():
        # On, with the imports (pandas and jinja2 among them) frozen: they were made while it was paused.
        assert state["enabled"] and state["frozen"] > 50_000 and state["heavy"] == ["pandas", "jinja2"], (name, state)
