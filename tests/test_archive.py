"""The rules across the carnets of a table, as a class: the same findings
whatever the order of the carnets, their containers or their names; the
statuses the spec asks for; the cost on a casino of 10,000 carnets."""

from __future__ import annotations

import datetime as dt

import pytest

from auditor.catalogue import load_profile
from auditor.checks.archive import archive_codes, archive_statuses
from auditor.i18n import label
from auditor.model import BatchCarnet
from batch_fixture import build_batch, run_batch
from test_batch_cases import load_cases

CASES = [p for p in load_cases()]
WITH_FINDINGS = [p for p in CASES if p.values[1]["expect"] or p.values[1].get("also_expect")]


def _key(findings, rename=None):
    rename = rename or {}
    return sorted((f["code"], rename.get(f["carnet"], f["carnet"]), rename.get(f["other"], f["other"]), f["seance"],
                   f["coup"], f["row"], f["expected"], f["found"], f["impact_cents"], repr(f["identity"]))
                  for f in findings)


@pytest.mark.parametrize(("code", "case"), WITH_FINDINGS)
def test_any_order_of_the_carnets_gives_the_same_findings(code, case, tmp_path):
    batch = build_batch(case, tmp_path)
    want = _key(run_batch(batch))
    assert want
    for order in (batch[::-1], batch[1:] + batch[:1]):
        assert _key(run_batch(order)) == want


@pytest.mark.parametrize(("code", "case"), WITH_FINDINGS)
def test_workbooks_and_csv_folders_give_the_same_findings(code, case, tmp_path):
    csv = run_batch(build_batch(case, tmp_path / "csv"))
    xlsx = run_batch(build_batch(case, tmp_path / "xlsx", container="xlsx"))
    assert _key(xlsx) == _key(csv)
    for f in xlsx:
        # A workbook's places name their cells; a CSV folder has none.
        assert all(p["cell"] for p in f["violation"].params["places"]), f["violation"].params["places"]
    for f in csv:
        assert not any(p["cell"] for p in f["violation"].params["places"])


@pytest.mark.parametrize(("code", "case"), WITH_FINDINGS)
def test_each_place_is_the_cell_of_its_column(code, case, tmp_path):
    """Each place of a finding across carnets names its column, and its cell
    is in that column of the sheet (P's last ticket at its `dernier`,
    EC64-10's séances at their dates): the annotated workbook's note lands
    where the finding, seen from that carnet, says."""
    import openpyxl
    from openpyxl.utils import get_column_letter

    findings = run_batch(build_batch(case, tmp_path, container="xlsx"))
    assert findings
    for f in findings:
        for place in f["violation"].params["places"]:
            sheet = openpyxl.load_workbook(tmp_path / place["carnet"] / "carnet.xlsx")[place["sheet_table"]]
            header = [c.value for c in sheet[1]]
            if f["code"] == "EC64-10":   # dated before the earlier's last: the dates; a séance both hold: its number
                assert place["column"] == ("seance" if f["violation"].kind == "same_seance" else "date")
            letter = get_column_letter(header.index(place["column"]) + 1)
            assert place["cell"] == f"{letter}{place['row']}", (f["code"], place)


@pytest.mark.parametrize(("code", "case"), WITH_FINDINGS)
def test_renamed_carnets_give_the_same_findings_and_identity(code, case, tmp_path):
    batch = build_batch(case, tmp_path / "a")
    names = {n: f"renamed-{n}" for n in case["carnets"]}
    renamed = build_batch(case, tmp_path / "b", names=names)
    assert _key(run_batch(renamed)) == _key(run_batch(batch), rename=names)


def _fact(i, table, day, seances, ends, casino="Casino X", readable=True, placeable=True):
    s = tuple((n, (day + dt.timedelta(days=k)).isoformat(), k + 2, None, None) for k, n in enumerate(seances))
    runs = [[v, a, b, seances[0], 1, 2] for v, a, b in ends]
    te = tuple((v, a, seances[0], 1, 2, None, b, seances[-1], 1, 3, None, "dernier") for v, a, b in ends)
    return BatchCarnet(f"c{i}", f"t{table}/c{i}", casino, table, runs, placeable=placeable,
                       tickets_readable=readable, date_debut=day.isoformat(), seances=s, ticket_ends=te)


