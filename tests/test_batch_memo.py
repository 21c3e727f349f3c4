"""What a batch makes of its cached carnets, kept beside the cache: the checks
over the batch, summary.json and index.html. A night whose carnets all come
from the cache makes none of them again, and its files are byte for byte
what a fresh run at its time gives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from auditor.batch import Options
from auditor.batch.cache import BATCH_FOLDER
from auditor.batch.plan import plan
from auditor.run import run as run_batch
from auditor.synth.generate import Spec, generate, write_csv_folder

MONDAY, TUESDAY = "2026-01-05T01:00:00Z", "2026-01-06T01:00:07Z"


@pytest.fixture
def shared(tmp_path) -> Path:
    """Three carnets of one casino whose tickets were generated alike: the
    checks over the batch find findings across carnets (EC82-03)."""
    root = tmp_path / "night"
    for table in (1, 2, 3):
        write_csv_folder(generate(Spec(seances=1, coups=5, seed=7, table=table)), root / f"t{table}")
    return root


def _files(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def _watch(monkeypatch) -> list[str]:
    """What the run makes again: the checks over the batch, the batch's two files."""
    from auditor import across, outputs

    made: list[str] = []
    check, render = across.check_batch, outputs._batch_files
    monkeypatch.setattr("auditor.across.check_batch", lambda *a, **k: made.append("checks") or check(*a, **k))
    monkeypatch.setattr("auditor.outputs._batch_files", lambda *a, **k: made.append("files") or render(*a, **k))
    return made


def test_a_night_from_the_cache_makes_nothing_of_the_batch_again(shared, tmp_path, monkeypatch):
    jobs = plan([shared])
    cache = tmp_path / "cache"
    first = run_batch(jobs, tmp_path / "monday", Options(generated_at=MONDAY), cache_dir=cache)
    assert first.cross_findings, "the batch must have findings across carnets for this test to mean anything"
    assert sorted(p.name.split(".")[1] for p in (cache / BATCH_FOLDER).iterdir()) == ["checks", "files"]
    made = _watch(monkeypatch)
    hit = run_batch(jobs, tmp_path / "tuesday", Options(generated_at=TUESDAY), cache_dir=cache)
    assert hit.cached == len(jobs) and made == []
    assert hit.cross_findings == run_batch(jobs, tmp_path / "fresh", Options(generated_at=TUESDAY)).cross_findings
    tuesday, fresh = _files(tmp_path / "tuesday"), _files(tmp_path / "fresh")
    assert {"summary.json", "index.html"} <= set(fresh) and tuesday.keys() == fresh.keys()
    for name in fresh:
        assert tuesday[name] == fresh[name], name
    assert json.loads(tuesday["summary.json"])["generated_at"] == TUESDAY


@pytest.mark.slow
def test_a_changed_carnet_checks_the_batch_again(shared, tmp_path, monkeypatch):
    jobs = plan([shared])
    cache = tmp_path / "cache"
    run_batch(jobs, tmp_path / "monday", Options(generated_at=MONDAY), cache_dir=cache)
    write_csv_folder(generate(Spec(seances=1, coups=6, seed=8, table=2)), shared / "t2")
    made = _watch(monkeypatch)
    run_batch(jobs, tmp_path / "tuesday", Options(generated_at=TUESDAY), cache_dir=cache)
    assert made == ["checks", "files"]
    monkeypatch.undo()
    run_batch(jobs, tmp_path / "fresh", Options(generated_at=TUESDAY))
    assert _files(tmp_path / "tuesday") == _files(tmp_path / "fresh")


