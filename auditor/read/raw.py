"""What the readers hand to normalisation: text cells with their source place."""

from __future__ import annotations

import hashlib
import itertools
import unicodedata
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from auditor.discover import file_digest, sha256_of_digests  # noqa: F401  (the readers' names of them)
from auditor.money import arrow_strings, string_array

if TYPE_CHECKING:   # pandas is imported where a frame is made: a carnet read through Arrow needs none
    import pandas as pd


def canonical_name(text: object) -> str:
    """Sheet, file and column names match case- and accent-insensitively.

    `Séances` → `seances`, `Total A` → `total_a`.
    """
    s = unicodedata.normalize("NFKD", str(text)).encode("ascii", "ignore").decode("ascii")
    return "_".join(s.strip().lower().replace("-", " ").split())


def column_letter(index: int) -> str:
    """0 → A, 25 → Z, 26 → AA."""
    letters = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        letters = chr(65 + rem) + letters
    return letters


@dataclass(frozen=True)
class ReadProblem:
    """A problem met while reading, before any typing: becomes an EC00 finding."""

    code: str                 # EC00-01 or EC00-02
    kind: str                 # catalogue message variant
    table: str | None = None
    row: int | None = None
    column: str | None = None
    params: dict = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True)
class RawFormula:
    """A workbook cell holding a formula, in a column of the table."""

    column: str           # canonical column name
    row: int              # source row
    cell: str             # Excel reference, `F12`
    has_value: bool       # Excel saved its result (used as the cell's value)


@dataclass(frozen=True)
class SourceColumn:
    """One named column of the source's header, and what the reader made of it."""

    text: str                 # the header cell as written
    letter: str | None        # its column letter (workbooks; CSV: the field's letter too)
    column: str | None        # the carnet column it became; None: ignored or ambiguous
    how: str = ""             # name / variant / mapping ("" when not used)


@dataclass
class RawTable:
    """One table as text. `df` has one str column per canonical source column
    ("" for an empty cell) and `_row`, the source row number (header = 1).

    A reader may hand the table as Arrow (`data` a pyarrow Table of string
    columns without nulls and an int64 `_row`): normalisation reads it as it
    is, and the pandas frame is built only when someone asks for `df`."""

    name: str
    data: pd.DataFrame | pa.Table
    letters: dict[str, str] | None = None   # column → Excel column letter (workbooks)
    rows_read: int = 0
    rows_dropped: int = 0                    # read but unusable as a row (shape)
    header_row: int = 1
    formulas: list[RawFormula] = field(default_factory=list)
    sheet: str = ""                          # the sheet, or the file, it was read from
    source_columns: list[SourceColumn] = field(default_factory=list)
    title_rows: list[int] = field(default_factory=list)    # non-empty rows above the header
    totals_rows: list[int] = field(default_factory=list)   # trailing totals rows, left out
    # No cell can be a spreadsheet error value: the whole source text holds
    # neither `#` nor `err:` (a CSV file's, told by its reader); False: unknown.
    no_error_values: bool = False

    @property
    def df(self) -> pd.DataFrame:
        """The table as a pandas text frame (built from Arrow on first use)."""
        if isinstance(self.data, pa.Table):
            self.data = arrow_frame(self.data)
        return self.data

    @df.setter
    def df(self, frame: pd.DataFrame) -> None:
        """Replace the table by a pandas text frame."""
        self.data = frame

    @property
    def rows_left_out(self) -> int:
        """Rows read but not data (totals rows): rows_read = audited + rejected + left out."""
        return len(self.totals_rows)

    @property
    def columns(self) -> list[str]:
        """The source columns of the table (without `_row`)."""
        names = self.data.column_names if isinstance(self.data, pa.Table) else self.data.columns
        return [c for c in names if c != "_row"]

    @property
    def num_rows(self) -> int:
        """How many rows the table holds."""
        return self.data.num_rows if isinstance(self.data, pa.Table) else len(self.data)

    def row_numbers(self) -> np.ndarray:
        """The source row of each row (int64)."""
        if isinstance(self.data, pa.Table):
            return self.data.column("_row").to_numpy()
        return self.data["_row"].to_numpy(dtype=np.int64)

    def text(self, column: str) -> pa.StringArray:
        """A source column as one Arrow string array, untrimmed."""
        if isinstance(self.data, pa.Table):
            return string_array(self.data.column(column))
        return string_array(arrow_strings(self.data[column]))

    def text_chunks(self, column: str) -> list[pa.StringArray]:
        """A source column as the Arrow string arrays it is held in (a large
        file is read in blocks: its chunks are parsed one by one, not copied
        into one array first)."""
        if isinstance(self.data, pa.Table):
            chunks = self.data.column(column).chunks
            if chunks and all(c.type == pa.string() for c in chunks):
                return chunks
        return [self.text(column)]

    def cell(self, column: str, pos: int) -> str:
        """The text of the cell of `column` at position `pos`, as written."""
        if isinstance(self.data, pa.Table):
            return str(self.data.column(column)[pos].as_py())
        return str(self.data[column].iat[pos])

    def drop_column(self, column: str) -> None:
        """Let go of a source column of an Arrow table (normalisation has parsed it)."""
        if isinstance(self.data, pa.Table) and column in self.data.column_names:
            self.data = self.data.drop_columns([column])

    def shift_rows(self, by: int) -> None:
        """Add `by` to every source row number (rows above the header were cut off)."""
        if isinstance(self.data, pa.Table):
            i = self.data.column_names.index("_row")
            self.data = self.data.set_column(i, "_row", pc.add(self.data.column("_row"), by))
        else:
            self.data["_row"] = self.data["_row"] + by

    def drop_rows(self, rows) -> None:
        """Leave out the rows whose source row number is in `rows`."""
        if isinstance(self.data, pa.Table):
            keep = ~np.isin(self.row_numbers(), list(rows))
            self.data = self.data.filter(bool_array(keep))
        else:
            self.data = self.data[~self.data["_row"].isin(rows)].reset_index(drop=True)


