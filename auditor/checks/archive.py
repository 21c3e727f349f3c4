"""Checks across the carnets of a table (art. 64, 56-1, 83; rules.md v1.2
"Across the carnets of a table"): carnets that overlap, séances and tickets
missing between two carnets, ticket numbers going backwards.

They read the facts each carnet hands back (`BatchCarnet`, built by
`auditor.derived.batch_facts`) and compare a casino's carnets on int64 arrays
(one lexsort, consecutive rows, binary searches), never pairwise frames.
"""

from __future__ import annotations

import heapq
import re
import unicodedata
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Iterator, Sequence

import numpy as np

from auditor.catalogue import Profile
from auditor.i18n import label
from auditor.model import BatchCarnet, Day, Violation
from auditor.registry import batch_check


def archive_codes(tickets_only: bool = False) -> tuple[str, ...]:
    """The rules across the carnets of a table: this module's batch checks
    (those comparing tickets, with `tickets_only`), in the catalogue's order."""
    from auditor.catalogue import load_catalogue
    from auditor.registry import BATCH_REGISTRY

    # This module's checks registered as it was imported.
    mine = {c for c, spec in BATCH_REGISTRY.items() if spec.module == __name__
            and (not tickets_only or "tickets" in spec.needs)}
    return tuple(c for c in load_catalogue() if c in mine)


_SPACES = re.compile(r"\s+")


# A batch names a few casinos many times over: each is folded once (the
# checks over a batch of 10,000 carnets ask for it 50,000 times).
@lru_cache(maxsize=4096)
def fold_casino(name: str | None) -> str:
    """A casino's name as the spec compares them: case, accents and runs of spaces folded."""
    s = unicodedata.normalize("NFKD", str(name or "").replace("\u00a0", " "))
    s = "".join(ch for ch in s if not unicodedata.combining(ch))
    return _SPACES.sub(" ", s.casefold()).strip()


_LAST_DAY = "9999-12-31"           # a missing date_debut orders after any date


def _days(iso: list[str]) -> np.ndarray:
    return np.asarray(iso, dtype="datetime64[D]").astype(np.int64)