@pytest.mark.slow
def test_a_renamed_or_reordered_carnet_is_another_batch(shared, tmp_path, monkeypatch):
    """The places of a finding across carnets name each carnet's path: a
    carnet renamed (as people rename folders between two nights) is checked again."""
    jobs = plan([shared])
    cache = tmp_path / "cache"
    run_batch(jobs, tmp_path / "monday", Options(generated_at=MONDAY), cache_dir=cache)
    (shared / "t3").rename(shared / "t3-bis")
    made = _watch(monkeypatch)
    renamed = plan([shared])
    run_batch(renamed, tmp_path / "tuesday", Options(generated_at=TUESDAY), cache_dir=cache)
    assert "checks" in made
    monkeypatch.undo()
    run_batch(renamed, tmp_path / "fresh", Options(generated_at=TUESDAY))
    assert _files(tmp_path / "tuesday") == _files(tmp_path / "fresh")
    assert "t3-bis" in _files(tmp_path / "tuesday")["summary.json"].decode("utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("damage", [b"", b"not a pickle", b"\x80\x05K\x01."])
def test_a_damaged_batch_file_is_made_again(shared, tmp_path, damage):
    jobs = plan([shared])
    cache = tmp_path / "cache"
    run_batch(jobs, tmp_path / "monday", Options(generated_at=MONDAY), cache_dir=cache)
    for kept in (cache / BATCH_FOLDER).iterdir():
        kept.write_bytes(damage)
    run_batch(jobs, tmp_path / "tuesday", Options(generated_at=TUESDAY), cache_dir=cache)
    run_batch(jobs, tmp_path / "fresh", Options(generated_at=TUESDAY))
    assert _files(tmp_path / "tuesday") == _files(tmp_path / "fresh")
    assert all(p.stat().st_size > len(damage) for p in (cache / BATCH_FOLDER).iterdir())   # kept anew


@pytest.mark.slow
def test_only_the_newest_batches_are_kept(tmp_path, monkeypatch):
    monkeypatch.setattr("auditor.batch.cache.KEEP_BATCHES", 1)
    cache = tmp_path / "cache"
    for n in range(3):
        root = tmp_path / f"casino{n}"
        for table in (1, 2):
            write_csv_folder(generate(Spec(seances=1, coups=3, seed=n, table=table)), root / f"t{table}")
        run_batch(plan([root]), tmp_path / f"out{n}", Options(generated_at=MONDAY), cache_dir=cache)
        time.sleep(0.02)   # distinct modification times
    kept = sorted((cache / BATCH_FOLDER).iterdir())
    assert len(kept) == 2 and {p.name.rsplit(".", 2)[0] for p in kept} == {kept[0].name.rsplit(".", 2)[0]}
    made: list[str] = []
    from auditor import across

    check = across.check_batch
    monkeypatch.setattr("auditor.across.check_batch", lambda *a, **k: made.append("checks") or check(*a, **k))
    run_batch(plan([tmp_path / "casino2"]), tmp_path / "again", Options(generated_at=TUESDAY), cache_dir=cache)
    assert made == []   # the newest batch is the one kept


@pytest.mark.slow
@pytest.mark.subprocess
def test_two_real_nights_the_second_imports_no_pandas(shared, tmp_path):
    """As a controller's nights run: the command twice on the real clock, the
    second all from the cache. Its summary and index carry its own time, and
    it never imports pandas (its cost would be most of such a night)."""
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    probe = ("import sys\nfrom auditor.cli import main\n"
             "rc = main(sys.argv[1:])\nprint('pandas' in sys.modules, rc)\n")
    nights = []
    for night in ("n1", "n2"):
        args = ["audit", str(shared), "--out", str(tmp_path / night), "--cache", str(tmp_path / "cache"),
                "--jobs", "2", "--quiet", "--fail-on", "never"]
        done = subprocess.run([sys.executable, "-c", probe, *args], env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr
        nights.append(done.stdout.split())
        if night == "n1":
            first_at = json.loads((tmp_path / "n1" / "summary.json").read_text(encoding="utf-8"))["generated_at"]
            while time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) == first_at:
                time.sleep(0.05)
    # The first night's carnets are audited by its workers: the command itself
    # runs only the checks over the batch, which need no pandas either.
    assert nights == [["False", "0"], ["False", "0"]]
    summary = json.loads((tmp_path / "n2" / "summary.json").read_text(encoding="utf-8"))
    index = (tmp_path / "n2" / "index.html").read_text(encoding="utf-8")
    assert summary["generated_at"] > first_at and summary["cross_carnet"]
    assert f'datetime="{summary["generated_at"]}"' in index and first_at not in index
    report = (tmp_path / "n2" / "t1" / "report.html").read_text(encoding="utf-8")
    assert f'datetime="{summary["generated_at"]}"' in report


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_night_after_a_review_makes_the_reviewed_report_without_pandas(shared, tmp_path):
    """A controller's night after a decision recorded during the day (the
    command, the real clock, the shared review file, the history): the
    reviewed carnet's files are made again from its kept draft, which needs
    neither pandas nor the audit, and show the decision; the history's run
    file and dashboard need no pandas either."""
    from auditor.cli import main

    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    probe = ("import sys\nfrom auditor.cli import main\n"
             "rc = main(sys.argv[1:])\nprint('pandas' in sys.modules, rc)\n")
    reviews = tmp_path / "reviews.jsonl"

    def night(out: str, baseline: str) -> list[str]:
        args = ["audit", str(shared), "--out", str(tmp_path / out), "--cache", str(tmp_path / "cache"),
                "--baseline", str(tmp_path / baseline), "--reviews", str(reviews), "--fail-on-new",
                "--history", str(tmp_path / "history"),
                "--jobs", "2", "--quiet", "--fail-on", "never"]
        done = subprocess.run([sys.executable, "-c", probe, *args], env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert night("n1", "none") == ["False", "0"]
    doc = json.loads((tmp_path / "n1" / "t2" / "findings.json").read_text(encoding="utf-8"))
    fp = next(f["fingerprint"] for f in doc["findings"] if "across" not in f)
    assert main(["review", str(tmp_path / "n1"), fp, "--status", "justifie", "--comment", "vu", "--by", "Contrôleuse Lebrun",
                 "--reviews", str(reviews)]) == 0
    assert night("n2", "n1") == ["False", "0"]
    doc = json.loads((tmp_path / "n2" / "t2" / "findings.json").read_text(encoding="utf-8"))
    assert next(f for f in doc["findings"] if f["fingerprint"] == fp)["review"]["status"] == "justifie"
    assert "Contrôleuse Lebrun" in (tmp_path / "n2" / "t2" / "report.html").read_text(encoding="utf-8")
    assert "Contrôleuse Lebrun" not in (tmp_path / "n1" / "t2" / "report.html").read_text(encoding="utf-8")
    assert (tmp_path / "n2" / "dashboard" / "index.html").is_file()


def test_the_kept_checks_know_the_rules_across_a_tables_carnets(shared, tmp_path):
    """The dashboard of a night from the cache takes them from the kept checks (without importing the rules)."""
    from auditor.batch.cache import recall_batch
    from auditor.checks.archive import archive_codes

    run_batch(plan([shared]), tmp_path / "monday", Options(generated_at=MONDAY), cache_dir=tmp_path / "cache")
    [kept] = (tmp_path / "cache" / BATCH_FOLDER).glob("*.checks.pickle")
    assert recall_batch(kept).archive_codes == archive_codes() != ()


def _imported_after(statements: str, watched: tuple[str, ...]) -> list[str]:
    """Which of the modules `watched` a fresh interpreter has imported once it ran `statements`."""
    code = f"import sys\n{statements}\nprint(sorted(m for m in {watched!r} if m in sys.modules))\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.replace("'", '"'))


def test_what_a_night_from_the_cache_runs_imports_no_pandas():
    """The modules a night from the cache runs (the command, the run, its
    cache, the outputs, finishing a kept draft) import neither pandas nor
    numpy: the audit's modules do, where they are used. (The nights above
    show it on the command; this says which module broke it, at once.)"""
    assert _imported_after(
        "import auditor.cli, auditor.commands.audit, auditor.run, auditor.batch.cache, auditor.batch.finishing\n"
        "import auditor.batch.executor, auditor.outputs, auditor.report.report_view, auditor.report.drafts\n"
        "import auditor.report.pv, auditor.report.index_view, auditor.report.archive_view, auditor.baseline",
        ("pandas", "numpy", "pyarrow")) == []


def test_the_checks_over_a_batch_import_no_pandas():
    """A cold night's command runs the checks over the batch and makes the
    findings across carnets, never a carnet's audit (its workers do): what it
    imports for them must not bring pandas nor Arrow in (over half a second of
    the command's CPU, taken from its workers under --jobs 2)."""
    assert _imported_after(
        "import auditor.across, auditor.checks.archive, auditor.derived.table_archive, auditor.findings\n"
        "from auditor.checks import registered_batch\nregistered_batch()", ("pandas", "pyarrow")) == []


def test_a_part_file_a_stopped_run_left_goes_once_stale(shared, tmp_path):
    """A run stopped while it kept a batch file (Ctrl-C, a full disk) leaves
    its part file; the next run that keeps one removes it once it is surely
    nobody's (an hour old), never a fresh one another run is writing."""
    from auditor.batch.cache import STALE_PART_S

    folder = tmp_path / "cache" / BATCH_FOLDER
    folder.mkdir(parents=True)
    stale, fresh = folder / ".x.checks.pickle.123.part", folder / ".y.checks.pickle.456.part"
    for part in (stale, fresh):
        part.write_bytes(b"half")
    past = time.time() - STALE_PART_S - 60
    os.utime(stale, (past, past))
    run_batch(plan([shared]), tmp_path / "monday", Options(generated_at=MONDAY), cache_dir=tmp_path / "cache")
    assert not stale.exists() and fresh.exists()


def test_half_written_entries_go_once_stale_and_nothing_else_of_the_cache(tmp_path):
    """The half-written entries (`<key>.tmp<pid>`) of workers killed as they
    kept an audit: removed an hour old, folders or files; a young one (another
    run's, being written), a whole entry, the batch files and a folder that
    is no prefix of entries are kept."""
    from auditor.batch.cache import STALE_PART_S, Cache

    root = tmp_path / "cache"
    cache = Cache(root, Options())
    assert cache.remove_stale_parts() == 0   # no cache folder yet
    key = "ab" + "0" * 62
    whole, old, young = root / "ab" / key, root / "ab" / f"{key}.tmp123", root / "ab" / f"{key}.tmp456"
    old_file, other = root / "cd" / f"{'cd' + '1' * 62}.tmp7", root / "cd" / ("cd" + "2" * 62)
    for folder in (whole, old / "deep", young, other):
        folder.mkdir(parents=True)
        (folder / "carnet-audit.pickle").write_bytes(b"x")
    old_file.write_bytes(b"half")
    for name in (f"{BATCH_FOLDER}/.x.tmp1", "abc/y.tmp1"):   # not a prefix of entries
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"kept")
    past = time.time() - STALE_PART_S - 60
    for path in (old, old_file, root / BATCH_FOLDER / ".x.tmp1", root / "abc" / "y.tmp1"):
        os.utime(path, (past, past))
    assert cache.remove_stale_parts() == 2
    assert not old.exists() and not old_file.exists()
    assert all(p.exists() for p in (whole, young, other, root / BATCH_FOLDER / ".x.tmp1", root / "abc" / "y.tmp1"))


def test_the_code_digest_reads_the_packages_python_files_and_skips_what_cannot_be_read(tmp_path, monkeypatch):
    """The cache key's digest of the package's code: a file changed is another
    key; an editor's lock file (a dangling `.#name.py` link) is no code, never a traceback."""
    from auditor.batch import cache

    pkg = tmp_path / "auditor"
    (pkg / "batch").mkdir(parents=True)
    (pkg / "batch" / "cache.py").write_text("x = 1\n")
    (pkg / "rules.py").write_text("y = 2\n")
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "stale.py").write_text("not code of the package\n")
    monkeypatch.setattr(cache, "__file__", str(pkg / "batch" / "cache.py"))
    first = cache._code_digest()
    (pkg / ".#rules.py").symlink_to(tmp_path / "nowhere")
    (pkg / "__pycache__" / "stale.py").write_text("changed\n")
    assert cache._code_digest() == first
    (pkg / "rules.py").write_text("y = 3\n")
    assert cache._code_digest() != first


