"""Integrity: catalogue ↔ spec ↔ checks ↔ fixtures ↔ docs, and the one-way data flow."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
import yaml

import auditor.checks
from auditor.catalogue import load_catalogue
from auditor.checks import registered
from auditor.registry import check

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT.parent / "shared" / "spec" / "rules.csv"
FIXTURES = ROOT / "tests" / "fixtures" / "checks"


@pytest.mark.skipif(not SPEC.exists(), reason="../shared/spec/rules.csv not beside the checkout")
def test_catalogue_matches_the_spec():
    spec = {r["code"]: r for r in csv.DictReader(SPEC.open(encoding="utf-8"))}
    cat = load_catalogue()
    assert set(cat) == set(spec)
    for code, row in spec.items():
        meta = cat[code]
        assert (meta.article, meta.severity.label, meta.title["fr"]) == (row["article"], row["severity"], row["title"])


def test_every_check_is_in_the_catalogue():
    assert set(registered()) <= set(load_catalogue())


def test_every_check_module_is_listed():
    folder = Path(auditor.checks.__file__).parent
    modules = {p.stem for p in folder.glob("*.py") if not p.stem.startswith("_")}
    listed = {m.__name__.rsplit(".", 1)[1] for m in auditor.checks.MODULES}
    assert modules == listed


@pytest.mark.parametrize("code", sorted(registered()))
def test_check_docstring_has_the_sections(code):
    doc = registered()[code].func.__doc__ or ""
    first = doc.strip().splitlines()[0] if doc.strip() else ""
    assert first and not first.startswith(("Why", "TODO")), code
    for section in ("Why:", "Non-compliant:", "Compliant:"):
        assert section in doc, f"{code} docstring lacks {section}"


@pytest.mark.parametrize("code", sorted(registered()))
def test_every_check_has_compliant_and_violating_fixtures(code):
    path = FIXTURES / f"{code}.yml"
    assert path.exists(), f"no fixture file for {code}"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert data["code"] == code
    cases = [c for k, c in data.items() if k != "code"]
    assert any(c.get("expect") == [] for c in cases), f"{code}: no compliant case"
    assert any(c.get("expect") for c in cases), f"{code}: no violating case"


BATCH_FIXTURES = ROOT / "tests" / "fixtures" / "batch"


def _batch_only():
    from auditor.checks import registered_batch

    return sorted(set(registered_batch()) - set(registered()))


@pytest.mark.parametrize("code", _batch_only())
def test_every_batch_only_check_has_compliant_and_violating_batch_fixtures(code):
    """A code checked only over a batch (the rules across the carnets of a
    table) has its cases in tests/fixtures/batch/, batches of carnets."""
    path = BATCH_FIXTURES / f"{code}.yml"
    assert path.exists(), f"no batch fixture file for {code}"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert data["code"] == code
    cases = [c for k, c in data.items() if k != "code"]
    assert all(len(c["carnets"]) >= 1 for c in cases)
    assert any(c.get("expect") == [] for c in cases), f"{code}: no compliant case"
    assert any(c.get("expect") for c in cases), f"{code}: no violating case"


@pytest.mark.parametrize("code", _batch_only())
def test_batch_check_docstring_has_the_sections(code):
    from auditor.checks import registered_batch

    doc = registered_batch()[code].func.__doc__ or ""
    first = doc.strip().splitlines()[0] if doc.strip() else ""
    assert first and not first.startswith(("Why", "TODO")), code
    for section in ("Why:", "Non-compliant:", "Compliant:"):
        assert section in doc, f"{code} docstring lacks {section}"


@pytest.mark.parametrize("code", sorted(load_catalogue()))
def test_message_placeholders_match_between_languages(code):
    for kind, variants in load_catalogue()[code].messages.items():
        fr = set(re.findall(r"{(\w+)", variants["fr"]))
        en = set(re.findall(r"{(\w+)", variants["en"]))
        assert fr == en, f"{code}.{kind}: placeholders differ between fr and en"


def test_registry_refuses_bad_and_duplicate_codes():
    with pytest.raises(ValueError):
        check("EC6-1")
    with pytest.raises(ValueError):
        check("EC64-01")(lambda carnet, profile: [])


def test_batch_registry_refuses_bad_and_duplicate_codes():
    from auditor.checks import registered_batch
    from auditor.registry import batch_check

    with pytest.raises(ValueError):
        batch_check("EC82-3")
    assert "EC82-03" in registered_batch()
    with pytest.raises(ValueError):
        batch_check("EC82-03")(lambda batch, profile: [])


def test_injector_registry_refuses_bad_codes_duplicates_and_shapes():
    from auditor.synth.breaches import INJECTORS
    from auditor.synth.breaches.registry import injector

    with pytest.raises(ValueError):
        injector("EC64-1")
    with pytest.raises(ValueError):
        injector("EC64-01")(lambda t, rng: set())
    with pytest.raises(TypeError):
        injector("EC99-98")(lambda t: set())
    assert "EC99-98" not in INJECTORS
    catalogue = load_catalogue()
    assert set(INJECTORS) <= set(catalogue), "every injector breaks a rule of the catalogue"


def test_cross_carnet_check_yields_violations_like_any_rule():
    """EC82-03 over a batch: Violations, located in the carnet where the
    ticket shows again, made findings by the same catalogue messages."""
    from auditor.audit import audit_batch
    from auditor.catalogue import load_profile
    from auditor.model import BatchCarnet, Finding, Violation

    a = BatchCarnet("a", "a.xlsx", "Casino X", 3, [[10, 1, 5, 1, 1, 2]])
    b = BatchCarnet("b", "b.xlsx", "Casino X", 5, [[10, 4, 9, 1, 2, 7]])
    other = BatchCarnet("c", "c.xlsx", "Casino Y", 1, [[10, 1, 9, 1, 1, 2]])
    got = audit_batch([a, b, other], load_profile(), "fr")
    assert len(got) == 1
    f, v = got[0]
    assert isinstance(f, Finding) and isinstance(v, Violation)
    assert (f.code, v.table, v.row, v.seance, v.coup) == ("EC82-03", "tickets", 7, 1, 2)
    assert (v.params["first"], v.params["last"], v.params["count"]) == (4, 5, 2)
    assert "table 3" in f.message and "a.xlsx" in f.message
    assert audit_batch([a, other], load_profile(), "fr") == []


@pytest.mark.parametrize("code", sorted(load_catalogue()))
def test_catalogue_entry_has_no_placeholder(code):
    """`scripts/new_rule.py` writes TODO texts: a rule ships only once they are written."""
    meta = load_catalogue()[code]
    texts = [*meta.title.values(), *meta.explain.values(), *(t for v in meta.messages.values() for t in v.values())]
    assert not [t for t in texts if "TODO" in t], f"{code}: the catalogue entry still has TODO texts"


def test_fixture_cases_have_no_placeholder():
    stubs = [f"{p.name}::{name}" for folder in (FIXTURES, BATCH_FIXTURES) for p in sorted(folder.glob("*.yml"))
             for name in yaml.safe_load(p.read_text(encoding="utf-8")) if "TODO" in str(name)]
    assert not stubs, f"fixture cases still named as new_rule.py wrote them: {stubs}"


def _entry(**changes) -> dict:
    data = {"code": "EC64-99", "article": "64", "severity": "error", "money": "none",
            "title": {"fr": "t", "en": "t"}, "explain": {"fr": "e", "en": "e"},
            "messages": {"default": {"fr": "m", "en": "m"}}}
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


@pytest.mark.parametrize("changes", [
    {"money": "cash"}, {"money": None}, {"rejects_row": "sometimes"}, {"ticket_map": "lost"},
    {"shows": "picture"}, {"same_loss": "Lost Ticket"}, {"same_loss": "lost_ticket"},   # a rule without money
    {"monney": "levy"}, {"messages": {}},
], ids=repr)
def test_catalogue_refuses_unknown_values_and_keys(changes):
    from auditor.catalogue import _parse_rule

    with pytest.raises(ValueError):
        _parse_rule(_entry(**changes), "EC64-99.toml")


def test_catalogue_refuses_a_same_loss_group_of_one_and_a_shared_ticket_column():
    from auditor.catalogue import _check_across, _parse_rule

    lone = _parse_rule(_entry(money="levy", same_loss="alone"), "x")
    with pytest.raises(ValueError, match="alone"):
        _check_across({"EC64-99": lone})
    # Two rules of one kind of money add up: such a group would count nothing once.
    same = [_parse_rule(_entry(code=c, money="face_value", same_loss="numbers"), "x") for c in ("EC64-98", "EC64-99")]
    with pytest.raises(ValueError, match="numbers"):
        _check_across({m.code: m for m in same})
    _check_across({"EC64-98": same[0], "EC64-99": _parse_rule(_entry(money="levy", same_loss="numbers"), "y")})
    a = _parse_rule(_entry(ticket_map="missing"), "a")
    with pytest.raises(ValueError, match="missing"):
        _check_across({"EC64-98": a, "EC64-99": a})


def test_no_list_of_codes_in_the_package():
    """What a rule is lives in its catalogue entry: code that needs "the levy
    rules" or "the rules that reject a row" asks the catalogue. A tuple, list,
    set or dict of codes in the package is that knowledge copied (the synthetic
    carnets' injectors, which return the codes they expect, and the reader's
    `(code, Violation)` problems aside)."""
    import ast

    from auditor.catalogue import CODE_PATTERN

    package = ROOT / "auditor"
    found = []
    for path in sorted(package.rglob("*.py")):
        if "synth" in path.relative_to(package).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
            if isinstance(node, ast.Tuple) and len(node.elts) == 2 and isinstance(node.elts[1], ast.Call):
                continue    # a problem as the reader emits it: (its code, its Violation)
            if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)) and any(
                    isinstance(e, ast.Constant) and isinstance(e.value, str) and CODE_PATTERN.match(e.value)
                    for e in items or ()):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, f"codes listed in code instead of the catalogue: {found}"