@dataclass
class Archive:
    """A batch's carnets placed in their tables: `order` (batch indexes, by
    casino, table, first séance date and number, date_debut, path), `start`
    (True where a table begins), `blocked` (carnets that cannot be placed)."""

    batch: Sequence[BatchCarnet]
    order: np.ndarray
    start: np.ndarray
    blocked: list[int]

    @classmethod
    def of(cls, batch: Sequence[BatchCarnet]) -> "Archive":
        """The batch's carnets placed in their tables, in order (spec: first séance's date and number, then
        date_debut, then path)."""
        # A carnet without séances cannot be ordered: it blocks like an unreadable cover.
        blocked = [i for i, c in enumerate(batch) if not (c.placeable and c.seances and c.table is not None)]
        placed = [i for i, c in enumerate(batch) if c.placeable and c.seances and c.table is not None]
        keys = {i: (fold_casino(batch[i].casino), int(batch[i].table), batch[i].seances[0][1],
                    int(batch[i].seances[0][0]), batch[i].date_debut or _LAST_DAY, batch[i].path)
                for i in placed}
        order = np.asarray(sorted(placed, key=keys.__getitem__), dtype=np.int64)
        tables = [keys[i][:2] for i in order.tolist()]
        start = np.asarray([k == 0 or tables[k] != tables[k - 1] for k in range(len(tables))], dtype=bool)
        return cls(batch, order, start, blocked)

    @cached_property
    def group(self) -> np.ndarray:
        """The table of each position of `order`, numbered from 0."""
        return np.cumsum(self.start) - 1

    @cached_property
    def first_day(self) -> np.ndarray:
        """The day (days since 1970) of each position's first séance."""
        return _days([self.batch[i].seances[0][1] for i in self.order.tolist()])

    @cached_property
    def last_day(self) -> np.ndarray:
        """The day (days since 1970) of each position's last séance."""
        return _days([self.batch[i].seances[-1][1] for i in self.order.tolist()])

    @cached_property
    def sizes(self) -> np.ndarray:
        """The number of carnets of each position's table."""
        counts = np.bincount(self.group) if len(self.group) else np.zeros(0, dtype=np.int64)
        return counts[self.group]

    def carnet(self, pos: int) -> BatchCarnet:
        """The carnet at position `pos` of the order."""
        return self.batch[int(self.order[pos])]

    def consecutive(self) -> np.ndarray:
        """Positions k whose carnet follows position k − 1 in the same table."""
        return np.flatnonzero(~self.start)

    @cached_property
    def overlapping(self) -> list[tuple[int, int, str]]:
        """Pairs of positions (earlier, later) of one table that overlap, with
        how: "dates" (the later has a séance dated before the earlier's last
        séance date) or "same" (both hold a séance with one number and date)."""
        out = []
        heap: list[tuple[int, int]] = []          # (last day, position) of the table's earlier carnets
        first, last = self.first_day.tolist(), self.last_day.tolist()
        for k, new_table in enumerate(self.start.tolist()):
            if new_table:
                heap = []
            # Carnets come by first day: one ending before this one starts ends before every later one too.
            while heap and heap[0][0] < first[k]:
                heapq.heappop(heap)
            for end, e in sorted(heap, key=lambda x: x[1]):
                if end > first[k]:
                    out.append((e, k, "dates"))
                elif self.shared_seance(e, k) is not None:
                    out.append((e, k, "same"))
            heapq.heappush(heap, (last[k], k))
        return out

    def shared_seance(self, e: int, k: int) -> tuple | None:
        """The first séance of position k (in its order) that position e holds too (number and date)."""
        theirs = {(s[0], s[1]) for s in self.carnet(e).seances}
        return next((s for s in self.carnet(k).seances if (s[0], s[1]) in theirs), None)

    @cached_property
    def ticket_pairs(self) -> dict[str, np.ndarray]:
        """For each value, consecutive carnets of a table using it: positions
        `prev` and `next`, the value `valeur`, `t` (prev's last number of the
        value) and `u` (next's first), and `ok`, whether the pair can be
        checked (a carnet whose tickets are unreadable might use any value: it
        stands between its neighbours for every value, and its pairs are not checked)."""
        rows = []
        values = sorted({int(e[0]) for i in self.order.tolist() for e in self.batch[i].ticket_ends})
        for k, i in enumerate(self.order.tolist()):
            c = self.batch[i]
            if c.tickets_readable:
                rows += [(k, e[0], e[1], e[6], 1) for e in c.ticket_ends]
            else:
                rows += [(k, v, 0, 0, 0) for v in values]
        names = ("prev", "next", "valeur", "t", "u")
        if not rows:
            out = {k: np.zeros(0, dtype=np.int64) for k in names}
            out["ok"] = np.zeros(0, dtype=bool)
            return out
        pos, val, first, last, ok = np.asarray(rows, dtype=np.int64).T
        grp = self.group[pos]
        o = np.lexsort((pos, val, grp))
        pos, val, first, last, ok, grp = pos[o], val[o], first[o], last[o], ok[o], grp[o]
        same = (grp[1:] == grp[:-1]) & (val[1:] == val[:-1])
        return {"prev": pos[:-1][same], "next": pos[1:][same], "valeur": val[:-1][same],
                "t": last[:-1][same], "u": first[1:][same], "ok": (ok[:-1] & ok[1:])[same].astype(bool)}


def _ends(c: BatchCarnet, valeur: int) -> tuple:
    return next(e for e in c.ticket_ends if e[0] == valeur)


def _period(c: BatchCarnet) -> list[str]:
    return [c.seances[0][1], c.seances[-1][1]]


def _span(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}–{last}"


def _place(c: BatchCarnet, seance, coup, sheet, row, column, cell) -> dict:
    return {"carnet": c.id, "path": c.path, "table": c.table, "seance": seance, "coup": coup,
            "sheet_table": sheet, "row": row, "column": column, "cell": cell}


def _seance_place(c: BatchCarnet, s: tuple, column: str = "seance") -> dict:
    """The séance `s` of carnet `c`, at its number's cell or (`column` "date") its date's."""
    return _place(c, int(s[0]), None, "seances", int(s[2]), column, s[4] if column == "date" else s[3])


def _identity(prev: BatchCarnet, nxt: BatchCarnet, *what) -> list:
    return [fold_casino(nxt.casino), int(nxt.table), *what, _period(prev), _period(nxt)]


