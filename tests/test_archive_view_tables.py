"""index.html's archive view places each finding across carnets in the
tables whose rules found it and whose timeline holds all its carnets: held
to the plain reading (every finding tested against every table) over tables
that share carnets or not, findings of one place or many, known or unknown
carnets and codes."""

from __future__ import annotations

from hypothesis import given, strategies as st

from auditor.report.archive_view import _findings_of_tables

_IDS = st.sampled_from([f"c{i}" for i in range(8)])
_CODES = st.sampled_from(["EC64-10", "EC64-11", "EC561-04", "EC82-03"])
_TABLES = st.lists(st.fixed_dictionaries({
    "timeline": st.lists(_IDS, max_size=5, unique=True).map(lambda ids: [{"id": i} for i in ids]),
    "rules": st.dictionaries(_CODES, st.just({"status": "checked"}), max_size=3)}), max_size=5)
_CROSS = st.lists(st.fixed_dictionaries({
    "code": _CODES, "across": st.lists(_IDS.map(lambda i: {"carnet": i}), max_size=4)}), max_size=12)


def _plain(tables, cross):
    out = []
    for t in tables:
        ids = {c["id"] for c in t["timeline"]}
        codes = set(t.get("rules") or {})
        out.append([f for f in cross if f.get("code") in codes and len(f.get("across") or []) >= 2
                    and {p["carnet"] for p in f["across"]} <= ids])
    return out


@given(_TABLES, _CROSS)
def test_each_table_gets_the_findings_the_plain_reading_gives(tables, cross):
    got = _findings_of_tables(tables, cross)
    want = _plain(tables, cross)
    assert [[id(f) for f in g] for g in got] == [[id(f) for f in w] for w in want]
