"""Batches: mixed folders, parallel runs, the cache, Dask, cross-carnet EC82-03, generate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.batch import Options, fingerprint
from auditor.run import run as run_batch
from auditor.cli import main
from auditor.synth.generate import Spec, generate, write_csv_folder, write_xlsx
from auditor.batch.plan import plan
from auditor.read import read_carnet

EPOCH = "1767225600"


@pytest.fixture
def mixed(tmp_path) -> Path:
    root = tmp_path / "archives"
    write_xlsx(generate(Spec(seances=1, coups=6, seed=1, table=1)), root / "2026" / "t1.xlsx")
    write_csv_folder(generate(Spec(seances=1, coups=6, seed=2, table=2)), root / "2026" / "t2")
    write_csv_folder(generate(Spec(seances=1, coups=6, seed=3, table=4, casino="Casino de Cabourg")),
                     root / "2025" / "t4", delimiter=",", decimal=".", encoding="cp1252", date_style="iso")
    (root / "2025" / "broken.xlsx").write_bytes(b"PK\x03\x04 truncated")
    return root


def summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


@pytest.mark.slow
@pytest.mark.subprocess
def test_mixed_folder_gives_one_result_per_carnet(mixed, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    out = tmp_path / "out"
    assert main(["audit", str(mixed), "--out", str(out), "--quiet", "--jobs", "2"]) == 1
    s = summary(out)
    assert [c["id"] for c in s["carnets"]] == ["2025__broken.xlsx", "2025__t4", "2026__t1.xlsx", "2026__t2"]
    verdicts = {c["id"]: c["verdict"] for c in s["carnets"]}
    assert verdicts["2025__broken.xlsx"] == "unreadable"
    # t1 and t2 (one casino, tickets generated alike) share tickets: EC82-03 across
    # carnets makes both non-compliant; t4 (another casino) has nothing.
    assert verdicts["2025__t4"] == "ok"
    shared = {p["carnet"] for f in s["cross_carnet_findings"] for p in f["across"]}
    assert shared == {"2026__t1.xlsx", "2026__t2"}
    assert {verdicts[k] for k in shared} == {"error"}
    # Their findings across carnets are theirs: counted in their rows.
    assert all(c["summary"]["errors"] == c["cross_carnet"]["errors"] > 0 for c in s["carnets"] if c["id"] in shared)
    for c in s["carnets"]:
        assert (out / c["id"] / "findings.json").exists()
    assert s["totals"]["carnets"] == 4


@pytest.mark.slow
@pytest.mark.subprocess
def test_parallel_and_serial_runs_are_identical(mixed, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    main(["audit", str(mixed), "--out", str(tmp_path / "a"), "--quiet", "--jobs", "1"])
    main(["audit", str(mixed), "--out", str(tmp_path / "b"), "--quiet", "--jobs", "2"])
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    for rel in files:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel


@pytest.mark.slow
@pytest.mark.subprocess
def test_cache_skips_unchanged_and_redoes_changed(mixed, tmp_path):
    jobs = plan([mixed])
    options = Options(generated_at="2026-01-01T00:00:00Z")
    cache = tmp_path / "cache"
    first = run_batch(jobs, tmp_path / "o1", options, cache_dir=cache)
    assert first.cached == 0
    second = run_batch(jobs, tmp_path / "o2", options, cache_dir=cache)
    assert second.cached == 4
    assert second.entries == first.entries
    for rel in ("2026__t2/findings.json", "2026__t2/report.html"):
        assert (tmp_path / "o1" / rel).read_bytes() == (tmp_path / "o2" / rel).read_bytes()
    coups = mixed / "2026" / "t2" / "coups.csv"
    coups.write_text(coups.read_text(encoding="utf-8").replace(";0,", ";9,", 1), encoding="utf-8")
    third = run_batch(jobs, tmp_path / "o3", options, cache_dir=cache)
    assert third.cached == 3
    changed = next(e for e in third.entries if e["id"] == "2026__t2")
    assert changed["summary"]["errors"] > 0


def test_fingerprint_is_the_readers_sha(mixed):
    for job in plan([mixed]):
        assert fingerprint(job.path) == read_carnet(job.path).sha256


@pytest.mark.subprocess
def test_same_ticket_at_two_tables_of_one_casino(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    root = tmp_path / "casino"
    # Same ticket numbers at tables 1 and 2 of one casino; table 9 belongs to another casino.
    write_csv_folder(generate(Spec(seances=1, coups=5, seed=1, table=1)), root / "t1")
    write_csv_folder(generate(Spec(seances=1, coups=5, seed=2, table=2)), root / "t2")
    write_csv_folder(generate(Spec(seances=1, coups=5, seed=3, table=9, casino="Autre casino")), root / "t9")
    out = tmp_path / "out"
    assert main(["audit", str(root), "--out", str(out), "--quiet", "--jobs", "1"]) == 1
    cross = summary(out)["cross_carnet_findings"]
    assert cross and all(f["code"] == "EC82-03" for f in cross)
    pairs = {tuple(sorted(p["carnet"] for p in f["across"])) for f in cross}
    assert pairs == {("t1", "t2")}
    # Each carnet's findings.json holds them, with the fingerprint summary.json gives.
    for cid in ("t1", "t2"):
        doc = json.loads((out / cid / "findings.json").read_text(encoding="utf-8"))
        assert {f["fingerprint"] for f in doc["findings"] if "across" in f} == {f["fingerprint"] for f in cross}


@pytest.mark.slow
@pytest.mark.subprocess
def test_dask_cluster_gives_the_local_summary(mixed, tmp_path, monkeypatch):
    distributed = pytest.importorskip("dask.distributed")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    main(["audit", str(mixed), "--out", str(tmp_path / "local"), "--quiet", "--jobs", "1"])
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        code = main(["audit", str(mixed), "--out", str(tmp_path / "dask"), "--quiet",
                     "--scheduler", cluster.scheduler_address])
    assert code == 1
    assert (tmp_path / "dask" / "summary.json").read_bytes() == (tmp_path / "local" / "summary.json").read_bytes()
    for c in summary(tmp_path / "local")["carnets"]:
        for name in ("findings.json", "report.html"):
            assert (tmp_path / "dask" / c["id"] / name).read_bytes() == \
                (tmp_path / "local" / c["id"] / name).read_bytes()


@pytest.mark.slow
def test_unreachable_scheduler_is_a_usage_error(mixed, tmp_path, capsys, monkeypatch):
    pytest.importorskip("dask.distributed")
    from auditor import limits

    monkeypatch.setattr(limits, "SCHEDULER_CONNECT_S", 2)   # 20 s for a user; the same path
    assert main(["audit", str(mixed), "--out", str(tmp_path / "o"), "--quiet",
                 "--scheduler", "tcp://127.0.0.1:9"]) == 2
    assert "Dask scheduler" in capsys.readouterr().err


def test_generate_compliant_and_with_breaches(tmp_path, capsys):
    assert main(["generate", str(tmp_path / "ok.xlsx"), "--seances", "2", "--coups", "8", "--seed", "5"]) == 0
    assert main(["audit", str(tmp_path / "ok.xlsx"), "--out", str(tmp_path / "o"), "--quiet"]) == 0
    assert main(["generate", str(tmp_path / "bad"), "--seances", "2", "--coups", "8",
                 "--breaches", "EC64-01,EC66-01"]) == 0
    assert "expect EC64-01, EC66-01" in capsys.readouterr().err
    assert main(["audit", str(tmp_path / "bad"), "--out", str(tmp_path / "o"), "--quiet",
                 "--format", "json"]) == 1
    doc = json.loads((tmp_path / "o" / "bad" / "findings.json").read_text(encoding="utf-8"))
    assert {f["code"] for f in doc["findings"] if f["severity"] != "info"} == {"EC64-01", "EC66-01"}
    assert main(["generate", str(tmp_path / "x"), "--breaches", "EC99-01"]) == 2


def test_progress_bar_only_on_a_terminal(monkeypatch):
    from auditor import run as batch

    assert batch._bar(3, True) is None  # pytest's stderr is not a terminal
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    bar = batch._bar(3, True)
    assert bar is not None and bar.total == 3
    bar.close()
    assert batch._bar(3, False) is None


def _stderr_cached(capsys) -> str:
    err = capsys.readouterr().err
    return next(line for line in err.splitlines() if "from the cache" in line)


@pytest.mark.slow
@pytest.mark.subprocess
def test_cache_hits_on_a_real_clock(mixed, tmp_path, monkeypatch, capsys):
    """A nightly run as users run it: no SOURCE_DATE_EPOCH, two runs, the
    second all from the cache, its outputs stamped with the second run's time."""
    import time

    from auditor.clock import generated_at

    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    cache = tmp_path / "cache"
    args = ["audit", str(mixed), "--cache", str(cache), "--jobs", "1", "--format", "html,json,xlsx"]
    assert main(args + ["--out", str(tmp_path / "night1")]) == 1
    assert "(0 from the cache)" in _stderr_cached(capsys)
    first_at = json.loads((tmp_path / "night1" / "2026__t2" / "findings.json").read_text())["generated_at"]
    while generated_at() == first_at:  # the next night: at least another second
        time.sleep(0.05)
    before = generated_at()
    assert main(args + ["--out", str(tmp_path / "night2")]) == 1
    after = generated_at()
    assert "4 carnet(s) audited (4 from the cache)" in _stderr_cached(capsys)
    for c in summary(tmp_path / "night2")["carnets"]:
        doc = json.loads((tmp_path / "night2" / c["id"] / "findings.json").read_text(encoding="utf-8"))
        assert before <= doc["generated_at"] <= after
        html = (tmp_path / "night2" / c["id"] / "report.html").read_text(encoding="utf-8")
        assert doc["generated_at"] in html and first_at not in html


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_hit_is_the_fresh_render_at_this_runs_time(mixed, tmp_path):
    """Re-stamping gives byte for byte what auditing afresh at the new time gives."""
    jobs = plan([mixed])
    formats = ("html", "json", "xlsx")
    cache = tmp_path / "cache"
    run_batch(jobs, tmp_path / "monday", Options(formats=formats, generated_at="2026-01-05T01:00:00Z"),
              cache_dir=cache)
    later = Options(formats=formats, generated_at="2026-01-06T01:00:07Z")
    hit = run_batch(jobs, tmp_path / "tuesday", later, cache_dir=cache)
    assert hit.cached == len(jobs)
    run_batch(jobs, tmp_path / "fresh", later)
    files = sorted(p.relative_to(tmp_path / "fresh") for p in (tmp_path / "fresh").rglob("*") if p.is_file())
    assert any(p.name == "annotated.xlsx" for p in files)
    for rel in files:
        assert (tmp_path / "tuesday" / rel).read_bytes() == (tmp_path / "fresh" / rel).read_bytes(), rel


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("change", [{"lang": "en"}, {"formats": ("json",)}, {"limits": "small"}])
def test_what_decides_the_audit_is_in_the_cache_key(mixed, tmp_path, change):
    from dataclasses import replace

    from auditor.limits import DEFAULT_LIMITS

    if change.get("limits") == "small":
        change = {"limits": replace(DEFAULT_LIMITS, max_rows=5)}
    jobs = plan([mixed])
    cache = tmp_path / "cache"
    run_batch(jobs, tmp_path / "a", Options(generated_at="2026-01-05T01:00:00Z"), cache_dir=cache)
    other = run_batch(jobs, tmp_path / "b", replace(Options(generated_at="2026-01-05T01:00:00Z"), **change),
                      cache_dir=cache)
    assert other.cached == 0


