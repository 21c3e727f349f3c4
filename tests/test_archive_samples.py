"""The sample archives (sample_carnets/archives/) across carnets: the
continuing table gives nothing, the one with a day's carnet missing gives its
séances (EC64-11) and its tickets (EC83-04) in the next carnet, nothing else."""

from __future__ import annotations

from pathlib import Path

from auditor.catalogue import load_profile
from auditor.derived.batch_facts import batch_facts
from auditor.normalise import normalise
from auditor.read import discover, read_carnet
from batch_fixture import run_batch, statuses

ARCHIVES = Path(__file__).resolve().parent.parent / "sample_carnets" / "archives"


def _batch():
    profile = load_profile()
    return [batch_facts(normalise(read_carnet(p)), p.relative_to(ARCHIVES).as_posix(),
                        p.relative_to(ARCHIVES).as_posix(), profile) for p in sorted(discover(ARCHIVES))]


def test_sample_archives_across_carnets():
    batch = _batch()
    assert len(batch) == 8
    found = run_batch(batch)
    assert {f["code"] for f in found} == {"EC64-11", "EC83-04"}
    assert {f["carnet"] for f in found} == {"etretat-table4-lacune/2026-04-09.xlsx"}
    assert {f["other"] for f in found} == {"etretat-table4-lacune/2026-04-07.xlsx"}
    assert [f["expected"] for f in found if f["code"] == "EC64-11"] == ["5–6"]
    assert all(f["impact_cents"] > 0 for f in found if f["code"] == "EC83-04")
    per, tables = statuses(batch)
    assert all(s is None for c in per.values() for s in c.values())
    assert [(t["table"], len(t["carnets"])) for t in tables] == [(2, 4), (4, 4)]
