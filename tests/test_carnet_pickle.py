"""An audited carnet and its AuditResult pickle, as a library user's own
process pool or cache pickles them: the memos the audit left in the carnet
(derived facts keyed by their building functions and by identities, columns'
arrays, the cover) stay behind, and the carnet unpickled, here or in another
process, audits to the same findings, statuses and summary."""

from __future__ import annotations

import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from auditor.audit import audit, audit_path
from auditor.catalogue import load_profile
from auditor.synth.breaches import INJECTORS, inject
from auditor.synth.generate import Spec, generate, write_csv_folder

SAMPLES = Path(__file__).resolve().parent.parent / "sample_carnets"
CARNETS = sorted(p for p in SAMPLES.glob("*/*") if p.suffix in (".xlsx", ".ods", ".xls") or p.is_dir())


def _said(result) -> tuple:
    return result.findings, result.rules, result.summary, result.notes


def _memos(carnet) -> set[str]:
    return {k for k in vars(carnet) if k.startswith("_")}


def _round_trip(path: Path):
    result = audit_path(path, load_profile(), debug=True)
    left = _memos(result.carnet)
    back = pickle.loads(pickle.dumps(result))
    assert _memos(result.carnet) == left, "pickling took the memos out of the carnet audited"
    assert not _memos(back.carnet)
    # Every field as it was: none left to its class's default.
    fields = set(type(result.carnet).__dataclass_fields__)
    assert set(vars(back.carnet)) == fields
    for name in sorted(fields - {"tables"}):
        assert getattr(back.carnet, name) == getattr(result.carnet, name), name
    assert list(back.carnet.tables) == list(result.carnet.tables)
    for name, table in result.carnet.tables.items():
        assert back.carnet.tables[name].df.equals(table.df), name
    assert _said(back) == _said(result)
    assert _said(audit(back.carnet, load_profile(), debug=True)) == _said(result)
    return left


@pytest.mark.parametrize("path", CARNETS, ids=lambda p: p.name)
def test_every_audited_sample_pickles_and_audits_the_same_again(path):
    _round_trip(path)


def test_a_carnet_with_every_breach_pickles_and_audits_the_same_again(tmp_path):
    tables = generate(Spec(seances=3, coups=14, mises=6, seed=5, chouette=True))
    for code in sorted(INJECTORS):
        try:
            inject(tables, [code], seed=5)
        except Exception:   # a breach another one already made impossible
            continue
    left = _round_trip(write_csv_folder(tables, tmp_path / "c"))
    assert {"_derived", "_arrays"} <= left   # the memos the old pickling choked on were there


@pytest.mark.slow
def test_a_long_carnet_audited_on_two_threads_pickles(tmp_path, monkeypatch):
    from auditor import audit as A

    monkeypatch.setattr(A, "cores", lambda: 2)
    _round_trip(write_csv_folder(generate(Spec(seances=2, coups=3000, mises=25, seed=11)), tmp_path / "long"))


def _audit_again(data: bytes) -> bytes:
    carnet = pickle.loads(data)
    return pickle.dumps(_said(audit(carnet, load_profile())))


@pytest.mark.slow
def test_an_audited_carnet_goes_to_another_process_and_audits_the_same_there():
    """As a user's own pool does it: the carnet audited here, sent to a fresh
    interpreter (spawn), audited there; what it says comes back the same."""
    path = SAMPLES / "infractions" / next(p.name for p in sorted((SAMPLES / "infractions").iterdir()))
    result = audit_path(path, load_profile())
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        there = pickle.loads(pool.submit(_audit_again, pickle.dumps(result.carnet)).result(timeout=120))
    assert there == _said(result)
