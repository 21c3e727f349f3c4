"""The history's rows become an Arrow table through Arrow's JSON reader
(`history.rows_table`), not `pyarrow.Table.from_pylist`, which imports
pandas: the same table, for every kind of value each column holds."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys

import pyarrow as pa
import pytest
from hypothesis import given, strategies as st

from auditor import history

_TEXT = st.text(st.characters(codec="utf-8"), max_size=12) | st.sampled_from(["", "é\u2028\x00\"\\\n", "12", "null"])
_INT = st.integers(min_value=-2**63, max_value=2**63 - 1)
_DAY = st.dates(min_value=dt.date(1900, 1, 1), max_value=dt.date(2200, 12, 31))
_AT = st.datetimes(min_value=dt.datetime(1971, 1, 1), max_value=dt.datetime(2200, 1, 1),
                   timezones=st.just(dt.timezone.utc)).map(lambda t: t.replace(microsecond=0))


def _value(column: str):
    kind = history._type(column)
    strategy = {"TIMESTAMP WITH TIME ZONE": _AT, "DATE": _DAY, "BIGINT": _INT, "BOOLEAN": st.booleans(),
                "VARCHAR": _TEXT}[kind]
    return st.none() | strategy


_ROW = st.fixed_dictionaries({}, optional={c: _value(c) for c in history.COLUMNS})


@pytest.mark.slow
@given(st.lists(_ROW, max_size=6))
def test_the_rows_table_is_from_pylists(rows):
    ours = history.rows_table(rows)
    assert ours.schema.equals(history._schema())
    assert ours.to_pylist() == pa.Table.from_pylist(rows, schema=history._schema()).to_pylist()


def test_making_the_rows_table_imports_no_pandas():
    code = ("import sys, datetime as dt\nfrom auditor import history\n"
            "t = history.rows_table([{'run_id': 'r', 'run_at': dt.datetime(2026, 1, 5, tzinfo=dt.timezone.utc),"
            " 'date_debut': dt.date(2026, 1, 5), 'errors': 2, 'review_stale': True, 'message': 'é'}])\n"
            "print(t.num_rows, 'pandas' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "False"]
