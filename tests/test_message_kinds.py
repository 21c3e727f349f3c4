"""Every message kind a check can emit is a message of its code in the catalogue.

`RuleMeta.message` raises on a kind the catalogue lacks (a fallback would
print another variant's words), so a kind that is misspelt in a check, or a
message renamed in the catalogue, must fail here rather than in an inspector's
audit. The checks are read with `ast`, not run: every `Violation(...)` a
check function reaches (itself, the functions it defines, the module's helper
functions it calls) is found, and its `kind=` resolved to the strings it can
take: constants, both sides of `a if c else b` and `np.where`, names bound by
assignments, loop targets over tuples, lambda defaults, and a helper's
parameter through its call sites. What cannot be resolved statically (a
column of a frame, an f-string) is declared in `DECLARED` below, keyed by
code and the expression's source: a new such expression fails until it is
declared.

The format codes (EC00-*) are emitted by the reader and the normaliser, not
by their checks (which forward `carnet.problems`): their kinds are read from
`ReadProblem("EC00-0x", kind)`, `("EC00-0x", Violation(kind=...))` and the
workbook guard's `Refused(kind)` (an EC00-01) across the package.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

import pytest

from auditor.catalogue import CODE_PATTERN, load_catalogue

PACKAGE = Path(__file__).resolve().parent.parent / "auditor"
CHECKS = PACKAGE / "checks"
FORMAT_FORWARDED = {"EC00-01", "EC00-02"}   # their checks forward the reader's problems

# Kinds that only exist at run time: (code, source of the expression) → what it can be.
DECLARED: dict[tuple[str, str], set[str]] = {
    # `breaks_of` (checks/_util.py) names each break of a numbering.
    ("EC63-08", "r['kind']"): {"gap", "start", "duplicate"},
    ("EC64-01", "r['kind']"): {"gap", "start", "duplicate", "order"},
    ("EC64-02", "r['kind']"): {"gap", "start", "duplicate", "order"},
    # The money fields of a stake, without their suffix.
    ("EC63-01", "f.removesuffix('_cents')"): {"montant", "restitue"},
    # The event of a chouette coup before the deal: avant_adjudication / avant_remise.
    ("EC66-02", "f\"avant_{r['evenement']}\""): {"avant_adjudication", "avant_remise"},
    # The stretch's kind, from np.where over the ledger's missing runs.
    ("EC83-01", "r['kind']"): {"gap", "gap_one", "unfinished"},
}


class Unresolved(Exception):
    pass


@lru_cache(maxsize=None)    # each module once, whichever check or test reads it
def _parse(path: Path) -> ast.Module:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            child.parent = node  # type: ignore[attr-defined]
    return tree


def _decorator_code(fn: ast.FunctionDef) -> str | None:
    for d in fn.decorator_list:
        if (isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id in ("check", "batch_check")
                and d.args and isinstance(d.args[0], ast.Constant)):
            return d.args[0].value
    return None


def _is_call_to(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


class Resolver:
    """The strings a `kind=` expression can take within one check's reach."""

    def __init__(self, module: ast.Module, scope: list[ast.AST]):
        self.module = module
        self.scope = scope          # the check function and the module helpers it reaches
        self.unresolved: list[str] = []
        self._seen: set[int] = set()

    def kinds(self, expr: ast.expr) -> set[str]:
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return {expr.value}
        if isinstance(expr, ast.IfExp):
            return self.kinds(expr.body) | self.kinds(expr.orelse)
        if isinstance(expr, ast.Call) and ast.unparse(expr.func) in ("np.where", "numpy.where") and len(expr.args) == 3:
            return self.kinds(expr.args[1]) | self.kinds(expr.args[2])
        if isinstance(expr, ast.Name) and id(expr) not in self._seen:
            self._seen.add(id(expr))
            bound = self._bindings(expr.id)
            if bound is not None:
                return bound
        # A module constant of strings (here or imported from the package), whole or indexed.
        named = expr.value if isinstance(expr, ast.Subscript) else expr
        if isinstance(named, ast.Name):
            values = self._module_tuple(self.module, named.id)
            if values is not None:
                return values
        self.unresolved.append(ast.unparse(expr))
        return set()

    def _module_tuple(self, module: ast.Module, name: str) -> set[str] | None:
        for node in module.body:
            if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
                    and isinstance(node.value, (ast.Tuple, ast.List))
                    and all(isinstance(e, ast.Constant) for e in node.value.elts)):
                return {e.value for e in node.value.elts}
            if (isinstance(node, ast.ImportFrom) and (node.module or "").startswith("auditor.")
                    and any((a.asname or a.name) == name for a in node.names)):
                path = PACKAGE.parent.joinpath(*node.module.split(".")).with_suffix(".py")
                return self._module_tuple(_parse(path), name) if path.exists() else None
        return None

    def _bindings(self, name: str) -> set[str] | None:
        """Every value `name` is bound to in the scope; None when it is bound nowhere we can see."""
        found: set[str] = set()
        any_binding = False
        for root in self.scope:
            for node in ast.walk(root):
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        if isinstance(target, ast.Name) and target.id == name:
                            any_binding = True
                            found |= self.kinds(node.value)
                elif isinstance(node, (ast.For, ast.comprehension)):
                    got = self._loop(node.target, node.iter, name)
                    if got is not None:
                        any_binding = True
                        found |= got
                elif isinstance(node, (ast.Lambda, ast.FunctionDef)):
                    got = self._parameter(node, name)
                    if got is not None:
                        any_binding = True
                        found |= got
        return found if any_binding else None

    def _assigned(self, expr: ast.expr) -> ast.expr:
        """The literal a name of the scope is bound to once (`cases = ((...), ...)`), else `expr` itself."""
        if not isinstance(expr, ast.Name):
            return expr
        values = [node.value for root in self.scope for node in ast.walk(root) if isinstance(node, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == expr.id for t in node.targets)]
        return values[0] if len(values) == 1 and isinstance(values[0], (ast.Tuple, ast.List)) else expr

    def _loop(self, target: ast.expr, iterable: ast.expr, name: str) -> set[str] | None:
        iterable = self._assigned(iterable)
        if isinstance(target, ast.Name) and target.id == name:
            if isinstance(iterable, (ast.Tuple, ast.List)):
                return set().union(*(self.kinds(e) for e in iterable.elts))
            return self.kinds(iterable) if isinstance(iterable, ast.Name) else self._give_up(iterable)
        if isinstance(target, ast.Tuple):
            names = [t.id if isinstance(t, ast.Name) else None for t in target.elts]
            if name not in names:
                return None
            at = names.index(name)
            if isinstance(iterable, (ast.Tuple, ast.List)) and all(
                    isinstance(e, ast.Tuple) and len(e.elts) == len(names) for e in iterable.elts):
                return set().union(*(self.kinds(e.elts[at]) for e in iterable.elts))
            if isinstance(iterable, ast.Call) and ast.unparse(iterable.func) == "enumerate" and at == 1:
                return self.kinds(iterable.args[0]) if isinstance(iterable.args[0], ast.Name) else None
            return self._give_up(ast.Name(id=name))
        return None

    def _give_up(self, expr: ast.expr) -> set[str]:
        self.unresolved.append(ast.unparse(expr))
        return set()

    def _parameter(self, fn: ast.Lambda | ast.FunctionDef, name: str) -> set[str] | None:
        args = fn.args
        positional = args.posonlyargs + args.args
        names = [a.arg for a in positional] + [a.arg for a in args.kwonlyargs]
        if name not in names:
            return None
        # A default (`lambda r, k=kind: ...`) binds it at definition.
        defaults = dict(zip([a.arg for a in positional][len(positional) - len(args.defaults):], args.defaults))
        defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
        if name in defaults:
            return self.kinds(defaults[name])
        if isinstance(fn, ast.Lambda):
            return None
        # A helper's parameter: what its calls within the scope pass.
        at = [a.arg for a in positional].index(name) if name in [a.arg for a in positional] else None
        got: set[str] = set()
        for root in self.scope:
            for call in ast.walk(root):
                if not _is_call_to(call, fn.name):
                    continue
                passed = [kw.value for kw in call.keywords if kw.arg == name]
                if not passed and at is not None and at < len(call.args):
                    passed = [call.args[at]]
                for value in passed:
                    got |= self.kinds(value)
        return got


