"""`ecarte-audit shortcut`: the page in the applications menu and on the
desktop, started without a terminal.

The .desktop file is checked key by key against the Desktop Entry
Specification 1.5 (and by `desktop-file-validate` when it is installed);
its Exec line is parsed back as a launcher would and run: the page starts
and the browser is opened; a second click opens the same page; `--remove`
takes everything away. Windows' shortcuts are checked through the
PowerShell script that makes them.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from auditor.cli import main
from auditor.serve import shortcut

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = Path(sys.executable).parent

# Desktop Entry Specification 1.5, "Recognized desktop entry keys".
KNOWN_KEYS = {"Type", "Version", "Name", "GenericName", "NoDisplay", "Comment", "Icon", "Hidden", "OnlyShowIn",
              "NotShowIn", "DBusActivatable", "TryExec", "Exec", "Path", "Terminal", "Actions", "MimeType",
              "Categories", "Implements", "Keywords", "StartupNotify", "StartupWMClass", "URL",
              "PrefersNonDefaultGPU", "SingleMainWindow"}
LOCALISED = {"Name", "GenericName", "Comment", "Keywords", "Icon"}
BOOLEAN = {"NoDisplay", "Hidden", "DBusActivatable", "Terminal", "StartupNotify", "PrefersNonDefaultGPU",
           "SingleMainWindow"}
MAIN_CATEGORIES = {"AudioVideo", "Audio", "Video", "Development", "Education", "Game", "Graphics", "Network",
                   "Office", "Science", "Settings", "System", "Utility"}


def parse_exec(value: str) -> list[str]:
    """An Exec value (already a desktop string) as a launcher splits it."""
    text = value.replace("\\\\", "\\")      # the string's own escape first
    args, current, quoted, i, started = [], "", False, 0, False
    while i < len(text):
        c = text[i]
        if quoted:
            if c == "\\" and i + 1 < len(text) and text[i + 1] in '"`$\\':
                current += text[i + 1]
                i += 1
            elif c == '"':
                quoted = False
            else:
                assert c not in "`$" or False, f"unescaped {c!r} in quotes"
                current += c
        elif c == '"':
            quoted, started = True, True
        elif c == " ":
            if current or started:
                args.append(current)
            current, started = "", False
        else:
            assert c not in shortcut._RESERVED, f"reserved {c!r} outside quotes: {value}"
            current += c
        i += 1
    assert not quoted, "unterminated quote"
    if current or started:
        args.append(current)
    return [a.replace("%%", "%") for a in args]


def validate(text: str) -> dict[str, str]:
    """The entry's keys, every rule of the specification this file can break checked."""
    lines = text.split("\n")
    assert text.endswith("\n") and lines[0] == "[Desktop Entry]"
    keys: dict[str, str] = {}
    for line in lines[1:]:
        if not line or line.startswith("#"):
            continue
        assert not line.startswith("["), "one group only"
        m = re.fullmatch(r"([A-Za-z0-9-]+)(\[[a-z]{2,3}(_[A-Z]{2})?(@\w+)?\])?=(.*)", line)
        assert m, f"not a key=value line: {line!r}"
        key, locale, value = m.group(1), m.group(2), m.group(5)
        assert key in KNOWN_KEYS, key
        assert locale is None or key in LOCALISED, line
        assert line.split("=", 1)[0] not in keys, f"{line.split('=', 1)[0]} twice"
        keys[line.split("=", 1)[0]] = value
        assert not re.search(r"\\[^snrt\\;]", value), f"bad escape in {line!r}"
        if key in BOOLEAN:
            assert value in ("true", "false"), line
    assert keys["Type"] == "Application" and keys["Version"] == "1.5"
    assert keys.get("Name") and keys.get("Exec")
    categories = keys["Categories"]
    assert categories.endswith(";") and set(categories[:-1].split(";")) & MAIN_CATEGORIES
    assert keys["Keywords"].endswith(";") and keys["Keywords[fr]"].endswith(";")
    assert os.path.isabs(keys["Icon"]) and Path(keys["Icon"]).is_file()
    return keys


