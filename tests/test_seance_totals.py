"""The séances' totals the history keeps (auditor/report/seance_totals.py):
integer cents, per séance, adding up to the carnet's own totals."""

from __future__ import annotations

from auditor.audit import audit_path
from auditor.catalogue import load_profile
from auditor.fingerprint import seance_dates
from auditor.report.seance_totals import FIELDS, seance_totals
from auditor.synth.breaches import inject
from auditor.synth.generate import Spec, generate, write_csv_folder


def totals(tmp_path, spec: Spec, breaches=()):
    t = generate(spec)
    inject(t, list(breaches), seed=spec.seed)
    write_csv_folder(t, tmp_path / "c")
    result = audit_path(tmp_path / "c", load_profile())
    return result, seance_totals(result.carnet, result.profile, seance_dates(result.carnet))


def test_a_compliant_carnet_levies_five_percent_and_its_cagnotte_is_its_tickets(tmp_path):
    result, rows = totals(tmp_path, Spec(seances=3, coups=8, mises=5, seed=4))
    assert [r["seance"] for r in rows] == [1, 2, 3] and all(tuple(r) == FIELDS for r in rows)
    assert all(isinstance(r[k], int) for r in rows for k in FIELDS if k.endswith("_cents"))
    assert sum(r["coups"] for r in rows) == 24
    for r in rows:
        assert r["levy_expected_cents"] == r["levy_recorded_cents"] == r["tickets_face_cents"] == r["cagnotte_cents"]
        # L(x) rounds each coup to 0,10 €: the rate stays within a rounding of 5 %.
        assert abs(r["levy_recorded_cents"] - r["winning_mass_cents"] * 5 // 100) <= 5 * r["coups"]
        assert r["seance_date"] is not None


def test_a_levy_shortfall_and_a_cagnotte_short_show_in_their_seance(tmp_path):
    result, rows = totals(tmp_path, Spec(seances=2, coups=6, mises=4, seed=7), ("EC66-01", "EC561-03"))
    codes = {f.code: f for f in result.findings}
    levy = codes["EC66-01"]
    row = next(r for r in rows if r["seance"] == levy.seance)
    assert row["levy_expected_cents"] - row["levy_recorded_cents"] == levy.impact_cents
    cag = codes["EC561-03"]
    row = next(r for r in rows if r["seance"] == cag.seance)
    assert row["tickets_face_cents"] - row["cagnotte_cents"] == cag.impact_cents
