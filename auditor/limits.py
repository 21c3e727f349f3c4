"""Size limits on what the reader accepts: past one, a carnet or a table is
refused with an EC00-01 instead of exhausting memory or time.

Not regulation (so not in `rules/profile.toml`): the defaults fit the largest
real carnet with a wide margin, and callers (the command line) may override
them. See docs/interpretations.md, "Hostile input".
"""

from __future__ import annotations

from dataclasses import dataclass

MB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """How much the reader accepts before refusing a file (EC00-01): file size, rows, columns."""

    # A workbook, or one CSV file of a CSV folder.
    max_file_bytes: int = 200 * MB
    # Data rows of one table (a workbook sheet is counted from its first row).
    max_rows: int = 2_000_000
    # Columns of one table: the CSV header, or the sheet's right-most cell.
    max_columns: int = 200
    # Rows × columns of one table's grid: what the parsers hold in memory
    # (2,000,000 rows of 20 columns).
    max_cells: int = 40_000_000
    # A workbook's XML parts once inflated, all together.
    max_unzipped_bytes: int = 2048 * MB
    # Inflated / compressed size of one workbook member: real sheets stay
    # far below (about 10); a zip bomb is in the hundreds or thousands.
    max_zip_ratio: int = 100
    # Members smaller than this once inflated are not held to the ratio
    # (a tiny part can compress very well and harms nobody).
    zip_ratio_grace_bytes: int = 1 * MB
    max_zip_members: int = 10_000

    def __post_init__(self):
        for name, value in self.__dict__.items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"limit {name} must be a positive integer, not {value!r}")


DEFAULT_LIMITS = Limits()


def size_text(n: int) -> str:
    """Bytes as shown in a message: `262.1 MB`, `36 KB`, `512 B` (integer arithmetic)."""
    if n >= MB:
        tenths = n * 10 // MB
        return f"{tenths // 10}.{tenths % 10} MB"
    if n >= 1024:
        return f"{n // 1024} KB"
    return f"{n} B"


@dataclass(frozen=True)
class Bounds:
    """Bounds on the audit of one carnet in a batch worker: past one, that carnet is an EC00-01."""

    timeout_s: int | None = None     # --timeout-per-carnet
    memory_mb: int | None = None     # --max-memory-mb


# Defaults that never bite on a real carnet: the largest carnet the reader
# accepts (its limits: 2,000,000 rows a table, 200 MB a file) audits in well
# under a minute and under 2 GB (bench/RESULTS.md: 1M stakes in 5 s and
# 646 MB); these only stop a runaway audit before it takes the machine.
DEFAULT_BOUNDS = Bounds(timeout_s=3600, memory_mb=8192)
# How long a run on a Dask cluster waits with no worker at all before it stops (--cluster-wait):
# long enough for workers being restarted, short enough that a night does not hang.
DEFAULT_CLUSTER_WAIT = 180
# How long a run tries to reach the Dask scheduler (--scheduler) before it says it cannot.
SCHEDULER_CONNECT_S = 20