@pytest.mark.slow
def test_files_kept_beside_the_cache_are_the_fresh_render_at_this_runs_time(mixed, tmp_path, monkeypatch):
    """A carnet whose audit and inputs (findings across carnets, baseline, reviews) did not change gets
    its files from the cache, filled with this run's time: byte for byte a fresh render at that time."""
    from auditor import outputs

    jobs = plan([mixed])
    cache = tmp_path / "cache"
    run_batch(jobs, tmp_path / "monday", Options(generated_at="2026-01-05T01:00:00Z"), cache_dir=cache)
    made = []
    real = outputs.finish
    monkeypatch.setattr("auditor.batch.finishing.finish", lambda *a, **k: made.append(1) or real(*a, **k))
    later = Options(generated_at="2026-01-06T01:00:07Z")
    hit = run_batch(jobs, tmp_path / "tuesday", later, cache_dir=cache)
    assert hit.cached == len(jobs) and made == []        # nothing audited, nothing rendered again
    monkeypatch.undo()
    run_batch(jobs, tmp_path / "fresh", later)
    files = sorted(p.relative_to(tmp_path / "fresh") for p in (tmp_path / "fresh").rglob("*") if p.is_file())
    assert any(p.name == "report.html" for p in files)
    for rel in files:
        assert (tmp_path / "tuesday" / rel).read_bytes() == (tmp_path / "fresh" / rel).read_bytes(), rel


