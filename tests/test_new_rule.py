"""`scripts/new_rule.py CODE`: the four stubs of a new rule, written into a copy
of the tree; a code in use is refused; and the tests the README names refuse
the stubs until every TODO is replaced."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import new_rule  # noqa: E402
from auditor.catalogue import _parse_rule  # noqa: E402

PARTS = ("rules", "auditor/checks", "auditor/synth", "tests/fixtures/checks", "tests/fixtures/batch")


def _tree(tmp_path: Path, parts=PARTS) -> Path:
    for part in parts:
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def _function(path: Path, decorator: str, code: str) -> ast.FunctionDef:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef) and any(
                isinstance(d, ast.Call) and getattr(d.func, "id", "") == decorator and d.args[0].value == code
                for d in node.decorator_list):
            return node
    raise AssertionError(f"no @{decorator}({code!r}) in {path}")


def test_writes_the_four_stubs(tmp_path):
    root = _tree(tmp_path)
    written = new_rule.new_rule("EC64-12", root, severity="warning")
    assert [p.relative_to(root).as_posix() for p in written] == [
        "rules/catalogue/EC64-12.toml", "auditor/checks/art64.py", "tests/fixtures/checks/EC64-12.yml",
        "auditor/synth/breaches/art64.py"]
    meta = _parse_rule(tomllib.loads(written[0].read_text(encoding="utf-8")), "EC64-12.toml")
    assert (meta.code, meta.article, meta.severity.label, meta.money.value) == ("EC64-12", "64", "warning", "none")
    assert "TODO" in meta.title["fr"] and set(meta.messages) == {"default"}
    stub = _function(written[1], "check", "EC64-12")
    assert ast.get_docstring(stub).startswith("TODO")      # refused by the docstring test until written
    cases = yaml.safe_load(written[2].read_text(encoding="utf-8"))
    assert cases["code"] == "EC64-12"
    assert [bool(c["expect"]) for k, c in cases.items() if k != "code"] == [False, True]
    _function(written[3], "injector", "EC64-12")


def test_articles_with_a_dash_and_the_module_they_go_to(tmp_path):
    root = _tree(tmp_path)
    written = new_rule.new_rule("EC661-03", root)
    assert tomllib.loads(written[0].read_text(encoding="utf-8"))["article"] == "66-1"
    assert (written[1].name, written[3].name) == ("tickets_amounts.py", "art66.py")


def test_refuses_a_code_in_use(tmp_path):
    root = _tree(tmp_path)
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    for code in ("EC64-01", "EC64-10"):      # a rule with its check; a rule of the catalogue still without one
        with pytest.raises(new_rule.Refused, match="never reused"):
            new_rule.new_rule(code, root)
    assert new_rule.main(["EC83-01", "--root", str(root)]) == 2
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before, "a refusal writes nothing"


def test_refuses_a_bad_code_and_an_unclear_module(tmp_path):
    root = _tree(tmp_path)
    with pytest.raises(new_rule.Refused, match="not a rule code"):
        new_rule.new_rule("EC64-1", root)
    with pytest.raises(new_rule.Refused, match="--check-module"):
        new_rule.new_rule("EC561-09", root)          # art. 56-1 rules live in three ticket modules
    with pytest.raises(new_rule.Refused, match="--check-module"):
        new_rule.new_rule("EC67-01", root)           # no module holds art. 67 yet
    assert not (root / "rules" / "catalogue" / "EC561-09.toml").exists()
    written = new_rule.new_rule("EC561-09", root, check_module="tickets_books", injector_module="tickets")
    assert written[1].name == "tickets_books.py"


def _breaches(path: Path) -> tuple[str, ...]:
    """The codes of `BREACHES` in auditor/synth/archive.py, as written."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "BREACHES":
            return tuple(ast.literal_eval(node.value))
    raise AssertionError(f"no BREACHES in {path}")