def test_a_baseline_kept_beside_the_cache_is_the_one_read(shared, tmp_path, monkeypatch):
    """A controller's night keeps its output folder, as the next night's
    baseline reads it, beside the cache: the next night reads it back
    instead of the JSON files, and reads the files again once one changed
    (a findings.json edited by hand, a folder copied over)."""
    from dataclasses import asdict

    from auditor.baseline import Baseline
    from auditor.batch.cache import previous_memo
    from auditor.cli import main

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    cache, night = tmp_path / "cache", tmp_path / "n1"
    assert main(["audit", str(shared), "--out", str(night), "--cache", str(cache), "--baseline",
                 str(tmp_path / "none"), "--quiet", "--fail-on", "never", "--jobs", "1"]) == 0
    memo = previous_memo(cache, night)
    assert memo.path.is_file()
    read = []
    real = json.loads
    monkeypatch.setattr("auditor.baseline.json.loads", lambda *a, **k: read.append(1) or real(*a, **k))
    kept = Baseline(night, memo=memo).previous
    assert read == []                                   # no JSON read: the kept run
    monkeypatch.undo()
    assert asdict(kept) == asdict(Baseline(night).previous) and kept.carnets
    path = night / "t2" / "findings.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["findings"] = doc["findings"][1:]
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")
    again = Baseline(night, memo=previous_memo(cache, night)).previous
    assert asdict(again) == asdict(Baseline(night).previous) != asdict(kept)
