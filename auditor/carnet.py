"""The normalised carnet: typed tables and their source places.

Checks receive a `Carnet` and the profile, nothing else. What is derived from
the tables (the stakes' sums, the masses, the chouette state, the expected
levies) is in `auditor/derived/`, computed once per carnet.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from auditor.model import Violation


@dataclass
class Table:
    """One typed table of the carnet, with where each field came from in the source."""

    name: str
    df: pd.DataFrame                     # typed fields (money as *_cents Int64) + `_row`
    present: frozenset[str]              # fields whose source column exists
    letters: dict[str, str] | None       # source column → Excel letter (workbooks)
    sources: dict[str, str]              # field → source column name
    rows_read: int = 0
    rows_left_out: int = 0               # read, but totals rows: not data
    # Optional fields whose source column is absent, so read as the format's
    # default (`restitue` 0, `dernier` = premier …): their values are known.
    defaulted: frozenset[str] = frozenset()
    # Fields that two source columns reach (EC00-01, neither read): their values
    # are unknown (<NA>), never the default.
    ambiguous: frozenset[str] = frozenset()

    def cell(self, field_or_column: str | None, row: int | None) -> str | None:
        """The Excel cell (`F12`) of a field or source column at a source row; None for a CSV carnet."""
        if self.letters is None or field_or_column is None or row is None:
            return None
        source = self.sources.get(field_or_column, field_or_column)
        letter = self.letters.get(source)
        return f"{letter}{row}" if letter else None

    def source_column(self, field_name: str | None) -> str | None:
        """The source column a field was read from (the field's own name when it is not mapped)."""
        if field_name is None:
            return None
        return self.sources.get(field_name, field_name)


@dataclass(frozen=True)
class Source:
    """Where the carnet was read from: its path, the SHA-256 of its files, its container."""

    path: str
    sha256: str
    format: str
    # A CSV folder's files, each with its own SHA-256: ((name, hex), …) in the
    # order `sha256` hashes them (the procès-verbal names each); () for one file.
    files: tuple[tuple[str, str], ...] = ()


@dataclass
class Carnet:
    """The normalised carnet: its typed tables and the EC00-01/EC00-02 problems met while reading and typing them."""

    source: Source
    tables: dict[str, Table] = field(default_factory=dict)
    # EC00-01/EC00-02 met while reading and typing, as (code, violation).
    problems: list[tuple[str, Violation]] = field(default_factory=list)
    unreadable: bool = False
    # How the source was understood (findings.json `reading`), from the reader.
    reading: dict | None = None

    def __getstate__(self) -> dict:
        """The carnet as pickled: its fields only. The memos its audit left in
        it (derived facts, columns' arrays, the cover, the séances' dates) are
        keyed by the building functions and by the identity of their
        arguments and frames, which mean nothing in another process (and the
        functions a decorator wraps cannot be pickled at all); the unpickled
        carnet builds them again when asked."""
        return {name: self.__dict__[name] for name in self.__dataclass_fields__ if name in self.__dict__}

    # -- presence --------------------------------------------------------
    def has(self, need: str) -> bool:
        """`need` is `table` or `table.field` (source column name accepted):
        the table is there, and the field's values are known: its source
        column was read, or it is absent and the format gives its default.
        A field two source columns reach (ambiguous) is never had."""
        table, _, column = need.partition(".")
        t = self.tables.get(table)
        if t is None:
            return False
        if not column:
            return True
        known = t.present | t.defaulted
        return column in known or any(src == column and f in known for f, src in t.sources.items())

    def ambiguous(self, need: str) -> bool:
        """`need` (`table.field`, source column name accepted) names a field
        that two source columns reach: an EC00-01, neither column read."""
        table, _, column = need.partition(".")
        t = self.tables.get(table)
        if t is None or not column:
            return False
        return column in t.ambiguous or any(src == column and f in t.ambiguous for f, src in t.sources.items())

    def df(self, table: str) -> pd.DataFrame:
        """The typed frame of `table` (which must be present)."""
        return self.tables[table].df

    def unreadable_cells(self, table: str, field_name: str) -> pd.Series:
        """Rows of `table` whose `field_name` cell could not be read (an EC00-02).

        A <NA> there means "unreadable", not "empty": rules that report a
        missing value skip those rows (a required cell left empty is empty).
        """
        t = self.tables[table]
        if self.ambiguous(f"{table}.{field_name}"):
            # Two source columns name it, neither read: every cell is unknown, none empty.
            return pd.Series(True, index=t.df.index, dtype=bool)
        source = t.source_column(field_name)
        rows = {v.row for code, v in self.problems
                if code == "EC00-02" and v.table == table and v.column == source and v.kind != "missing"}
        return t.df["_row"].isin(rows).astype(bool)

    def unreadable_rows(self, table: str, *fields: str) -> pd.Series:
        """Rows of `table` with an unreadable or empty required cell in any of
        `fields`: rows whose value there is unknown."""
        t = self.tables[table]
        if any(self.ambiguous(f"{table}.{f}") for f in fields):
            return pd.Series(True, index=t.df.index, dtype=bool)
        sources = {t.source_column(f) for f in fields}
        rows = {v.row for code, v in self.problems
                if code == "EC00-02" and v.table == table and v.column in sources}
        return t.df["_row"].isin(rows).astype(bool)

    def could_be(self, table: str, keys: list[str], target: pd.DataFrame) -> pd.Series:
        """Rows of `target` that a row of `table` with an unreadable key could
        belong to: the row's readable keys match, its unreadable ones match
        anything. A stake whose coup number cannot be read may be any coup of
        its séance; a rule that totals a coup's rows cannot total those."""
        t = self.df(table)
        blind = self.unreadable_rows(table, *keys).to_numpy()
        out = pd.Series(False, index=target.index)
        if not blind.any():
            return out
        rows = t.loc[blind, keys].drop_duplicates()
        for pattern in rows.isna().drop_duplicates().itertuples(index=False):
            # One pass per pattern of unreadable keys (at most 2^len(keys)), never per row.
            known = [k for k, missing in zip(keys, pattern) if not missing]
            sel = rows[(rows.isna().to_numpy() == list(pattern)).all(axis=1)]
            if not known:
                return pd.Series(True, index=target.index)
            match = target[known].merge(sel[known].drop_duplicates(), how="left", on=known, indicator=True)
            out |= (match["_merge"] == "both").to_numpy()
        return out

    @property
    def cover(self) -> dict:
        """The cover's casino, table and start date (None where missing)."""
        t = self.tables.get("carnet")
        df = None if t is None else t.df
        # Asked for by the fingerprints, the findings document, the report and
        # the batch facts: read once per cover frame (frames are never changed
        # once normalised), each caller given its own dict.
        memo = self.__dict__.get("_cover")
        if memo is not None and memo[0] is df:
            return dict(memo[1])
        if df is None or df.empty:
            out = {"casino": None, "table": None, "date_debut": None}
        else:
            def val(name):
                # One cell of the first row (not the whole row: a mixed row costs a copy of every column).
                v = df[name].iat[0] if name in df.columns else None
                return None if v is None or v is pd.NA or (isinstance(v, float) and v != v) or pd.isna(v) else v

            casino, table, d = val("casino"), val("table"), val("date_debut")
            out = {
                "casino": None if casino is None else str(casino),
                "table": None if table is None else int(table),
                "date_debut": None if d is None else d.date().isoformat(),
            }
        self.__dict__["_cover"] = (df, out)
        return dict(out)
