"""Start a new rule: `python scripts/new_rule.py EC64-12 [--check-module art64] [--injector-module art64]`,
or, for a rule across the carnets of a table, `python scripts/new_rule.py EC64-12 --across`.

Writes the four pieces a rule needs, each a stub the tests refuse until it is
filled in (README, "Adding or changing a rule"):

- `rules/catalogue/<CODE>.toml`: article, severity, titles, explanation, one
  `default` message, `money = "none"` — every text a `TODO` that
  `tests/test_registry.py` refuses;
- a `@check` stub at the end of the article's module in `auditor/checks/`,
  whose docstring starts with `TODO` (refused by the docstring test) and which
  yields nothing (so the violating fixture case fails);
- `tests/fixtures/checks/<CODE>.yml`: one compliant and one violating case
  skeleton;
- an `@injector` stub at the end of the article's module in
  `auditor/synth/breaches/`, which refuses every carnet until written (the
  injector tests fail on it).

With `--across` (a rule over a table's carnets, rules.md v1.2), the check is a
`@batch_check` in `auditor/checks/archive.py`, its cases a batch of carnets in
`tests/fixtures/batch/`, and its breach is made in a table's archive: the
code joins `BREACHES` in `auditor/synth/archive.py`, whose test fails until
`generate_archive` makes it.

A code already in the catalogue, in a check, a fixture or an injector is
refused: codes are never reused (a retired code stays in the catalogue).
`--root` writes into another copy of the tree (the tests use it).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

CODE_PATTERN = re.compile(r"^EC(\d{2,3})-(\d{2})$")
ROOT = Path(__file__).resolve().parent.parent
# The module of the rules across the carnets of a table (`--across`).
ACROSS_MODULE = "archive"
# How the codes spell the articles with a dash (66-1, 56-1) and the format rules.
ARTICLES = {"00": "format", "661": "66-1", "561": "56-1"}


class Refused(Exception):
    pass


def article_of(code: str) -> str:
    art = CODE_PATTERN.match(code)[1]
    return ARTICLES.get(art, art)


def _modules_with(folder: Path, decorator: str, art: str) -> list[str]:
    """The modules of `folder` where a code of article `art` is already declared with `decorator`."""
    pattern = re.compile(rf'^@{decorator}\("EC{art}-\d{{2}}"', re.M)   # decorators, not docstrings
    return sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_") and pattern.search(p.read_text(
        encoding="utf-8")))


def batch_modules(root: Path) -> tuple[str, ...]:
    """The modules of the checks over a batch, as auditor/checks/__init__.py lists them (BATCH_MODULES)."""
    text = (root / "auditor" / "checks" / "__init__.py").read_text(encoding="utf-8")
    found = re.search(r"^BATCH_MODULES = \(([^)]*)\)", text, re.M)
    return tuple(re.findall(r'"(\w+)"', found[1])) if found else ()


def pick_module(folder: Path, decorator: str, art: str, given: str | None, what: str) -> Path:
    """The module the stub goes to: `given`, else the one module holding the article's other rules."""
    if given:
        path = folder / f"{given}.py"
        if not path.exists():
            raise Refused(f"{what} module {path} does not exist (a new module also goes in the folder's manifest)")
        return path
    found = _modules_with(folder, decorator, art)
    if len(found) == 1:
        return folder / f"{found[0]}.py"
    if not found:
        raise Refused(f"no {what} module holds article {art} yet: name one with --{what}-module")
    raise Refused(f"article {art} is in {what} modules {', '.join(found)}: pick one with --{what}-module")


def catalogue_entry(code: str, severity: str) -> str:
    return f'''code = "{code}"
article = "{article_of(code)}"
severity = "{severity}"
# What impact_cents counts: levy, face_value, levy_without_tickets, cagnotte or none.
money = "none"

[title]
fr = "TODO titre court"
en = "TODO short title"

[explain]
fr = "TODO Art. …: ce que le règlement exige, et pourquoi."
en = "TODO Art. …: what the regulation requires, and why."

[messages.default]
fr = "TODO ce qui a été trouvé, ce qui était attendu (séance {{seance}}, coup {{coup}})"
en = "TODO what was found, what was expected (séance {{seance}}, coup {{coup}})"
'''


def check_stub(code: str) -> str:
    name = "rule_" + code[2:].replace("-", "_").lower()
    return f'''

@check("{code}", needs=("coups.seance,coup",))
def {name}(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """TODO: the requirement, in one line.

    Why: TODO what the breach hides.
    Non-compliant: TODO an example.
    Compliant: TODO an example.
    """
    # Yield Violation(table=..., row=..., seance=..., coup=..., expected=..., found=...):
    # the engine adds severity, article and the catalogue's message.
    return iter(())
'''


