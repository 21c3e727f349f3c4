"""Stable identities of findings, for comparing one audit with the next.

A fingerprint is built from what the carnet says, never from where it says
it: the casino, the table, the séance (number and date), the coup, the rule
code and the finding's key values (the table and carnet column it is about,
the rang). So re-saving the workbook, re-ordering its rows or adding rows
elsewhere leaves every fingerprint as it was. A finding that is not placed
in a séance (the cover, a ticket series, an unreadable file) has no coup to
tell it from its neighbours: its expected and found values are key values
too. Findings still alike after all this are numbered in the order of their
values (see docs/interpretations.md), so two findings of one carnet never
share a fingerprint.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

from auditor.model import Finding

VERSION = "fp1"
LENGTH = 20   # hex digits: 80 bits, short enough to type, far from any collision


def identity(f: Finding, cover: dict, seance_dates: dict[int, str]) -> list:
    """What identifies a finding across runs: casino, table, séance and its date, coup, rang, code, carnet column."""
    located = f.seance is not None
    ident = [VERSION, cover.get("casino"), cover.get("table"), f.seance,
             seance_dates.get(f.seance) if located else None, f.coup, f.rang, f.code, f.table, f.field]
    if not located:
        ident += [f.expected, f.found]
    return ident


def assign(findings: list[Finding], cover: dict, seance_dates: dict[int, str]) -> list[Finding]:
    """The findings, in the same order, each with its fingerprint."""
    groups: dict[str, list[int]] = {}
    for i, f in enumerate(findings):
        text = json.dumps(identity(f, cover, seance_dates), ensure_ascii=False, default=str)
        groups.setdefault(text, []).append(i)
    out = list(findings)
    for text, members in groups.items():
        # Ties: numbered in the order of the values the finding shows, never
        # of its row, so the numbering survives re-ordered rows.
        members.sort(key=lambda i: tie_order(findings[i]))
        for n, i in enumerate(members):
            digest = hashlib.sha256(f"{text}#{n}".encode("utf-8")).hexdigest()[:LENGTH]
            out[i] = replace(findings[i], fingerprint=digest)
    return out


def tie_order(f: Finding) -> tuple:
    """The order of findings with the same identity (numbered by it)."""
    return (f.expected or "", f.found or "", f.impact_cents, f.message, f.column or "")


def seance_dates(carnet) -> dict[int, str]:
    """séance number → its day (ISO), as the séances table records it (the first row when repeated)."""
    t = carnet.tables.get("seances")
    if t is None or "seance" not in t.df or "date" not in t.df:
        return {}
    # Asked for by the fingerprints and the carnet's outputs: read once per
    # séances frame (frames are never changed once normalised), each caller given its own dict.
    memo = carnet.__dict__.get("_seance_dates")
    if memo is None or memo[0] is not t.df:
        memo = carnet.__dict__["_seance_dates"] = (t.df, _seance_dates(carnet, t))
    return dict(memo[1])


def _seance_dates(carnet, t) -> dict[int, str]:
    import numpy as np
    import pandas as pd

    from auditor.arrays import NA_INT, column, series

    date = series(carnet, "seances", "date")
    if date.dtype.kind == "M":
        # Plain arrays: a séance's first dated row, its day as ISO text.
        number = column(carnet, "seances", "seance")
        days = date.to_numpy()
        ok = np.flatnonzero((number != NA_INT) & ~np.isnat(days))
        ids, first = np.unique(number[ok], return_index=True)
        first = np.sort(first)
        return dict(zip(number[ok][first].tolist(), np.datetime_as_string(days[ok][first], unit="D").tolist()))
    known = t.df[["seance", "date"]].dropna()
    out: dict[int, str] = {}
    for number, day in zip(known["seance"].tolist(), known["date"].tolist()):
        if pd.isna(number) or pd.isna(day):
            continue
        out.setdefault(int(number), day.date().isoformat() if hasattr(day, "date") else str(day))
    return out
