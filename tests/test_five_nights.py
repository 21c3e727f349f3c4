"""The controller's morning, five nights in a row, as a controller runs them
(issue 25; outputs.md v1.2 "The baseline follows findings", "A review holds
for what was reviewed", "What changed since the baseline"):

    ecarte-audit audit ROOT --out nightN --cache C --baseline nightN-1 \\
                 --reviews R.jsonl --history H --fail-on-new

in subprocesses, on the real clock (no SOURCE_DATE_EPOCH), with decisions
recorded between the nights through `ecarte-audit review`, while the archive
changes as archives do: a carnet corrected and saved under a new name, one
removed, one saved again (other bytes, rows in another order), one updated.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.synth.breaches import inject
from batch_fixture import shuffled
from auditor.synth.generate import Spec, generate, write_csv_folder, write_xlsx

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]


def carnet_a():
    """Casino A: a stake of 0,05 € (EC63-01, the stake and its restitution) and a levy short (EC66-01)."""
    t = generate(Spec(seances=2, coups=8, mises=4, seed=7, casino="Casino A", table=1))
    inject(t, ["EC66-01", "EC63-01"], seed=7)
    return t


def carnet_b():
    """Casino B: a levy short (EC66-01)."""
    t = generate(Spec(seances=2, coups=6, seed=11, casino="Casino B", table=2))
    inject(t, ["EC66-01"], seed=11)
    return t


def carnet_c():
    """Casino C: a coup missing (EC64-01)."""
    t = generate(Spec(seances=2, coups=6, seed=13, casino="Casino C", table=3))
    inject(t, ["EC64-01"], seed=13)
    return t


def carnet_d(extra_short_cents: int = 0, at: tuple[int, int] | None = None):
    """Casino D: a levy short (EC66-01), shorter by `extra_short_cents` (and as many 0,10 €
    tickets fewer, as the table would have done) at séance/coup `at`."""
    from auditor.synth.breaches.tables import remove_ticket

    t = generate(Spec(seances=2, coups=6, seed=18, casino="Casino D", table=4))
    inject(t, ["EC66-01"], seed=18)
    if at is not None:
        coup = next(c for c in t["coups"] if (c["seance"], c["coup"]) == at)
        coup["prelevement"] -= extra_short_cents
        for _ in range(extra_short_cents // 10):
            remove_ticket(t, at[0], at[1], 10)
    return t




def cli(*args) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    env["LANG"] = "en_US.UTF-8"   # the terminal's messages in English; documents stay French
    proc = subprocess.run([sys.executable, "-m", "auditor", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stderr


class Nights:
    def __init__(self, tmp: Path):
        self.tmp, self.root = tmp, tmp / "archive"
        self.cache, self.reviews, self.history = tmp / "cache", tmp / "R.jsonl", tmp / "history"

    def out(self, n: int) -> Path:
        return self.tmp / f"night{n}"

    def audit(self, n: int) -> tuple[int, str]:
        # Nights are hours apart; from the cache these take about a second. The
        # history orders its runs by their time stamp (to the second): each
        # night starts in a second of its own, as real nights do.
        import time

        while int(time.time()) <= getattr(self, "ended", -1):   # after the second the last night ended in
            time.sleep(0.05)
        got = cli("audit", self.root, "--out", self.out(n), "--cache", self.cache, "--baseline", self.out(n - 1),
                  "--reviews", self.reviews, "--history", self.history, "--fail-on-new", "--jobs", "2", "--quiet")
        self.ended = int(time.time())
        return got

    def review(self, n: int, fp: str, status: str, comment: str, by: str = "Mme Lefèvre") -> None:
        code, err = cli("review", self.out(n), fp, "--status", status, "--comment", comment, "--by", by,
                        "--reviews", self.reviews)
        assert code == 0, err

    def summary(self, n: int) -> dict:
        return json.loads((self.out(n) / "summary.json").read_text(encoding="utf-8"))

    def changes(self, n: int) -> dict:
        return json.loads((self.out(n) / "changes.json").read_text(encoding="utf-8"))

    def findings(self, n: int, path_end: str) -> list[dict]:
        entry = next(e for e in self.summary(n)["carnets"] if e["path"].endswith(path_end))
        return json.loads((self.out(n) / entry["id"] / "findings.json").read_text(encoding="utf-8"))["findings"]

    def cid(self, n: int, path_end: str) -> str:
        return next(e["id"] for e in self.summary(n)["carnets"] if e["path"].endswith(path_end))


def only(findings: list[dict], code: str) -> list[dict]:
    return [f for f in findings if f["code"] == code]


def test_five_nights_of_a_controller(tmp_path):
    n = Nights(tmp_path)
    write_xlsx(carnet_a(), n.root / "2026-10-27.xlsx")
    write_csv_folder(carnet_b(), n.root / "table-b")
    write_csv_folder(carnet_c(), n.root / "table-c")
    write_xlsx(carnet_d(), n.root / "table-d.xlsx")

    # Night 1: no previous output yet. Not a usage error: every finding is new, the command says
    # so, and --fail-on-new fails on the new errors.
    code, err = n.audit(1)
    assert code == 1, err
    assert "no previous run in that folder" in err
    s1, c1 = n.summary(1), n.changes(1)
    assert s1["baseline"] == {"path": str(n.out(0)), "matched_carnets": 0, "renamed": [], "vanished": []}
    everything = [f for e in s1["carnets"] for f in n.findings(1, e["path"])]
    assert {f["baseline_state"] for f in everything} == {"new"}
    assert c1["baseline"]["first_night"] is True
    assert c1["counts"]["new"] == len({f["fingerprint"] for f in everything}) > 0
    money = [x["impact_cents"] for x in c1["new"]]
    assert money == sorted(money, reverse=True) and money[0] > 0          # most money first
    assert "Premier audit" in (n.out(1) / "changes.txt").read_text(encoding="utf-8")

    # Day 1: decisions recorded in the shared file.
    a_stake = only(n.findings(1, "2026-10-27.xlsx"), "EC63-01")
    assert len(a_stake) == 2                                               # the stake and its restitution
    for f in a_stake:
        n.review(1, f["fingerprint"], "confirme", "Mise de 0,05 € non conforme")
    (b_levy,) = only(n.findings(1, "table-b"), "EC66-01")
    n.review(1, b_levy["fingerprint"], "faux_positif", "Annulé au PV de séance", "M. Roux")
    (d_levy,) = only(n.findings(1, "table-d.xlsx"), "EC66-01")
    n.review(1, d_levy["fingerprint"][:10], "justifie", "Erreur de report, voir PV n° 12")

    # Night 2: nothing changed but the reviews. Every carnet from the cache, every finding
    # unchanged with its review, nothing new: --fail-on-new passes.
    code, err = n.audit(2)
    assert code == 0, err
    s2, c2 = n.summary(2), n.changes(2)
    assert s2["baseline"] == {"path": str(n.out(1)), "matched_carnets": 4, "renamed": [], "vanished": []}
    assert {f["baseline_state"] for e in s2["carnets"] for f in n.findings(2, e["path"])} == {"unchanged"}
    assert c2["counts"] == {"new": 0, "updated": 0, "absent": 0, "renamed": 0, "vanished": 0,
                            "vanished_findings": 0, "reviews_gone": 0, "across": 0, "reviews_stale": 0}
    d2 = only(n.findings(2, "table-d.xlsx"), "EC66-01")[0]
    assert d2["review"]["status"] == "justifie" and d2["review"]["stale"] is False
    assert "no previous run" not in err and "only" not in err
    assert "4 of 4 carnet(s) already audited (in the cache), 0 to audit" in err   # a review is no cache miss

    # Day 2: carnet A corrected (the stake of 0,05 €) and saved under a new name; carnet C
    # saved again by another program (other bytes, rows in another order, another CSV dialect).
    t = carnet_a()
    bad = next(m for m in t["mises"] if m["montant"] % 10)
    bad["montant"] -= 5
    bad["restitue"] -= 5
    (n.root / "2026-10-27.xlsx").unlink()
    write_xlsx(t, n.root / "2026-10-27 (corrigé).xlsx")
    before = (n.root / "table-c" / "coups.csv").read_bytes()
    write_csv_folder(shuffled(carnet_c(), 3), n.root / "table-c", delimiter=",", decimal=".", date_style="iso")
    assert (n.root / "table-c" / "coups.csv").read_bytes() != before

    # Night 3: A is recognised renamed (its findings unchanged, the corrected ones absent, listed
    # with it, with their review); C's findings unchanged; nothing new: --fail-on-new passes.
    code, err = n.audit(3)
    assert code == 0, err
    s3, c3 = n.summary(3), n.changes(3)
    old_a, new_a = n.cid(2, "2026-10-27.xlsx"), n.cid(3, "2026-10-27 (corrigé).xlsx")
    assert s3["baseline"] == {"path": str(n.out(2)), "matched_carnets": 4,
                              "renamed": [{"from": old_a, "to": new_a}], "vanished": []}
    a3 = n.findings(3, "2026-10-27 (corrigé).xlsx")
    assert a3 and {f["baseline_state"] for f in a3} == {"unchanged"}
    assert {f["baseline_state"] for f in n.findings(3, "table-c")} == {"unchanged"}
    stake_fps = sorted(f["fingerprint"] for f in a_stake)
    assert sorted(x["fingerprint"] for x in c3["absent"]) == stake_fps
    assert {(x["carnet"], x["was"], x["review"]["status"]) for x in c3["absent"]} == {(new_a, old_a, "confirme")}
    assert c3["renamed"] == [{"from": old_a, "to": new_a, "path": str(n.root / "2026-10-27 (corrigé).xlsx"),
                              "absent": stake_fps}]
    assert sorted(r["fingerprint"] for r in c3["reviews_gone"]) == stake_fps
    assert c3["counts"]["new"] == 0 and c3["counts"]["updated"] == 0
    absent_a3 = json.loads((n.out(3) / new_a / "findings.json").read_text(encoding="utf-8"))["absent"]
    assert sorted(x["fingerprint"] for x in absent_a3) == stake_fps

    # Day 3: the corrected stake acknowledged (in the run that lists it as absent); carnet B
    # removed from the archive; carnet D's levy shortfall grows by 0,10 €.
    for fp in stake_fps:
        n.review(3, fp, "corrige", "Corrigé dans le carnet ressaisi")
    b_id = n.cid(3, "table-b")
    b_fps = sorted(f["fingerprint"] for f in n.findings(3, "table-b"))
    for p in (n.root / "table-b").iterdir():
        p.unlink()
    (n.root / "table-b").rmdir()
    write_xlsx(carnet_d(10, (d_levy["seance"], d_levy["coup"])), n.root / "table-d.xlsx")

    # Night 4: B has vanished (its findings listed, its review among those whose finding is
    # gone); D's shortfall is updated and its `justifie` stale: it no longer clears the exit
    # status and counts as new under --fail-on-new.
    code, err = n.audit(4)
    assert code == 1, err
    s4, c4 = n.summary(4), n.changes(4)
    assert s4["baseline"] == {"path": str(n.out(3)), "matched_carnets": 3, "renamed": [], "vanished": [b_id]}
    (d4,) = only(n.findings(4, "table-d.xlsx"), "EC66-01")
    assert d4["fingerprint"] == d_levy["fingerprint"] and d4["baseline_state"] == "updated"
    assert d4["impact_cents"] == d_levy["impact_cents"] + 10
    assert d4["review"]["status"] == "justifie" and d4["review"]["stale"] is True
    # Most money first: the levy, then the open book of 0,10 € tickets (one ticket fewer).
    assert [u["code"] for u in c4["updated"]] == ["EC66-01", "EC83-02"]
    upd = c4["updated"][0]
    assert (upd["fingerprint"], upd["old_impact_cents"], upd["impact_cents"]) == \
        (d_levy["fingerprint"], d_levy["impact_cents"], d4["impact_cents"])
    assert upd["review"]["stale"] is True
    # What makes --fail-on-new fail is listed: the review that no longer holds.
    assert [(x["fingerprint"], x["why"]) for x in c4["reviews_stale"]] == [(d_levy["fingerprint"], "changed")]
    assert "whose review no longer holds" in err
    (gone,) = c4["vanished"]
    assert gone["carnet"] == b_id and sorted(f["fingerprint"] for f in gone["findings"]) == b_fps
    assert [(r["fingerprint"], r["status"], r["why"]) for r in c4["reviews_gone"]] == \
        [(b_levy["fingerprint"], "faux_positif", "vanished")]
    assert c4["counts"]["new"] == 0 and c4["counts"]["absent"] == 0
    text = (n.out(4) / "changes.txt").read_text(encoding="utf-8")
    assert "modifié depuis la revue" in text and b_id in text
    html = (n.out(4) / n.cid(4, "table-d.xlsx") / "report.html").read_text(encoding="utf-8")
    assert "modifié depuis la revue" in html
    assert 'href="changes.txt"' in (n.out(4) / "index.html").read_text(encoding="utf-8")

    # Day 4: B's findings acknowledged in the run that lists B as vanished; D reviewed again on
    # its new values.
    for fp in b_fps:
        n.review(4, fp, "corrige", "Carnet retiré de l'archive : saisi en double")
    n.review(4, d_levy["fingerprint"], "justifie", "Écart de 0,20 € expliqué au PV n° 13")

    # Night 5: nothing changed; D's new decision is not stale: --fail-on-new passes again.
    code, err = n.audit(5)
    assert code == 0, err
    assert "3 of 3 carnet(s) already audited (in the cache), 0 to audit" in err
    s5, c5 = n.summary(5), n.changes(5)
    assert s5["baseline"] == {"path": str(n.out(4)), "matched_carnets": 3, "renamed": [], "vanished": []}
    assert {f["baseline_state"] for e in s5["carnets"] for f in n.findings(5, e["path"])} == {"unchanged"}
    (d5,) = only(n.findings(5, "table-d.xlsx"), "EC66-01")
    assert d5["review"]["stale"] is False and [h["status"] for h in d5["review"]["history"]] == ["justifie"]
    assert c5["counts"]["new"] == c5["counts"]["updated"] == c5["counts"]["vanished"] == 0
    decisions = [json.loads(x) for x in n.reviews.read_text(encoding="utf-8").splitlines()]
    acknowledged = {d["fingerprint"] for d in decisions if d["status"] == "corrige"}
    assert acknowledged == set(stake_fps) | set(b_fps)
    # The history, a ledger of these five nights (auditor/history.py): each finding once, with
    # when it was first and last seen, closed (its carnet, or the carnet renamed, audited without
    # it; or acknowledged `corrige`) and its latest review.
    import datetime as dt

    from auditor import history

    con = history.connect(n.history)
    nights = [r[0] for r in con.execute("SELECT run_at FROM runs ORDER BY run_at").fetchall()]
    assert len(nights) == 5

    def ledger(fp: str) -> dict:
        rel = con.execute("SELECT * FROM findings WHERE fingerprint = ?", [fp])
        (row,) = rel.fetchall()
        return dict(zip([d[0] for d in rel.description], row))

    for fp in stake_fps:   # corrected in the carnet saved under a new name: closed by night 3
        f = ledger(fp)
        assert (f["first_seen"], f["last_seen"], f["closed_at"], f["open"]) == (nights[0], nights[1], nights[2],
                                                                                  False)
        assert f["review_status"] == "corrige"
    at = {d["fingerprint"]: d["at"] for d in decisions if d["status"] == "corrige"}
    for fp in b_fps:       # a vanished carnet's findings: closed when acknowledged (day 4)
        f = ledger(fp)
        acked = dt.datetime.strptime(at[fp], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)
        assert (f["last_seen"], f["closed_at"], f["open"]) == (nights[2], acked, False)
        assert nights[3] <= acked <= nights[4] and f["review_status"] == "corrige"
    d = ledger(d_levy["fingerprint"])
    assert (d["open"], d["last_seen"], d["impact_cents"]) == (True, nights[4], d4["impact_cents"])
    assert (d["review_status"], d["review_stale"]) == ("justifie", False)
    for f in n.findings(5, "2026-10-27 (corrigé).xlsx"):   # A's other findings: one finding across the rename
        got = ledger(f["fingerprint"])
        assert (got["first_seen"], got["last_seen"], got["open"], got["seen_runs"]) == (nights[0], nights[4], True, 5)
        assert got["carnet_id"] == new_a
    # Once per night seen in `observations`; none of the four carnets' findings lost on the way.
    assert con.execute("SELECT bool_and(o.n = f.seen_runs), count(*) FROM (SELECT fingerprint, count(*) AS n "
                       "FROM observations GROUP BY 1) o JOIN findings f USING (fingerprint)").fetchone() == \
        (True, con.execute("SELECT count(*) FROM findings").fetchone()[0])