def _reach(module: ast.Module, fn: ast.FunctionDef) -> list[ast.AST]:
    """The check function and the module-level functions it calls, transitively."""
    helpers = {n.name: n for n in module.body if isinstance(n, ast.FunctionDef) and _decorator_code(n) is None}
    out, todo = [fn], [fn]
    while todo:
        for node in ast.walk(todo.pop()):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in helpers:
                helper = helpers[node.func.id]
                if helper not in out:
                    out.append(helper)
                    todo.append(helper)
    return out


def _violation_kinds(module: ast.Module, scope: list[ast.AST], code: str) -> tuple[set[str], list[str]]:
    resolver = Resolver(module, scope)
    kinds: set[str] = set()
    for root in scope:
        for call in ast.walk(root):
            if not _is_call_to(call, "Violation"):
                continue
            kind = next((kw.value for kw in call.keywords if kw.arg == "kind"), None)
            if kind is None:
                kinds.add("default")
                continue
            before = len(resolver.unresolved)
            got = resolver.kinds(kind)
            for source in resolver.unresolved[before:]:
                key = (code, source)
                if key not in DECLARED:
                    raise Unresolved(f"{code}: kind {source!r} cannot be read statically; declare what it can "
                                     f"be in DECLARED of {Path(__file__).name}")
                got |= DECLARED[key]
            kinds |= got
    return kinds, resolver.unresolved


