"""The fixture loader's defaults alone make a compliant carnet, so a finding in
a fixture case comes from what the case wrote, not from the filling."""

from carnet_fixture import audit_case


def test_defaults_alone_give_no_error_or_warning(tmp_path):
    result = audit_case({}, tmp_path)
    assert [f.message for f in result.findings if f.severity.label != "info"] == []


def test_defaults_for_several_coups_give_no_error_or_warning(tmp_path):
    case = {"coups": "seance;coup\n1;1\n1;2\n2;1\n"}
    result = audit_case(case, tmp_path)
    assert [f.message for f in result.findings if f.severity.label != "info"] == []
