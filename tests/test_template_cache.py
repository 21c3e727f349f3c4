"""The report's templates are compiled once per user and jinja2 version, then
loaded compiled by every later process (`html_report._bytecode_cache`): the
pages stay byte-identical, and a damaged or foreign cache entry is never used."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.report import html_report

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_carnets" / "compliant" / "forges-table3.xlsx"


def test_the_cache_is_named_by_the_options_that_shape_the_compiled_code():
    cache = html_report.environment().bytecode_cache
    assert cache is not None
    assert cache.pattern.startswith("__ecarte_report_") and cache.pattern.endswith("_%s.cache")
    before = cache.pattern
    options = dict(html_report.OPTIONS)
    try:
        html_report.OPTIONS["trim_blocks"] = False
        assert html_report._bytecode_cache().pattern != before
    finally:
        html_report.OPTIONS.clear()
        html_report.OPTIONS.update(options)


def _audit(tmp: Path, out: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "TMPDIR": str(tmp), "SOURCE_DATE_EPOCH": "1767225600"}
    return subprocess.run([sys.executable, "-m", "auditor", "audit", str(SAMPLE), "--out", str(out), "--quiet",
                           "--fail-on", "never"], capture_output=True, text=True, env=env, cwd=tmp)


@pytest.mark.subprocess
def test_later_runs_load_the_compiled_templates_and_write_the_same_page(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    first = _audit(tmp, tmp_path / "first")
    assert first.returncode == 0, first.stderr
    caches = list(tmp.glob("_jinja2-cache-*/__ecarte_report_*.cache"))
    assert len(caches) >= 2, "report.html.j2 and the partials it includes are cached"
    second = _audit(tmp, tmp_path / "second")
    assert second.returncode == 0, second.stderr
    page = "forges-table3.xlsx/report.html"
    assert (tmp_path / "second" / page).read_bytes() == (tmp_path / "first" / page).read_bytes()
    # A damaged entry (a crash while writing, a disk fault) is compiled afresh, never run.
    for cache in caches:
        cache.write_bytes(cache.read_bytes()[:40])
    third = _audit(tmp, tmp_path / "third")
    assert third.returncode == 0, third.stderr
    assert (tmp_path / "third" / page).read_bytes() == (tmp_path / "first" / page).read_bytes()
