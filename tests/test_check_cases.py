"""The one generic runner for tests/fixtures/checks/<CODE>.yml.

Each case is a tiny carnet; `expect` is the complete set of findings of the
case's code, compared on (code, séance, coup, rang, row) plus any other field
the expectation names (impact_cents, column, cell, table). `also_expect` asserts
findings of other codes; otherwise other codes are ignored.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from carnet_fixture import audit_case

FIXTURES = Path(__file__).parent / "fixtures" / "checks"
KEY = ("code", "seance", "coup", "rang", "row")


def load_cases():
    for path in sorted(FIXTURES.glob("*.yml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        code = data["code"]
        for name, case in data.items():
            if name == "code":
                continue
            yield pytest.param(code, case, id=f"{code}::{name}")


def _project(finding: dict, fields: tuple[str, ...]) -> tuple:
    return tuple(finding.get(f) for f in fields)


def _compare(findings: list[dict], expected: list[dict], codes: set[str]) -> None:
    extra = sorted({k for e in expected for k in e} - set(KEY))
    fields = KEY + tuple(extra)
    got = sorted((_project(f, fields) for f in findings if f["code"] in codes), key=repr)
    want = sorted((_project({**{k: None for k in fields}, **e}, fields) for e in expected), key=repr)
    assert got == want, f"fields {fields}\n got: {got}\nwant: {want}"


@pytest.mark.parametrize(("code", "case"), list(load_cases()))
def test_case(code, case, tmp_path):
    result = audit_case(case, tmp_path)
    findings = [f.as_json() for f in result.findings]
    status = {r.code: r.status.value for r in result.rules}
    if "status" in case:
        assert status[code] == case["status"]
    else:
        assert status[code] == "checked", f"{code} was not checked: {[r for r in result.rules if r.code == code]}"
    assert "expect" in case, "every case states its expected findings ([] for a compliant case)"
    for e in case["expect"]:
        e.setdefault("code", code)
    _compare(findings, case["expect"], {code})
    also = case.get("also_expect")
    if also is not None:
        codes = {e["code"] for e in also}
        _compare(findings, also, codes)
