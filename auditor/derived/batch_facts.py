"""What the rules across the carnets of a table read from one carnet (spec
rules.md, "Across the carnets of a table"): its place (casino, table, séances
in order), its ticket runs, per value its first and last ticket in order of
detachment, and its registered books. Built once per carnet, in the worker, as
plain ints and strings: the batch checks never see a frame.
"""

from __future__ import annotations


import numpy as np

from auditor.arrays import column, series
from auditor.carnet import Carnet
from auditor.catalogue import Profile, load_profile
from auditor.model import BatchCarnet
from auditor.frames import cat

NA = np.iinfo(np.int64).min            # a missing cell in a plain int64 array


def _ints(carnet: Carnet, table: str, name: str) -> np.ndarray:
    """The column as plain int64 (NA where missing), shared with the rules
    that fetched it already (`auditor.arrays.column`): never written to."""
    df = carnet.tables[table].df
    if name not in df.columns:
        return np.full(len(df), NA, dtype=np.int64)
    return column(carnet, table, name)


def ticket_runs(carnet: Carnet) -> list[list[int]]:
    """The carnet's readable ticket runs as plain lists `[valeur_cents, premier,
    dernier, seance, coup, row]` (premier ≤ dernier): what a batch worker hands
    back for the checks across carnets, small and picklable."""
    if "tickets" not in carnet.tables:
        return []
    cols = [_ints(carnet, "tickets", k) for k in ("valeur_cents", "premier", "dernier", "seance", "coup", "_row")]
    ok = np.logical_and.reduce([c != NA for c in cols]) & (cols[2] >= cols[1])
    return [list(row) for row in zip(*(c[ok].tolist() for c in cols))]


def loose_tickets(carnet: Carnet, profile: Profile) -> tuple:
    """The ticket rows `ticket_runs` leaves out whose numbers still matter
    across carnets (BatchCarnet.loose_tickets): numbers detached in a row
    without a readable séance or coup (kind 0), and the stretches a hole of
    EC83-04 may not meet (kind 1), as EC83-01 leaves such holes out inside a
    carnet: a reversed run's span, the numbers of a row of unknown value (any
    value, −1), every number of a value when a row of it has unknown numbers."""
    if "tickets" not in carnet.tables:
        return ()
    v, p, d, s, c = (_ints(carnet, "tickets", k) for k in ("valeur_cents", "premier", "dernier", "seance", "coup"))
    top = int(profile.ticket_number_max)
    # An empty or absent `dernier` is `premier` already (normalise fills it): one still <NA>
    # could not be read (or its column is ambiguous), and the run's last number is unknown.
    p = np.where(d == NA, NA, p)
    known = (v != NA) & (p != NA)
    placed = known & (s != NA) & (c != NA) & (d >= p)
    out = set()
    for value, lo, hi in zip(*(x[known & ~placed & (d >= p)].tolist() for x in (v, p, d))):
        out.add((value, lo, hi, 0))
    for value, lo, hi in zip(*(x[known & (d < p)].tolist() for x in (v, d, p))):
        out.add((value, lo, hi, 1))
    for lo, hi in zip(*(x[(v == NA) & (p != NA)].tolist() for x in (p, d))):
        out.add((-1, min(lo, hi), max(lo, hi), 1))
    for value in set(v[(p == NA)].tolist()):
        out.add((value if value != NA else -1, 1, top, 1))
    return tuple(sorted(out))


def _seances_loose(carnet: Carnet) -> tuple[int, tuple]:
    """The séance rows left out of the carnet's séances: how many have no
    readable number (any séance), and the numbers of those whose date alone
    cannot be read."""
    number = _ints(carnet, "seances", "seance")
    if not len(number):
        return 0, ()
    days = series(carnet, "seances", "date").to_numpy(dtype="datetime64[D]")
    undated = sorted(set(number[(number != NA) & np.isnat(days)].tolist()))
    return int(np.count_nonzero(number == NA)), tuple(undated)


def _seances(carnet: Carnet) -> tuple:
    """The readable séances `(number, iso_date, row, cell, date_cell)` in the
    order of séances (date, then number, then row): `cell` the séance number's."""
    t = carnet.tables["seances"]
    number = _ints(carnet, "seances", "seance")
    days = series(carnet, "seances", "date").to_numpy(dtype="datetime64[D]") if "date" in t.df.columns else None
    if days is None:
        return ()
    row = _ints(carnet, "seances", "_row")
    ok = np.flatnonzero((number != NA) & ~np.isnat(days))
    order = ok[np.lexsort((row[ok], number[ok], days[ok].astype(np.int64)))]
    iso = np.datetime_as_string(days[order], unit="D").tolist()
    return tuple((n, d, r, t.cell("seance", r), t.cell("date", r))
                 for n, d, r in zip(number[order].tolist(), iso, row[order].tolist()))


def _placeable(carnet: Carnet, cover: dict) -> bool:
    """Spec "Safety first": the cover and the séances can be read, casino and table are given."""
    if carnet.unreadable or "carnet" not in carnet.tables or "seances" not in carnet.tables:
        return False
    if not str(cover.get("casino") or "").strip() or cover.get("table") is None:
        return False
    present = carnet.tables["seances"].present
    return "seance" in present and "date" in present