def test_writes_the_four_stubs_of_a_rule_across_carnets(tmp_path):
    root = _tree(tmp_path)
    before = _breaches(root / "auditor" / "synth" / "archive.py")
    written = new_rule.new_rule("EC64-12", root, severity="warning", across=True)
    assert [p.relative_to(root).as_posix() for p in written] == [
        "rules/catalogue/EC64-12.toml", "auditor/checks/archive.py", "tests/fixtures/batch/EC64-12.yml",
        "auditor/synth/archive.py"]
    meta = _parse_rule(tomllib.loads(written[0].read_text(encoding="utf-8")), "EC64-12.toml")
    assert (meta.code, meta.article, meta.severity.label) == ("EC64-12", "64", "warning")
    stub = _function(written[1], "batch_check", "EC64-12")
    assert ast.get_docstring(stub).startswith("TODO")
    assert [a.arg for a in stub.args.args] == ["batch", "profile"]
    cases = yaml.safe_load(written[2].read_text(encoding="utf-8"))
    assert cases["code"] == "EC64-12"
    assert [bool(c["expect"]) for k, c in cases.items() if k != "code"] == [False, True]
    assert all(set(c["carnets"]) == {"p", "n"} for k, c in cases.items() if k != "code")
    assert _breaches(written[3]) == (*before, "EC64-12")
    assert "#   EC64-12  TODO" in written[3].read_text(encoding="utf-8")
    # No injector: a rule across carnets is broken in a table's archive.
    assert not any('@injector("EC64-12"' in p.read_text(encoding="utf-8")
                   for p in (root / "auditor" / "synth" / "breaches").glob("*.py"))


def test_a_rule_across_carnets_goes_to_the_archives_module_and_refuses_the_others(tmp_path):
    root = _tree(tmp_path)
    # Whatever module holds the article's other rules: EC82-03's batch check is in cross_carnet,
    # whose rules compare a casino's tables, which an archive of one table cannot break.
    assert new_rule.new_rule("EC66-05", root, across=True)[1].name == "archive.py"
    assert new_rule.new_rule("EC82-04", root, across=True)[1].name == "archive.py"
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    with pytest.raises(new_rule.Refused, match="--across"):
        new_rule.new_rule("EC64-13", root, check_module="archive")      # a carnet's check among the batch's
    with pytest.raises(new_rule.Refused, match="checks one carnet"):
        new_rule.new_rule("EC64-13", root, check_module="art64", across=True)
    with pytest.raises(new_rule.Refused, match="by hand"):
        new_rule.new_rule("EC82-05", root, check_module="cross_carnet", across=True)
    with pytest.raises(new_rule.Refused, match="injector"):
        new_rule.new_rule("EC64-13", root, injector_module="art64", across=True)
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before, "a refusal writes nothing"
    # A code named only among the archive's breaches is in use too.
    archive = root / "auditor" / "synth" / "archive.py"
    archive.write_text(archive.read_text(encoding="utf-8").replace('"EC64-10",', '"EC64-10", "EC64-13",', 1),
                       encoding="utf-8")
    with pytest.raises(new_rule.Refused, match="never reused"):
        new_rule.new_rule("EC64-13", root, across=True)
    # A BREACHES new_rule cannot read (spread over lines): refused before anything is written.
    text = archive.read_text(encoding="utf-8")
    archive.write_text(text.replace("BREACHES = (", "BREACHES = (\n    ", 1), encoding="utf-8")
    with pytest.raises(new_rule.Refused, match="by hand"):
        new_rule.new_rule("EC64-14", root, across=True)
    assert not (root / "rules" / "catalogue" / "EC64-14.toml").exists()
    assert new_rule.main(["EC64-15", "--across", "--check-module", "art64", "--root", str(root)]) == 2


def test_the_archives_first_breach_and_the_imports_the_stub_lacks(tmp_path):
    """No breach yet: the tuple of one. A module whose imports span lines and
    lack what the stub uses: the missing ones after them, none twice."""
    root = _tree(tmp_path)
    archive = root / "auditor" / "synth" / "archive.py"
    text = archive.read_text(encoding="utf-8")
    found = new_rule.BREACHES_LINE.search(text)
    archive.write_text(text[:found.start()] + "BREACHES = ()" + text[found.end():], encoding="utf-8")
    checks = root / "auditor" / "checks" / "archive.py"
    module = checks.read_text(encoding="utf-8").replace(
        "from typing import Iterator, Sequence\n", "from typing import (\n    Iterator,\n)\n", 1)
    assert "Sequence\n" not in module.split("def ")[0]
    checks.write_text(module, encoding="utf-8")
    written = new_rule.new_rule("EC64-12", root, across=True)
    assert _breaches(written[3]) == ("EC64-12",)
    tree = ast.parse(written[1].read_text(encoding="utf-8"))      # still Python
    imported = [a.asname or a.name for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names]
    assert imported.count("Sequence") == 1 and imported.count("Iterator") == 1
    assert imported.count("BatchCarnet") == 1 and imported.count("batch_check") == 1


