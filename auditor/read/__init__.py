"""Reading carnets: containers → raw text tables, every row accounted for.

`discover` finds carnets under the paths given on the command line;
`read_carnet` turns one into a RawCarnet whatever state the file is in:
an unreadable container is an EC00-01 finding, never an exception.
"""

from __future__ import annotations

import contextlib
import functools
from pathlib import Path

from auditor.limits import DEFAULT_LIMITS, Limits
from auditor.discover import WORKBOOK_SUFFIXES, discover, is_carnet
from auditor.read.columns import ColumnMap, ColumnsFileError, load_columns_file
from auditor.read.raw import RawCarnet, RawTable, ReadProblem, canonical_name
from auditor.read.csv_folder import read_csv_folder
from auditor.read import early as early_reads

__all__ = ["ColumnMap", "ColumnsFileError", "RawCarnet", "RawTable", "ReadProblem", "canonical_name", "discover",
           "is_carnet", "load_columns_file", "read_carnet", "WORKBOOK_SUFFIXES"]


def table_names() -> frozenset[str]:
    """The tables of the carnet format: other sheets and files are not read."""
    import ecarte_schemas

    return frozenset(ecarte_schemas.MODELS)


def read_carnet(path: Path, limits: Limits | None = None, columns: ColumnMap | None = None, *,
                early: bool = True) -> RawCarnet:
    """Read one carnet within `limits` (the defaults of auditor.limits when None);
    `columns`: the user's mapping file (source column → carnet column), if any.
    A read the command started early with these arguments is taken, not done
    again (`early`: auditor.read.early)."""
    if early:
        raw = early_reads.take(path, limits, columns)
        if raw is not None:
            return raw
    limits = limits or DEFAULT_LIMITS
    if path.is_dir():
        raw = read_csv_folder(path, limits, table_names(), columns)
    else:
        # Imported for a workbook only: a batch of CSV folders never pays for it.
        from auditor.read.workbook import read_workbook

        raw = read_workbook(path, limits, table_names(), columns)
    raw.columns_file = columns.as_json() if columns is not None else None
    return raw


@contextlib.contextmanager
def read_early(path: Path, limits: Limits | None = None, columns: ColumnMap | None = None):
    """Read the carnet at `path` in a thread while the block runs (the command
    imports the auditor meanwhile); `read_carnet` with these arguments takes
    it (auditor.read.early)."""
    # What the read imports is imported here, before the thread starts: two
    # threads importing modules that import each other can each be handed the
    # other's half-made module. The thread then imports nothing of the
    # auditor (pandas at most, for a file Arrow refuses: pandas imports none
    # of ours), and the imports it overlaps (pandas, the rules) are this thread's.
    table_names()
    with early_reads.reading(path, limits, columns, functools.partial(read_carnet, path, limits, columns,
                                                                      early=False)):
        yield
