"""The shipped profile is read once per process while its file is unchanged
(a worker asks for it once per carnet), and read again when it changes (a
long-lived process: the local page, a test run)."""

from __future__ import annotations

import os
import shutil

import pytest

import auditor.catalogue as catalogue
from auditor.catalogue import load_profile, rules_root


def test_the_shipped_profile_is_read_once_and_is_the_file():
    first = load_profile()
    assert load_profile() is first
    assert first == load_profile(rules_root().joinpath("profile.toml"))   # a path: read as it is, each time
    assert load_profile(book_size=first.book_size + 1).book_size == first.book_size + 1
    assert load_profile() is first   # overrides leave the shipped profile alone


@pytest.fixture
def own_profile(tmp_path, monkeypatch):
    """A copy of the shipped profile.toml, in place of the shipped one, nothing cached yet."""
    path = tmp_path / "profile.toml"
    shutil.copy(rules_root().joinpath("profile.toml"), path)
    monkeypatch.setattr(catalogue, "rules_root", lambda: tmp_path)
    monkeypatch.setattr(catalogue, "_SHIPPED", [])
    return path


def test_a_changed_profile_file_is_read_again(own_profile):
    path = own_profile
    before = load_profile()
    assert load_profile() is before
    text = path.read_text(encoding="utf-8")
    # A change of the same size, within the same second: the file's nanosecond time tells it.
    size = f"book_size = {before.book_size}"
    other = f"book_size = {before.book_size + 1}"
    assert size in text and len(other) == len(size)
    st = path.stat()
    path.write_text(text.replace(size, other), encoding="utf-8")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    after = load_profile()
    assert after.book_size == before.book_size + 1 and load_profile() is after


def test_a_profile_put_in_place_with_its_old_time_is_read_again(own_profile):
    """rsync -t and cp -p keep the file's time: another file (a new inode) of
    the same size and the same modification time is still another profile."""
    path = own_profile
    before = load_profile()
    st = path.stat()
    text = path.read_text(encoding="utf-8").replace(f"book_size = {before.book_size}",
                                                   f"book_size = {before.book_size + 1}")
    new = path.with_name("profile.toml.part")
    new.write_text(text, encoding="utf-8")
    os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(new, path)
    assert path.stat().st_mtime_ns == st.st_mtime_ns and path.stat().st_size == st.st_size
    assert load_profile().book_size == before.book_size + 1
