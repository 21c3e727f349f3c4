"""Normalisation skips pandera for a table that certainly passes its schema:
that shortcut must say "passes" exactly when pandera finds nothing, for every
table of the format and any mix of good, missing, out-of-range and
out-of-list values."""

from __future__ import annotations

import shutil

import pandas as pd
import pandera.pandas as pandera
import pytest
from hypothesis import given, settings, strategies as st

import ecarte_schemas
from auditor.normalise import _certainly_valid, _checking_schema

_INTS = st.one_of(st.integers(-2, 3), st.none())
_TEXTS = st.one_of(st.sampled_from(["a", "b", "simple", "chouette", "avant", "apres", "oui", "non",
                                    "adjudication", "remise", "x", ""]), st.none())
_DATES = st.one_of(st.just(pd.Timestamp("2026-03-02")), st.none())


def _column(column, n: int):
    kind = column.metadata["kind"]
    cells = {"int": _INTS, "amount": _INTS, "date": _DATES}.get(kind, _TEXTS)
    dtype = {"int": "Int64", "amount": "Int64", "date": "datetime64[us]"}.get(kind, "string")
    return st.lists(cells, min_size=n, max_size=n).map(lambda v: pd.Series(v, dtype=dtype))


@st.composite
def _table(draw, name: str):
    schema = ecarte_schemas.MODELS[name]
    n = draw(st.integers(0, 6))
    return pd.DataFrame({f: draw(_column(c, n)) for f, c in schema.columns.items()})


def _pandera_passes(schema, df) -> bool:
    try:
        _checking_schema(schema).validate(df, lazy=True)
        return True
    except pandera.errors.SchemaErrors:
        return False


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ecarte_schemas.MODELS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_shortcut_agrees_with_pandera(name, data):
    schema = ecarte_schemas.MODELS[name]
    df = data.draw(_table(name))
    assert _certainly_valid(schema, df) == _pandera_passes(schema, df)


def test_checking_schema_keeps_everything_but_dtypes():
    for schema in ecarte_schemas.MODELS.values():
        checking = _checking_schema(schema)
        assert list(checking.columns) == list(schema.columns)
        for name, column in schema.columns.items():
            other = checking.columns[name]
            assert other.dtype is None and other.nullable == column.nullable
            assert [c.name for c in other.checks] == [c.name for c in column.checks]


@pytest.mark.slow
@pytest.mark.subprocess
def test_audit_of_a_valid_carnet_never_imports_pandera(tmp_path):
    """Pandera is imported only for a table that may fail (a quarter of a second
    per process otherwise): a compliant sample, audited and reported in a fresh
    interpreter, must leave it unimported, while a carnet with an out-of-list
    value must use it."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    bad = tmp_path / "bad"
    shutil.copytree(root / "sample_carnets" / "compliant" / "deauville-table1", bad)
    mises = bad / "mises.csv"
    lines = mises.read_text(encoding="utf-8-sig").splitlines()
    sep = ";" if ";" in lines[0] else ","
    header, cells = lines[0].split(sep), lines[1].split(sep)
    cells[header.index("cote")] = "z"
    mises.write_text("\n".join([lines[0], sep.join(cells), *lines[2:]]) + "\n", encoding="utf-8")
    code = ("import sys\nfrom pathlib import Path\nfrom auditor.audit import audit_path\n"
            "from auditor.catalogue import load_profile\n"
            "r = audit_path(Path(sys.argv[1]), load_profile(), 'fr')\n"
            "print(len(r.findings), 'pandera' in sys.modules)\n")
    for path, imported in ((root / "sample_carnets" / "compliant" / "deauville-table1", False), (bad, True)):
        out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
        assert out.stdout.split()[1] == str(imported), (path, out.stdout, out.stderr)


_CELLS = ["a", "b", "ab", "", "après", "apres", "A", " a", None]


@pytest.mark.parametrize("wide", [False, True])
@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.lists(st.sampled_from(_CELLS), max_size=5), max_size=4),
       allowed=st.lists(st.sampled_from([c for c in _CELLS if c is not None]), max_size=4))
def test_all_in_is_isin_of_the_non_null_cells(wide, parts, allowed):
    """`_all_in` (the shortcut's test of an enumeration's column) says yes
    exactly when every non-null cell, byte for byte, is one of the allowed
    texts: any chunking, empty chunks, nulls, the empty text, accents,
    prefixes, case, a leading space, either width of Arrow text."""
    import pyarrow as pa

    from auditor.normalise import _all_in

    kind = pa.large_string() if wide else pa.string()
    chunks = pa.chunked_array([pa.array(p, kind) for p in parts], kind)
    assert _all_in(chunks, allowed) == all(c is None or c in allowed for p in parts for c in p)


def test_all_in_of_texts_against_numbers_is_not_certain():
    """Allowed values Arrow cannot compare with text: not certainly valid (pandera decides)."""
    import pyarrow as pa

    from auditor.normalise import _all_in

    assert _all_in(pa.chunked_array([pa.array(["1"])]), [1, 2]) is False
