"""CSV-folder carnets: one `<table>.csv` per table, dialect detected per file.

Encoding: UTF-8 (BOM or not), else Windows-1252; anything else is refused
rather than guessed. Delimiter: `;` or `,`, whichever the header line uses.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd

from auditor.read.raw import RawCarnet, RawTable, ReadProblem, canonical_name, frame_from_rows, sha256_of

BOM = b"\xef\xbb\xbf"


class DecodeError(ValueError):
    pass


def decode(data: bytes) -> tuple[str, str]:
    """Text and the encoding found: utf-8-sig, utf-8 or cp1252."""
    if data.startswith(BOM):
        try:
            return data[len(BOM):].decode("utf-8"), "utf-8-sig"
        except UnicodeDecodeError as exc:
            raise DecodeError(f"UTF-8 BOM but invalid UTF-8 at byte {exc.start + len(BOM)}") from None
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252"), "cp1252"
    except UnicodeDecodeError as exc:
        raise DecodeError(f"neither UTF-8 nor Windows-1252 (byte {exc.start})") from None


def sniff_delimiter(text: str) -> str:
    header = text.split("\n", 1)[0]
    return ";" if header.count(";") > header.count(",") else ","


def read_csv_folder(folder: Path) -> RawCarnet:
    files: dict[str, Path] = {}
    for p in sorted(folder.iterdir(), key=lambda p: p.name):
        if p.is_file() and p.suffix.lower() == ".csv":
            files.setdefault(canonical_name(p.stem), p)
    parts, texts = [], {}
    carnet = RawCarnet(path=str(folder), format="csv", sha256="")
    for table, p in sorted(files.items()):
        try:
            data = p.read_bytes()
        except OSError as exc:
            carnet.problems.append(ReadProblem("EC00-01", "unreadable_table", table=table,
                                               params={"table": table, "reason": exc.strerror or str(exc)}))
            continue
        parts.append((p.name, data))
        texts[table] = data
    carnet.sha256 = sha256_of(parts)
    for table, data in texts.items():
        try:
            text, _ = decode(data)
        except DecodeError as exc:
            carnet.problems.append(ReadProblem("EC00-01", "unreadable_table", table=table,
                                               params={"table": table, "reason": str(exc)}))
            continue
        raw, problems = parse_csv_text(table, text)
        carnet.tables[table] = raw
        carnet.problems.extend(problems)
    return carnet


def parse_csv_text(table: str, text: str) -> tuple[RawTable, list[ReadProblem]]:
    delim = sniff_delimiter(text)
    try:
        df = pd.read_csv(io.StringIO(text), sep=delim, header=None, dtype=str, keep_default_na=False,
                         na_filter=False, skip_blank_lines=False, engine="c", quoting=csv.QUOTE_MINIMAL)
    except pd.errors.EmptyDataError:
        df0, _ = frame_from_rows([], [], 2)
        return RawTable(table, df0, rows_read=0), []
    except (pd.errors.ParserError, ValueError):
        return _parse_with_csv_module(table, text, delim)
    if df.empty:
        df0, _ = frame_from_rows([], [], 2)
        return RawTable(table, df0, rows_read=0), []
    # Vectorised path: header is the first record, source row = record index + 1.
    header = df.iloc[0].tolist()
    body = df.iloc[1:]
    keep: dict[str, int] = {}
    for i, name in enumerate(header):
        canon = canonical_name(name)
        if canon and canon not in keep:
            keep[canon] = i
    out = pd.DataFrame({name: body.iloc[:, i].fillna("").to_numpy(dtype=object) for name, i in keep.items()})
    out["_row"] = (body.index.to_numpy() + 1).astype("int64")
    if len(out):
        values = body.fillna("").astype(str)
        nonempty = values.apply(lambda col: col.str.strip() != "").any(axis=1).to_numpy()
        out = out[nonempty].reset_index(drop=True)
    return RawTable(table, out, rows_read=len(out)), []


def _parse_with_csv_module(table: str, text: str, delim: str) -> tuple[RawTable, list[ReadProblem]]:
    """Slow path for files pandas refuses (rows longer than the header)."""
    problems: list[ReadProblem] = []
    try:
        records = list(csv.reader(io.StringIO(text), delimiter=delim))
    except csv.Error as exc:
        df0, _ = frame_from_rows([], [], 2)
        return RawTable(table, df0), [ReadProblem("EC00-01", "unreadable_table", table=table,
                                                  params={"table": table, "reason": str(exc)})]
    if not records:
        df0, _ = frame_from_rows([], [], 2)
        return RawTable(table, df0), []
    header, rows = records[0], records[1:]
    width = len(header)
    good, dropped = [], 0
    for i, row in enumerate(rows):
        if len(row) > width and any(v.strip() for v in row[width:]):
            problems.append(ReadProblem("EC00-02", "row_shape", table=table, row=i + 2,
                                        params={"fields": len(row), "expected_fields": width}))
            dropped += 1
            good.append([])  # keeps row numbering; an empty row is skipped below
        else:
            good.append(row)
    df, _ = frame_from_rows(header, good, first_row=2)
    return RawTable(table, df, rows_read=len(df) + dropped, rows_dropped=dropped), problems
