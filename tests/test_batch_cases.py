"""The generic runner for tests/fixtures/batch/<CODE>.yml: the rules across
the carnets of a table, each case a batch of tiny carnets.

A case lists `carnets` (name → its tables in source CSV text, as the
single-carnet fixtures write them) and `expect`, the complete set of findings
of the case's code, compared on (code, carnet, séance, expected) plus any
other field the expectation names (impact_cents, coup, row, found, other).
`also_expect` asserts findings of other codes of the four; `status` maps a
carnet to `checked` or `not_checked` for the case's code (default: every
carnet checked).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from batch_fixture import build_batch, run_batch, statuses

FIXTURES = Path(__file__).parent / "fixtures" / "batch"
KEY = ("code", "carnet", "seance", "expected")


def load_cases():
    for path in sorted(FIXTURES.glob("*.yml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        code = data["code"]
        for name, case in data.items():
            if name != "code":
                yield pytest.param(code, case, id=f"{code}::{name}")


def compare(findings: list[dict], expected: list[dict], codes: set[str]) -> None:
    extra = sorted({k for e in expected for k in e} - set(KEY))
    fields = KEY + tuple(extra)
    got = sorted((tuple(f.get(k) for k in fields) for f in findings if f["code"] in codes), key=repr)
    want = sorted((tuple({**{k: None for k in fields}, **e}.get(k) for k in fields) for e in expected), key=repr)
    assert got == want, f"fields {fields}\n got: {got}\nwant: {want}"


@pytest.mark.parametrize(("code", "case"), list(load_cases()))
def test_case(code, case, tmp_path):
    batch = build_batch(case, tmp_path)
    findings = run_batch(batch)
    assert "expect" in case, "every case states its expected findings ([] for a compliant case)"
    for e in case["expect"]:
        e.setdefault("code", code)
        if e.get("expected") is not None:
            e["expected"] = str(e["expected"])
    compare(findings, case["expect"], {code})
    if case.get("also_expect") is not None:
        for e in case["also_expect"]:
            if e.get("expected") is not None:
                e["expected"] = str(e["expected"])
        compare(findings, case["also_expect"], {e["code"] for e in case["also_expect"]})
    per, _ = statuses(batch)
    want = {name: "checked" for name in case["carnets"]}
    want.update(case.get("status", {}))
    got = {name: "checked" if per[name][code] is None else "not_checked" for name in case["carnets"]}
    assert got == want, {name: per[name][code] for name in case["carnets"]}
    for f in findings:
        # What the lead hashes into the fingerprint: JSON, and never a path or an id.
        text = json.dumps(f["identity"], ensure_ascii=False)
        assert all(c.path not in text and f'"{c.id}"' not in text for c in batch), text
