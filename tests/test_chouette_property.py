"""Chouette, fiches and card holders on generated carnets.

Property: a carnet generated compliant, with chouette runs among simple coups
and its fiche register, gives no finding from the rules of art. 63 (fiches,
card holders, decks), 65, 66 and the chouette forms of art. 64 and 66-1,
whatever the seed, the size and the tie rounding. Plus: the generator does walk
the chouette's paths, and the report tells each run in one line.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.catalogue import load_profile
from auditor.derived.chouette import chouette_state
from auditor.report.chouette_runs import run_stories
from auditor.synth.generate import Spec, generate, write_csv_folder
from auditor.model import Status
from auditor.audit import audit_path

CODES = ("EC63-03", "EC63-04", "EC63-05", "EC63-06", "EC63-07", "EC63-08", "EC64-03", "EC64-04",
         "EC65-01", "EC65-02", "EC65-03", "EC65-04", "EC65-05", "EC66-01", "EC66-02", "EC661-01")


def audit_generated(spec: Spec, tie_rounding: str = "up"):
    profile = load_profile(tie_rounding=tie_rounding)
    tables = generate(spec, profile)
    with tempfile.TemporaryDirectory() as d:
        write_csv_folder(tables, Path(d))
        return tables, audit_path(Path(d), profile, debug=True)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), seances=st.integers(1, 3), coups=st.integers(1, 24),
       mises=st.integers(1, 9), first_seance=st.integers(1, 40),
       tie_rounding=st.sampled_from(["up", "down", "either"]))
def test_generated_chouette_carnet_gives_no_finding(seed, seances, coups, mises, first_seance, tie_rounding):
    spec = Spec(seed=seed, seances=seances, coups=coups, mises=mises, first_seance=first_seance, chouette=True)
    _, result = audit_generated(spec, tie_rounding)
    status = {r.code: r.status for r in result.rules}
    assert [c for c in CODES if status[c] is not Status.CHECKED] == []
    assert [(f.code, f.seance, f.coup, f.message) for f in result.findings if f.code in CODES] == []
    assert result.summary["levy_expected_cents"] == result.summary["levy_recorded_cents"]


def test_generator_walks_every_chouette_path():
    """Over a few fixed seeds the generated chouettes go through every state the rules judge."""
    seen: set[str] = set()
    for seed in range(1, 6):
        tables, result = audit_generated(Spec(seed=seed, seances=2, coups=30, chouette=True))
        s = chouette_state(result.carnet).frame(result.carnet)
        nxt = s.groupby("run")["gagnant"].shift(-1)
        # A new adjudication opens a new segment: count the sautes of the segment it closes.
        seg_sautes = s["segment"].map(s.groupby("segment")["saute"].sum())
        closed = seg_sautes.groupby(s["run"]).shift()
        auction = (s["evenement"] == "adjudication") & ~s["run_start"] & s["prev_saute"].fillna(False)
        facts = {
            "remise": (s["evenement"] == "remise").any(),
            "auction_after_second_saute": (auction & (closed == 2)).any(),
            "auction_after_first_saute": (auction & (closed == 1)).any(),
            "run_ends_on_saute": (s["saute"].fillna(False) & s["run_end"]).any(),
            "chouetteur_loses_and_stays": ((s["gagnant"] == "b") & nxt.notna()).any(),
            "en_dehors": (s["en_dehors_cents"] > 0).any(),
            "partial_loss": ((s["gagnant"] == "b") & (s["sur_chouette"] < s["chouette_cents"])).any(),
            "simple_after_chouette": any(a["type"] == "chouette" and b["type"] == "simple"
                                         and a["seance"] == b["seance"]
                                         for a, b in zip(tables["coups"], tables["coups"][1:])),
        }
        seen |= {k for k, v in facts.items() if v}
    assert seen == set(facts)


def test_chouette_option_is_off_by_default():
    tables = generate(Spec(seed=5, seances=2, coups=10))
    assert {c["type"] for c in tables["coups"]} == {"simple"}


def _remise_carnet(folder: Path) -> Path:
    """Adjudicated for 100 €, sauté at coup 2, remise at coup 3, then 150 € at coup 4 after it grew."""
    folder.mkdir()
    (folder / "carnet.csv").write_text("casino;table;date_debut\nCasino test;1;2026-03-01\n", encoding="utf-8")
    (folder / "seances.csv").write_text("seance;date\n1;2026-03-01\n", encoding="utf-8")
    (folder / "coups.csv").write_text(
        "seance;coup;type;joueur_a;joueur_b;chouette;en_dehors;evenement;total_a;total_b;gagnant;"
        "prelevement;prelevement_apres\n"
        "1;1;simple;1;2;;;;10,00;10,00;a;0,50;0\n"
        "1;2;chouette;7;3;100,00;0;adjudication;100,00;100,00;b;5,00;5,00\n"
        "1;3;chouette;7;3;100,00;0;remise;50,00;50,00;a;5,00;0\n"
        "1;4;chouette;7;4;150,00;0;;20,00;20,00;a;0;0\n"
        "1;5;chouette;8;5;40,00;0;;20,00;20,00;a;0;0\n", encoding="utf-8")
    (folder / "mises.csv").write_text("seance;coup;rang;fiche;cote;montant\n", encoding="utf-8")
    (folder / "tickets.csv").write_text("seance;coup;phase;valeur;premier;dernier\n", encoding="utf-8")
    return folder


def test_run_stories_tell_each_run_in_one_line(tmp_path):
    result = audit_path(_remise_carnet(tmp_path / "c"), load_profile(), debug=True)
    fr = [(r.seance, r.coups, r.chouetteur, r.story) for r in run_stories(result.carnet, "fr")]
    assert fr == [
        ("1", "2–4", "7", "adjugée au coup 2 pour 100,00\u00a0€ ; sautée au coup 2 ; "
                          "remise au coup 3 pour 100,00\u00a0€ ; dernier coup 4 (chouette de 150,00\u00a0€)"),
        ("1", "5", "8", "commencée au coup 5 sans adjudication (40,00\u00a0€) ; dernier coup 5 "
                        "(chouette de 40,00\u00a0€)"),
    ]
    en = [r.story for r in run_stories(result.carnet, "en")]
    assert en[0] == ("adjudicated at coup 2 for €100.00; lost at coup 2; re-staked at coup 3 for €100.00; "
                     "last coup 4 (chouette of €150.00)")


def test_no_chouette_no_story(tmp_path):
    tables = generate(Spec(seed=2, seances=1, coups=4))
    write_csv_folder(tables, tmp_path / "c")
    assert run_stories(audit_path(tmp_path / "c", load_profile(), debug=True).carnet, "fr") == []
