"""changes.json / changes.txt over several nights as controllers run them:
the command line, the real clock (no SOURCE_DATE_EPOCH), decisions recorded
with `ecarte-audit review` between the nights, carnets deleted between them
(outputs.md v1.2 "What changed since the baseline", "A review holds for what
was reviewed"; docs/changes.md).

- a night that --fail-on-new fails lists why in the morning's digest: a
  review that no longer holds (stale, or `corrige` on a finding still
  found) is listed every night it stays so, in both languages, and stderr
  says why in one line;
- a finding across carnets that involved a vanished carnet is listed and
  counted once, with that carnet's findings (not also as absent);
- `corrige` on a finding the run still lists as present is recorded with a
  warning (OUT may be the last run that saw a vanished carnet's finding).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import test_baseline_nights as nights
import test_five_nights as five
from auditor.cli import main
from auditor.synth.generate import write_xlsx

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

generate, audit, load, findings, next_second = (nights.generate, nights.audit, nights.load, nights.findings,
                                                nights.next_second)


@pytest.fixture(autouse=True)
def real_clock(monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    for name in ("LC_ALL", "LC_MESSAGES", "LANGUAGE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANG", "fr_FR.UTF-8")   # a French controller's terminal


def review(out: Path, fp: str, status: str, comment: str, *extra) -> int:
    return main(["review", str(out), fp, "--status", status, "--comment", comment, "--by", "ctrl", *extra])


def text(out: Path) -> str:
    return (out / "changes.txt").read_text(encoding="utf-8")


def test_a_night_failed_by_a_review_that_no_longer_holds_says_why_every_night(tmp_path, capsys):
    root = tmp_path / "archive"
    write_xlsx(five.carnet_d(), root / "table-d.xlsx")
    n = [tmp_path / f"n{i}" for i in range(7)]
    assert audit(root, n[1], "--baseline", str(n[0]), "--fail-on-new") == 1      # a first night: all new
    (levy,) = [f for f in findings(n[1], "table-d.xlsx") if f["code"] == "EC66-01"]
    next_second()
    assert review(n[1], levy["fingerprint"], "justifie", "Erreur de report, voir PV n° 12") == 0
    next_second()
    assert audit(root, n[2], "--baseline", str(n[1]), "--fail-on-new") == 0
    assert load(n[2] / "changes.json")["reviews_stale"] == []
    # The carnet saved again: the shortfall grows by 0,10 € — the justification no longer holds.
    write_xlsx(five.carnet_d(10, (levy["seance"], levy["coup"])), root / "table-d.xlsx")
    next_second()
    capsys.readouterr()
    assert audit(root, n[3], "--baseline", str(n[2]), "--fail-on-new") == 1
    c3 = load(n[3] / "changes.json")
    assert levy["fingerprint"] in {u["fingerprint"] for u in c3["updated"]}
    # The nights after, nothing changes: the stale review still counts as new, night after
    # night — and the digest says so each night, though nothing is new or updated.
    for i in (4, 5):
        next_second()
        capsys.readouterr()
        assert audit(root, n[i], "--baseline", str(n[i - 1]), "--fail-on-new") == 1, i
        err = capsys.readouterr().err
        changes = load(n[i] / "changes.json")
        assert changes["schema_version"] == 1
        assert changes["counts"]["new"] == changes["counts"]["updated"] == 0, i
        (lapsed,) = [x for x in changes["reviews_stale"] if x["fingerprint"] == levy["fingerprint"]]
        assert changes["counts"]["reviews_stale"] == len(changes["reviews_stale"]) >= 1
        assert (lapsed["why"], lapsed["baseline_state"], lapsed["carnet"]) == ("changed", "unchanged", "table-d.xlsx")
        assert lapsed["review"]["status"] == "justifie" and lapsed["review"]["stale"] is True
        assert lapsed["reviewed"]["impact_cents"] == levy["impact_cents"]
        assert lapsed["impact_cents"] == levy["impact_cents"] + 10
        morning = text(n[i])
        assert f"{len(changes['reviews_stale'])} revue(s) caduque(s)" in morning
        assert "Revues caduques (" in morning and levy["fingerprint"] in morning
        assert "modifié depuis la revue" in morning and "décision prise sur : enjeu" in morning
        # stderr says why the exit status is 1, in one line, naming the digest.
        why = [line for line in err.splitlines() if "--fail-on-new" in line]
        assert len(why) == 1 and "0 constat(s) nouveau(x)" in why[0] and "revue est caduque" in why[0], err
        assert str(n[i] / "changes.txt") in why[0]
    # The same in English.
    next_second()
    capsys.readouterr()
    assert audit(root, tmp_path / "n5en", "--baseline", str(n[4]), "--fail-on-new", "--lang", "en") == 1
    err = capsys.readouterr().err
    english = text(tmp_path / "n5en")
    assert "review(s) that no longer hold" in english and "Reviews that no longer hold (" in english
    assert "changed since the review" in english and "decided on:" in english
    assert "0 new finding(s) and" in err and "whose review no longer holds" in err
    # Reviewed again on its new values: the night passes, nothing listed, nothing said.
    next_second()
    assert review(n[5], levy["fingerprint"], "justifie", "Écart expliqué au PV n° 13") == 0
    next_second()
    capsys.readouterr()
    assert audit(root, n[6], "--baseline", str(n[5]), "--fail-on-new") == 0
    assert "--fail-on-new" not in capsys.readouterr().err
    c6 = load(n[6] / "changes.json")
    assert c6["reviews_stale"] == [] and c6["counts"]["reviews_stale"] == 0
    assert "Revues caduques (0)" in text(n[6])


def test_a_finding_across_carnets_of_a_vanished_carnet_is_listed_and_counted_once(tmp_path):
    root, aside = tmp_path / "carnets", tmp_path / "aside"
    # Two tables of one casino that detached the same tickets (EC82-03 across them), and a third apart.
    generate(root / "a.xlsx", 1, "Casino X", 3, "--coups", "5", "--seances", "1")
    generate(root / "b.xlsx", 2, "Casino X", 4, "--coups", "5", "--seances", "1")
    generate(root / "c.xlsx", 3, "Casino Y", 5, "--breaches", "EC66-01")
    n1, n2, n3 = (tmp_path / n for n in ("n1", "n2", "n3"))
    assert audit(root, n1) == 1
    across = sorted({f["fingerprint"] for f in findings(n1, "a.xlsx") if f["code"] == "EC82-03"})
    b_fps = sorted({f["fingerprint"] for f in findings(n1, "b.xlsx")})
    assert across and set(across) <= set(b_fps)
    next_second()
    assert review(n1, across[0], "confirme", "tickets détachés deux fois") == 0
    aside.mkdir()
    (root / "b.xlsx").rename(aside / "b.xlsx")   # b deleted from the archive
    next_second()
    audit(root, n2, "--baseline", str(n1))
    c = load(n2 / "changes.json")
    (gone,) = c["vanished"]
    listed = [x["fingerprint"] for x in c["absent"]] + [f["fingerprint"] for f in gone["findings"]]
    assert sorted(listed) == sorted(set(listed))                               # each once
    assert gone["carnet"] == "b.xlsx" and sorted(f["fingerprint"] for f in gone["findings"]) == b_fps
    assert not set(across) & {x["fingerprint"] for x in c["absent"]}
    assert {tuple(f["across"]) for f in gone["findings"] if f["fingerprint"] in across} == {("b.xlsx", "a.xlsx")}
    assert c["counts"]["absent"] == len(c["absent"]) and c["counts"]["vanished_findings"] == len(b_fps)
    assert [(r["fingerprint"], r["why"]) for r in c["reviews_gone"]] == [(across[0], "vanished")]
    assert c["counts"]["reviews_gone"] == 1
    morning = text(n2)
    assert f"{len(c['absent'])} disparu(s)" in morning
    assert f"1 carnet(s) disparu(s) ({len(b_fps)} constat(s))" in morning
    assert sum(morning.count(f"empreinte {fp}") for fp in across) == len(across) + 1   # + its review, once
    assert "constat entre carnets : b.xlsx, a.xlsx" in morning
    # Both carnets of those findings gone the same night: listed once, under the first.
    (root / "a.xlsx").rename(aside / "a.xlsx")
    next_second()
    audit(root, n3, "--baseline", str(n1))
    c = load(n3 / "changes.json")
    assert sorted(v["carnet"] for v in c["vanished"]) == ["a.xlsx", "b.xlsx"]
    listed = [f["fingerprint"] for v in c["vanished"] for f in v["findings"]]
    assert sorted(listed) == sorted(set(listed)) and set(across) <= set(listed)
    assert c["counts"]["vanished_findings"] == len(listed)
    a_gone = next(v for v in c["vanished"] if v["carnet"] == "a.xlsx")
    assert {f["fingerprint"] for f in a_gone["findings"] if f.get("across")} == set(across)
    assert {tuple(f["across"]) for f in a_gone["findings"] if f.get("across")} == {("a.xlsx", "b.xlsx")}
    assert len(c["reviews_gone"]) == 1


def test_corrige_on_a_finding_still_found_is_recorded_with_a_warning_and_listed_while_found(tmp_path, capsys):
    root = tmp_path / "carnets"
    generate(root / "a.xlsx", 1, "Casino A", 3, "--breaches", "EC66-01")
    generate(root / "b.xlsx", 2, "Casino B", 4, "--breaches", "EC66-01")
    n1, n2, n3 = (tmp_path / n for n in ("n1", "n2", "n3"))
    assert audit(root, n1) == 1
    a_fp = next(f["fingerprint"] for f in findings(n1, "a.xlsx") if f["code"] == "EC66-01")
    b_fp = next(f["fingerprint"] for f in findings(n1, "b.xlsx") if f["code"] == "EC66-01")
    next_second()
    capsys.readouterr()
    # Acknowledged "corrected" too early: the finding is still in a.xlsx.
    assert review(n1, a_fp, "corrige", "corrigé, paraît-il", "--lang", "en") == 0
    err = capsys.readouterr().err
    assert len([line for line in err.splitlines() if "warning:" in line]) == 1
    assert f"{a_fp} is still found in {n1} (a.xlsx)" in err and "counts as new under --fail-on-new" in err
    assert review(n1, a_fp, "corrige", "corrigé, paraît-il") == 0
    assert "attention : " in capsys.readouterr().err                            # the French terminal too
    assert len((n1 / "a.xlsx" / "reviews.jsonl").read_text(encoding="utf-8").splitlines()) == 2
    (root / "b.xlsx").unlink()
    next_second()
    capsys.readouterr()
    # It is still found: the acknowledgement does not hold; the digest and stderr say so.
    assert audit(root, n2, "--baseline", str(n1), "--fail-on-new") == 1
    err = capsys.readouterr().err
    c = load(n2 / "changes.json")
    assert c["counts"]["new"] == 0
    assert [(x["fingerprint"], x["why"], x["review"]["status"]) for x in c["reviews_stale"]] \
        == [(a_fp, "back", "corrige")]
    assert "revu « corrigé », mais le constat est toujours là" in text(n2)
    assert "0 constat(s) nouveau(x) et 1 dont la revue est caduque" in err
    # A vanished carnet's finding acknowledged from the run that lists it as vanished: no warning.
    next_second()
    capsys.readouterr()
    assert review(n2, b_fp, "corrige", "carnet retiré") == 0
    assert "attention" not in capsys.readouterr().err
    # a's finding confirmed after all: the night passes.
    assert review(n2, a_fp, "confirme", "pas corrigé en fait") == 0
    next_second()
    assert audit(root, n3, "--baseline", str(n2), "--fail-on-new") == 0
    assert load(n3 / "changes.json")["reviews_stale"] == []


def test_every_field_of_the_new_lists_is_documented():
    documented = (Path(__file__).resolve().parent.parent / "docs" / "changes.md").read_text(encoding="utf-8")
    for key in ("reviews_stale", "why", "reviewed", "baseline_state", "`back`", "`changed`", "across"):
        assert f"`{key.strip('`')}`" in documented, key
