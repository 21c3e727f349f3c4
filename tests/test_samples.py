"""The sample carnets give exactly their expected codes (expected.toml)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from auditor.catalogue import load_profile
from auditor.model import Severity
from auditor.audit import audit_path
from auditor.read import discover

SAMPLES = Path(__file__).resolve().parent.parent / "sample_carnets"
EXPECTED = tomllib.loads((SAMPLES / "expected.toml").read_text(encoding="utf-8"))


def test_every_sample_is_listed():
    found = {p.relative_to(SAMPLES).as_posix() for p in discover(SAMPLES)}
    assert found == set(EXPECTED)


def test_samples_cover_both_containers_and_breaches():
    compliant = [k for k in EXPECTED if k.startswith("compliant/")]
    breaches = [k for k in EXPECTED if k.startswith("infractions/")]
    assert any(k.endswith(".xlsx") for k in compliant) and any(not k.endswith(".xlsx") for k in compliant)
    assert len(breaches) >= 4


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_gives_expected_codes(name):
    result = audit_path(SAMPLES / name, load_profile(), debug=not name.endswith("corrompu.xlsx"))
    got = {f.code for f in result.findings if f.severity >= Severity.WARNING}
    assert got == set(EXPECTED[name]["codes"]), [f.message for f in result.findings if f.code not in
                                                   EXPECTED[name]["codes"]][:10]


def test_compliant_samples_are_substantial():
    for name in (k for k in EXPECTED if k.startswith("compliant/")):
        s = audit_path(SAMPLES / name, load_profile(), debug=True).summary
        assert s["seances"] >= 3 and s["coups"] >= 45 and s["mises"] >= 200, (name, s)
        assert s["levy_expected_cents"] == s["levy_recorded_cents"] > 0
