"""An installed `ecarte-audit` works outside the repository: the wheel ships
schemas/ (as ecarte_schemas), rules/ (as auditor/_rules) and the templates."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                    "-w", str(out), str(ROOT)], check=True, capture_output=True)
    return next(out.glob("ecarte_auditor-*.whl"))


@pytest.mark.slow
@pytest.mark.subprocess
def test_wheel_ships_schemas_rules_and_templates(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "ecarte_schemas/mises.py" in names
    assert "auditor/_rules/profile.toml" in names
    assert "auditor/_rules/catalogue/EC64-01.toml" in names
    assert "auditor/templates/report.html.j2" in names
    assert "auditor/templates/i18n/fr.toml" in names
    assert "auditor/templates/pv/proces-verbal.typ" in names
    assert "auditor/templates/i18n/cli.fr.toml" in names and "auditor/templates/i18n/cli.en.toml" in names
    # The shortcut's icon, and the page's launcher as a GUI script (no console window on Windows).
    assert "auditor/serve/assets/ecarte-audit.svg" in names
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "[gui_scripts]\necarte-audit-page = auditor.serve.shortcut:page_main" in text
    # The local page's assets: no CDN, everything in the wheel.
    assert {"auditor/serve/assets/page.html.j2", "auditor/serve/assets/page.js", "auditor/serve/assets/page.css",
            "auditor/serve/assets/cell.html.j2", "auditor/templates/i18n/page.fr.toml"} <= names
    assert not any(n.startswith(("rules/", "schemas/", "tests/")) for n in names)


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_installed_command_audits_outside_the_repository(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
    # The wheel alone; its dependencies as declared (and theirs), from this
    # environment (installing them again took a minute of the suite).
    subprocess.run(pip + ["install", "--no-deps", str(wheel)], check=True, capture_output=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "declared-dependencies.pth").write_text(str(_declared_dependencies(wheel, tmp_path / "deps")) + "\n")
    work = tmp_path / "elsewhere"
    shutil.copytree(ROOT / "sample_carnets" / "compliant" / "forges-table5", work / "carnet")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    proc = subprocess.run([str(venv / "bin" / "ecarte-audit"), "audit", "carnet", "--out", "out",
                           "--format", "html,json,pdf"], cwd=work, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((work / "out" / "carnet" / "findings.json").read_text(encoding="utf-8"))
    assert doc["summary"]["coups"] == 90 and doc["summary"]["errors"] == 0
    assert (work / "out" / "carnet" / "report.html").exists()
    # The procès-verbal's Typst template ships in the wheel too.
    assert (work / "out" / "carnet" / "proces-verbal.pdf").read_bytes().startswith(b"%PDF-")
    rules = subprocess.run([str(venv / "bin" / "ecarte-audit"), "rules"], cwd=work, capture_output=True,
                           text=True, env=env)
    assert rules.returncode == 0 and "EC64-01" in rules.stdout
    # The command line's label files ship too: a French locale gets French help.
    french = subprocess.run([str(venv / "bin" / "ecarte-audit"), "audit", "--help"], cwd=work, capture_output=True,
                            text=True, env={**env, "LANG": "fr_FR.UTF-8", "LC_ALL": "", "LANGUAGE": ""})
    assert french.returncode == 0 and french.stdout.startswith("utilisation : ecarte-audit audit"), french.stderr
    # The local page, from the installed package alone: its page, script and style.
    serve = subprocess.Popen([str(venv / "bin" / "ecarte-audit"), "serve", "--no-browser", "--jobs", "1"], cwd=work,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        url = re.search(r"http://127\.0\.0\.1:\d+/\?token=(\S+)", serve.stdout.readline())
        base, token = url[0].split("?")[0], url[1]
        for path, kind in (("", "text/html"), ("assets/page.js", "text/javascript"), ("assets/page.css", "text/css")):
            request = urllib.request.Request(base + path, headers={"X-Ecarte-Token": token})
            with urllib.request.urlopen(request, timeout=60) as answer:
                assert answer.status == 200 and answer.headers["content-type"].startswith(kind)
                assert answer.read()
    finally:
        serve.send_signal(signal.SIGINT)
        serve.communicate(timeout=60)
    assert serve.returncode == 0


def _declared_dependencies(wheel: Path, folder: Path) -> Path:
    """A folder holding (as links) the installed distributions the wheel
    declares (its METADATA, as pip reads it), and theirs, with the extras each
    asks for: nothing else of this environment (pytest, dask, the editable
    install) is visible through it, so a module the command imports from an
    undeclared distribution fails here as it would after `pip install`."""
    from email.parser import Parser
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    with zipfile.ZipFile(wheel) as z:
        own = Parser().parsestr(z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode())
    folder.mkdir()
    todo, done = [(None, frozenset())], set()
    while todo:
        name, extras = todo.pop()
        if (name, extras) in done:
            continue
        done.add((name, extras))
        dist = metadata.distribution(name) if name else None
        for text in (dist.requires if dist else own.get_all("Requires-Dist")) or []:
            req = Requirement(text)
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in extras | {""}):
                todo.append((canonicalize_name(req.name), frozenset(req.extras)))
        for top in {f.parts[0] for f in (dist.files if dist else None) or () if f.parts[0] != ".."}:
            link = folder / top
            if not link.exists():
                link.symlink_to(dist.locate_file(top))
    return folder


def test_every_package_of_the_tree_is_in_the_wheel_list():
    """pyproject.toml lists the packages (schemas/ and rules/ are mapped): a new sub-package left out
    installs without its modules (the wheel test above finds it, slowly; this, at once)."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "auditor").rglob("__init__.py")}
    assert found <= listed, sorted(found - listed)