@pytest.mark.parametrize("argv", [
    ["/usr/bin/ecarte-audit-page"],
    ["/home/jean dupont/.local/pipx/venvs/ecarte-auditor/bin/ecarte-audit-page"],
    ['/opt/we"ird/$HOME/`x`/back\\slash/100%/bin/python', "-m", "auditor.serve.shortcut"],
    ["/home/zoé/l'écarté/bin/ecarte-audit-page", ""],
])
def test_exec_quoting_round_trips(argv):
    assert parse_exec(shortcut.exec_quote(argv)) == argv


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A home of its own: XDG folders, a French desktop folder (user-dirs.dirs)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / ".local" / "share"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))
    (tmp_path / ".config").mkdir()
    (tmp_path / ".config" / "user-dirs.dirs").write_text('XDG_DESKTOP_DIR="$HOME/Bureau"\n'
                                                         'XDG_DOCUMENTS_DIR="$HOME/Documents"\n')
    (tmp_path / "Bureau").mkdir()
    return tmp_path


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="freedesktop")
def test_shortcut_adds_a_valid_menu_and_desktop_entry_and_removes_them(home, capsys, monkeypatch):
    monkeypatch.setenv("LANG", "fr_FR.UTF-8")
    for var in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(var, raising=False)
    assert main(["shortcut"]) == 0
    out = capsys.readouterr().out
    menu = home / ".local" / "share" / "applications" / "ecarte-audit.desktop"
    desktop = home / "Bureau" / "ecarte-audit.desktop"
    assert f"Raccourci ajouté : {menu}" in out and f"Raccourci ajouté : {desktop}" in out
    assert "Cliquez sur « Audit des carnets d'écarté »" in out
    text = menu.read_text(encoding="utf-8")
    assert desktop.read_text(encoding="utf-8") == text and os.access(desktop, os.X_OK)
    keys = validate(text)
    assert keys["Name[fr]"] == "Audit des carnets d'écarté" and keys["Name"] == "Écarté carnet audit"
    assert keys["Terminal"] == "false"
    assert parse_exec(keys["Exec"]) == shortcut.launcher() == [str(SCRIPTS / "ecarte-audit-page")]
    assert keys["TryExec"] == str(SCRIPTS / "ecarte-audit-page")
    checker = shutil.which("desktop-file-validate")
    if checker:
        done = subprocess.run([checker, str(menu)], capture_output=True, text=True)
        assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr
    # Again: the same files, nothing twice.
    assert main(["shortcut"]) == 0
    assert sorted(p.name for p in menu.parent.iterdir()) == ["ecarte-audit.desktop"]
    capsys.readouterr()
    assert main(["shortcut", "--remove"]) == 0
    out = capsys.readouterr().out
    assert f"Raccourci retiré : {menu}" in out and f"Raccourci retiré : {desktop}" in out
    assert not menu.exists() and not desktop.exists() and not Path(keys["Icon"]).exists()
    assert main(["shortcut", "--remove", "--lang", "en"]) == 0
    assert capsys.readouterr().out == "No shortcut to remove.\n"


def test_no_desktop_folder_no_desktop_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    assert shortcut.desktop_folder() is None                 # ~/Desktop absent: none is made
    (tmp_path / "Desktop").mkdir()
    assert shortcut.desktop_folder() == tmp_path / "Desktop"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/ignored")   # the specification: absolute or ignored
    assert shortcut.data_home() == tmp_path / ".local" / "share"


def test_windows_shortcuts_through_powershell(monkeypatch):
    """The script given to PowerShell: a .lnk in Programs and on the Desktop
    targeting the gui-script (no console), every string quoted."""
    monkeypatch.setattr(shortcut, "launcher", lambda: [r"C:\Users\O'Brien\pipx\venvs\e\Scripts\ecarte-audit-page.exe"])
    calls = []

    def run(argv, input, **kwargs):
        calls.append((argv, input))
        return subprocess.CompletedProcess(argv, 0, stdout="C:\\P\\Audit des carnets d'écarté.lnk\r\n", stderr="")

    done = shortcut.windows("fr", run=run)
    [(argv, script)] = calls
    assert argv[0] == "powershell" and "-NoProfile" in argv
    assert "GetFolderPath('Programs')" in script and "GetFolderPath('Desktop')" in script
    assert r"$s.TargetPath = 'C:\Users\O''Brien\pipx\venvs\e\Scripts\ecarte-audit-page.exe'" in script
    assert "'Audit des carnets d''écarté.lnk'" in script and "$s.Save()" in script
    assert done.paths == [Path("C:\\P\\Audit des carnets d'écarté.lnk")]
    shortcut.windows("fr", remove=True, run=run)
    assert "Remove-Item -LiteralPath $p" in calls[-1][1] and "CreateShortcut" not in calls[-1][1]

    def fails(argv, input, **kwargs):
        return subprocess.CompletedProcess(argv, 1, stdout="", stderr="Exception: access denied\n")

    with pytest.raises(OSError, match="access denied"):
        shortcut.windows("fr", run=fails)


