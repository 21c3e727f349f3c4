"""Carnets whose names are not UTF-8: on POSIX a file name is bytes, and a
folder copied from a Windows share often keeps its Windows-1252 names
(`café` as `caf\\xe9`). Python hands them over as surrogate escapes, which
no output can write: they are shown as Windows-1252 reads them, and every
output, the cache, the history and `verify` work on them."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from auditor.cli import main
from auditor.names import shown_name
from auditor.synth.generate import Spec, generate, write_csv_folder, write_xlsx

pytestmark = pytest.mark.skipif(sys.platform == "win32" or sys.getfilesystemencoding() != "utf-8",
                                reason="file names are bytes on POSIX with a UTF-8 file system encoding")


def _named(raw: bytes) -> str:
    return os.fsdecode(raw)


@given(st.binary(max_size=12))
def test_every_name_is_shown_as_text_every_output_can_write(raw):
    name = shown_name(os.fsdecode(raw))
    name.encode("utf-8")                       # never raises
    try:
        assert name == raw.decode("utf-8")     # a UTF-8 name is kept as it is
    except UnicodeDecodeError:
        assert "\ufffd" in name or name != os.fsdecode(raw)


def test_windows_1252_bytes_read_as_windows_reads_them():
    assert shown_name(_named(b"caf\xe9")) == "café"
    assert shown_name(_named(b"t\xe9\x81.xlsx")) == "té\ufffd.xlsx"   # 0x81: none in Windows-1252
    assert shown_name("déjà vu") == "déjà vu"


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_batch_of_names_not_in_utf8_audits_and_verifies(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    root = tmp_path / "archives"
    folder = Path(_named(os.fsencode(root) + b"/caf\xe9"))
    write_csv_folder(generate(Spec(seances=1, coups=4, seed=3, table=2)), folder)
    (folder / _named(b"notes\xff.csv")).write_text("a;b\n1;2\n", encoding="utf-8")
    write_xlsx(generate(Spec(seances=1, coups=4, seed=4, table=3)), Path(_named(os.fsencode(root) + b"/t\xe9.xlsx")))
    args = ["audit", str(root), "--format", "html,json,xlsx,pdf", "--cache", str(tmp_path / "cache"),
            "--history", str(tmp_path / "history"), "--quiet", "--fail-on", "never", "--jobs", "2"]
    for night in ("n1", "n2"):   # the second from the cache
        assert main(args + ["--out", str(tmp_path / night)]) == 0
        summary = json.loads((tmp_path / night / "summary.json").read_text(encoding="utf-8"))
        assert sorted(Path(c["path"]).name for c in summary["carnets"]) == ["café", "té.xlsx"]
        for path in (tmp_path / night).rglob("*"):
            if path.suffix in (".json", ".html"):
                path.read_bytes().decode("utf-8")     # valid UTF-8 throughout
    capsys.readouterr()
    assert main(["verify", "--lang", "en", str(tmp_path / "n2" / "caf_" / "proces-verbal.pdf"), str(folder)]) == 1
    said = capsys.readouterr().out.splitlines()
    assert [line for line in said if line.startswith("[NO]")] == ["[NO] signature: the procès-verbal is not signed"]
    assert any("notesÿ.csv" in line and line.startswith("[OK]") for line in said)
