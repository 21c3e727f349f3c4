"""The register of ticket books as the ledger sees it: registered books (or
aligned blocks of `book_size` without a register), the books a carnet draws
from, the missing stretches inside them and the numbers outside every book."""

from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd

from auditor.arrays import NA_INT, Columns, column, series
from auditor.frames import cat, pair_codes
from auditor.tickets.intervals import gaps, merge, overlaps


def register_columns(carnet) -> dict[str, np.ndarray]:
    """The register's columns the book views read, as arrays: value, first
    number and row as int64 (NA_INT where missing), the service date as
    datetime64 (NaT where unknown), the paraphe as text ("" where missing)."""
    df = carnet.df("carnets_tickets")
    cols = {k: column(carnet, "carnets_tickets", k) for k in ("valeur_cents", "premier", "_row")}
    if "mise_en_service" in df.columns:
        cols["mise_en_service"] = service_days(series(carnet, "carnets_tickets", "mise_en_service"))
    if "paraphe" in df.columns:
        cols["paraphe"] = series(carnet, "carnets_tickets", "paraphe").to_numpy(dtype=object, na_value="")
    return cols


def service_days(s: pd.Series) -> np.ndarray:
    """Dates as datetime64[us] whatever the frame held: a column without any
    readable date is all NaT, never a float (an unreadable date is simply not compared)."""
    if s.dtype == "datetime64[us]":
        return s.to_numpy()
    return pd.Series(pd.to_datetime(s, errors="coerce"), index=s.index).astype("datetime64[us]").to_numpy()


