"""Reading carnets: containers → raw text tables, every row accounted for.

`discover` finds carnets under the paths given on the command line;
`read_carnet` turns one into a RawCarnet whatever state the file is in:
an unreadable container is an EC00-01 finding, never an exception.
"""

from __future__ import annotations

from pathlib import Path

from auditor.limits import DEFAULT_LIMITS, Limits
from auditor.discover import WORKBOOK_SUFFIXES, discover, is_carnet
from auditor.read.columns import ColumnMap, ColumnsFileError, load_columns_file
from auditor.read.raw import RawCarnet, RawTable, ReadProblem, canonical_name
from auditor.read.csv_folder import read_csv_folder

__all__ = ["ColumnMap", "ColumnsFileError", "RawCarnet", "RawTable", "ReadProblem", "canonical_name", "discover",
           "is_carnet", "load_columns_file", "read_carnet", "WORKBOOK_SUFFIXES"]


def table_names() -> frozenset[str]:
    """The tables of the carnet format: other sheets and files are not read."""
    import ecarte_schemas

    return frozenset(ecarte_schemas.MODELS)


def read_carnet(path: Path, limits: Limits | None = None, columns: ColumnMap | None = None) -> RawCarnet:
    """Read one carnet within `limits` (the defaults of auditor.limits when None);
    `columns`: the user's mapping file (source column → carnet column), if any."""
    limits = limits or DEFAULT_LIMITS
    if path.is_dir():
        raw = read_csv_folder(path, limits, table_names(), columns)
    else:
        # Imported for a workbook only: a batch of CSV folders never pays for it.
        from auditor.read.workbook import read_workbook

        raw = read_workbook(path, limits, table_names(), columns)
    raw.columns_file = columns.as_json() if columns is not None else None
    return raw
