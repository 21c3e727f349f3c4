"""`generate --archive`: a table's successive daily carnets that go on from
one to the next, audited across carnets as a whole archive (nothing), with a
day's carnet removed (exactly its tickets and its séances), and with each
breach the generator offers (exactly that code)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import defaultdict

import pytest

from auditor.catalogue import load_profile
from auditor.derived.batch_facts import batch_facts
from auditor.normalise import normalise
from auditor.read import read_carnet
from auditor.synth.archive import BREACHES, ArchiveSpec, carnets_needed, generate_archive, write_archive
from auditor.synth.breaches import CannotInject
from auditor.synth.generate import Spec
from batch_fixture import run_batch

SMALL = Spec(seances=2, coups=2, mises=2, ticket_start={10: 400001, 100: 400001, 1000: 400001})


def _facts(paths):
    profile = load_profile()
    return [batch_facts(normalise(read_carnet(p)), p.name, p.name, profile) for p in paths]


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    out = tmp_path_factory.mktemp("archive")
    carnets = generate_archive(ArchiveSpec(200, SMALL))
    paths = write_archive(carnets, out)
    # Facts do not depend on the other carnets: read once, drop a day's by leaving it out.
    return carnets, paths, _facts(paths)


@pytest.mark.slow
def test_whole_archive_gives_nothing_across_carnets(archive):
    carnets, paths, batch = archive
    assert [p.name for p in paths][:2] == ["2026-03-02", "2026-03-03"]
    assert run_batch(batch) == []
    # The séances and the ticket series go on from one carnet to the next.
    assert batch[1].seances[0][0] == batch[0].seances[-1][0] + 1


@pytest.mark.slow
def test_a_day_removed_gives_its_tickets_and_its_seances(archive):
    carnets, paths, facts = archive
    k = 117
    day, removed = carnets[k]
    batch = facts[:k] + facts[k + 1:]
    findings = run_batch(batch)
    nxt = paths[k + 1].name
    # The removed carnet's tickets, per value: one run each, its face value as the money.
    runs = defaultdict(list)
    for r in removed["tickets"]:
        runs[r["valeur"]].append((r["premier"], r["dernier"]))
    want = {(v, f"{min(a for a, _ in rs)}–{max(b for _, b in rs)}", sum(b - a + 1 for a, b in rs) * v)
            for v, rs in runs.items()}
    got = {(f["violation"].params["valeur_cents"], f["expected"], f["impact_cents"])
           for f in findings if f["code"] == "EC83-04"}
    assert got == want and all(f["carnet"] == nxt for f in findings)
    face = sum((r["dernier"] - r["premier"] + 1) * r["valeur"] for r in removed["tickets"])
    assert sum(f["impact_cents"] for f in findings) == face
    seances = [s["seance"] for s in removed["seances"]]
    assert [(f["code"], f["expected"]) for f in findings if f["code"] != "EC83-04"] == [
        ("EC64-11", f"{seances[0]}–{seances[-1]}")]
    # Without the register of books (aligned blocks of 200 instead): the same findings.
    bare = paths[k - 1].parent.parent / "bare"
    if not bare.exists():
        shutil.copytree(paths[0].parent, bare)
        for p in bare.glob("*/carnets_tickets.csv"):
            p.unlink()
    bare_paths = sorted(p for p in bare.iterdir() if p.name != day.isoformat())
    key = sorted((f["code"], f["carnet"], f["expected"], f["impact_cents"]) for f in findings)
    assert sorted((f["code"], f["carnet"], f["expected"], f["impact_cents"])
                  for f in run_batch(_facts(bare_paths))) == key


@pytest.mark.parametrize("code", BREACHES)
def test_each_breach_gives_exactly_its_code(code, tmp_path):
    carnets = generate_archive(ArchiveSpec(9, SMALL, (code,)))
    found = run_batch(_facts(write_archive(carnets, tmp_path)))
    assert {f["code"] for f in found} == {code}


def test_breaches_together_and_refusals(tmp_path):
    carnets = generate_archive(ArchiveSpec(carnets_needed(BREACHES), SMALL, BREACHES))
    found = run_batch(_facts(write_archive(carnets, tmp_path)))
    assert {f["code"] for f in found} == set(BREACHES)
    for spec in (ArchiveSpec(5, SMALL, ("EC64-11", "EC83-04")), ArchiveSpec(20, SMALL, ("EC82-03",)),
                 ArchiveSpec(12, Spec(seances=1, coups=2, mises=2), ("EC64-10",))):
        with pytest.raises(CannotInject):
            generate_archive(spec)


def test_command_line_writes_named_by_date_and_refuses(tmp_path):
    cmd = [sys.executable, "-m", "auditor", "generate", str(tmp_path / "a"), "--archive", "9", "--seances", "2",
           "--coups", "2", "--mises", "2", "--container", "xlsx", "--breaches", "EC83-04", "--lang", "en"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "a").iterdir())[0] == "2026-03-02.xlsx"
    assert "EC83-04" in done.stderr
    bad = subprocess.run(cmd[:4] + [str(tmp_path / "b"), "--archive", "3", "--breaches", "EC64-10,EC64-11",
                                    "--lang", "en"], capture_output=True, text=True)
    assert bad.returncode != 0 and not (tmp_path / "b").exists()
    assert "too short" in bad.stderr
