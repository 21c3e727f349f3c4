"""The package's layering, read from the imports themselves (parsed with `ast`,
lazy imports inside functions included, imports only for type checkers left
out): face → run → batch → render/audit → {read, normalise, derived, tickets,
checks} → model. The report reads the model, the derived facts and the
tickets, never the checks; the checks never read a file nor write a report;
the synthetic carnets stay apart from the auditor they feed."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "auditor"

# Layer of each module, by its dotted name's longest matching prefix.
LAYERS = {
    "auditor": "model", "auditor.model": "model", "auditor.carnet": "model", "auditor.catalogue": "model",
    "auditor.frames": "model", "auditor.money": "model", "auditor.i18n": "model", "auditor.limits": "model",
    "auditor.errors": "model", "auditor.atomic": "model", "auditor.fingerprint": "model",
    "auditor.clock": "model", "auditor.arrays": "model", "auditor.zippkg": "model",
    "auditor.user_cache": "model", "auditor.jsontext": "model", "auditor.names": "model",
    "auditor.marked_folders": "model", "auditor.stake": "model", "auditor.collector": "model",
    "auditor.threads": "model",
    "auditor.registry": "checks",
    "auditor.read": "read", "auditor.discover": "read", "auditor.normalise": "normalise",
    "auditor.derived": "derived", "auditor.tickets": "tickets", "auditor.checks": "checks",
    "auditor.report": "report", "auditor.audit": "audit", "auditor.across": "audit", "auditor.findings": "audit", "auditor.outputs": "render",
    "auditor.run": "run", "auditor.indicators": "run", "auditor.sign": "report", "auditor.verify": "face",
    "auditor.batch": "batch", "auditor.baseline": "report", "auditor.history": "batch", "auditor.reviews": "report",
    "auditor.synth": "synth",
    "auditor.cli": "face", "auditor.commands": "face", "auditor.__main__": "face", "auditor.serve": "face",
}

# What each layer may import besides itself.
ALLOWED = {
    "model": set(),
    "read": {"model"},
    "normalise": {"model", "read"},
    "derived": {"model"},
    "tickets": {"model", "derived"},
    "checks": {"model", "derived", "tickets"},
    "report": {"model", "derived", "tickets", "read"},
    "audit": {"model", "read", "normalise", "derived", "tickets", "checks"},
    "render": {"model", "report"},
    # A worker warms up on a tiny synthetic carnet (the one use of synth outside the face).
    "batch": {"model", "read", "audit", "render", "report", "derived", "tickets", "synth"},
    "synth": {"model"},
    # The run service: the command line's and the local page's one way to audit.
    # (derived: the tables' timelines summary.json lists, from the carnets' batch facts)
    "run": {"model", "read", "audit", "render", "report", "batch", "checks", "derived"},
    "face": {"model", "read", "normalise", "derived", "tickets", "checks", "report", "audit", "render", "batch",
             "synth", "run"},
}


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        got = LAYERS.get(".".join(parts[:n]))
        if got is not None and (n > 1 or len(parts) == 1):
            return got
    return None


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_only(node: ast.AST, parents: dict) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def imports_of(path: Path, name: str | None = None, pick=None) -> set[str]:
    """The auditor modules `path` (module `name`) imports: absolute and
    relative, at any depth. `from BASE import NAME` counts as BASE.NAME or
    BASE as `pick(full, base)` says (default: the module when it has a layer
    of its own, tests/test_import_graph.py asks for modules)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    here = (name or module_name(path)).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    out: set[str] = set()
    for node in ast.walk(tree):
        if _type_checking_only(node, parents):
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "auditor"}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            if base.split(".")[0] != "auditor":
                continue
            for a in node.names:
                # `from auditor import report` imports the module auditor.report.
                full = f"{base}.{a.name}"
                if pick is not None:
                    out.add(pick(full, base))
                else:
                    out.add(full if layer_of(full) is not None and layer_of(full) != layer_of(base) else base)
    return out


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_every_module_has_a_layer():
    unplaced = [module_name(p) for p in MODULES if layer_of(module_name(p)) is None]
    assert not unplaced, f"give these modules a layer in tests/test_layers.py: {unplaced}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_imports_follow_the_layers(path):
    mine = layer_of(module_name(path))
    if mine is None:
        pytest.skip("no layer (see test_every_module_has_a_layer)")
    wrong = sorted(m for m in imports_of(path)
                   if (other := layer_of(m)) is not None and other != mine and other not in ALLOWED[mine])
    assert not wrong, f"{module_name(path)} ({mine}) must not import {wrong}"


def test_the_rules_spelled_out():
    """Spelled out: report never reads checks; checks never read files or write
    reports; nothing below the batch imports it."""
    assert "checks" not in ALLOWED["report"]
    assert not {"read", "report", "normalise", "audit", "batch"} & ALLOWED["checks"]
    assert all("batch" not in ALLOWED[k] for k in ALLOWED if k not in ("face", "run"))


def test_the_parser_sees_an_edge(tmp_path):
    """A lazy relative import and a plain one are both found, and one only for
    type checkers is not (a test that cannot fail is a defect)."""
    probe = tmp_path / "x.py"
    probe.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from auditor.batch import plan\n"
                     "def f():\n    from ..report import view\n    import auditor.read.raw\n")
    got = imports_of(probe, "auditor.checks.x")
    assert got == {"auditor.report", "auditor.read.raw"}
    assert layer_of("auditor.checks.x") == "checks" and "report" not in ALLOWED["checks"]


def test_checks_never_open_a_file():
    """The checks read the normalised carnet only: no `open(` in them."""
    for path in sorted((PACKAGE / "checks").glob("*.py")):
        calls = [n for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                 if isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", None)) == "open"]
        assert not calls, f"{path.name} opens a file"


def test_every_public_definition_has_a_docstring():
    """Every module, and every public function, class and method of the package."""
    missing = []
    for path in MODULES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if not ast.get_docstring(tree):
            missing.append(module_name(path))
        stack = [(n, "") for n in tree.body]
        while stack:
            node, prefix = stack.pop()
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or node.name.startswith("_"):
                continue
            if not ast.get_docstring(node):
                missing.append(f"{module_name(path)}.{prefix}{node.name}")
            if isinstance(node, ast.ClassDef):
                stack += [(n, f"{prefix}{node.name}.") for n in node.body]
    assert not missing, f"no docstring: {sorted(missing)}"