def test_a_review_renders_again_only_the_carnet_it_reaches(mixed, tmp_path, monkeypatch):
    from auditor import outputs
    from auditor.baseline import Baseline as Series

    jobs = plan([mixed])
    cache, reviews = tmp_path / "cache", tmp_path / "reviews.jsonl"
    options = Options(generated_at="2026-01-05T01:00:00Z")
    run_batch(jobs, tmp_path / "n1", options, cache_dir=cache, baseline=Series(None, reviews))
    doc = json.loads((tmp_path / "n1" / "2026__t2" / "findings.json").read_text(encoding="utf-8"))
    fp = next(f["fingerprint"] for f in doc["findings"] if "across" not in f)
    assert main(["review", str(tmp_path / "n1"), fp, "--status", "confirme", "--comment", "vu", "--by", "X",
                 "--reviews", str(reviews)]) == 0
    made = []
    real = outputs.finish
    monkeypatch.setattr("auditor.batch.finishing.finish",
                        lambda audit, *a, **k: made.append(audit.id) or real(audit, *a, **k))
    run_batch(jobs, tmp_path / "n2", options, cache_dir=cache, baseline=Series(None, reviews))
    assert made == ["2026__t2"]
    doc = json.loads((tmp_path / "n2" / "2026__t2" / "findings.json").read_text(encoding="utf-8"))
    assert next(f for f in doc["findings"] if f["fingerprint"] == fp)["review"]["status"] == "confirme"