# Arrow arrays made from their buffers: `pa.array` asks pandas whether what it
# is given is one of its own, and so imports pandas (half a second) in a read
# that needs none (auditor.read.early).

def text_array(values: list[str] | tuple[str, ...]) -> pa.StringArray:
    """`pa.array(values, pa.string())`, for a short list of str."""
    joined = "".join(values)
    data = joined.encode("utf-8")
    # ASCII text: each value's length in bytes is its length.
    lengths = map(len, values) if len(data) == len(joined) else (len(v.encode("utf-8")) for v in values)
    offsets = np.fromiter(itertools.accumulate(lengths, initial=0), dtype=np.int32, count=len(values) + 1)
    return pa.Array.from_buffers(pa.string(), len(values), [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def int64_array(values: np.ndarray) -> pa.Int64Array:
    """`pa.array(values)` for integers, as int64."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


def bool_array(values: np.ndarray) -> pa.BooleanArray:
    """`pa.array(values)` for a numpy bool array."""
    bits = np.packbits(np.asarray(values, dtype=bool), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])


def arrow_frame(table: pa.Table) -> pd.DataFrame:
    """An Arrow text table as the readers' pandas frame: Arrow-backed str columns, `_row` int64."""
    import pandas as pd

    out = table.to_pandas(types_mapper={pa.string(): pd.StringDtype("pyarrow")}.get)
    out["_row"] = out["_row"].astype("int64")
    return out


@dataclass
class RawCarnet:
    """A carnet as read: text tables with their source rows, before any typing, and what the reader refused."""

    path: str
    format: str                               # "xlsx" or "csv"
    sha256: str
    tables: dict[str, RawTable] = field(default_factory=dict)
    problems: list[ReadProblem] = field(default_factory=list)
    unreadable: bool = False
    columns_file: dict | None = None          # the --columns mapping, echoed (ColumnMap.as_json)
    # A CSV folder's files, each with its own SHA-256 (name, hex), in the
    # order `sha256` hashes them; empty for a one-file workbook.
    files: list[tuple[str, str]] = field(default_factory=list)

    def reading(self) -> dict:
        """The reading notes (findings.json `reading`): how each table was understood."""
        tables = []
        for name in sorted(self.tables):
            t = self.tables[name]
            tables.append({
                "table": name, "sheet": t.sheet, "header_row": t.header_row,
                "columns": [{"source": c.text, "letter": c.letter, "column": c.column, "how": c.how or None}
                            for c in t.source_columns],
                "title_rows": list(t.title_rows), "totals_rows": list(t.totals_rows),
                "rows_read": int(t.rows_read), "rows_left_out": t.rows_left_out,
            })
        return {"container": self.format, "columns_file": self.columns_file, "tables": tables}


def empty_frame(columns) -> pd.DataFrame:
    """A text table with the given columns and no rows."""
    import pandas as pd

    df = pd.DataFrame({name: pd.Series([], dtype=object) for name in columns})
    df["_row"] = pd.array([], dtype="int64")
    return df


def frame_from_rows(keep: dict[str, int], rows: list[list], first_row: int,
                    keep_rows: set[int] | frozenset = frozenset()) -> tuple[pd.DataFrame, dict[str, int]]:
    """Build a text frame from data rows, `keep` giving each carnet column's
    source index. Entirely empty rows are skipped (they are not rows of the
    carnet) unless their source row is in `keep_rows`."""
    data = {name: [] for name in keep}
    row_numbers = []
    for offset, row in enumerate(rows):
        if not any(str(v).strip() for v in row if v is not None) and first_row + offset not in keep_rows:
            continue
        for name, i in keep.items():
            v = row[i] if i < len(row) else ""
            data[name].append("" if v is None else v)
        row_numbers.append(first_row + offset)
    import pandas as pd

    df = pd.DataFrame(data, dtype=object)
    df["_row"] = pd.array(row_numbers, dtype="int64")
    return df, keep


def sha256_of(parts: list[tuple[str, bytes]]) -> str:
    """The SHA-256 of a carnet's files (one file: its own digest; a folder: of the names and digests)."""
    h = hashlib.sha256()
    if len(parts) == 1 and parts[0][0] == "":
        h.update(parts[0][1])
        return h.hexdigest()
    for name, data in parts:
        h.update(name.encode("utf-8") + b"\0")
        h.update(hashlib.sha256(data).digest())
    return h.hexdigest()


