"""The normalised carnet: typed tables, their source places, derived amounts.

Checks receive a `Carnet` and nothing else. The amounts derived from the
stakes (`held`, `sur_chouette`, the masses) are defined here, once, and every
rule that needs them reads them from `Carnet.coup_amounts`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import functools
from functools import cached_property

import numpy as np
import pandas as pd

from auditor.frames import eq, group_sums, lookup, shared_codes
from auditor.model import Violation


@dataclass
class Table:
    name: str
    df: pd.DataFrame                     # typed fields (money as *_cents Int64) + `_row`
    present: frozenset[str]              # fields whose source column exists
    letters: dict[str, str] | None       # source column → Excel letter (workbooks)
    sources: dict[str, str]              # field → source column name
    rows_read: int = 0
    rows_left_out: int = 0               # read, but totals rows: not data

    def cell(self, field_or_column: str | None, row: int | None) -> str | None:
        if self.letters is None or field_or_column is None or row is None:
            return None
        source = self.sources.get(field_or_column, field_or_column)
        letter = self.letters.get(source)
        return f"{letter}{row}" if letter else None

    def source_column(self, field_name: str | None) -> str | None:
        if field_name is None:
            return None
        return self.sources.get(field_name, field_name)


@dataclass(frozen=True)
class Source:
    path: str
    sha256: str
    format: str


def per_carnet(build):
    """Derive something once per carnet (and per profile, when given): several
    rules and the summary use the same expected levies, the same card holders."""
    @functools.wraps(build)
    def derived(carnet: "Carnet", *args):
        memo = carnet.__dict__.setdefault("_derived", {})
        key = (build.__qualname__, *map(id, args))
        if key not in memo:
            memo[key] = (args, build(carnet, *args))   # keeps the args alive with their ids
        return memo[key][1]
    return derived


@dataclass
class Carnet:
    source: Source
    tables: dict[str, Table] = field(default_factory=dict)
    # EC00-01/EC00-02 met while reading and typing, as (code, violation).
    problems: list[tuple[str, Violation]] = field(default_factory=list)
    unreadable: bool = False
    # How the source was understood (findings.json `reading`), from the reader.
    reading: dict | None = None

    # -- presence --------------------------------------------------------
    def has(self, need: str) -> bool:
        """`need` is `table` or `table.field` (source column name accepted)."""
        table, _, column = need.partition(".")
        t = self.tables.get(table)
        if t is None:
            return False
        if not column:
            return True
        return column in t.present or any(src == column and f in t.present for f, src in t.sources.items())

    def df(self, table: str) -> pd.DataFrame:
        return self.tables[table].df

    def unreadable_cells(self, table: str, field_name: str) -> pd.Series:
        """Rows of `table` whose `field_name` cell could not be read (an EC00-02).

        A <NA> there means "unreadable", not "empty": rules that report a
        missing value skip those rows.
        """
        t = self.tables[table]
        source = t.source_column(field_name)
        rows = {v.row for code, v in self.problems
                if code == "EC00-02" and v.table == table and v.column == source}
        return t.df["_row"].isin(rows).astype(bool)

    @property
    def cover(self) -> dict:
        t = self.tables.get("carnet")
        if t is None or t.df.empty:
            return {"casino": None, "table": None, "date_debut": None}
        row = t.df.iloc[0]

        def val(name):
            v = row.get(name)
            return None if v is None or v is pd.NA or (isinstance(v, float) and v != v) or pd.isna(v) else v

        d = val("date_debut")
        return {
            "casino": None if val("casino") is None else str(val("casino")),
            "table": None if val("table") is None else int(val("table")),
            "date_debut": None if d is None else d.date().isoformat(),
        }

    # -- derived amounts (defined once) -------------------------------------
    @cached_property
    def chouette_state(self) -> pd.DataFrame:
        """Runs, adjudications, sautes and remises per chouette coup, computed
        once per carnet for the rules and the report (see auditor/chouette.py)."""
        from auditor.chouette import chouette_state  # the chouette module builds on this one

        return chouette_state(self)

    @cached_property
    def coup_amounts(self) -> pd.DataFrame:
        """One row per coup of `coups` (same index), with the stakes' sums.

        held_a / held_b: Σ (montant − restitue) of the coup's stakes per side;
        n_mises: how many stake rows; unverifiable: a stake of the coup has an
        unreadable amount or side (mass and levy rules skip the coup);
        sur_chouette = held_b − held_a (chouette: what the chouette holds
        against the pontes); mass_a / mass_b: the masses of spec § Derived.

        levy_held_a / levy_held_b / levy_sur_chouette: the same amounts as the
        levy rules (and the chouette state) use them: from the stakes, or,
        for a coup without any stake row, from the recorded totals (simple:
        total_a / total_b; chouette: held(a) = en_dehors, held(b) = total_b).
        """
        coups = self.df("coups")
        keys = ["seance", "coup"]
        out = coups[keys + ["type", "_row"]].copy()
        recorded_a = coups["total_a_cents"].where(~eq(coups["type"], "chouette"), coups["en_dehors_cents"])
        recorded_b = coups["total_b_cents"]
        if "mises" in self.tables:
            m = self.df("mises")
            m = m[(m["seance"].notna() & m["coup"].notna()).to_numpy()]
            known = (coups["seance"].notna() & coups["coup"].notna()).to_numpy()
            m_codes, c_codes = shared_codes(m, coups[known])
            montant, restitue = m["montant_cents"], m["restitue_cents"]
            bad = (montant.isna() | restitue.isna() | m["cote"].isna()).to_numpy()
            held = np.where(bad, 0, montant.to_numpy(np.int64, na_value=0) - restitue.to_numpy(np.int64, na_value=0))
            side = m["cote"].to_numpy(object, na_value="")
            codes, counts, (held_a, held_b, n_bad) = group_sums(
                m_codes, np.where(side == "a", held, 0), np.where(side == "b", held, 0), bad.astype(np.int64))
            # Coups whose keys are unreadable, or without any stake row, get no sums (<NA>).
            at, found = np.zeros(len(coups), dtype=np.int64), np.zeros(len(coups), dtype=bool)
            at[known], found[known] = lookup(codes, c_codes)
            if len(codes):
                out["held_a"] = pd.arrays.IntegerArray(np.where(found, held_a[at], 0), ~found)
                out["held_b"] = pd.arrays.IntegerArray(np.where(found, held_b[at], 0), ~found)
                out["n_mises"] = np.where(found, counts[at], 0)
                out["unverifiable"] = found & (n_bad[at] > 0)
            else:
                out["held_a"], out["held_b"], out["n_mises"], out["unverifiable"] = pd.NA, pd.NA, 0, False
        else:
            out["held_a"], out["held_b"], out["n_mises"], out["unverifiable"] = pd.NA, pd.NA, 0, False
        out["held_a"] = out["held_a"].astype("Int64")
        out["held_b"] = out["held_b"].astype("Int64")
        out["n_mises"] = out["n_mises"].fillna(0).astype("int64")
        out["unverifiable"] = out["unverifiable"].astype("boolean").fillna(False).astype(bool)
        out["sur_chouette"] = (out["held_b"] - out["held_a"]).astype("Int64")
        chouette = eq(out["type"], "chouette")
        out["mass_a"] = out["held_a"].where(~chouette, out["sur_chouette"] + out["held_a"])
        out["mass_b"] = out["held_b"]
        from_stakes = out["n_mises"] > 0
        out["levy_held_a"] = out["held_a"].where(from_stakes, recorded_a).astype("Int64")
        out["levy_held_b"] = out["held_b"].where(from_stakes, recorded_b).astype("Int64")
        out["levy_sur_chouette"] = (out["levy_held_b"] - out["levy_held_a"]).astype("Int64")
        return out