def batch_check_stub(code: str) -> str:
    name = "rule_" + code[2:].replace("-", "_").lower()
    return f'''

@batch_check("{code}")
def {name}(batch: Sequence[BatchCarnet], profile: Profile) -> Iterator[Violation]:
    """TODO: the requirement across the carnets of a table, in one line.

    Why: TODO what the breach hides.
    Non-compliant: TODO an example over two carnets.
    Compliant: TODO an example.
    """
    # Yield one Violation per breach, located in the carnet where it shows
    # (table=..., row=..., column=..., seance=..., expected=..., found=...),
    # with params "other" (the other carnet's path), "places" (each carnet's
    # cell: `_place`, `_seance_place` in archive) and "identity" (what names
    # the breach from one run to the next: `_identity`). The run makes each a
    # finding across carnets (auditor/across.py). In archive, `Archive.of(batch)`
    # gives the carnets in their tables' order and `consecutive()` each
    # carnet that follows another of its table.
    return iter(())
'''


def batch_fixture_pair(code: str) -> str:
    return f'''code: {code}

# Each case: a batch of tiny carnets (name → its tables in the source format,
# `;` and decimal commas, completed with valid defaults as the single-carnet
# fixtures are), then every finding of {code} it gives (tests/test_batch_cases.py
# compares code, carnet, séance and expected, and any other field named:
# row, found, other, impact_cents).
compliant_TODO:
  carnets:
    p: &before             # the carnet before, the same in both cases
      seances: |
        seance;date
        33;2026-03-01
    n:
      seances: |
        seance;date
        34;2026-03-02
  expect: []

violating_TODO:
  carnets:
    p: *before
    n:
      seances: |
        seance;date
        36;2026-03-03
  expect:
    - {{carnet: n, seance: 36, expected: "TODO"}}
'''


# auditor/synth/archive.py's breaches, as new_rule reads and writes them: one line.
BREACHES_LINE = re.compile(r"^BREACHES = \(([^)\n]*)\)$", re.M)


def _archive_breach(path: Path, code: str) -> str:
    """auditor/synth/archive.py's text with `code` added to the breaches a
    table's archive can be made with (`BREACHES`), and the line that says
    what the breach does, left to write. Refused when `BREACHES` is not the
    one line new_rule reads."""
    text = path.read_text(encoding="utf-8")
    found = BREACHES_LINE.search(text)
    if found is None:
        raise Refused(f"{path}: no one-line `BREACHES = (...)` to add {code} to; add it by hand")
    line = (f"#   {code}  TODO what carnet k changes so that {code}, and no other code, is found\n"
            f"#            (made in generate_archive).\n")
    codes = found[1].strip().rstrip(",").strip()
    tuple_text = f'({codes}, "{code}")' if codes else f'("{code}",)'
    return text[:found.start()] + line + f"BREACHES = {tuple_text}" + text[found.end():]


def fixture_pair(code: str) -> str:
    return f'''code: {code}

# A tiny carnet in the source format (`;`, decimal commas): only the tables and
# columns the rule needs; tests/carnet_fixture.py fills the rest with valid defaults.
compliant_TODO:
  coups: |
    seance;coup;gagnant;total_a;total_b
    1;1;a;10,00;10,00
  expect: []

violating_TODO:
  coups: |
    seance;coup;gagnant;total_a;total_b
    1;1;a;10,00;10,00
  expect:
    - {{seance: 1, coup: 1, row: 2}}
'''


def injector_stub(code: str) -> str:
    name = "break_" + code[2:].replace("-", "_").lower()
    return f'''

@injector("{code}")
def {name}(t, rng):
    """TODO: the one change that breaks {code} and nothing else ({code})."""
    raise CannotInject("TODO: injector of {code} not written yet")
'''


def existing(root: Path, code: str) -> list[str]:
    """Where `code` is already used: it is never reused."""
    where = []
    if (root / "rules" / "catalogue" / f"{code}.toml").exists():
        where.append("the catalogue")
    for kind in ("checks", "batch"):
        if (root / "tests" / "fixtures" / kind / f"{code}.yml").exists():
            where.append(f"the {kind} fixtures")
    archive = root / "auditor" / "synth" / "archive.py"
    breaches = BREACHES_LINE.search(archive.read_text(encoding="utf-8")) if archive.exists() else None
    if breaches is not None and f'"{code}"' in breaches[1]:
        where.append("the archive's breaches")
    for folder, decorator in ((root / "auditor" / "checks", "check"), (root / "auditor" / "checks", "batch_check"),
                              (root / "auditor" / "synth" / "breaches", "injector")):
        for p in sorted(folder.glob("*.py")):
            if f'@{decorator}("{code}"' in p.read_text(encoding="utf-8"):
                where.append(str(p.relative_to(root)))
    return where


def _needs_imports(path: Path, names: dict[str, str]) -> None:
    """Add `from module import name` lines for the names the stub uses that
    the module does not import at its top (after its last import, however
    many lines that import spans)."""
    text = path.read_text(encoding="utf-8")
    imports = [n for n in ast.parse(text).body if isinstance(n, (ast.Import, ast.ImportFrom))]
    have = {(a.asname or a.name).split(".")[0] for n in imports for a in n.names}
    missing = [f"from {module} import {name}\n" for name, module in names.items() if name not in have]
    if not missing:
        return
    lines = text.splitlines(keepends=True)
    end = max((n.end_lineno for n in imports), default=0)
    lines[end:end] = missing
    path.write_text("".join(lines), encoding="utf-8")


