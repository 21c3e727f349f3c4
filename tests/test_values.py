"""How a finding's values reach the reader: cents and dates in the report language."""

from __future__ import annotations

import datetime as dt

from auditor.carnet import Carnet, Source
from auditor.catalogue import load_catalogue
from auditor.audit import make_finding
from auditor.i18n import format_day
from auditor.model import Day, Violation


def test_day_of_dates_and_timestamps():
    import pandas as pd

    assert Day.of(None) is None
    assert Day.of(dt.date(2026, 3, 2)) == "2026-03-02"
    assert Day.of(pd.Timestamp("2026-03-02 13:45"), "≥ ") == "≥ 2026-03-02"


def test_format_day_by_language():
    assert format_day(Day("≥ 2026-03-02"), "fr") == "≥ 02/03/2026"
    assert format_day(Day("2026-03-02"), "en") == "2026-03-02"


def test_finding_writes_dates_the_reader_s_way():
    meta = load_catalogue()["EC64-07"]
    carnet = Carnet(Source("x", "", "csv"))
    v = Violation(table="seances", row=3, column="timbre", seance=2, kind="mismatch",
                  expected=Day("2026-03-02"), found=Day("2026-03-03"),
                  params={"date": Day("2026-03-02"), "timbre": Day("2026-03-03")})
    fr = make_finding(meta, v, carnet, "fr")
    en = make_finding(meta, v, carnet, "en")
    assert (fr.expected, fr.found) == ("02/03/2026", "03/03/2026")
    assert (en.expected, en.found) == ("2026-03-02", "2026-03-03")
    assert "2026-03-0" not in fr.message and "2026-03-0" in en.message
