"""The money at stake counts a lost ticket once across the carnets of a
table (auditor.stake, docs/interpretations.md "Money at stake"): a ticket
detached and not written down at the end of a carnet, or at the start of
the next, shows as its coup's levy without its ticket (EC661-01) and as its
number missing between the two carnets (EC83-04). Each carnet's total (its
findings across carnets counted as its own) and the batch's count it once.

Run as a user runs it: the command over a table's archive written to disk."""

from __future__ import annotations

import json

import pytest

from auditor.cli import main
from auditor.synth.archive import ArchiveSpec, generate_archive, write_archive

TEN = 10   # 0,10 €: the value whose tickets are lost


def _lose_last(tables: dict) -> None:
    """The carnet's last 0,10 € ticket detached but not written down."""
    row = [r for r in tables["tickets"] if r["valeur"] == TEN][-1]
    if row["premier"] == row["dernier"]:
        tables["tickets"].remove(row)
    else:
        row["dernier"] -= 1
    _cagnotte_less(tables, row["seance"])


def _lose_first(tables: dict) -> None:
    """The carnet's first 0,10 € ticket detached but not written down."""
    row = next(r for r in tables["tickets"] if r["valeur"] == TEN)
    if row["premier"] == row["dernier"]:
        tables["tickets"].remove(row)
    else:
        row["premier"] += 1
    _cagnotte_less(tables, row["seance"])


def _cagnotte_less(tables: dict, seance: int) -> None:
    # The séance's cagnotte holds the tickets written down: one less.
    next(s for s in tables["seances"] if s["seance"] == seance)["cagnotte"] -= TEN


def _audit(days, tmp_path, name):
    write_archive(days, tmp_path / name / "table", "csv")
    out = tmp_path / f"{name}-out"
    assert main(["audit", str(tmp_path / name), "--out", str(out), "--fail-on", "never", "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    per = {e["path"].rsplit("/", 1)[-1]: json.loads((out / e["id"] / "findings.json").read_text(encoding="utf-8"))
           for e in summary["carnets"]}
    return summary, per


CASES = {
    # what is lost: at the end of carnet 0, at the start of carnet 1, or both (two numbers missing)
    "end_of_earlier": ((_lose_last,), (), 10, 10, 10),
    "start_of_later": ((), (_lose_first,), 10, 10, 10),
    "both": ((_lose_last,), (_lose_first,), 20, 20, 20),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_ticket_lost_between_two_carnets_counts_once(case, tmp_path):
    in_p, in_n, p_more, n_more, batch_more = CASES[case]
    clean = generate_archive(ArchiveSpec(3))
    base_summary, base = _audit(clean, tmp_path, "clean")
    days = generate_archive(ArchiveSpec(3))
    for lose in in_p:
        lose(days[0][1])
    for lose in in_n:
        lose(days[1][1])
    summary, per = _audit(days, tmp_path, "lost")
    p, n = (days[k][0].isoformat() for k in (0, 1))
    codes = {(f["code"], name) for name, doc in per.items() for f in doc["findings"]} - \
        {(f["code"], name) for name, doc in base.items() for f in doc["findings"]}
    # The loss shows under both rules: its levy in the carnet where it was lost, its number across the two.
    assert {("EC83-04", p), ("EC83-04", n)} <= codes
    assert (("EC661-01", p) in codes) == bool(in_p) and (("EC661-01", n) in codes) == bool(in_n)
    missing = next(f for f in per[n]["findings"] if f["code"] == "EC83-04")
    assert missing["impact_cents"] == batch_more          # each finding keeps its own impact
    assert per[p]["summary"]["impact_cents"] - base[p]["summary"]["impact_cents"] == p_more
    assert per[n]["summary"]["impact_cents"] - base[n]["summary"]["impact_cents"] == n_more
    assert summary["totals"]["impact_cents"] - base_summary["totals"]["impact_cents"] == batch_more
    # summary.json's carnet rows say what each carnet's findings.json says.
    rows = {e["path"].rsplit("/", 1)[-1]: e["summary"]["impact_cents"] for e in summary["carnets"]}
    assert rows == {name: doc["summary"]["impact_cents"] for name, doc in per.items()}


def test_batch_total_matches_a_missing_number_with_a_levy_at_either_end():
    from auditor.stake import batch_at_stake

    parts = {"p": (5, {("lost_ticket", 2): {"levy_without_tickets": 10}}),
             "m": (0, {("lost_ticket", 3): {"levy_without_tickets": 10}}),
             "n": (0, {("lost_ticket", 4): {"face_value": 30}})}

    def cross(a, sa, b, sb, cents):
        return {"code": "EC83-04", "impact_cents": cents,
                "across": [{"carnet": b, "seance": sb}, {"carnet": a, "seance": sa}]}

    # p → m and m → n each lose one 0,10 € ticket: p's at its end, m's at its end (m has one séance).
    assert batch_at_stake(parts, [cross("p", 2, "m", 3, 10), cross("m", 3, "n", 4, 10)]) == 5 + 10 + 10 + 30
    # A loss of one carnet never cancels another's: p's five levies without tickets are not n's
    # missing numbers, and the one number missing between them is one of p's five.
    apart = {"p": (0, {("lost_ticket", 5): {"levy_without_tickets": 50}}),
             "n": (0, {("lost_ticket", 1): {"face_value": 50}})}
    assert batch_at_stake(apart, []) == 100
    assert batch_at_stake(apart, [cross("p", 5, "n", 1, 10)]) == 100
    assert batch_at_stake(apart, [cross("p", 5, "n", 1, 60)]) == 110
    # The order of the carnets and of their findings does not change the total.
    assert batch_at_stake(dict(reversed(list(parts.items()))), [cross("m", 3, "n", 4, 10), cross("p", 2, "m", 3, 10)]) \
        == batch_at_stake(parts, [cross("p", 2, "m", 3, 10), cross("m", 3, "n", 4, 10)])
    # A finding across carnets of no same-loss group adds its money as it is.
    assert batch_at_stake(parts, [{"code": "EC64-10", "impact_cents": 7, "across": []}]) == 5 + 10 + 10 + 30 + 7
    # Different tickets of one kind add up; the two kinds of one account take the larger.
    assert batch_at_stake({"p": (0, {("lost_ticket", 1): {"levy_without_tickets": 10, "face_value": 40}})},
                          [cross("p", 1, "n", 1, 30)]) == 70