@batch_check("EC64-10")
def carnets_of_a_table_do_not_overlap(batch: Sequence[BatchCarnet], profile: Profile) -> Iterator[Violation]:
    """Two carnets of one table do not overlap in time.

    Why: art. 64 — the date stamp goes on the carnet after the previous
    séance's operations: a table keeps one carnet after another, never two at once.
    Non-compliant: table 3's carnet of March 5–9 holds a séance of March 7 while the one of March 1–8 ends on March 8.
    Compliant: the next carnet starts on March 8, the day the previous one ends (it filled up during the day).
    """
    a = Archive.of(batch)
    if a.blocked:
        return
    for e, k, how in a.overlapping:
        earlier, later = a.carnet(e), a.carnet(k)
        # Dated before the earlier carnet's last: the dates; a séance both hold: its number.
        column = "date" if how == "dates" else "seance"
        if how == "dates":
            s, theirs = later.seances[0], earlier.seances[-1]
        else:
            s = a.shared_seance(e, k)
            theirs = next(x for x in earlier.seances if (x[0], x[1]) == (s[0], s[1]))
        yield Violation(
            table="seances", row=int(s[2]), column="date", seance=int(s[0]),
            expected=Day(f"≥ {theirs[1]}") if how == "dates" else None, found=Day(s[1]),
            kind="default" if how == "dates" else "same_seance",
            params={"other": earlier.path, "other_last": Day(earlier.seances[-1][1]), "date": Day(s[1]),
                    "places": [_seance_place(later, s, column), _seance_place(earlier, theirs, column)],
                    "identity": _identity(earlier, later, int(s[0]), s[1])})


@batch_check("EC64-11")
def no_seance_missing_between_carnets(batch: Sequence[BatchCarnet], profile: Profile) -> Iterator[Violation]:
    """No séance is missing between two consecutive carnets of one table.

    Why: art. 64 — séances follow one another in the carnets of a table; a
    skipped number is a séance whose carnet is not there.
    Non-compliant: the previous carnet ends with séance 34, the next starts with séance 36.
    Compliant: the next carnet starts with séance 35, or starts again at 1.
    """
    a = Archive.of(batch)
    if a.blocked:
        return
    overlap = {(e, k) for e, k, _ in a.overlapping}
    for k in a.consecutive().tolist():
        if (k - 1, k) in overlap:
            continue
        prev, nxt = a.carnet(k - 1), a.carnet(k)
        last, first = int(prev.seances[-1][0]), nxt.seances[0]
        if int(first[0]) <= last + 1:
            continue
        # A séance row left out may be a "missing" one: any, when its number
        # cannot be read; the one it numbers, when only its date cannot.
        undated = (*prev.seances_undated, *nxt.seances_undated)
        if prev.seances_loose or nxt.seances_loose or any(last < n < int(first[0]) for n in undated):
            continue
        missing = _span(last + 1, int(first[0]) - 1)
        yield Violation(
            table="seances", row=int(first[2]), column="seance", seance=int(first[0]),
            expected=missing, found=str(first[0]),
            params={"other": prev.path, "other_last": last, "count": int(first[0]) - last - 1,
                    "places": [_seance_place(nxt, first), _seance_place(prev, prev.seances[-1])],
                    "identity": _identity(prev, nxt, last + 1, int(first[0]) - 1)})


def _ticket_place(c: BatchCarnet, e: tuple, which: str) -> dict:
    if which == "first":
        return _place(c, e[2], e[3], "tickets", e[4], "premier", e[5])
    return _place(c, e[7], e[8], "tickets", e[9], e[11], e[10])


@batch_check("EC561-04", needs=("tickets",))
def ticket_numbers_go_on_between_carnets(batch: Sequence[BatchCarnet], profile: Profile) -> Iterator[Violation]:
    """A value's tickets go on upwards from one carnet of a table to the next.

    Why: art. 56-1 — a table's books are used in number order; a next carnet
    starting below where the previous one stopped reuses or mixes books.
    Non-compliant: the previous carnet's last 1 € ticket is n° 130407, the next carnet's first is n° 130300.
    Compliant: the next carnet's first 1 € ticket is n° 130408.
    """
    a = Archive.of(batch)
    if a.blocked:
        return
    tp = a.ticket_pairs
    back = np.flatnonzero(tp["ok"] & (tp["u"] < tp["t"]))     # equal is a duplicate: EC82-03
    for g in back.tolist():
        P, N, v = a.carnet(int(tp["prev"][g])), a.carnet(int(tp["next"][g])), int(tp["valeur"][g])
        t, u = _ends(P, v), _ends(N, v)
        yield Violation(
            table="tickets", row=u[4], column="premier", seance=u[2], coup=u[3],
            expected=str(t[6]), found=str(u[1]),
            params={"valeur_cents": v, "other": P.path,
                    "places": [_ticket_place(N, u, "first"), _ticket_place(P, t, "last")],
                    "identity": _identity(P, N, v, t[6], u[1])})