class TicketBooks:
    """Book views of `TicketLedger` (which provides `used`, `runs`, `values`,
    `stride`, `book_size`, `max`, `register` and `_fillable`)."""

    @cached_property
    def books(self) -> Columns | None:
        """Books of the register (carnets_tickets), one per value and first
        number, sorted: ks, ke keys (within 1 … max) and the register's row."""
        if self.register is None:
            return None
        b = self.register
        v, p = b["valeur_cents"], b["premier"]
        at = np.flatnonzero(np.isin(v, self.values) & (p != NA_INT))
        # One book per value and first number: the first row that registers it.
        _, first_of = np.unique(pair_codes((v[at], p[at]))[0], return_index=True)
        at = at[np.sort(first_of)]
        first = p[at]
        last = first + self.book_size - 1
        keep = (last >= 1) & (first <= self.max)
        at, first, last = at[keep], first[keep], last[keep]
        vid = np.searchsorted(self.values, v[at])
        cols = {k: b[k][at] for k in ("valeur_cents", "premier", "mise_en_service", "paraphe", "_row") if k in b}
        cols["last"] = last
        cols["ks"] = vid * self.stride + np.maximum(first, 1)
        cols["ke"] = vid * self.stride + np.minimum(last, self.max)
        return Columns(cols, len(at)).take(np.lexsort((cols["ke"], cols["ks"])))

    @cached_property
    def started_books(self) -> tuple[np.ndarray, np.ndarray]:
        """Key intervals of the books this carnet draws from (merged): the
        registered books holding a used number, else the aligned blocks of
        `book_size` (art. 82) holding one."""
        if self.books is not None:
            m = self.opened
            return merge(self.books["ks"][m], self.books["ke"][m])
        return merge(*self.aligned_blocks(*self.used))

    @cached_property
    def opened(self) -> np.ndarray:
        """Mask over the registered `books`: those holding a used number."""
        us, ue = self.used
        bs, be = self.books["ks"], self.books["ke"]
        j = np.searchsorted(ue, bs, "left")
        started = j < len(us)
        started[started] = us[j[started]] <= be[started]
        return started

    def aligned_blocks(self, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The aligned blocks of `book_size` (art. 82) holding a number of the
        key intervals s … e: first and last keys, distinct and sorted."""
        size, stride = self.book_size, self.stride
        vid, first, last = s // stride, (s % stride - 1) // size, (e % stride - 1) // size
        n = last - first + 1
        block = np.repeat(first, n) + (np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n))
        vid = np.repeat(vid, n)
        start = np.unique(vid * stride + block * size + 1)
        base = start - start % stride
        return start, base + np.minimum((start - base - 1) + size, self.max)

    @cached_property
    def used_in_books(self) -> tuple[np.ndarray, np.ndarray]:
        """The used numbers that lie in a started book (all of them without a register)."""
        us, ue = self.used
        if self.books is None:
            return us, ue
        bs, be = self.started_books
        _, _, s, e = overlaps(us, ue, bs, be)
        return merge(s, e)

    @cached_property
    def open_books(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per value, the book of its highest number used, when that book is
        still in progress (EC83-02): the last key used, the book's first and
        last keys. What the carnet hands over to the table's next carnet."""
        us, ue = self.used_in_books
        if len(ue) == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty
        vid = ue // self.stride
        last = ue[cat(vid[1:] != vid[:-1], True)]       # highest number used in a book, per value
        first, end = self.book_of(last)
        open_ = end > last
        return last[open_], first[open_], end[open_]

    @cached_property
    def missing(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The stretches of missing numbers (EC83-01): start and end keys, and the
        key where numbers resume after each. Holes between used numbers, kept
        where they fall in a book this carnet draws from (a book never opened
        here belongs to another table or carnet); one per maximal stretch."""
        us, ue = self.used_in_books
        hs, he, resume = gaps(us, ue, self.stride)
        bs, be = self.started_books
        i, _, s, e = overlaps(hs, he, bs, be)
        keep = ~self._fillable(s, e)
        return s[keep], e[keep], resume[i][keep]

    @cached_property
    def outside_books(self) -> tuple[np.ndarray, np.ndarray]:
        """Key intervals of 1 … max, per value, that no registered book covers
        (empty without a register: every number is then in an aligned book)."""
        if self.books is None:
            return np.array([], dtype=np.int64), np.array([], dtype=np.int64)
        bs, be = merge(self.books["ks"], self.books["ke"])
        base = np.arange(len(self.values), dtype=np.int64) * self.stride
        # Per value: [1, first book − 1], [book end + 1, next book − 1] …, [last book end + 1, max];
        # sorted separately, starts and ends pair up value by value.
        starts = np.sort(cat(base + 1, be + 1))
        ends = np.sort(cat(bs - 1, base + self.max))
        keep = starts <= ends
        return starts[keep], ends[keep]

    @cached_property
    def outside(self) -> tuple[np.ndarray, np.ndarray]:
        """The used numbers outside every registered book (EC561-01), merged."""
        us, ue = self.used
        os_, oe = self.outside_books
        _, _, s, e = overlaps(us, ue, os_, oe)
        return s, e

    @cached_property
    def book_pairs(self) -> Columns:
        """Every (run, book) where the run draws tickets from a registered book:
        run, book (row of `books`), count of the run's tickets in it, pos of the run."""
        r, b = self.runs, self.books
        i, j, s, e = overlaps(r["ks"], r["ke"], b["ks"], b["ke"])
        return Columns({"run": i, "book": j, "count": e - s + 1, "pos": r["pos"][i]})

    def book_of(self, keys) -> tuple[np.ndarray, np.ndarray]:
        """First and last key of the book holding each key (the highest-starting
        registered book, or the aligned block); -1 where no book holds it."""
        keys = np.asarray(keys, dtype=np.int64)
        if self.books is None:
            base = keys - keys % self.stride
            block = (keys % self.stride - 1) // self.book_size
            return base + block * self.book_size + 1, base + np.minimum((block + 1) * self.book_size, self.max)
        bs, be = self.books["ks"], self.books["ke"]
        if len(bs) == 0:
            return np.full(len(keys), -1), np.full(len(keys), -1)
        j = np.searchsorted(bs, keys, "right") - 1
        ok = (j >= 0) & (be[np.maximum(j, 0)] >= keys)
        return np.where(ok, bs[np.maximum(j, 0)], -1), np.where(ok, be[np.maximum(j, 0)], -1)
