"""`ecarte-audit shortcut`: the page started without a terminal.

Once installed (`pipx install ecarte-auditor`), `ecarte-audit shortcut` adds
an entry to the applications menu and one to the desktop; a click starts
`ecarte-audit-page` (a `gui-scripts` entry point: on Windows it starts
without a console window), which opens the page of this user's server if one
runs already, else starts one and opens the browser on it. `--remove` takes
them away again.

- Linux (and other freedesktop systems): `ecarte-audit.desktop` under
  `$XDG_DATA_HOME/applications` (the menu) and in the desktop folder
  (`XDG_DESKTOP_DIR` of `user-dirs.dirs`), with its icon under
  `$XDG_DATA_HOME/icons`; keys and `Exec` quoting per the Desktop Entry
  Specification 1.5.
- Windows: `.lnk` shortcuts in the Start menu's Programs folder and on the
  desktop, made by the shell's own COM object through PowerShell.

Every word shown comes from the command line's catalogues
(templates/i18n/cli.<lang>.toml, section `shortcut`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

APP_ID = "ecarte-audit"            # the .desktop file's name and the icon's
GUI_SCRIPT = "ecarte-audit-page"   # pyproject.toml [project.gui-scripts]
ICON = "ecarte-audit.svg"          # auditor/serve/assets/


@dataclass
class Done:
    """What `add` or `remove` did: the files written or removed."""

    paths: list[Path] = field(default_factory=list)


# -- what the shortcut runs --------------------------------------------------------------

def launcher() -> list[str]:
    """The command a click runs: the installed `ecarte-audit-page` beside
    this Python (pipx: its environment's own), else this Python running the
    same function."""
    folder = Path(sys.executable).parent
    for name in (f"{GUI_SCRIPT}.exe", GUI_SCRIPT):
        if (folder / name).is_file():
            return [str(folder / name)]
    python = Path(sys.executable)
    windowless = python.with_name("pythonw.exe")
    if sys.platform == "win32" and windowless.is_file():
        python = windowless
    return [str(python), "-m", "auditor.serve.shortcut"]


def page_main() -> int:
    """`ecarte-audit-page`: the page of this user's running server opened
    again, else a new server started and the browser opened on it. Started
    without a console (Windows' gui-scripts), its output goes nowhere."""
    import webbrowser

    from auditor.cli import native_threads

    native_threads()   # as the console command: the server and its workers
    from auditor.commands import DOCUMENT_LANG
    from auditor.i18n import environment_lang
    from auditor.serve import private

    running = private.running()
    if running:
        webbrowser.open(running[0].as_uri())
        return 0
    if sys.stdout is None or sys.stderr is None:   # pythonw: no console at all
        sink = open(os.devnull, "w", encoding="utf-8")
        sys.stdout = sys.stdout or sink
        sys.stderr = sys.stderr or sink
    from auditor.serve.server import serve

    return serve(open_browser=True, lang=DOCUMENT_LANG, ui=environment_lang(os.environ),
                 workers=os.cpu_count() or 1, out=sys.stdout)


# -- freedesktop ---------------------------------------------------------------------------

# Desktop Entry Specification, "The Exec key": an argument holding one of these is quoted.
_RESERVED = set(" \t\n\"'\\><~|&;$*?#()`")


def exec_quote(argv: list[str]) -> str:
    """`argv` as an Exec value: reserved characters quoted, `%` doubled,
    then escaped as a desktop file string (a backslash written twice)."""
    out = []
    for arg in argv:
        arg = arg.replace("%", "%%")
        if any(c in _RESERVED for c in arg) or arg == "":
            arg = '"' + re.sub(r'(["`$\\])', r"\\\1", arg) + '"'
        out.append(arg)
    return " ".join(out).replace("\\", "\\\\")


def _value(text: str) -> str:
    """A localestring value: one line, escapes as the specification writes them."""
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")


def desktop_entry(argv: list[str], icon: Path) -> str:
    """The .desktop file: English as the default, French as [fr]."""
    from auditor.i18n import cli_label

    def both(key: str, name: str) -> list[str]:
        return [f"{key}={_value(cli_label(name, 'en'))}", f"{key}[fr]={_value(cli_label(name, 'fr'))}"]

    lines = ["[Desktop Entry]", "Type=Application", "Version=1.5",
             *both("Name", "shortcut.name"), *both("GenericName", "shortcut.generic"),
             *both("Comment", "shortcut.comment"), *both("Keywords", "shortcut.keywords"),
             f"Exec={exec_quote(argv)}", f"TryExec={_value(argv[0])}", f"Icon={_value(str(icon))}",
             "Terminal=false", "Categories=Office;Finance;", "StartupNotify=false"]
    return "\n".join(lines) + "\n"


def data_home(environ=os.environ) -> Path:
    """$XDG_DATA_HOME (absolute, else ignored, as the specification says), else ~/.local/share."""
    value = environ.get("XDG_DATA_HOME", "")
    return Path(value) if os.path.isabs(value) else Path.home() / ".local" / "share"


def desktop_folder(environ=os.environ) -> Path | None:
    """The user's desktop (`XDG_DESKTOP_DIR` in user-dirs.dirs, else ~/Desktop),
    when it exists: none is made."""
    config = environ.get("XDG_CONFIG_HOME", "")
    config = Path(config) if os.path.isabs(config) else Path.home() / ".config"
    folder = Path.home() / "Desktop"
    try:
        text = (config / "user-dirs.dirs").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    m = re.search(r'^\s*XDG_DESKTOP_DIR\s*=\s*"([^"]*)"', text, re.M)
    if m:
        value = m.group(1).replace("$HOME", str(Path.home()))
        if os.path.isabs(value):
            folder = Path(value)
    return folder if folder.is_dir() and folder != Path.home() else None


def _linux_paths(environ=os.environ) -> tuple[Path, Path, Path | None]:
    data = data_home(environ)
    desktop = desktop_folder(environ)
    return (data / "applications" / f"{APP_ID}.desktop", data / "icons" / "hicolor" / "scalable" / "apps" / ICON,
            desktop / f"{APP_ID}.desktop" if desktop else None)


def add_linux(environ=os.environ, run=subprocess.run) -> Done:
    """The menu entry, the desktop entry (when there is a desktop folder) and the icon, written."""
    menu, icon, desktop = _linux_paths(environ)
    done = Done()
    icon.parent.mkdir(parents=True, exist_ok=True)
    icon.write_bytes(resources.files("auditor.serve").joinpath("assets", ICON).read_bytes())
    text = desktop_entry(launcher(), icon)
    for path in (menu, desktop):
        if path is None:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        path.chmod(0o755)   # a desktop launcher must be executable to be started
        done.paths.append(path)
    # Best effort: the menu's cache, and GNOME's trust of a desktop launcher.
    _quietly(run, ["update-desktop-database", str(menu.parent)])
    if desktop is not None:
        _quietly(run, ["gio", "set", str(desktop), "metadata::trusted", "true"])
    return done


def remove_linux(environ=os.environ) -> Done:
    """What `add_linux` wrote, removed."""
    menu, icon, desktop = _linux_paths(environ)
    done = Done()
    for path in (menu, desktop, icon):
        if path is not None and path.is_file():
            path.unlink()
            done.paths.append(path)
    return done


def _quietly(run, argv: list[str]) -> None:
    if shutil.which(argv[0]) is None:
        return
    try:
        run(argv, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        pass


# -- Windows -------------------------------------------------------------------------------

def _ps(text: str) -> str:
    """A PowerShell single-quoted string."""
    return "'" + text.replace("'", "''") + "'"


def windows_script(argv: list[str], name: str, comment: str, remove: bool = False) -> str:
    """The PowerShell that makes (or removes) `<name>.lnk` in the Start
    menu's Programs folder and on the desktop, printing each path."""
    lines = ["$ErrorActionPreference = 'Stop'",
             "$folders = @([Environment]::GetFolderPath('Programs'), [Environment]::GetFolderPath('Desktop'))"]
    file = _ps(f"{name}.lnk")
    if remove:
        lines += ["foreach ($f in $folders) { $p = Join-Path $f " + file +
                  "; if (Test-Path -LiteralPath $p) { Remove-Item -LiteralPath $p; Write-Output $p } }"]
    else:
        arguments = subprocess.list2cmdline(argv[1:])
        lines += ["$shell = New-Object -ComObject WScript.Shell",
                  "foreach ($f in $folders) { $p = Join-Path $f " + file + "; $s = $shell.CreateShortcut($p); "
                  f"$s.TargetPath = {_ps(argv[0])}; $s.Arguments = {_ps(arguments)}; "
                  f"$s.Description = {_ps(comment)}; $s.WorkingDirectory = [Environment]::GetFolderPath('MyDocuments'); "
                  "$s.Save(); Write-Output $p }"]
    return "\n".join(lines) + "\n"


def windows(ui: str, remove: bool = False, run=subprocess.run) -> Done:
    """The Start menu and desktop shortcuts made (or removed) by PowerShell; OSError when it fails."""
    from auditor.i18n import cli_label

    script = windows_script(launcher(), _file_name(cli_label("shortcut.name", ui)),
                            cli_label("shortcut.comment", ui), remove)
    done = run(["powershell", "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-Command", "-"],
               input=script, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise OSError(((done.stderr or "").strip().splitlines() or ["powershell"])[-1])
    return Done([Path(line) for line in done.stdout.splitlines() if line.strip()])


def _file_name(text: str) -> str:
    return re.sub(r'[<>:"/\\|?*]', "-", text).strip(" .") or APP_ID


# -- the command ---------------------------------------------------------------------------

def add(ui: str) -> Done:
    """Add the shortcuts of this system (OSError when it cannot)."""
    if sys.platform == "win32":
        return windows(ui)
    if sys.platform == "darwin":
        raise NotImplementedError
    return add_linux()


def remove(ui: str) -> Done:
    """Remove the shortcuts `add` made (none: an empty Done)."""
    if sys.platform == "win32":
        return windows(ui, remove=True)
    if sys.platform == "darwin":
        raise NotImplementedError
    return remove_linux()


if __name__ == "__main__":   # the launcher without its gui-script (see `launcher`)
    sys.exit(page_main())
