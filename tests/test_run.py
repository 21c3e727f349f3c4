"""One run, rendered once (auditor/run.py): the whole batch is known before
any file is written; findings across carnets are findings like any other,
with their baseline state, review and history row; the cache keeps the
audit, never what the run applies after it (baseline, reviews, time stamp).

Run as controllers run it: the command line, the real clock (no
SOURCE_DATE_EPOCH), a shared review file recorded between two nights."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.cli import main
from auditor.synth.breaches import inject
from auditor.synth.generate import Spec, generate, write_csv_folder, write_xlsx


# Batches with worker processes, as controllers run them.
pytestmark = [pytest.mark.slow, pytest.mark.subprocess]


@pytest.fixture(autouse=True)
def real_clock(monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)


def pair(root: Path) -> Path:
    """Two tables of one casino that detached the same tickets (generated
    alike), one with a levy shortfall of its own, and another casino's table."""
    t1 = generate(Spec(seances=2, coups=6, seed=1, table=1))
    inject(t1, ["EC66-01"], seed=1)
    write_csv_folder(t1, root / "t1")
    write_xlsx(generate(Spec(seances=2, coups=6, seed=2, table=2)), root / "t2.xlsx")
    write_csv_folder(generate(Spec(seances=1, coups=5, seed=3, table=9, casino="Autre casino")), root / "t9")
    return root


def audit(root: Path, out: Path, *extra) -> int:
    return main(["audit", str(root), "--out", str(out), "--quiet", "--jobs", "2", *extra])


def doc(out: Path, cid: str) -> dict:
    return json.loads((out / cid / "findings.json").read_text(encoding="utf-8"))


def summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


def across(d: dict) -> list[dict]:
    return [f for f in d["findings"] if "across" in f]


def test_a_pair_with_baseline_and_reviews_carries_the_finding_across_in_both(tmp_path):
    root = pair(tmp_path / "casino")
    reviews, history = tmp_path / "reviews.jsonl", tmp_path / "history"
    assert audit(root, tmp_path / "night1", "--reviews", str(reviews), "--history", str(history)) == 1
    first = across(doc(tmp_path / "night1", "t1"))
    assert first and {f["code"] for f in first} == {"EC82-03"}
    fp = first[0]["fingerprint"]
    assert main(["review", str(tmp_path / "night1"), fp, "--status", "confirme", "--comment",
                 "vérifié avec le chef de table", "--by", "M. Roux", "--reviews", str(reviews)]) == 0
    assert audit(root, tmp_path / "night2", "--baseline", str(tmp_path / "night1"), "--reviews", str(reviews),
                 "--history", str(history)) == 1
    s = summary(tmp_path / "night2")
    listed = {f["fingerprint"]: f for f in s["cross_carnet_findings"]}
    assert fp in listed and listed[fp]["baseline_state"] == "unchanged"
    assert listed[fp]["review"]["status"] == "confirme"
    for cid in ("t1", "t2.xlsx"):
        d = doc(tmp_path / "night2", cid)
        f = next(f for f in d["findings"] if f["fingerprint"] == fp)
        assert f["baseline_state"] == "unchanged"
        assert f["review"]["status"] == "confirme" and f["review"]["justification"] == "vérifié avec le chef de table"
        assert f["across"][0]["carnet"] == cid and len(f["across"]) == 2
        html = (tmp_path / "night2" / cid / "report.html").read_text(encoding="utf-8")
        # The baseline's section is there, with the finding across carnets in it and its review.
        assert 'id="series"' in html or "Suivi depuis l'audit précédent" in html
        assert fp in html and "vérifié avec le chef de table" in html
        assert 'id="cross"' in html
    assert not across(doc(tmp_path / "night2", "t9"))
    # The history holds each finding across carnets once per run.
    from auditor.history import connect

    con = connect(history)
    n = con.execute("select count(*) from observations where fingerprint = ?", [fp]).fetchone()[0]
    assert n == 2   # two runs, once each
    carnets = {r[0] for r in con.execute("select carnet_id from observations where fingerprint = ?", [fp]).fetchall()}
    assert len(carnets) == 1
    assert con.execute("select count(*) from findings where fingerprint = ?", [fp]).fetchone()[0] == 1


def test_a_review_recorded_between_two_nights_is_a_cache_hit_for_every_carnet(tmp_path, capsys):
    root = pair(tmp_path / "casino")
    cache, reviews = tmp_path / "cache", tmp_path / "reviews.jsonl"
    opts = ("--cache", str(cache), "--reviews", str(reviews))
    assert audit(root, tmp_path / "night1", *opts) == 1
    own = next(f for f in doc(tmp_path / "night1", "t1")["findings"] if f["code"] == "EC66-01")
    assert main(["review", str(tmp_path / "night1"), own["fingerprint"], "--status", "justifie", "--comment",
                 "erreur de plume, corrigée au PV", "--by", "Mme Lefèvre", "--reviews", str(reviews)]) == 0
    capsys.readouterr()
    audit(root, tmp_path / "night2", *opts, "--baseline", str(tmp_path / "night1"))
    err = capsys.readouterr().err
    assert "3 of 3 carnet(s) already audited (in the cache), 0 to audit" in err, err
    f = next(f for f in doc(tmp_path / "night2", "t1")["findings"] if f["code"] == "EC66-01")
    assert f["review"]["status"] == "justifie" and f["baseline_state"] == "unchanged"
    # This run's own time, not the first night's.
    assert doc(tmp_path / "night2", "t1")["generated_at"] >= doc(tmp_path / "night1", "t1")["generated_at"]


