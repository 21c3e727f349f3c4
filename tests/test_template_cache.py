"""What every process would otherwise redo at start is kept once per user
(`auditor.user_cache`): the report's templates compiled, the package's TOML
files parsed. The outputs stay byte-identical; a damaged entry, an edited
file, a folder that is not the user's alone are never trusted; nothing goes
to the temp folder (the local page leaves it empty)."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from auditor import user_cache
from auditor.report import html_report

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_carnets" / "compliant" / "forges-table3.xlsx"
PAGE = "forges-table3.xlsx/report.html"


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    home = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    user_cache.folder.cache_clear()
    yield home / "ecarte-auditor"
    user_cache.folder.cache_clear()


def test_the_template_cache_is_named_by_the_options_that_shape_the_compiled_code(cache_home):
    cache = html_report._bytecode_cache()
    assert cache is not None and Path(cache.directory) == cache_home / "templates"
    assert cache.pattern.startswith("__ecarte_report_") and cache.pattern.endswith("_%s.cache")
    options = dict(html_report.OPTIONS)
    try:
        html_report.OPTIONS["trim_blocks"] = False
        assert html_report._bytecode_cache().pattern != cache.pattern
    finally:
        html_report.OPTIONS.clear()
        html_report.OPTIONS.update(options)


def test_toml_is_parsed_once_then_read_back_equal(cache_home):
    text = 'code = "EC64-01"\n[messages]\nfr = "Numérotation"\nn = 3\n'
    first = user_cache.toml_loads(text)
    [entry] = (cache_home / "toml").glob("*.pickle")
    assert user_cache.toml_loads(text) == first == tomllib.loads(text)
    # An edited file is another entry, never the stale one.
    assert user_cache.toml_loads(text.replace("3", "4"))["messages"]["n"] == 4
    # A damaged entry (torn write, disk fault) is parsed afresh.
    entry.write_bytes(entry.read_bytes()[:-5] + b"xxxxx")
    assert user_cache.toml_loads(text) == first
    entry.write_bytes(b"")
    assert user_cache.toml_loads(text) == first


def test_a_cache_folder_others_can_write_is_not_used(cache_home):
    (cache_home / "toml").mkdir(parents=True)
    os.chmod(cache_home / "toml", 0o777)
    assert user_cache.folder("toml") is None
    assert user_cache.toml_loads("a = 1\n") == {"a": 1}
    assert not list((cache_home / "toml").iterdir())


def test_a_bad_toml_still_raises_as_tomllib_does(cache_home):
    with pytest.raises(tomllib.TOMLDecodeError):
        user_cache.toml_loads("a = \n")


def _audit(tmp: Path, cache: Path, out: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "TMPDIR": str(tmp), "XDG_CACHE_HOME": str(cache), "SOURCE_DATE_EPOCH": "1767225600"}
    return subprocess.run([sys.executable, "-m", "auditor", "audit", str(SAMPLE), "--out", str(out), "--quiet",
                           "--fail-on", "never"], capture_output=True, text=True, env=env, cwd=tmp)


@pytest.mark.subprocess
def test_later_runs_load_what_the_first_kept_and_write_the_same_page(tmp_path):
    tmp, cache = tmp_path / "tmp", tmp_path / "cache"
    tmp.mkdir()
    first = _audit(tmp, cache, tmp_path / "first")
    assert first.returncode == 0, first.stderr
    templates = list((cache / "ecarte-auditor" / "templates").glob("__ecarte_report_*.cache"))
    assert len(templates) >= 2, "report.html.j2 and the partials it includes are kept compiled"
    assert len(list((cache / "ecarte-auditor" / "toml").glob("*.pickle"))) >= 45, "the catalogue's files"
    assert not list(tmp.iterdir()), "nothing kept in the temp folder"
    second = _audit(tmp, cache, tmp_path / "second")
    assert second.returncode == 0, second.stderr
    assert (tmp_path / "second" / PAGE).read_bytes() == (tmp_path / "first" / PAGE).read_bytes()
    # Damaged entries are made afresh, never run.
    for entry in (cache / "ecarte-auditor").rglob("*.*"):
        entry.write_bytes(entry.read_bytes()[:40])
    third = _audit(tmp, cache, tmp_path / "third")
    assert third.returncode == 0, third.stderr
    assert (tmp_path / "third" / PAGE).read_bytes() == (tmp_path / "first" / PAGE).read_bytes()
    assert (tmp_path / "third" / "forges-table3.xlsx" / "findings.json").read_bytes() == \
        (tmp_path / "first" / "forges-table3.xlsx" / "findings.json").read_bytes()
