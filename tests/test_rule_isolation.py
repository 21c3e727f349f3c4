"""One rule's defect is that rule's problem: a check that raises is reported
`not_checked` (internal error, with the exception's type, in the report's
language) and every other rule still runs; only a defect of the reader leaves
the whole carnet unaudited."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from auditor import audit as audit_module
from auditor.catalogue import load_profile
from auditor.synth.generate import Spec, generate, write_csv_folder
from auditor.model import Status
from auditor.audit import audit_path
from auditor.checks import registered
from carnet_fixture import Fixture

PROFILE = load_profile()


def _key(result):
    return ([(f.code, f.seance, f.coup, f.rang, f.row, f.message) for f in result.findings],
            {r.code: (r.status, r.findings, r.reason) for r in result.rules})


@pytest.fixture(scope="module")
def carnet(tmp_path_factory) -> Path:
    tables = generate(Spec(seances=2, coups=8, mises=4, seed=3, chouette=True))
    from auditor.synth.breaches import inject
    inject(tables, ["EC66-01", "EC64-03"], seed=3)
    return write_csv_folder(tables, tmp_path_factory.mktemp("iso") / "c")


@pytest.mark.parametrize("code", ["EC64-03", "EC661-01", "EC00-03", "EC83-01"])
@pytest.mark.parametrize("lang, words", [("fr", "erreur interne"), ("en", "internal error")])
def test_a_rule_that_raises_is_not_checked_and_the_others_run(code, lang, words, carnet, monkeypatch):
    before_findings, before_rules = _key(audit_path(carnet, PROFILE, lang))

    def boom(carnet, profile):
        yield from ()
        raise ZeroDivisionError("on purpose")

    registry = registered()
    monkeypatch.setitem(registry, code, dataclasses.replace(registry[code], func=boom))
    result = audit_path(carnet, PROFILE, lang)
    findings, rules = _key(result)
    status, n, reason = rules.pop(code)
    assert status is Status.NOT_CHECKED
    assert words in reason and "ZeroDivisionError" in reason and "on purpose" in reason
    before_rules.pop(code)
    assert rules == before_rules
    assert findings == [f for f in before_findings if f[0] != code]
    assert {"EC64-03", "EC66-01"} <= {f[0] for f in findings} | {code}   # the other rules' findings are there
    # With debug the defect is not hidden (tests and the fuzzer see it).
    with pytest.raises(ZeroDivisionError):
        audit_path(carnet, PROFILE, lang, debug=True)


@pytest.mark.parametrize("lang, words", [("fr", "erreur interne de l'auditeur"), ("en", "internal error")])
def test_only_a_reader_defect_leaves_the_carnet_unaudited(lang, words, carnet, monkeypatch):
    def broken_reader(path, limits=None, columns=None):
        raise MemoryError("reader on purpose")

    monkeypatch.setattr(audit_module, "read_carnet", broken_reader)
    result = audit_path(carnet, PROFILE, lang)
    assert [f.code for f in result.findings] == ["EC00-01"]
    assert words in result.findings[0].message and "MemoryError" in result.findings[0].message
    statuses = {r.code: r.status for r in result.rules}
    assert statuses.pop("EC00-01") is Status.CHECKED
    assert set(statuses.values()) == {Status.NOT_CHECKED}


# A clerk's unreadable séance dates beside a register of ticket books: EC561-01
# once raised on them (and took every rule with it).
@pytest.mark.parametrize("dates", [["02.03.2026"], ["31/02/2026"], ["46083"], ["2026-03-01", "hier"], []])
def test_unreadable_seance_dates_with_a_book_register(dates, tmp_path):
    rows = "".join(f"\n{i + 1};{d};" for i, d in enumerate(dates))
    case = {"seances": "seance;date;timbre" + rows,
            "tickets": "seance;coup;valeur;premier;dernier\n1;1;0,10;1;5",
            "carnets_tickets": "valeur;premier;mise_en_service\n0,10;1;2026-03-02"}
    result = audit_path(Fixture(case).write(tmp_path), PROFILE, debug=True)
    statuses = {r.code: r.status for r in result.rules}
    assert statuses["EC561-01"] is Status.CHECKED
    assert "EC00-01" not in {f.code for f in result.findings}
    assert "erreur interne" not in str([f.message for f in result.findings] + [r.reason for r in result.rules])
    # A readable séance date before the book's service date is still found.
    assert ("EC561-01" in {f.code for f in result.findings}) == ("2026-03-01" in dates)