def _book(books: list[tuple[int, int]], number: int, size: int) -> tuple[int, int]:
    """The book holding `number`: a registered one when one holds it, else its aligned block of `size` (art. 82)."""
    for first, last in books:
        if first <= number <= last:
            return first, last
    first = (number - 1) // size * size + 1
    return first, first + size - 1


class Detached:
    """Every number detached in a casino's carnets of the batch, per value, as
    merged intervals (built only when some numbers may be missing), and the
    stretches a hole may not meet (BatchCarnet.loose_tickets, kind 1)."""

    def __init__(self, batch: Sequence[BatchCarnet]):
        self.batch = batch
        self.merged: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = {}
        self.stoppers: dict[tuple[str, int], list[tuple[int, int]]] = {}

    def _load(self, casino: str) -> None:
        mine = [c for c in self.batch if fold_casino(c.casino) == casino]
        runs = [np.asarray(c.ticket_runs, dtype=np.int64).reshape(-1, 6)[:, :3] for c in mine if c.ticket_runs]
        loose = [x for c in mine for x in c.loose_tickets]
        runs += [np.asarray([x[:3] for x in loose if x[3] == 0], dtype=np.int64).reshape(-1, 3)]
        for value, lo, hi, _ in (x for x in loose if x[3] == 1):
            self.stoppers.setdefault((casino, value), []).append((lo, hi))
        flat = np.concatenate(runs)
        v, s, e = flat[:, 0], flat[:, 1], flat[:, 2]
        o = np.lexsort((s, v))
        v, s, e = v[o], s[o], e[o]
        for value in np.unique(v).tolist():
            lo, hi = np.searchsorted(v, value, "left"), np.searchsorted(v, value, "right")
            ss, ee = s[lo:hi], e[lo:hi]
            cm = np.maximum.accumulate(ee)
            new = np.r_[True, ss[1:] > cm[:-1] + 1]
            first = np.flatnonzero(new)
            last = np.r_[first[1:] - 1, len(ss) - 1]
            self.merged[(casino, value)] = (ss[first], cm[last])
        self.merged.setdefault((casino, None), (np.zeros(0, np.int64), np.zeros(0, np.int64)))

    def missing(self, casino: str, value: int, first: int, last: int) -> list[tuple[int, int]]:
        """The runs of first … last that no carnet of the casino detached,
        less those meeting a stretch no hole may meet (a reversed run's span,
        a row of unknown value or numbers): such a run may be those tickets."""
        if (casino, None) not in self.merged:
            self._load(casino)
        s, e = self.merged.get((casino, value), (np.zeros(0, np.int64), np.zeros(0, np.int64)))
        lo, hi = np.searchsorted(e, first, "left"), np.searchsorted(s, last, "right")
        out, at = [], first
        for a, b in zip(s[lo:hi].tolist(), e[lo:hi].tolist()):
            if a > at:
                out.append((at, a - 1))
            at = max(at, b + 1)
        if at <= last:
            out.append((at, last))
        stoppers = self.stoppers.get((casino, value), []) + self.stoppers.get((casino, -1), [])
        return [(a, b) for a, b in out if not any(lo <= b and a <= hi for lo, hi in stoppers)]