def test_the_order_and_place_of_carnets_do_not_change_the_findings_across(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    a = pair(tmp_path / "a")
    b = tmp_path / "b"
    (b / "deeper").mkdir(parents=True)
    (a / "t1").rename(b / "deeper" / "carnet-table-1")
    (a / "t2.xlsx").rename(b / "renamed.xlsx")
    (a / "t9").rename(b / "t9")
    pair(tmp_path / "a")
    audit(tmp_path / "a", tmp_path / "oa")
    audit(b, tmp_path / "ob")

    def fps(out):
        return sorted((f["code"], f["fingerprint"], f["impact_cents"]) for f in summary(out)["cross_carnet_findings"])

    assert fps(tmp_path / "oa") == fps(tmp_path / "ob") != []


def test_local_workers_keep_the_audits_they_make_and_hand_back_only_their_head(tmp_path):
    """The audit crosses no pipe: the worker writes it (to the cache entry, or
    the run's spool) and the run holds only its row, facts and fingerprints."""
    import contextlib

    from auditor.batch import Cache, Executor, Options, plan
    from auditor.batch.cache import Kept, load_audit

    jobs = plan([pair(tmp_path / "casino")])
    spool = tmp_path / "spool"
    spool.mkdir()
    cache = Cache(tmp_path / "cache", Options())
    keys = {i: cache.key(job) for i, job in enumerate(jobs)}

    def keep(index):   # the first carnet is not cached: it waits in the spool
        return spool / f"{index}.pickle", cache.entry_dir(keys[index]) if index else None

    with contextlib.ExitStack() as stack:
        kept = list(Executor(stack, Options(), workers=2).audits(list(enumerate(jobs)), keep=keep))
    assert sorted(k.index for k in kept) == [0, 1, 2]
    for k in kept:
        assert isinstance(k, Kept) and k.pid is not None
        assert k.in_cache == (k.index != 0) and k.path.parent == (spool if k.index == 0 else keep(k.index)[1])
        audit = load_audit(k.path)
        assert audit.entry == k.entry and k.fingerprints == {f.fingerprint for f in audit.findings}
        if k.index:
            assert cache.load(keys[k.index]).entry == k.entry   # a whole entry: the next night's hit


def test_findings_across_carnets_follow_a_renamed_carnet_and_are_listed_once_in_the_changes(tmp_path, capsys):
    root = pair(tmp_path / "casino")
    cache = ("--cache", str(tmp_path / "cache"))
    # The first night: its baseline folder is not there yet.
    assert audit(root, tmp_path / "night1", *cache, "--baseline", str(tmp_path / "night0")) == 1
    cross = summary(tmp_path / "night1")["cross_carnet"]
    assert cross and {f["baseline_state"] for f in cross} == {"new"}
    # The workbook of table 2 saved under another name, as people do.
    (root / "t2.xlsx").rename(root / "t2 copie.xlsx")
    capsys.readouterr()
    assert audit(root, tmp_path / "night2", *cache, "--baseline", str(tmp_path / "night1"), "--fail-on-new") == 0
    err = capsys.readouterr().err
    assert "only" not in err and "no previous run" not in err
    s = summary(tmp_path / "night2")
    assert s["baseline"]["renamed"] == [{"from": "t2.xlsx", "to": "t2_copie.xlsx"}]
    assert s["baseline"]["matched_carnets"] == 3 and s["baseline"]["vanished"] == []
    assert {f["baseline_state"] for f in s["cross_carnet"]} == {"unchanged"}
    changes = json.loads((tmp_path / "night2" / "changes.json").read_text(encoding="utf-8"))
    assert changes["counts"]["new"] == changes["counts"]["absent"] == 0
    assert sorted(f["fingerprint"] for f in changes["across"]) == sorted(f["fingerprint"] for f in cross)
    assert {tuple(f["carnets"]) for f in changes["across"]} <= {("t1", "t2_copie.xlsx"), ("t2_copie.xlsx", "t1")}
    # The first night's new findings across carnets were each listed once, under one carnet.
    first = json.loads((tmp_path / "night1" / "changes.json").read_text(encoding="utf-8"))
    listed = [f["fingerprint"] for f in first["new"] if f.get("across")]
    assert sorted(listed) == sorted(f["fingerprint"] for f in cross)
