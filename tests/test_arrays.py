"""A carnet's integer columns as the rules read them (`auditor.arrays`):
`ints_of`, `column` and `present_of` must give what the frame itself says
(`frames.ints`, `frames.present`) for every integer column of every table,
whether a column has missing cells or not; a column with none is shared as
it is, read-only (no copy of a million stakes' column), one with some is a
filled copy that leaves the frame as it was."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from auditor import arrays
from auditor.frames import ints, present
from auditor.normalise import normalise
from auditor.read import read_carnet

SAMPLES = Path(__file__).resolve().parent.parent / "sample_carnets"
CARNETS = sorted(p for p in SAMPLES.glob("*/*") if p.suffix in (".xlsx", ".ods", ".xls") or p.is_dir())


def _carnets(tmp_path):
    from tests.test_normalise_threads import _hostile_folder

    yield from CARNETS
    yield _hostile_folder(tmp_path / "hostile")


def _int_columns(carnet):
    for name, table in carnet.tables.items():
        for field in table.df.columns:
            if isinstance(table.df[field].dtype, pd.Int64Dtype):
                yield name, field


def test_integer_columns_read_as_the_frame_says(tmp_path):
    seen = {"whole": 0, "missing": 0}
    for path in _carnets(tmp_path):
        carnet = normalise(read_carnet(path))
        for table, field in _int_columns(carnet):
            s = carnet.df(table)[field]
            values, ok = arrays.ints_of(carnet, table, field)
            want_values, want_ok = ints(s)
            want_values, want_ok = np.asarray(want_values), np.asarray(want_ok, dtype=bool)
            assert (ok == want_ok).all(), (path.name, table, field)
            assert (values[ok] == want_values[want_ok]).all() and (values[~ok] == 0).all()
            assert (arrays.present_of(carnet, table, field) == np.asarray(present(s), dtype=bool)).all()
            col = arrays.column(carnet, table, field)
            assert (col == np.where(want_ok, want_values, arrays.NA_INT)).all()
            for got in (values, ok, col):
                assert not got.flags.writeable
            data = s.array._data
            if want_ok.all():
                seen["whole"] += 1
                assert np.shares_memory(values, data) and np.shares_memory(col, data)
            else:
                seen["missing"] += 1
                assert not np.shares_memory(values, data) and not np.shares_memory(col, data)
                assert s.isna().sum() == (~want_ok).sum()   # the frame itself left as it was
    # Both kinds were met (else half of this proves nothing).
    assert seen["whole"] > 100 and seen["missing"] > 5, seen


@pytest.mark.parametrize("field", ["seance", "montant_cents"])
def test_a_shared_column_cannot_be_written_through_the_rules_arrays(field):
    carnet = normalise(read_carnet(SAMPLES / "compliant" / "deauville-table1"))
    values, _ = arrays.ints_of(carnet, "mises", field)
    with pytest.raises(ValueError):
        values[0] = 12345