def test_the_gui_script_is_declared():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["gui-scripts"] == {"ecarte-audit-page": "auditor.serve.shortcut:page_main"}
    assert (SCRIPTS / "ecarte-audit-page").exists()


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="freedesktop")
@pytest.mark.slow
@pytest.mark.subprocess
def test_a_click_on_the_entry_starts_the_page_and_opens_the_browser(home, tmp_path):
    """The entry's Exec line run as the desktop runs it (no terminal, its
    output nowhere, a $BROWSER that records what it is given): the page
    starts and the browser gets the private redirect file; a second click
    opens the same page, no second server; the session's end (SIGHUP)
    removes everything."""
    env = {k: v for k, v in os.environ.items() if k not in ("LANGUAGE", "LC_ALL", "LC_MESSAGES")}
    opened = tmp_path / "opened.txt"
    recorder = tmp_path / "browser.sh"
    recorder.write_text(f'#!/bin/sh\nprintf "%s\\n" "$1" >> {opened}\n')
    recorder.chmod(0o755)
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    env.update({"HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share"),
                "XDG_CONFIG_HOME": str(home / ".config"), "BROWSER": f"{recorder} %s", "LANG": "fr_FR.UTF-8",
                "TMPDIR": str(private_tmp)})
    added = subprocess.run([str(SCRIPTS / "ecarte-audit"), "shortcut"], env=env, capture_output=True, text=True)
    assert added.returncode == 0, added.stderr
    keys = validate((home / "Bureau" / "ecarte-audit.desktop").read_text(encoding="utf-8"))
    argv = parse_exec(keys["Exec"])
    first = subprocess.Popen(argv, env=env, cwd=home, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        uris = _wait_lines(opened, 1)
        [page] = [Path(u[len("file://"):]) for u in uris]
        assert page.name == "open.html" and page.stat().st_mode & 0o777 == 0o600
        assert re.search(r'content="0;url=http://127\.0\.0\.1:\d+/\?token=', page.read_text(encoding="utf-8"))
        second = subprocess.run(argv, env=env, cwd=home, stdin=subprocess.DEVNULL, capture_output=True,
                                timeout=120)
        assert second.returncode == 0
        assert _wait_lines(opened, 2) == uris * 2              # the same page, opened again
        assert len(list(private_tmp.glob("ecarte-audit-serve-*"))) == 1
    finally:
        first.send_signal(signal.SIGHUP)                      # the session ends
        first.wait(timeout=60)
    assert not list(private_tmp.iterdir())
    removed = subprocess.run([str(SCRIPTS / "ecarte-audit"), "shortcut", "--remove"], env=env, capture_output=True,
                             text=True)
    assert removed.returncode == 0 and removed.stdout.count("Raccourci retiré") == 3


def _wait_lines(path: Path, n: int, timeout: float = 120) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            lines = path.read_text().split()
            if len(lines) >= n:
                return lines
        time.sleep(0.1)
    raise AssertionError(f"the browser was not opened {n} time(s)")


def test_the_page_launcher_runs_openblas_on_one_thread(monkeypatch, tmp_path):
    """`ecarte-audit-page` (the inspectors' usual way in) does not go through
    the console command's `run`: it sets OpenBLAS's one thread itself, before
    the server and its workers load numpy, and keeps a user's own number."""
    import webbrowser

    from auditor.serve import private

    page = tmp_path / "open.html"
    monkeypatch.setattr(private, "running", lambda: [page])
    monkeypatch.setattr(webbrowser, "open", lambda uri: None)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    assert shortcut.page_main() == 0
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    assert shortcut.page_main() == 0
    assert os.environ["OPENBLAS_NUM_THREADS"] == "3"
