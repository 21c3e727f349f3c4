"""The package's modules import one another without a cycle.

The imports are read as tests/test_layers.py reads them (parsed with `ast`,
lazy imports inside functions included, imports only for type checkers left
out), but module by module: `from auditor.report import charts` is an edge to
auditor.report.charts, `from auditor.read import canonical_name` one to the
package auditor.read itself. A cycle, even through a lazy import, means two
modules that cannot be understood, tested or moved apart: say which one
serves the other, and move what both need below them."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_layers import MODULES, imports_of, module_name

NAMES = {module_name(p) for p in MODULES}


def edges_of(path: Path, name: str | None = None, names: set[str] = NAMES) -> set[str]:
    """The auditor modules the module at `path` (named `name`) imports (test_layers' reading, by module)."""
    here = name or module_name(path)
    return imports_of(path, here, pick=lambda full, base: full if full in names else base) & names - {here}


def graph() -> dict[str, set[str]]:
    """Module → the modules it imports, over the whole package."""
    return {module_name(p): edges_of(p) for p in MODULES}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a → … → a) per strongly connected group of modules (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(g):
        if v not in index:
            visit(v)
    return [_one_cycle(g, group) for group in groups]


def _one_cycle(g: dict[str, set[str]], group: set[str]) -> list[str]:
    """A shortest way round from the group's first module back to itself."""
    start = min(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(g[v] & group):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    return sorted(group)


@pytest.mark.slow
def test_the_import_graph_has_no_cycle():
    found = cycles(graph())
    assert not found, "import cycles:\n" + "\n".join(" → ".join(c) for c in found)


def test_a_cycle_is_found_and_named(tmp_path):
    """Two modules importing each other, one lazily, one relatively, make a
    cycle; an import only for type checkers does not (a test that cannot fail
    is a defect)."""
    pkg = tmp_path / "auditor"
    pkg.mkdir()
    (pkg / "a.py").write_text("def f():\n    from auditor import b\n")
    (pkg / "b.py").write_text("from .a import f\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from auditor.a import f\n")
    names = {"auditor.a", "auditor.b", "auditor.c"}
    g = {n: edges_of(pkg / f"{n.split('.')[1]}.py", n, names) for n in names}
    assert g == {"auditor.a": {"auditor.b"}, "auditor.b": {"auditor.a"}, "auditor.c": set()}
    assert cycles(g) == [["auditor.a", "auditor.b", "auditor.a"]]
