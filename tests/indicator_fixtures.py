"""A casino's archive for the indicators: four tables audited day after day,
one of them with its stakes written short for a month (the planted anomaly:
the levy stays 5 % of what is written, the masses fall far below the other
tables'), one with tickets missing between two carnets (EC83-04)."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path

from auditor.synth.archive import ArchiveSpec, generate_archive, write_archive
from auditor.synth.generate import Spec

CASINO = "Casino de Deauville"
TABLES = (1, 2, 3, 4)
START = dt.date(2026, 9, 21)       # ten days of September, then October
DAYS = 40
SHORT_TABLE, SHORT_MONTH = 3, "2026-10"


def short_in_october(spec: Spec) -> Spec:
    """Table 3's October carnets: stakes written short (two a coup instead of five)."""
    return replace(spec, mises=1) if spec.start.strftime("%Y-%m") == SHORT_MONTH else spec


def write_casino(root: Path) -> Path:
    """The four tables' archives under root/table<N>/, one CSV folder a day."""
    for table in TABLES:
        base = Spec(seances=2, coups=12, mises=5, seed=table, casino=CASINO, table=table, start=START,
                    ticket_start={10: table * 100_001, 100: table * 100_001, 1000: table * 100_001})
        spec = ArchiveSpec(DAYS, base, breaches=("EC83-04",) if table == 1 else (),
                           adjust=short_in_october if table == SHORT_TABLE else None)
        write_archive(generate_archive(spec), root / f"table{table}")
    return root