def test_a_carnets_files_whose_worker_is_lost_are_made_here_among_files_recalled(mixed, tmp_path, monkeypatch):
    """A night from the cache where a review reaches one carnet: the others'
    files are recalled, that one's are made on a worker, and the worker is
    lost. The run makes them itself: that carnet's, not another's."""
    from auditor.baseline import Baseline as Series
    from auditor.batch import executor
    from auditor.batch.finishing import lost

    jobs = plan([mixed])
    cache, reviews = tmp_path / "cache", tmp_path / "reviews.jsonl"
    options = Options(generated_at="2026-01-05T01:00:00Z")
    run_batch(jobs, tmp_path / "n1", options, cache_dir=cache, baseline=Series(None, reviews))
    reached = "2026__t2"
    assert [j.id for j in jobs].index(reached) > 0   # its index is not its place among the tasks
    doc = json.loads((tmp_path / "n1" / reached / "findings.json").read_text(encoding="utf-8"))
    fp = next(f["fingerprint"] for f in doc["findings"] if "across" not in f)
    assert main(["review", str(tmp_path / "n1"), fp, "--status", "confirme", "--comment", "vu", "--by", "X",
                 "--reviews", str(reviews)]) == 0
    sent = []

    def workers_lost(self, tasks, here=False):
        sent.extend(index for index, _ in tasks)
        return (lost(index, task, self.options, "killed") for index, task in tasks)

    monkeypatch.setattr(executor.Executor, "finishes", workers_lost)
    run_batch(jobs, tmp_path / "n2", options, cache_dir=cache, baseline=Series(None, reviews))
    assert [jobs[i].id for i in sent] == [reached]
    doc = json.loads((tmp_path / "n2" / reached / "findings.json").read_text(encoding="utf-8"))
    assert next(f for f in doc["findings"] if f["fingerprint"] == fp)["review"]["status"] == "confirme"
    assert sorted(p.name for p in (tmp_path / "n2").iterdir() if p.is_dir()) == sorted(j.id for j in jobs)


def test_a_carnet_audited_in_this_process_freezes_nothing(tmp_path):
    """The local page audits a carnet alone in its own long-lived process:
    freezing the collector's objects there would keep what each run leaves
    to collect for ever (only a batch's workers, which end with it, freeze)."""
    import gc

    from auditor.batch.plan import plan
    from auditor.run import run
    from auditor.synth.generate import Spec, generate, write_csv_folder

    carnet = write_csv_folder(generate(Spec(seances=1, coups=3, mises=2)), tmp_path / "c")
    before = gc.get_freeze_count()
    run(plan([carnet]), tmp_path / "out", Options())
    assert gc.get_freeze_count() == before


def test_a_carnets_files_made_in_a_worker_come_back_without_their_text(tmp_path):
    """A worker writes the files it makes and keeps them beside the cache
    entry; what it hands back to the run (through its pipe) holds neither
    the files nor their text with time slots, only what the summary needs."""
    import pickle

    from auditor.batch.cache import AuditOrder
    from auditor.batch.executors import run_job
    from auditor.batch.finishing import FinishTask, recall
    from auditor.batch.plan import plan
    from auditor.synth.generate import Spec, generate, write_csv_folder

    (job,) = plan([write_csv_folder(generate(Spec(seances=1, coups=6, mises=3)), tmp_path / "c")])
    kept = AuditOrder(job, tmp_path / "0.pickle", None).keep(run_job(0, job, Options()))
    task = FinishTask(job, kept.path, tmp_path / "out", memo=tmp_path / "memo.pickle", digest="d")
    fin = task.perform(0, Options(), catch=True)
    report = (tmp_path / "out" / job.id / "report.html").read_bytes()
    assert fin.files == {} and fin.stamped == {} and fin.entry["id"] == job.id
    assert len(pickle.dumps(fin)) < len(report) // 4
    # The memo kept them, with their time slots, for a run with the same inputs.
    assert set(recall(tmp_path / "memo.pickle", "d").stamped) == {"findings.json", "report.html"}