def _stubbed(tmp_path: Path, argv: list[str]) -> tuple[Path, dict]:
    """A copy of the tree with the stubs `new_rule.main(argv)` writes, and the environment that imports it."""
    root = _tree(tmp_path, ("auditor", "rules", "tests"))
    shutil.copy(ROOT / "pyproject.toml", root)
    assert new_rule.main([*argv, "--root", str(root)]) == 0
    return root, {**os.environ, "PYTHONPATH": str(root)}


def _imports(root: Path, env: dict, code: str) -> list[str]:
    """What `code` prints (after the path of the `auditor` it imported) in a process on the copy."""
    probe = subprocess.run([sys.executable, "-c", f"import auditor; print(auditor.__file__); {code}"],
                           cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0, probe.stderr
    first, *rest = probe.stdout.split()
    assert first == str(root / "auditor" / "__init__.py")
    return rest


def _failing(root: Path, env: dict, files: list[str], keys: str) -> tuple[list[str], str]:
    """The tests of `files` that `-k keys` selects and fail on the copy, by name; the run's last lines."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n0", "-q", "-rf", "-k", keys, *files],
        cwd=root, env=env, capture_output=True, text=True, timeout=300)
    failed = sorted(line.split()[1].split("::", 1)[1] for line in run.stdout.splitlines() if line.startswith("FAILED"))
    return failed, run.stdout[-3000:]


@pytest.mark.slow
@pytest.mark.subprocess
def test_the_readme_tests_refuse_the_across_stubs_until_written(tmp_path):
    """The same for a rule across carnets (`--across`): the package registers
    its batch check and its breach, and exactly the tests the README names fail."""
    root, env = _stubbed(tmp_path, ["EC64-12", "--across"])
    assert _imports(root, env, "from auditor.checks import registered_batch; "
                               "from auditor.catalogue import load_catalogue; from auditor.synth.archive import BREACHES; "
                               "print('EC64-12' in registered_batch(), 'EC64-12' in load_catalogue(), "
                               "'EC64-12' in BREACHES)") == ["True", "True", "True"]
    failed, out = _failing(root, env, ["tests/test_registry.py", "tests/test_batch_cases.py",
                                       "tests/test_message_kinds.py", "tests/test_breaches.py",
                                       "tests/test_generate_archive.py", "tests/test_archive_cli.py"],
                           "EC64-12 or placeholder or is_emitted or breaches_together or can_be_broken "
                           "or same_findings_whatever")
    assert failed == EXPECTED_ACROSS_FAILURES, out


@pytest.mark.slow
@pytest.mark.subprocess
def test_the_readme_tests_refuse_the_stubs_until_written(tmp_path):
    """In a copy of the tree with the stubs of EC64-12: the package imports
    them, and exactly the tests the README names fail on them."""
    root, env = _stubbed(tmp_path, ["EC64-12"])
    assert _imports(root, env, "from auditor.checks import registered; from auditor.catalogue import load_catalogue; "
                               "from auditor.synth.breaches import INJECTORS; "
                               "print('EC64-12' in registered(), 'EC64-12' in load_catalogue(), "
                               "'EC64-12' in INJECTORS)") == ["True", "True", "True"]
    failed, out = _failing(root, env, ["tests/test_registry.py", "tests/test_check_cases.py",
                                       "tests/test_message_kinds.py", "tests/test_breaches.py"],
                           "EC64-12 or placeholder or is_emitted")
    assert failed == EXPECTED_FAILURES, out


# What the README's steps fix, one failure each: for every rule,
EVERY_RULES_FAILURES = [
    "test_case[EC64-12::violating_TODO]",                       # the check finds nothing yet
    "test_catalogue_entry_has_no_placeholder[EC64-12]",          # TODO titles and messages
    "test_fixture_cases_have_no_placeholder",                    # case names as written
    "test_every_check_message_is_emitted",                       # the check yields no Violation yet
]
# for a rule of one carnet,
EXPECTED_FAILURES = sorted(EVERY_RULES_FAILURES + [
    "test_check_docstring_has_the_sections[EC64-12]",            # TODO docstring
    "test_injector_gives_its_codes_and_no_other[EC64-12]",       # the injector refuses every carnet
    "test_injector_on_a_chouette_carnet[EC64-12]",
])
# and for a rule across the carnets of a table.
EXPECTED_ACROSS_FAILURES = sorted(EVERY_RULES_FAILURES + [
    "test_batch_check_docstring_has_the_sections[EC64-12]",      # TODO docstring
    "test_each_breach_gives_exactly_its_code[EC64-12]",          # generate_archive does not make it yet
    "test_breaches_together_and_refusals",
    "test_same_findings_whatever_the_containers_books_order_tree_and_names",   # each breach found
])
