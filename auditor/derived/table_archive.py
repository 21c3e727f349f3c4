"""What summary.json's `tables` says of each carnet of a table, for the
picture of the table's archive in index.html (issue 24, point 4): its period,
its séance range, its ticket ranges per value, and the books it leaves in
progress — each marked as continued by the table's next carnet using that
value, or really left open. Built from the carnets' batch facts alone, so
the cache's carnets give the same picture as audited ones.
"""

from __future__ import annotations

from typing import Sequence

from auditor.model import BatchCarnet


def carnet_timeline(c: BatchCarnet) -> dict:
    """One carnet of a table as the picture draws it: plain JSON values.
    `tickets`: per value, the first and last number in the carnet's order of
    detachment (what the rules across carnets compare)."""
    first, last = c.seances[0], c.seances[-1]
    return {"id": c.id, "path": c.path, "first_day": first[1], "last_day": last[1],
            "seances": {"first": int(first[0]), "last": int(last[0]), "count": len(c.seances)},
            "tickets_readable": bool(c.tickets_readable),
            "tickets": [{"valeur_cents": int(e[0]), "first": int(e[1]), "last": int(e[6])} for e in c.ticket_ends],
            "open_books": []}


def _continued_by(later: Sequence[BatchCarnet], valeur: int, book_first: int, book_last: int,
                  last_used: int) -> str | None:
    """The carnet that continues a book left in progress: the table's next
    carnet using the value, when its first ticket of that value lies in the
    same book after the last one used (a gap there is EC83-04's, a step back
    EC561-04's: neither continues the book). A carnet whose tickets cannot be
    read might use the value: nothing is said past it."""
    for c in later:
        if not c.tickets_readable:
            return None
        end = next((e for e in c.ticket_ends if int(e[0]) == valeur), None)
        if end is not None:
            return c.id if last_used < int(end[1]) <= book_last and int(end[1]) >= book_first else None
    return None


def describe_tables(batch: Sequence[BatchCarnet], tables: list[dict]) -> list[dict]:
    """`tables` (archive_statuses' list: casino, table, carnets in order,
    rules) with, per table, `timeline` (each carnet as `carnet_timeline`,
    its open books marked `continued_by` the carnet that continues them, or
    None) and `open_books` (the books in progress at the end of the table's
    last carnet: the table's real open books)."""
    by_id = {c.id: c for c in batch}
    out = []
    for t in tables:
        carnets = [by_id[i] for i in t["carnets"] if i in by_id]
        timeline = []
        for k, c in enumerate(carnets):
            row = carnet_timeline(c)
            for v, bf, bl, lu in c.open_books:
                row["open_books"].append({"valeur_cents": int(v), "book_first": int(bf), "book_last": int(bl),
                                          "last": int(lu), "remaining": int(bl) - int(lu),
                                          "continued_by": _continued_by(carnets[k + 1:], int(v), int(bf),
                                                                        int(bl), int(lu))})
            timeline.append(row)
        last = timeline[-1] if timeline else None
        open_books = [{**b, "carnet": last["id"]} for b in last["open_books"]] if last else []
        out.append({**t, "timeline": timeline, "open_books": open_books})
    return out