def _union(stretches: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The stretches as one set of numbers, in order: a registered book that
    does not start on a block of 200 can hold the start of u's aligned block,
    and a number is missing once, never twice."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(x for x in stretches if x[0] <= x[1]):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


@batch_check("EC83-04", needs=("tickets",))
def no_ticket_missing_between_carnets(batch: Sequence[BatchCarnet], profile: Profile) -> Iterator[Violation]:
    """No ticket is missing between two consecutive carnets of one table.

    Why: art. 83 and 56-1 — a table's books go on from one carnet to the next;
    a ticket lost between two carnets is owed (its face value) like one lost inside a carnet.
    Non-compliant: the 0,10 € series stops at 105254 in one carnet and resumes at 105399 in the next (144 tickets).
    Compliant: the next carnet resumes at 105255, or the numbers between were detached at another table of the casino.
    """
    a = Archive.of(batch)
    if a.blocked:
        return
    tp = a.ticket_pairs
    # Only pairs that do not simply go on (u = t + 1) can miss numbers.
    gap = np.flatnonzero(tp["ok"] & (tp["u"] > tp["t"] + 1))
    size = int(profile.book_size)
    detached = Detached(batch)
    for g in gap.tolist():
        P, N, v = a.carnet(int(tp["prev"][g])), a.carnet(int(tp["next"][g])), int(tp["valeur"][g])
        t, u = _ends(P, v), _ends(N, v)
        books = sorted({(b[1], b[2]) for b in (*P.books, *N.books) if b[0] == v})
        bt, bu = _book(books, t[6], size), _book(books, u[1], size)
        if bt == bu:
            stretches = [(t[6] + 1, u[1] - 1)]
        else:
            # t's book abandoned while a later one was started, and u's book entamé elsewhere.
            stretches = _union([(t[6] + 1, bt[1]), (max(bu[0], t[6] + 1), u[1] - 1)])
        casino = fold_casino(N.casino)
        for lo, hi in stretches:
            if lo > hi:
                continue
            for first, last in detached.missing(casino, v, lo, hi):
                count = last - first + 1
                yield Violation(
                    table="tickets", row=u[4], column="premier", seance=u[2], coup=u[3],
                    expected=_span(first, last), found=str(u[1]), impact_cents=count * v,
                    params={"valeur_cents": v, "count": count, "other": P.path, "first": first, "last": last,
                            "places": [_ticket_place(N, u, "first"), _ticket_place(P, t, "last")],
                            "identity": _identity(P, N, v, first, last)})


# -- statuses ---------------------------------------------------------------------

def archive_statuses(batch: Sequence[BatchCarnet], profile: Profile,
                     lang: str = "fr") -> tuple[dict[str, dict[str, str | None]], list[dict]]:
    """What became of the four rules across carnets: per carnet id, per code,
    None when checked or the reason (in `lang`) when not; and per casino and
    table, its carnets in order and each rule's status (`summary.json` `tables`).

    A carnet that cannot be placed stops the four rules for the whole batch
    (naming it); a table's only carnet cannot be compared; a carnet whose
    tickets are unreadable leaves the ticket rules of its pairs unchecked
    (naming it, in its neighbours' statuses as in its own)."""
    CODES, TICKET_CODES = archive_codes(), archive_codes(tickets_only=True)   # noqa: N806
    a = Archive.of(batch)
    per: dict[str, dict[str, str | None]] = {c.id: {code: None for code in CODES} for c in batch}
    tables: list[dict] = []
    if a.blocked:
        reason = label("archive_unplaceable", lang).format(path=", ".join(batch[i].path for i in a.blocked))
        for c in batch:
            per[c.id] = {code: reason for code in CODES}
    # A carnet with unreadable tickets, and the carnets of its table it stands between, by position.
    blind = {k for k in range(len(a.order)) if not a.carnet(k).tickets_readable}
    tp = a.ticket_pairs
    spoiled: dict[int, list[int]] = {}
    for p, n in zip(tp["prev"][~tp["ok"]].tolist(), tp["next"][~tp["ok"]].tolist()):
        for x, y in ((p, n), (n, p)):
            if y in blind and y not in spoiled.setdefault(x, []):
                spoiled[x].append(y)
    # The carnet itself, and its direct neighbours in the table (pairs for values no carnet shows yet).
    for k in sorted(blind):
        spoiled.setdefault(k, []).append(k)
        for j in (k - 1, k + 1):
            if 0 <= j < len(a.order) and a.group[j] == a.group[k] and k not in spoiled.setdefault(j, []):
                spoiled[j].append(k)
    starts = np.flatnonzero(a.start).tolist() + [len(a.order)]
    for g, (lo, hi) in enumerate(zip(starts[:-1], starts[1:])):
        carnets = [a.carnet(k) for k in range(lo, hi)]
        rules: dict[str, dict] = {}
        if a.blocked:
            rules = {code: {"status": "not_checked", "reason": per[carnets[0].id][CODES[0]]} for code in CODES}
        elif hi - lo == 1:
            reason = label("archive_needs_other_carnets", lang)
            per[carnets[0].id] = {code: reason for code in CODES}
            rules = {code: {"status": "not_checked", "reason": reason} for code in CODES}
        else:
            rules = {code: {"status": "checked", "reason": None} for code in CODES}
            blamed = sorted({y for k in range(lo, hi) for y in spoiled.get(k, [])})
            for k in range(lo, hi):
                if k in spoiled:
                    reason = label("archive_tickets_unreadable", lang).format(
                        path=", ".join(a.carnet(y).path for y in sorted(spoiled[k])))
                    per[a.carnet(k).id].update({code: reason for code in TICKET_CODES})
            if blamed:
                reason = label("archive_tickets_unreadable", lang).format(
                    path=", ".join(a.carnet(y).path for y in blamed))
                rules.update({code: {"status": "not_checked", "reason": reason} for code in TICKET_CODES})
        tables.append({"casino": carnets[0].casino, "table": int(carnets[0].table),
                       "carnets": [c.id for c in carnets], "rules": rules})
    return per, tables
