"""Reading carnets: containers → raw text tables, every row accounted for.

`discover` finds carnets under the paths given on the command line;
`read_carnet` turns one into a RawCarnet whatever state the file is in:
an unreadable container is an EC00-01 finding, never an exception.
"""

from __future__ import annotations

from pathlib import Path

from auditor.limits import DEFAULT_LIMITS, Limits
from auditor.read.columns import ColumnMap, ColumnsFileError, load_columns_file
from auditor.read.raw import SUFFIXES, RawCarnet, RawTable, ReadProblem, canonical_name
from auditor.read.csv_folder import read_csv_folder

# Every workbook container calamine reads (spec: carnet-format.md, Containers).
WORKBOOK_SUFFIXES = tuple(SUFFIXES)

__all__ = ["ColumnMap", "ColumnsFileError", "RawCarnet", "RawTable", "ReadProblem", "canonical_name", "discover",
           "is_carnet", "load_columns_file", "read_carnet", "WORKBOOK_SUFFIXES"]


def _has_coups_csv(folder: Path) -> bool:
    try:
        return any(p.is_file() and p.name.lower() == "coups.csv" for p in folder.iterdir())
    except OSError:
        return False


def is_carnet(path: Path) -> bool:
    """`path` is a carnet: a workbook, or a folder holding coups.csv."""
    if path.is_file():
        return path.suffix.lower() in WORKBOOK_SUFFIXES
    return path.is_dir() and _has_coups_csv(path)


def discover(root: Path) -> list[Path]:
    """Every carnet at or below `root`, in a stable (sorted) order.

    A folder holding `coups.csv` is one carnet; its sub-folders are not searched.
    Office lock files (`~$x.xlsx`, LibreOffice's `.~lock.x.ods#`) are skipped.
    """
    if is_carnet(root):
        return [root]
    found: list[Path] = []
    if not root.is_dir():
        return found
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(folder.iterdir(), key=lambda p: p.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith("~$") or entry.name.startswith("."):
                continue
            if entry.is_dir() and not entry.is_symlink():
                if _has_coups_csv(entry):
                    found.append(entry)
                else:
                    stack.append(entry)
            elif entry.is_file() and entry.suffix.lower() in WORKBOOK_SUFFIXES:
                found.append(entry)
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


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