def test_statuses_name_the_reasons():
    profile = load_profile()
    day = dt.date(2026, 3, 1)
    a = _fact(1, 1, day, [1, 2], [(10, 1, 10)])
    b = _fact(2, 1, day + dt.timedelta(days=2), [3, 4], [(10, 11, 20)], readable=False)
    c = _fact(3, 1, day + dt.timedelta(days=4), [5], [(10, 21, 30)])
    d = _fact(4, 1, day + dt.timedelta(days=6), [6], [(10, 31, 40)])
    alone = _fact(5, 2, day, [1], [(10, 500, 510)])
    per, tables = archive_statuses([a, b, c, d, alone], profile, "en")
    unreadable = label("archive_tickets_unreadable", "en")
    assert per["c5"] == {code: label("archive_needs_other_carnets", "en") for code in archive_codes()}
    assert per["c4"] == {code: None for code in archive_codes()}
    for cid in ("c1", "c2", "c3"):
        assert per[cid]["EC64-10"] is None and per[cid]["EC64-11"] is None
        assert per[cid]["EC83-04"] == unreadable.format(path="t1/c2") == per[cid]["EC561-04"]
    t1, t2 = tables
    assert (t1["casino"], t1["table"], t1["carnets"]) == ("Casino X", 1, ["c1", "c2", "c3", "c4"])
    assert t1["rules"]["EC64-10"] == {"status": "checked", "reason": None}
    assert t1["rules"]["EC83-04"]["status"] == "not_checked"
    assert t2["rules"]["EC64-11"] == {"status": "not_checked", "reason": label("archive_needs_other_carnets", "en")}
    # One carnet that cannot be placed: nothing is checked anywhere, and it is named.
    lost = BatchCarnet("x", "lost/carnet.xlsx", "", None, [], placeable=False, tickets_readable=False)
    per, tables = archive_statuses([a, c, lost], profile, "fr")
    assert {r for s in per.values() for r in s.values()} == {
        label("archive_unplaceable", "fr").format(path="lost/carnet.xlsx")}
    assert all(r["status"] == "not_checked" for t in tables for r in t["rules"].values())
    assert run_batch([a, c, lost]) == []


def _casino(n_tables: int, per_table: int, gap_every: int = 0) -> list[BatchCarnet]:
    """A casino's daily carnets: each table numbers séances and tickets on; every
    `gap_every`-th carnet of a table is left out (a day's carnet removed)."""
    out, i = [], 0
    start = dt.date(2000, 1, 1)
    for table in range(1, n_tables + 1):
        nxt = {10: 20_000 * table + 1, 100: 20_000 * table + 1, 1000: 20_000 * table + 1}
        for k in range(per_table):
            ends = []
            for v in (10, 100, 1000):
                ends.append((v, nxt[v], nxt[v] + 7))
                nxt[v] += 8
            day = start + dt.timedelta(days=2 * k)
            fact = _fact(i, table, day, [2 * k + 1, 2 * k + 2], ends, casino=f"Casino {'é' if i % 2 else 'e'}")
            i += 1
            if gap_every and k % gap_every == gap_every // 2:
                continue
            out.append(fact)
    return out


@pytest.mark.slow
def test_ten_thousand_carnets_of_one_casino():
    """The findings of a casino's 10,000 carnets (their cost is bench/bench_archive.py's, never a timed test)."""
    profile = load_profile()
    whole = _casino(50, 200)
    with_gaps = _casino(50, 220, gap_every=11)            # 20 carnets removed per table
    assert len(whole) == 10_000 and len(with_gaps) == 10_000
    from auditor.checks import registered_batch

    for batch, n_gaps in ((whole, 0), (with_gaps, 50 * 20)):
        found = {code: list(registered_batch()[code].func(batch, profile)) for code in archive_codes()}
        archive_statuses(batch, profile)
        assert len(found["EC64-11"]) == n_gaps and not found["EC64-10"] and not found["EC561-04"]
        # Three values, one run of 8 missing tickets each.
        assert len(found["EC83-04"]) == 3 * n_gaps
        assert sum(v.impact_cents for v in found["EC83-04"]) == n_gaps * 8 * (10 + 100 + 1000)