# The names each stub uses, and the modules they come from (added where the module lacks them).
CHECK_IMPORTS = {"Iterator": "typing", "Carnet": "auditor.carnet", "Profile": "auditor.catalogue",
                 "Violation": "auditor.model", "check": "auditor.registry"}
BATCH_CHECK_IMPORTS = {"Iterator": "typing", "Sequence": "typing", "BatchCarnet": "auditor.model",
                       "Profile": "auditor.catalogue", "Violation": "auditor.model", "batch_check": "auditor.registry"}
INJECTOR_IMPORTS = {"CannotInject": "auditor.synth.breaches.registry", "injector": "auditor.synth.breaches.registry"}


def new_rule(code: str, root: Path = ROOT, severity: str = "error", check_module: str | None = None,
             injector_module: str | None = None, across: bool = False) -> list[Path]:
    """Write the four stubs of `code` under `root`; return the files written or changed.
    `across`: a rule across the carnets of a table (a batch check, its breach made in an archive)."""
    m = CODE_PATTERN.match(code)
    if not m:
        raise Refused(f"{code!r} is not a rule code (EC<article>-<nn>, e.g. EC64-12)")
    if severity not in ("error", "warning", "info"):
        raise Refused(f"unknown severity {severity!r}")
    used = existing(root, code)
    if used:
        raise Refused(f"{code} exists already ({', '.join(used)}): codes are never reused")
    art = m[1]
    checks = root / "auditor" / "checks"
    over_batch = batch_modules(root)
    if across:
        if injector_module:
            raise Refused("a rule across carnets is broken in a table's archive (auditor/synth/archive.py), "
                          "not by an injector: no --injector-module")
        if check_module not in (None, ACROSS_MODULE):
            why = ("its rules compare other carnets than a table's, such as a casino's tables: write such a rule "
                   "by hand" if check_module in over_batch else "it checks one carnet")
            raise Refused(f"--across writes a rule across the carnets of a table into auditor/checks/"
                          f"{ACROSS_MODULE}.py, not {check_module} ({why})")
        check_path = checks / f"{ACROSS_MODULE}.py"
        breach_path = root / "auditor" / "synth" / "archive.py"
        if ACROSS_MODULE not in over_batch or not check_path.exists() or not breach_path.exists():
            raise Refused(f"--across needs {check_path} among the checks over a batch (BATCH_MODULES) "
                          f"and {breach_path}")
        cases, pair, stub, imports = "batch", batch_fixture_pair, batch_check_stub, BATCH_CHECK_IMPORTS
        breach_text = _archive_breach(breach_path, code)   # refused before anything is written
    else:
        if check_module in over_batch:
            raise Refused(f"{check_module} holds the checks over a batch: for a rule across the carnets of a "
                          f"table, add --across")
        check_path = pick_module(checks, "check", art, check_module, "check")
        breach_path = pick_module(root / "auditor" / "synth" / "breaches", "injector", art, injector_module,
                                  "injector")
        cases, pair, stub, imports = "checks", fixture_pair, check_stub, CHECK_IMPORTS
    toml = root / "rules" / "catalogue" / f"{code}.toml"
    fixture = root / "tests" / "fixtures" / cases / f"{code}.yml"
    toml.write_text(catalogue_entry(code, severity), encoding="utf-8")
    fixture.write_text(pair(code), encoding="utf-8")
    _needs_imports(check_path, imports)
    with check_path.open("a", encoding="utf-8") as out:
        out.write(stub(code))
    if across:
        breach_path.write_text(breach_text, encoding="utf-8")
    else:
        _needs_imports(breach_path, INJECTOR_IMPORTS)
        with breach_path.open("a", encoding="utf-8") as out:
            out.write(injector_stub(code))
    return [toml, check_path, fixture, breach_path]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("code", help="the new code, e.g. EC64-12")
    parser.add_argument("--severity", default="error", choices=("error", "warning", "info"))
    parser.add_argument("--check-module", help="module of auditor/checks/ (default: the one holding the article)")
    parser.add_argument("--injector-module", help="module of auditor/synth/breaches/ (default: as for the check)")
    parser.add_argument("--across", action="store_true",
                        help="a rule across the carnets of a table: a batch check, its cases in tests/fixtures/batch/, "
                             "its breach made in a table's archive (auditor/synth/archive.py)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the tree to write into (default: this checkout)")
    args = parser.parse_args(argv)
    try:
        written = new_rule(args.code.strip().upper(), args.root, args.severity, args.check_module,
                           args.injector_module, across=args.across)
    except Refused as exc:
        print(f"new_rule: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(path.relative_to(args.root))
    print("Now replace every TODO; README, \"Adding or changing a rule\", says what the tests require.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
