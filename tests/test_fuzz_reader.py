"""Property tests: whatever bytes a carnet holds, nothing raises out of the
auditor and every row read is accounted for. Example counts stay modest
here; `make fuzz` runs the same strategies at scale (fuzz/fuzz_reader.py)."""

from __future__ import annotations

import csv
import io
import sys
import tempfile
from pathlib import Path


from hypothesis import HealthCheck, Phase, given, settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
from strategies import (materialise, mutated_csv, mutated_xlsb, mutated_xlsx, random_csv, random_xlsx,  # noqa: E402
                        spoiled_carnet)

from auditor.catalogue import load_profile  # noqa: E402
from auditor.normalise import normalise  # noqa: E402
from auditor.audit import audit_path  # noqa: E402
from auditor.read import read_carnet  # noqa: E402
from auditor.read.csv_folder import DecodeError, decode, sniff_delimiter  # noqa: E402

# Derandomised (the same examples on every run, so the suite is stable) and
# without shrinking (an audit per example makes shrinking take minutes).
COMMON = dict(deadline=None, suppress_health_check=list(HealthCheck), database=None, derandomize=True,
              phases=[Phase.explicit, Phase.generate])
FAST = settings(max_examples=20, **COMMON)
SLOW = settings(max_examples=6, **COMMON)
PROFILE = load_profile()


def known_counts(item):
    """(table, data records its generated text holds) for the tables whose
    count the csv module can tell."""
    for name, data in item[1].items():
        expected = records_in(data, name)
        if expected is not None:
            yield name, expected


def records_in(data: bytes, table: str) -> int | None:
    """Non-blank data records of a CSV file, counted with the csv module alone
    under the header the format's rule finds (records above it are a title)."""
    from auditor.read.columns import find_header

    try:
        text, _ = decode(data)
    except DecodeError:
        return None
    rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=sniff_delimiter(text)))
    found = find_header(table, rows)
    start = found[0] if found else 0
    return sum(1 for r in rows[start + 1:] if any(v.strip() for v in r))


def check_accounting(result) -> None:
    s = result.summary
    assert sum(t["read"] for t in s["tables"].values()) == s["rows_read"]
    assert sum(t["rejected"] for t in s["tables"].values()) == s["rows_rejected"]
    for t in s["tables"].values():
        assert t["read"] == t["audited"] + t["rejected"] + t["left_out"] and 0 <= t["rejected"] <= t["read"]


@FAST
@given(random_xlsx)
def test_random_bytes_as_workbook(item):
    with tempfile.TemporaryDirectory() as tmp:
        result = audit_path(materialise(item, Path(tmp)), PROFILE, debug=True)
    assert result.carnet.unreadable or result.summary["rows_read"] == 0 or result.findings is not None
    check_accounting(result)


@FAST
@given(random_csv)
def test_random_bytes_as_csv_tables(item):
    with tempfile.TemporaryDirectory() as tmp:
        folder = materialise(item, Path(tmp))
        raw = read_carnet(folder)
        normalise(raw)
    for name, expected in known_counts(item):
        if name in raw.tables:
            assert raw.tables[name].rows_read == expected, name


@FAST
@given(mutated_xlsx())
def test_edited_workbooks(item):
    with tempfile.TemporaryDirectory() as tmp:
        raw = read_carnet(materialise(item, Path(tmp)))
        carnet = normalise(raw)
    for name, table in carnet.tables.items():
        assert table.rows_read == len(table.df) + raw.tables[name].rows_dropped


@FAST
@given(mutated_xlsb())
def test_edited_xlsb_workbooks(item):
    # Far rows and cells, lying grids, cut records in an .xlsb's sheets: read or
    # refused (EC00-01), never an exception, every row read accounted for.
    with tempfile.TemporaryDirectory() as tmp:
        result = audit_path(materialise(item, Path(tmp)), PROFILE, debug=True)
    assert result.carnet.source.format == "xlsb"
    check_accounting(result)


def audit_or_xfail(path):
    """audit_path(debug=True): any exception, in the reader or in a rule, fails the test."""
    return audit_path(path, PROFILE, debug=True)


@SLOW
@given(mutated_csv())
def test_edited_csv_carnets_are_audited_and_every_row_accounted_for(item):
    with tempfile.TemporaryDirectory() as tmp:
        folder = materialise(item, Path(tmp))
        result = audit_or_xfail(folder)
    check_accounting(result)
    for name, expected in known_counts(item):
        table = result.summary["tables"].get(name)
        if table is not None:
            assert table["read"] == expected, name


@SLOW
@given(spoiled_carnet())
def test_spoiled_carnets_are_audited_whole(item):
    """Columns dropped, cells corrupted, rows repeated or moved: every rule runs
    or says why not (debug: a rule's defect would raise here), rows add up."""
    with tempfile.TemporaryDirectory() as tmp:
        result = audit_path(materialise(item, Path(tmp)), PROFILE, debug=True)
        for table in result.summary["tables"].values():
            assert table["audited"] + table["rejected"] == table["read"]
        assert all(r.reason for r in result.rules if r.status.value == "not_checked")