@lru_cache(maxsize=1)
def _check_kinds() -> dict[str, frozenset[str]]:
    return {code: frozenset(kinds) for code, kinds in _scan_checks().items()}


def check_kinds() -> dict[str, set[str]]:
    """A fresh copy of the scan (callers add to it)."""
    return {code: set(kinds) for code, kinds in _check_kinds().items()}


def _scan_checks() -> dict[str, set[str]]:
    """Per code with a check (EC00 forwarders aside): the kinds its Violations can take."""
    out: dict[str, set[str]] = {}
    for path in sorted(CHECKS.glob("*.py")):
        module = _parse(path)
        for fn in module.body:
            if not isinstance(fn, ast.FunctionDef):
                continue
            code = _decorator_code(fn)
            if code is None or code in FORMAT_FORWARDED:
                continue
            kinds, _ = _violation_kinds(module, _reach(module, fn), code)
            out.setdefault(code, set()).update(kinds)
    return out


def format_kinds() -> dict[str, set[str]]:
    """The EC00 kinds the reader, the normaliser and the workbook guard emit as constants."""
    out: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(_parse(path)):
            if _is_call_to(node, "ReadProblem") and len(node.args) >= 2:
                code, kind = node.args[0], node.args[1]
                if isinstance(code, ast.Constant) and isinstance(kind, ast.Constant):
                    out.setdefault(code.value, set()).add(kind.value)
            elif _is_call_to(node, "Refused") and node.args and isinstance(node.args[0], ast.Constant):
                out.setdefault("EC00-01", set()).add(node.args[0].value)
            elif (isinstance(node, ast.Tuple) and len(node.elts) == 2 and isinstance(node.elts[0], ast.Constant)
                  and isinstance(node.elts[0].value, str) and CODE_PATTERN.match(node.elts[0].value)
                  and _is_call_to(node.elts[1], "Violation")):
                kind = next((kw.value for kw in node.elts[1].keywords if kw.arg == "kind"), None)
                if isinstance(kind, ast.Constant):
                    out.setdefault(node.elts[0].value, set()).add(kind.value)
    return out


@pytest.mark.slow
def test_every_emitted_kind_has_its_message():
    catalogue = load_catalogue()
    emitted = check_kinds()
    for code, kinds in format_kinds().items():
        emitted.setdefault(code, set()).update(kinds)
    missing = {code: sorted(kinds - set(catalogue[code].messages)) for code, kinds in emitted.items()
               if kinds - set(catalogue[code].messages)}
    assert not missing, f"kinds emitted without a catalogue message: {missing}"


def test_every_check_message_is_emitted():
    """The other way: a message no check can emit is dead text (or a kind renamed on one side only)."""
    catalogue = load_catalogue()
    emitted = check_kinds()
    # A batch check emits kinds of its own besides the carnet check's (EC82-03's cross_carnet);
    # a finding across carnets seen from its other carnet may be worded apart (`<kind>_other`, auditor/across.py).
    emitted = {code: kinds | {f"{k}_other" for k in kinds} for code, kinds in emitted.items()}
    stale = {code: sorted(set(catalogue[code].messages) - kinds) for code, kinds in emitted.items()
             if set(catalogue[code].messages) - kinds}
    assert not stale, f"catalogue messages no check emits: {stale}"


def test_declared_kinds_are_still_needed():
    """A declaration whose expression left the check is removed with it."""
    used = set()
    for path in sorted(CHECKS.glob("*.py")):
        module = _parse(path)
        for fn in module.body:
            if isinstance(fn, ast.FunctionDef) and _decorator_code(fn) not in (None, *FORMAT_FORWARDED):
                code = _decorator_code(fn)
                _, unresolved = _violation_kinds(module, _reach(module, fn), code)
                used |= {(code, source) for source in unresolved}
    assert set(DECLARED) <= used, f"declarations no check needs: {sorted(set(DECLARED) - used)}"


def test_the_scan_sees_a_misspelt_kind(tmp_path):
    """The scan itself: a check emitting a kind by a loop variable is resolved, and a typo is caught."""
    source = '''
@check("EC64-06")
def cover(carnet, profile):
    for field, kind in (("table", "no_table"), ("date_debut", "no_dat")):
        yield Violation(kind=kind)
'''
    module = ast.parse(source)
    for node in ast.walk(module):
        for child in ast.iter_child_nodes(node):
            child.parent = node
    fn = module.body[0]
    kinds, _ = _violation_kinds(module, _reach(module, fn), "EC64-06")
    assert kinds == {"no_table", "no_dat"}
    assert "no_dat" not in load_catalogue()["EC64-06"].messages


def test_an_unknown_kind_raises():
    meta = load_catalogue()["EC64-06"]
    assert meta.message("no_table", "en")
    with pytest.raises(KeyError, match="no_tabel"):
        meta.message("no_tabel", "fr")
