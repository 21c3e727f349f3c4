"""The ticket ledger: the tickets of one carnet as runs of numbers, with the
views every ticket rule and the report's ticket section share, built once per
carnet and profile. The book views are in `auditor/tickets/books.py`.

Runs are never expanded to one row per ticket: a value's numbers are handled
as intervals encoded in one int64 key, `value code × stride + number`, so that
one sorted array holds every value and a cumulative maximum or a binary search
never crosses from one value to the next.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd

from auditor.arrays import NA_INT, Columns, blind, column, series
from auditor.carnet import Carnet
from auditor.catalogue import Profile
from auditor.derived.batch_facts import ticket_runs
from auditor.derived.cache import per_carnet
from auditor.tickets.books import TicketBooks, register_columns
from auditor.tickets.intervals import merge, range_min, running_reach
from auditor.frames import cat

PHASES = ("avant", "apres")            # phase codes of `TicketLedger.rows`: 0 avant, 1 apres


def ints(s: pd.Series) -> np.ndarray:
    """A nullable integer column as plain int64 (NA_INT where missing): grouping
    on plain integers is many times faster than on nullable or text columns."""
    return s.to_numpy(dtype=np.int64, na_value=NA_INT)


def texts(s: pd.Series) -> np.ndarray:
    """A text column as a numpy object array, "" where missing (fast to compare)."""
    return s.to_numpy(dtype=object, na_value="")


def objects(values) -> np.ndarray:
    """Integers as Python values, None where missing (never floats with NaN)."""
    if isinstance(values, pd.Series):
        return values.to_numpy(dtype=object, na_value=None)
    values = np.asarray(values)
    out = values.astype(object)
    out[values == NA_INT] = None
    return out


# -- the ledger ------------------------------------------------------------------

class TicketLedger(TicketBooks):
    """The tickets of one carnet as runs of numbers, with the views the rules share.

    `runs` keeps the rows whose value is one of the profile's and whose
    numbers lie in 1 … ticket_number_max with premier ≤ dernier (the others
    are reported by EC82-01/02 and left out of the series rules).
    """

    def __init__(self, carnet: Carnet, profile: Profile):
        # Frames only, never the carnet: the cache below must not keep it alive.
        self.table = {k: column(carnet, "tickets", k)
                      for k in ("seance", "coup", "valeur_cents", "premier", "dernier", "_row")}
        self.table["phase"] = texts(series(carnet, "tickets", "phase"))
        # Rows whose value or numbers could not be read: they may fill a hole of the series.
        self.blind = blind(carnet, "tickets", "valeur_cents", "premier", "dernier")
        self.register = register_columns(carnet) if "carnets_tickets" in carnet.tables else None
        self.values = np.array(sorted(set(profile.ticket_values_cents)), dtype=np.int64)
        self.book_size = int(profile.book_size)
        self.max = int(profile.ticket_number_max)
        self.stride = self.max + 2       # keys of two values are never adjacent

    # -- keys ------------------------------------------------------------------
    def number(self, key) -> np.ndarray:
        """The ticket number of each key."""
        return np.asarray(key) % self.stride

    def valeur(self, key) -> np.ndarray:
        """The ticket value (cents) of each key."""
        return self.values[np.asarray(key) // self.stride]

    # -- rows ------------------------------------------------------------------
    @cached_property
    def rows(self) -> Columns:
        """Every tickets row (same positions as the table) as plain int64 columns:
        seance, coup, valeur_cents, premier, dernier (NA_INT where unreadable);
        phase 0 avant, 1 apres, -1 unreadable; count and face (0 unless
        `readable`: value and numbers read, premier ≤ dernier); pos, the rank
        in carnet order (séance, coup, avant before apres, row)."""
        t = self.table
        seance, coup = t["seance"], t["coup"]
        valeur, first, last = t["valeur_cents"], t["premier"], t["dernier"]
        phase = t["phase"]
        phase = np.where(phase == "avant", 0, np.where(phase == "apres", 1, -1)).astype(np.int64)
        known = (first != NA_INT) & (last != NA_INT)
        count = np.zeros(len(seance), dtype=np.int64)
        count[known] = last[known] - first[known] + 1
        readable = (valeur != NA_INT) & (count >= 1)
        count[~readable] = 0
        face = np.where(readable, valeur, 0) * count
        row = t["_row"]
        big = np.iinfo(np.int64).max      # missing séance/coup/phase sort last
        sort = np.lexsort((row, np.where(phase < 0, 2, phase), np.where(coup == NA_INT, big, coup),
                           np.where(seance == NA_INT, big, seance)))
        pos = np.empty(len(seance), dtype=np.int64)
        pos[sort] = np.arange(len(seance))
        return Columns({"seance": seance, "coup": coup, "phase": phase, "valeur_cents": valeur,
                        "premier": first, "dernier": last, "count": count, "face": face,
                        "readable": readable, "_row": row, "pos": pos})

    @cached_property
    def by_phase(self) -> Columns:
        """One row per (séance, coup, phase) of the rows with a séance and a coup,
        in carnet order: face, count, `unreadable` (a row's value, numbers or
        phase could not be read), `off_profile` (a value not in the profile),
        `_row` and `pos` of its first row, `coup_id` numbering the coups."""
        r = self.rows
        o = np.empty(len(r), dtype=np.int64)
        o[r["pos"]] = np.arange(len(r))     # carnet order: groups are contiguous
        col = {k: r[k][o] for k in ("seance", "coup", "phase", "valeur_cents", "count", "face",
                                    "readable", "_row", "pos")}
        keep = (col["seance"] != NA_INT) & (col["coup"] != NA_INT)
        col = {k: v[keep] for k, v in col.items()}
        if not keep.any():
            return Columns({k: np.array([], dtype=np.int64) for k in (
                "seance", "coup", "phase", "face", "count", "unreadable", "off_profile", "_row", "pos", "coup_id")})
        s, c, ph = col["seance"], col["coup"], col["phase"]
        new_coup = cat(True, (s[1:] != s[:-1]) | (c[1:] != c[:-1]))
        first = np.flatnonzero(new_coup | cat(True, ph[1:] != ph[:-1]))
        return Columns({
            "seance": s[first], "coup": c[first], "phase": ph[first],
            "face": np.add.reduceat(col["face"], first), "count": np.add.reduceat(col["count"], first),
            "unreadable": np.maximum.reduceat(~col["readable"] | (ph < 0), first),
            "off_profile": np.maximum.reduceat(~np.isin(col["valeur_cents"], self.values), first),
            "_row": np.minimum.reduceat(col["_row"], first), "pos": col["pos"][first],
            "coup_id": np.cumsum(new_coup)[first] - 1})

    @cached_property
    def runs(self) -> Columns:
        """The rows kept for the series rules, with their keys: ks, ke (first and last number), in table order."""
        r = self.rows
        p, d, v = r["premier"], r["dernier"], r["valeur_cents"]
        ok = np.isin(v, self.values) & (p >= 1) & (d <= self.max) & (p <= d) & (p != NA_INT) & (d != NA_INT)
        cols = {k: r[k][ok] for k in ("seance", "coup", "phase", "valeur_cents", "premier", "dernier", "_row", "pos")}
        vid = np.searchsorted(self.values, cols["valeur_cents"])
        cols["ks"] = vid * self.stride + cols["premier"]
        cols["ke"] = vid * self.stride + cols["dernier"]
        return Columns(cols)

    def located(self, idx, **columns) -> Columns:
        """Where runs `idx` are (séance, coup, row), beside the given columns."""
        r = self.runs
        idx = np.asarray(idx, dtype=np.int64)
        return Columns({"seance": objects(r["seance"][idx]), "coup": objects(r["coup"][idx]),
                        "_row": r["_row"][idx], **columns}, len(idx))

    # -- number order ----------------------------------------------------------
    @cached_property
    def by_number(self) -> dict[str, np.ndarray]:
        """Runs sorted by key (ties in carnet order), with the running maximum
        of their ends (`reach`) and the run that reaches it (`reacher`)."""
        r = self.runs
        ks, ke, pos = r["ks"], r["ke"], r["pos"]
        idx = np.lexsort((pos, ks))
        ks, ke = ks[idx], ke[idx]
        if len(ks) == 0:
            return {"idx": idx, "ks": ks, "ke": ke, "reach": ke, "reacher": idx}
        reach, reacher = running_reach(ke)
        return {"idx": idx, "ks": ks, "ke": ke, "reach": reach, "reacher": idx[reacher]}

    def covering(self, keys) -> np.ndarray:
        """For used numbers (keys), a run that holds each."""
        b = self.by_number
        j = np.searchsorted(b["ks"], np.asarray(keys, dtype=np.int64), "right") - 1
        return b["reacher"][j]

    @cached_property
    def used(self) -> tuple[np.ndarray, np.ndarray]:
        """The numbers used, as merged intervals of keys."""
        b = self.by_number
        return merge(b["ks"], b["ke"])

    @cached_property
    def repeats(self) -> Columns:
        """Stretches of numbers detached again: s, e (keys), `at` the run that
        repeats them, `other` the run that detached them first in carnet order.
        A number detached k times gives k − 1 stretches, each at a later run."""
        empty = Columns({c: np.array([], dtype=np.int64) for c in ("s", "e", "at", "other")})
        b = self.by_number
        if len(b["ks"]) < 2:
            return empty
        # Only clusters of runs that overlap can repeat a number: in a sound carnet there are none.
        cluster = np.cumsum(cat(True, b["ks"][1:] > b["reach"][:-1]))
        sel = np.bincount(cluster)[cluster] > 1
        if not sel.any():
            return empty
        run, ks, ke = b["idx"][sel], b["ks"][sel], b["ke"][sel]
        pos = self.runs["pos"][run]
        # Elementary segments: between consecutive starts and ends, every number has the same runs.
        bounds = np.unique(cat(ks, ke + 1))
        lo, hi = np.searchsorted(bounds, ks), np.searchsorted(bounds, ke + 1)
        first_pos = range_min(lo, hi, pos, len(bounds) - 1)
        by_pos = np.argsort(pos)
        owner = np.full(len(first_pos), -1)
        covered = first_pos != np.iinfo(np.int64).max
        owner[covered] = by_pos[np.searchsorted(pos[by_pos], first_pos[covered])]
        # Runs that own fewer numbers than they hold repeat some: list their segments.
        length = np.diff(bounds)
        owned = np.bincount(owner[covered], weights=length[covered], minlength=len(run))
        rep = np.flatnonzero(owned < ke - ks + 1)
        n = hi[rep] - lo[rep]
        local = np.repeat(rep, n)
        seg = np.repeat(lo[rep], n) + (np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n))
        keep = owner[seg] != local
        local, seg = local[keep], seg[keep]
        # One stretch per run of consecutive segments with the same first detachment.
        new = cat(True, (local[1:] != local[:-1]) | (owner[seg][1:] != owner[seg][:-1]) | (seg[1:] != seg[:-1] + 1))
        first = np.flatnonzero(new)
        last = cat(first[1:] - 1, len(seg) - 1)
        return Columns({"s": bounds[seg[first]], "e": bounds[seg[last] + 1] - 1,
                        "at": run[local[first]], "other": run[owner[seg[first]]]})

    @cached_property
    def first_new(self) -> np.ndarray:
        """Per run, the key of its lowest number not detached before it in
        carnet order (past its end when the whole run repeats earlier tickets)."""
        r = self.runs
        g = r["ks"].copy()
        d = self.repeats
        if len(d):
            # A run's lowest new number follows the repeated stretches that start at its first number.
            o = np.lexsort((d["s"], d["at"]))
            at, rs, re = d["at"][o], d["s"][o], d["e"][o]
            key_s, key_e = at * self.stride + rs % self.stride, at * self.stride + re % self.stride
            ms, me = merge(key_s, key_e)
            owner = ms // self.stride
            first = cat(True, owner[1:] != owner[:-1])
            owner, ms, me = owner[first], ms[first] % self.stride, me[first] % self.stride
            starts_run = ms == r["premier"][owner]
            g[owner[starts_run]] += me[starts_run] - ms[starts_run] + 1
        return g

    def _fillable(self, s: np.ndarray, e: np.ndarray) -> np.ndarray:
        """Holes (key intervals) that a row with an unreadable value or number
        could fill: any hole of its value when a number is unreadable, any
        hole meeting its numbers in every value when its value is unreadable."""
        out = np.zeros(len(s), dtype=bool)
        if len(s) == 0:
            return out
        out |= self._behind_reversed(s, e)
        if not self.blind.any():
            return out
        r = self.rows
        v, p, d = r["valeur_cents"][self.blind], r["premier"][self.blind], r["dernier"][self.blind]
        numbers_known = (p != NA_INT) & (d != NA_INT)
        if ((v == NA_INT) & ~numbers_known).any():
            return ~out
        hole_value = self.valeur(s)
        out |= np.isin(hole_value, v[(v != NA_INT) & ~numbers_known])
        lo, hi = p[(v == NA_INT) & numbers_known], d[(v == NA_INT) & numbers_known]
        if len(lo) * len(s) > 10_000_000:
            return ~out       # too many to pair: none of the holes can be told for sure
        if len(lo):
            n_s, n_e = self.number(s), self.number(e)
            out |= ((n_s[:, None] <= hi[None, :]) & (n_e[:, None] >= lo[None, :])).any(axis=1)
        return out


    def _behind_reversed(self, s: np.ndarray, e: np.ndarray) -> np.ndarray:
        """Holes that meet the numbers between the two ends of a reversed run
        of their value (`dernier < premier`): which tickets it stands for is
        unknown, so they are not counted missing (rules.md v1.2)."""
        r = self.rows
        p, d, v = r["premier"], r["dernier"], r["valeur_cents"]
        rev = (p != NA_INT) & (d != NA_INT) & (d < p) & np.isin(v, self.values)
        if not rev.any():
            return np.zeros(len(s), dtype=bool)
        lo, hi, value = d[rev], p[rev], v[rev]
        if len(lo) * len(s) > 10_000_000:
            return np.ones(len(s), dtype=bool)   # too many to pair: none of the holes can be told for sure
        n_s, n_e, hole_value = self.number(s), self.number(e), self.valeur(s)
        return ((hole_value[:, None] == value[None, :]) & (n_s[:, None] <= hi[None, :])
                & (n_e[:, None] >= lo[None, :])).any(axis=1)


@per_carnet
def ledger(carnet: Carnet, profile: Profile) -> TicketLedger:
    """The carnet's ledger, built once for the ticket rules and the report."""
    return TicketLedger(carnet, profile)


def open_books(carnet: Carnet, profile: Profile) -> tuple[tuple[int, int, int, int], ...]:
    """The carnet's books still in progress at its end (EC83-02), as plain
    ints `(valeur_cents, book_first, book_last, last_used)` in value order:
    the batch facts carry them so a table's archive can tell a book the next
    carnet continues from a book the table really left open."""
    if "tickets" not in carnet.tables:
        return ()
    led = ledger(carnet, profile)
    last, first, end = led.open_books
    return tuple(zip(led.valeur(last).tolist(), led.number(first).tolist(), led.number(end).tolist(),
                     led.number(last).tolist()))


def carnet_runs(carnet: Carnet) -> list[list[int]]:
    """The carnet's readable ticket runs as plain lists `[valeur_cents, premier,
    dernier, seance, coup, row]` (premier ≤ dernier): what a batch worker hands
    back for the cross-carnet check, small and picklable. One definition, in
    `auditor.derived.batch_facts`, which builds the rest of a carnet's batch facts."""
    return ticket_runs(carnet)