def _tickets_readable(carnet: Carnet) -> bool:
    """The tickets table is there with its required columns, and none of the
    cells that place a ticket is unreadable: an unreadable number could be
    any ticket, so the carnet's first or last ticket of a value is unknown."""
    if "tickets" not in carnet.tables:
        return False
    t = carnet.tables["tickets"]
    if not {"seance", "coup", "valeur_cents", "premier"} <= t.present or t.ambiguous:
        return False   # a column two source columns name is unread: any of its rows could be the last
    # Unreadable, or a required cell left empty (EC00-02): the row's value there could be any.
    return not carnet.unreadable_rows("tickets", "seance", "coup", "valeur_cents", "premier", "dernier", "phase").any()


def _ticket_ends(carnet: Carnet, profile: Profile) -> tuple:
    """Per ticket value, its first and last ticket in the carnet's order of
    detachment (séance, coup, phase avant before apres, row; within a run,
    premier first and dernier last), with where each is. Runs the series
    rules leave out (a value not in the profile, numbers outside 1 … max or
    reversed: EC82-01/02) are left out here too."""
    t = carnet.tables["tickets"]
    v, p, s, c, r = (_ints(carnet, "tickets", k) for k in ("valeur_cents", "premier", "seance", "coup", "_row"))
    d = _ints(carnet, "tickets", "dernier")
    d = np.where(d == NA, p, d)                       # an empty dernier is premier (carnet-format.md)
    phase = (series(carnet, "tickets", "phase").to_numpy(dtype=object, na_value="") if "phase" in t.df.columns
             else np.full(len(v), ""))
    ph = np.where(phase == "apres", 1, 0)
    ok = (np.isin(v, np.asarray(profile.ticket_values_cents, dtype=np.int64)) & (p != NA) & (p >= 1)
          & (d <= int(profile.ticket_number_max)) & (p <= d) & (s != NA) & (c != NA))
    at = np.flatnonzero(ok)
    if len(at) == 0:
        return ()
    # By value, then the carnet's order of detachment: each value's first and last rows are its ends.
    at = at[np.lexsort((r[at], ph[at], c[at], s[at], v[at]))]
    vals = v[at]
    first = at[cat(True, vals[1:] != vals[:-1])]
    last = at[cat(vals[1:] != vals[:-1], True)]
    last_column = "dernier" if "dernier" in t.present else "premier"
    out = []
    for i, j in zip(first.tolist(), last.tolist()):
        out.append((int(v[i]), int(p[i]), int(s[i]), int(c[i]), int(r[i]), t.cell("premier", int(r[i])),
                    int(d[j]), int(s[j]), int(c[j]), int(r[j]), t.cell(last_column, int(r[j])), last_column))
    return tuple(out)


def _books(carnet: Carnet, profile: Profile) -> tuple:
    """The registered books `(valeur_cents, premier, dernier)`, distinct and sorted (unreadable rows left out)."""
    if "carnets_tickets" not in carnet.tables:
        return ()
    v, p = _ints(carnet, "carnets_tickets", "valeur_cents"), _ints(carnet, "carnets_tickets", "premier")
    ok = (v != NA) & (p != NA) & (p >= 1)
    size = int(profile.book_size)
    books = sorted({(a, b) for a, b in zip(v[ok].tolist(), p[ok].tolist())})
    return tuple((a, b, b + size - 1) for a, b in books)


def batch_facts(carnet: Carnet, carnet_id: str, path: str, profile: Profile | None = None) -> BatchCarnet:
    """The carnet as the checks over a batch see it. A carnet that cannot be
    placed (cover or séances unreadable, casino or table missing) gives
    `placeable=False` and no other facts: the rules across carnets are then
    not checked for its batch, and nothing of it may be trusted there."""
    profile = profile or load_profile()
    cover = carnet.cover if not carnet.unreadable else {"casino": None, "table": None, "date_debut": None}
    casino, table = str(cover.get("casino") or ""), cover.get("table")
    runs = ticket_runs(carnet) if not carnet.unreadable else []
    # A carnet that cannot be placed still detached its tickets: other tables' holes may be its numbers.
    loose = loose_tickets(carnet, profile) if not carnet.unreadable else ()
    seances = _seances(carnet) if _placeable(carnet, cover) else ()
    if not seances:
        return BatchCarnet(carnet_id, path, casino, table, runs, placeable=False, tickets_readable=False,
                           date_debut=cover.get("date_debut"), loose_tickets=loose)
    readable = _tickets_readable(carnet)
    return BatchCarnet(
        carnet_id, path, casino, int(table), runs, placeable=True, tickets_readable=readable,
        date_debut=cover.get("date_debut"), seances=seances,
        ticket_ends=_ticket_ends(carnet, profile) if readable else (),
        books=_books(carnet, profile), loose_tickets=loose, **dict(zip(("seances_loose", "seances_undated"),
                                                                       _seances_loose(carnet))))
