"""Start a new rule: `python scripts/new_rule.py EC64-12 [--check-module art64] [--injector-module art64]`.

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

A code already in the catalogue, in a check, a fixture or an injector is
refused: codes are never reused (a retired code stays in the catalogue).
`--root` writes into another copy of the tree (the tests use it).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

CODE_PATTERN = re.compile(r"^EC(\d{2,3})-(\d{2})$")
ROOT = Path(__file__).resolve().parent.parent
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
    if (root / "tests" / "fixtures" / "checks" / f"{code}.yml").exists():
        where.append("the fixtures")
    for folder, decorator in ((root / "auditor" / "checks", "check"), (root / "auditor" / "checks", "batch_check"),
                              (root / "auditor" / "synth" / "breaches", "injector")):
        for p in sorted(folder.glob("*.py")):
            if f'@{decorator}("{code}"' in p.read_text(encoding="utf-8"):
                where.append(str(p.relative_to(root)))
    return where


def _needs_imports(path: Path, names: dict[str, str]) -> None:
    """Add `from module import name` lines the stub uses and the module lacks (after the last import)."""
    text = path.read_text(encoding="utf-8")
    missing = [f"from {module} import {name}" for name, module in names.items()
               if not re.search(rf"^(from \S+ import .*\b{name}\b|import .*\b{name}\b)", text, re.M)]
    if not missing:
        return
    lines = text.splitlines(keepends=True)
    last = max(i for i, line in enumerate(lines) if line.startswith(("import ", "from ")))
    # A parenthesised import continues to its closing line.
    while not lines[last].rstrip().endswith(")") and "(" in lines[last] and last + 1 < len(lines):
        last += 1
    lines[last + 1:last + 1] = [line + "\n" for line in missing]
    path.write_text("".join(lines), encoding="utf-8")


def new_rule(code: str, root: Path = ROOT, severity: str = "error", check_module: str | None = None,
             injector_module: str | None = None) -> list[Path]:
    """Write the four stubs of `code` under `root`; return the files written or changed."""
    m = CODE_PATTERN.match(code)
    if not m:
        raise Refused(f"{code!r} is not a rule code (EC<article>-<nn>, e.g. EC64-12)")
    if severity not in ("error", "warning", "info"):
        raise Refused(f"unknown severity {severity!r}")
    used = existing(root, code)
    if used:
        raise Refused(f"{code} exists already ({', '.join(used)}): codes are never reused")
    art = m[1]
    check_path = pick_module(root / "auditor" / "checks", "check", art, check_module, "check")
    injector_path = pick_module(root / "auditor" / "synth" / "breaches", "injector", art, injector_module,
                                "injector")
    toml = root / "rules" / "catalogue" / f"{code}.toml"
    fixture = root / "tests" / "fixtures" / "checks" / f"{code}.yml"
    toml.write_text(catalogue_entry(code, severity), encoding="utf-8")
    fixture.write_text(fixture_pair(code), encoding="utf-8")
    _needs_imports(check_path, {"Iterator": "typing", "Carnet": "auditor.carnet", "Profile": "auditor.catalogue",
                                "Violation": "auditor.model", "check": "auditor.registry"})
    with check_path.open("a", encoding="utf-8") as out:
        out.write(check_stub(code))
    _needs_imports(injector_path, {"CannotInject": "auditor.synth.breaches.registry",
                                   "injector": "auditor.synth.breaches.registry"})
    with injector_path.open("a", encoding="utf-8") as out:
        out.write(injector_stub(code))
    return [toml, check_path, fixture, injector_path]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("code", help="the new code, e.g. EC64-12")
    parser.add_argument("--severity", default="error", choices=("error", "warning", "info"))
    parser.add_argument("--check-module", help="module of auditor/checks/ (default: the one holding the article)")
    parser.add_argument("--injector-module", help="module of auditor/synth/breaches/ (default: as for the check)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the tree to write into (default: this checkout)")
    args = parser.parse_args(argv)
    try:
        written = new_rule(args.code.strip().upper(), args.root, args.severity, args.check_module,
                           args.injector_module)
    except Refused as exc:
        print(f"new_rule: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(path.relative_to(args.root))
    print("Now replace every TODO; README, \"Adding or changing a rule\", says what the tests require.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
