"""A finding's cell, shown in its carnet: the rows around it as the reader
read them, the cell marked — for an inspector who has no spreadsheet program
at hand (the annotated workbook marks the same cell)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from auditor.limits import Limits
from auditor.batch.plan import CarnetJob
from auditor.read import read_carnet
from auditor.serve.labels import page_labels
from auditor.serve.templates import render

CONTEXT_ROWS = 3


@lru_cache(maxsize=8)
def _raw(path: Path, stamp: tuple, limits: Limits | None):
    return read_carnet(path, limits)


def _stamp(path: Path) -> tuple:
    """What tells one state of the carnet's files from another: the reading
    is kept per path *and* state, so a file written again is read again."""
    try:
        files = [path] if path.is_file() else sorted(p for p in path.iterdir() if p.is_file())
        return tuple((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in files)
    except OSError:
        return ()


def heading(rt, column: str) -> str:
    """The column's name as the carnet's header writes it (its canonical name
    when the header cell is not known: a CSV read by position)."""
    for source in rt.source_columns:
        if source.column == column and source.text:
            return source.text
    return column


def cell_view(job: CarnetJob, table: str, row: str, column: str, limits: Limits | None = None) -> dict:
    """The rows around `row` of `table` as read from the audited snapshot (the
    audit's own copy of the carnet), with the finding's cell marked."""
    raw = _raw(job.path, _stamp(job.path), limits)
    rt = raw.tables.get(table)
    view = {"table": table, "row": row, "column": column, "columns": [], "rows": [], "found": False}
    if rt is None or not row.isdigit():
        return view
    view["column"] = heading(rt, column) if column else column
    df = rt.df
    wanted = int(row)
    near = df[(df["_row"] >= wanted - CONTEXT_ROWS) & (df["_row"] <= wanted + CONTEXT_ROWS)]
    columns = [c for c in df.columns if c != "_row"]
    view["columns"] = [(heading(rt, c), c == column) for c in columns]
    for _, r in near.iterrows():
        here = int(r["_row"]) == wanted
        view["found"] = view["found"] or here
        view["rows"].append({"row": int(r["_row"]), "here": here,
                             "cells": [(str(r[c]), here and c == column) for c in columns]})
    return view


def cell_page(job: CarnetJob, table: str, row: str, column: str, cell: str, lang: str,
              limits: Limits | None = None) -> str:
    """The cell view as an HTML page (the page's own stylesheet, no script)."""
    labels = page_labels(lang)
    return render(
        "cell.html.j2", lang=lang, t={k.replace(".", "_"): v for k, v in labels.items()}, shown=job.shown, cell=cell,
        **cell_view(job, table, row, column, limits))
