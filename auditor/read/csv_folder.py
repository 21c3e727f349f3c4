"""CSV-folder carnets: one `<table>.csv` per table, dialect detected per file.

Encoding: UTF-8 (BOM or not), else Windows-1252; anything else is refused
rather than guessed. Delimiter: `;` or `,`, whichever the header line uses.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from auditor.names import shown_name
from auditor.limits import DEFAULT_LIMITS, Limits, size_text
import dataclasses

from auditor.read.columns import (ColumnMap, HEADER_SEARCH_ROWS, ambiguity_problems, find_header, is_totals_label,
                                  match_header, table_columns)
from auditor.read.raw import (file_digest, RawCarnet, RawTable, ReadProblem, SourceColumn, canonical_name,
                              bool_array, column_letter, frame_from_rows, int64_array, sha256_of_digests,
                              text_array)
from auditor.money import string_buffers

BOM = b"\xef\xbb\xbf"


class DecodeError(ValueError):
    """A CSV file in no encoding the reader knows."""

    pass


def decode(data) -> tuple[str, str]:
    """Text and the encoding found: utf-8-sig, utf-8 or cp1252. `data`: bytes
    or any buffer (an Arrow buffer, `_read_whole`)."""
    data = memoryview(data).cast("B")   # an Arrow buffer's view holds signed bytes, equal to no BOM
    if data[:len(BOM)] == BOM:
        try:
            return str(data[len(BOM):], "utf-8"), "utf-8-sig"
        except UnicodeDecodeError as exc:
            raise DecodeError(f"UTF-8 BOM but invalid UTF-8 at byte {exc.start + len(BOM)}") from None
    try:
        return str(data, "utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    try:
        return str(data, "cp1252"), "cp1252"
    except UnicodeDecodeError as exc:
        raise DecodeError(f"neither UTF-8 nor Windows-1252 (byte {exc.start})") from None


def sniff_delimiter(text: str) -> str:
    """`;` or `,`: whichever the first line holding either uses more (a title
    line above the header may hold neither)."""
    for line in _first_pieces(text, "\n", HEADER_SEARCH_ROWS):
        if ";" in line or "," in line:
            return ";" if line.count(";") > line.count(",") else ","
    return ","


def _first_pieces(text: str, sep: str, count: int):
    """`text.split(sep, count)[:count]`, without copying the rest of a long text."""
    start = 0
    for _ in range(count):
        end = text.find(sep, start)
        if end < 0:
            yield text[start:]
            return
        yield text[start:end]
        start = end + len(sep)


# A line as io.StringIO(text, newline="") yields it: up to and with its end
# (\r\n, \r or \n, kept), or the last characters.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def text_lines(text: str):
    """The lines of `text` one by one, as iterating io.StringIO(text, newline="")
    gives them, but lazily: reading the first records of a long file does not
    copy all of it."""
    return (m.group() for m in _LINE.finditer(text))


def read_csv_folder(folder: Path, limits: Limits = DEFAULT_LIMITS, tables=None,
                    columns: ColumnMap | None = None) -> RawCarnet:
    """Read the `<table>.csv` files whose table is in `tables` (all when None).

    Every `.csv` file enters the SHA-256 (hashed in blocks, whatever its size);
    a file past `limits.max_file_bytes` is refused (EC00-01) without being read.
    """
    files: dict[str, Path] = {}
    carnet = RawCarnet(path=shown_name(str(folder)), format="csv", sha256="")
    try:
        entries = sorted(folder.iterdir(), key=lambda p: p.name)
    except OSError as exc:
        carnet.unreadable = True
        carnet.problems.append(ReadProblem("EC00-01", "unreadable", params={"reason": exc.strerror or str(exc)}))
        return carnet
    found = [p for p in entries if p.is_file() and p.suffix.lower() == ".csv"]
    for p in found:
        files.setdefault(canonical_name(p.stem), p)
    # A file read whole below is hashed from those bytes, not read a second time.
    read_digests: dict[Path, bytes] = {}
    for table, p in sorted(files.items()):
        if tables is not None and table not in tables:
            continue
        try:
            size = p.stat().st_size
            if size > limits.max_file_bytes:
                carnet.problems.append(ReadProblem("EC00-01", "file_too_large", table=table, params={
                    "file": shown_name(p.name), "size": size_text(size), "limit": size_text(limits.max_file_bytes)}))
                continue
            with p.open("rb") as fh:
                data = _read_whole(fh, size, limits.max_file_bytes + 1)
        except OSError as exc:
            carnet.problems.append(ReadProblem("EC00-01", "unreadable_table", table=table,
                                               params={"table": table, "reason": exc.strerror or str(exc)}))
            continue
        if len(data) > limits.max_file_bytes:   # grew while we looked
            carnet.problems.append(ReadProblem("EC00-01", "file_too_large", table=table, params={
                "file": shown_name(p.name), "size": size_text(len(data)), "limit": size_text(limits.max_file_bytes)}))
            continue
        read_digests[p] = hashlib.sha256(data).digest()
        try:
            text, encoding = decode(data)
        except DecodeError as exc:
            carnet.problems.append(ReadProblem("EC00-01", "unreadable_table", table=table,
                                               params={"table": table, "reason": str(exc)}))
            continue
        # The UTF-8 bytes of `text`: the file's own unless it was Windows-1252.
        utf8 = data if encoding == "utf-8" else data.slice(len(BOM)) if encoding == "utf-8-sig" else None
        raw, problems = parse_csv_text(table, text, limits, columns, utf8)
        if raw is not None:
            raw.sheet = shown_name(p.name)
            carnet.tables[table] = raw
        carnet.problems.extend(problems)
    # Unreadable: the empty digest (the read above reported it).
    # Each file under the name the outputs show (and `verify` hashes again).
    digests = [(shown_name(p.name), read_digests.get(p) or file_digest(p) or hashlib.sha256().digest())
               for p in found]
    carnet.sha256 = sha256_of_digests(digests)
    carnet.files = [(name, digest.hex()) for name, digest in digests]
    return carnet


def _read_whole(fh, size: int, most: int) -> pa.Buffer:
    """The file's bytes, at most `most`, read straight into memory Arrow owns:
    Arrow's reader then parses them where they are (`_arrow_owned`), where a
    read into a bytes object had to be copied there (for a million stakes,
    26 MB more memory, written twice). `size`: the file's size when looked
    at; a file grown since is read to its end all the same."""
    buf = pa.allocate_buffer(min(size + 1, most), resizable=True)
    n = _fill(fh, buf, 0)
    if n == buf.size < most:   # grown past the size seen: room for the rest, as it comes
        buf.resize(most)
        n = _fill(fh, buf, n)
    buf.resize(n)
    return buf


def _fill(fh, buf: pa.Buffer, n: int) -> int:
    """Read `fh` into `buf` from byte `n` until `buf` is full or the file ends; the bytes now in it."""
    view = memoryview(buf).cast("B")
    while n < len(view):
        got = fh.readinto(view[n:])
        if not got:
            break
        n += got
    return n


def _refused(table: str, kind: str, **params) -> tuple[None, list[ReadProblem]]:
    shown = {k: f"{v:,}".replace(",", "\u202f") if isinstance(v, int) else v for k, v in params.items()}
    return None, [ReadProblem("EC00-01", kind, table=table, params={"table": table, **shown})]


def parse_csv_text(table: str, text: str, limits: Limits = DEFAULT_LIMITS,
                   mapping: ColumnMap | None = None, utf8=None) -> tuple[RawTable | None, list[ReadProblem]]:
    """One table's text → its RawTable, or None and an EC00-01 past a limit.

    The header is found among the first records (title records above it are
    skipped, row numbers stay the file's own); trailing totals records are
    left out and listed. `utf8`: the text's UTF-8 bytes when the caller has
    them (the file's own, in the buffer Arrow allocated for them: `_read_whole`),
    so they are neither encoded nor copied again; never a buffer over a Python
    object's memory (`_arrow_owned` says why)."""
    delim = sniff_delimiter(text)
    # Every field ends at a delimiter or a line end: a bound on the cells known
    # before parsing, so a hostile file is refused before it fills memory.
    bound = 0 if len(text) < limits.max_cells else text.count(delim) + text.count("\n") + text.count("\r") + 1
    if bound > limits.max_cells:
        return _refused(table, "too_many_cells", cells=bound, limit=limits.max_cells)
    skip, offset, title = _header_offset(table, text, delim, mapping)
    if offset and utf8 is not None:
        utf8 = utf8.slice(len(text[:offset].encode("utf-8")))
    raw, problems = _parse_table(table, text[offset:] if offset else text, delim, limits, mapping, utf8)
    if skip:
        problems = [dataclasses.replace(p, row=p.row + skip) if p.row is not None else p for p in problems]
    if raw is None:
        return raw, problems
    if skip:
        raw.shift_rows(skip)
        raw.header_row += skip
        raw.title_rows = title
    _leave_out_totals(raw, text, delim)
    # Every error value holds `#` or `Err:` (normalise.ERROR_VALUE, in any case): one
    # look at the file's text spares normalise a look at each of its columns.
    raw.no_error_values = not may_hold_error_values(text)
    return raw, problems


_ERR = re.compile(r"[Ee][Rr][Rr]:")
_ERR_SPELLINGS = frozenset(a + b + c for a in "Ee" for b in "Rr" for c in "Rr")
FEW_COLONS = 1000


def may_hold_error_values(text: str) -> bool:
    """Whether `text` holds `#` or `err:` (any case), as `#|[Ee][Rr][Rr]:`
    would find, at the speed of a byte search: that pattern tries every
    position of the text (0.3 s for a million stakes' 26 MB), while `in`
    and `count` run through it in C at memchr's pace (2 ms). A text with
    few colons has the letters before each looked at; many, the pattern
    without its `#` branch (twice as fast)."""
    if "#" in text:
        return True
    colons = text.count(":")
    if colons > FEW_COLONS:
        return _ERR.search(text) is not None
    at = text.find(":")
    while at != -1:
        if text[max(at - 3, 0):at] in _ERR_SPELLINGS:
            return True
        at = text.find(":", at + 1)
    return False


def _header_offset(table: str, text: str, delim: str, mapping) -> tuple[int, int, list[int]]:
    """(records above the header, the header's character offset, the non-empty ones' row numbers)."""
    try:
        reader = csv.reader(text_lines(text), delimiter=delim)
        records = []
        for record in reader:
            records.append(record)
            if len(records) == 1 and _complete_header(table, record, mapping):
                return 0, 0, []   # what find_header answers for a first record holding every required column
            if len(records) >= HEADER_SEARCH_ROWS:
                break
    except csv.Error:
        return 0, 0, []
    found = find_header(table, records, mapping)
    if found is None or found[0] == 0:
        return 0, 0, []
    skip = found[0]
    # Where the header record starts: after the lines the records above it used.
    reader = csv.reader(text_lines(text), delimiter=delim)
    for _ in range(skip):
        next(reader)
    offset = 0
    for _, line in zip(range(reader.line_num), text_lines(text)):
        offset += len(line)
    title = [i + 1 for i, r in enumerate(records[:skip]) if any(v.strip() for v in r)]
    return skip, offset, title


_LINE_END = re.compile(r"\r\n|\r|\n")


def _last_record_not_totals(tail: str, delim: str) -> bool:
    """True when the last non-blank record of `tail` certainly does not start
    with a totals label (the usual file: nothing to leave out), found without
    parsing every record. Only a tail without quotes or NUL is looked at: its
    records are then its lines, its fields what lies between delimiters, as
    the csv module reads them. False: the caller parses the tail."""
    if '"' in tail or "\0" in tail:
        return False
    end = len(tail)
    while end > 0:
        start = max(tail.rfind("\n", 0, end), tail.rfind("\r", 0, end)) + 1
        line = tail[start:end]
        if line.replace(delim, "").strip():
            first = next(v for v in line.split(delim) if v.strip())
            return not is_totals_label(first)
        # The line end before this line: \r\n is one end, not two.
        end = start - 2 if tail.startswith("\r\n", start - 2) else start - 1
    return False


def _complete_header(table: str, record: list[str], mapping) -> bool:
    """The record is not empty and names every required column of the table
    (the usual file: its header is its first record)."""
    spec = table_columns(table)
    return (spec is not None and any(v.strip() for v in record)
            and match_header(table, record, mapping).complete(spec))


def _leave_out_totals(raw: RawTable, text: str, delim: str) -> None:
    """Trailing totals records: out of the frame, into the reading notes (still rows read)."""
    if raw.num_rows == 0:
        return
    tail = text[-65536:]
    if len(tail) < len(text):
        tail = tail.split("\n", 1)[-1] if "\n" in tail else ""
    if _last_record_not_totals(tail, delim):
        return
    try:
        # "".join(r).strip(): some cell holds more than white space (any(v.strip() …), in one call).
        records = [r for r in csv.reader(io.StringIO(tail, newline=""), delimiter=delim) if "".join(r).strip()]
    except csv.Error:
        return
    rows = raw.row_numbers()
    totals = []
    for j, record in enumerate(reversed(records[-20:])):
        first = next((v for v in record if v.strip()), "")
        if j >= len(rows) or not is_totals_label(first):
            break
        totals.append(int(rows[len(rows) - 1 - j]))
    if totals:
        raw.drop_rows(totals)
        raw.totals_rows = sorted(totals)


# table, header texts, mapping → what _header_keep makes of them: every carnet
# of a batch has the same headers. Bounded.
_KEEPS: dict[tuple, tuple[dict[str, int], tuple[SourceColumn, ...], tuple[ReadProblem, ...]]] = {}
_KEEPS_MAX = 2048


def _header_keep(table: str, header: list, mapping, problems: list) -> tuple[dict[str, int], list[SourceColumn]]:
    """The carnet columns of a header record (row 1 of the text parsed) and the notes on them."""
    if any(v is None for v in header):   # written "None" in the notes: not a text to key on
        return _header_keep_made(table, header, mapping, problems)
    texts = tuple(str(v) for v in header)
    key = (table, texts, mapping)
    found = _KEEPS.get(key)
    if found is None:
        if len(_KEEPS) >= _KEEPS_MAX:
            _KEEPS.clear()
        made: list[ReadProblem] = []
        keep, notes = _header_keep_made(table, list(texts), mapping, made)
        found = _KEEPS[key] = (keep, tuple(notes), tuple(made))
    keep, notes, made = found
    problems.extend(made)
    return dict(keep), list(notes)


def _header_keep_made(table: str, header: list, mapping, problems: list
                      ) -> tuple[dict[str, int], list[SourceColumn]]:
    match = match_header(table, [("" if v is None else str(v)) for v in header], mapping)
    by_index = {i: c for c, i in match.keep.items()}
    problems.extend(ambiguity_problems(table, header, match, 1))
    named = sorted(set(match.keep.values()) | set(match.ignored) | {i for ix in match.ambiguous.values() for i in ix})
    notes = [SourceColumn(str(header[i]), column_letter(i), by_index.get(i), match.how.get(by_index.get(i), ""))
             for i in named]
    return {**match.keep, **match.extra}, notes


def _parse_table(table: str, text: str, delim: str, limits: Limits,
                 mapping, utf8=None) -> tuple[RawTable | None, list[ReadProblem]]:
    """The text from the header record on → its RawTable (header = row 1)."""
    fast = _parse_with_arrow(table, text, delim, limits, mapping, utf8)
    if fast is not None:
        return fast
    # Imported here: a file Arrow reads needs no pandas (a carnet alone is read
    # in a thread while the command imports pandas: auditor.read.early).
    import pandas as pd

    try:
        df = pd.read_csv(io.StringIO(text), sep=delim, header=None, dtype=str, keep_default_na=False,
                         na_filter=False, skip_blank_lines=False, engine="c", quoting=csv.QUOTE_MINIMAL)
    except pd.errors.EmptyDataError:
        df0, _ = frame_from_rows({}, [], 2)
        return RawTable(table, df0, rows_read=0), []
    except Exception:   # rows longer than the header, and whatever else the C parser refuses
        return _parse_with_csv_module(table, text, delim, limits, mapping)
    if df.empty:
        df0, _ = frame_from_rows({}, [], 2)
        return RawTable(table, df0, rows_read=0), []
    if df.shape[1] > limits.max_columns:
        return _refused(table, "too_many_columns", columns=df.shape[1], limit=limits.max_columns)
    # Vectorised path: header is the first record, source row = record index + 1.
    header = df.iloc[0].tolist()
    body = df.iloc[1:]
    problems: list[ReadProblem] = []
    keep, notes = _header_keep(table, header, mapping, problems)
    out = pd.DataFrame({name: body.iloc[:, i].fillna("").to_numpy(dtype=object) for name, i in keep.items()})
    out["_row"] = (body.index.to_numpy() + 1).astype("int64")
    if len(out):
        values = body.fillna("").astype(str)
        nonempty = values.apply(lambda col: col.str.strip() != "").any(axis=1).to_numpy()
        out = out[nonempty].reset_index(drop=True)
    if len(out) > limits.max_rows:
        return _refused(table, "too_many_rows", rows=len(out), limit=limits.max_rows)
    return RawTable(table, out, rows_read=len(out), source_columns=notes), problems


def _parse_with_arrow(table: str, text: str, delim: str, limits: Limits, mapping=None, utf8=None):
    """Fast path (Arrow's multi-threaded CSV reader, columns kept as Arrow
    strings) for the common file: every row as wide as the header. A blank
    line is read as a row of empty cells (so record numbers stay the file's
    rows) and dropped below like any empty row. A ragged row makes Arrow
    refuse the file: None, and the paths below reject such rows one by one."""
    if text.startswith(("\n", "\r")):
        return None
    try:
        header = next(csv.reader(text_lines(text), delimiter=delim))
    except (csv.Error, StopIteration):
        return None
    width = len(header)
    if width <= 1 or width > limits.max_columns:
        return None   # one column: a blank line and an empty cell look alike to Arrow
    tbl = _small_table(text, delim, width) or _arrow_table(text, delim, width, utf8)
    if tbl is None:
        return None
    problems: list[ReadProblem] = []
    keep, notes = _header_keep(table, header, mapping, problems)
    rows = int64_array(np.arange(2, tbl.num_rows + 2, dtype=np.int64))
    picked = pa.Table.from_arrays([*(tbl.column(i) for i in keep.values()), rows], names=[*keep, "_row"])
    if tbl.num_rows:
        nonempty = _nonempty_rows(tbl)
        if nonempty is not None:
            picked = picked.filter(nonempty)
    if picked.num_rows > limits.max_rows:
        return _refused(table, "too_many_rows", rows=picked.num_rows, limit=limits.max_rows)
    # Handed on as Arrow: normalisation parses these columns as they are.
    return RawTable(table, picked, rows_read=picked.num_rows, source_columns=notes), problems


def _arrow_table(text: str, delim: str, width: int, utf8=None) -> pa.Table | None:
    """The records after the first as `width` Arrow string columns c0, c1 …
    (a blank line: a row of empty cells), None when Arrow refuses the text."""
    names = [f"c{i}" for i in range(width)]
    source = _arrow_owned(text.encode("utf-8")) if utf8 is None else utf8
    try:
        return pacsv.read_csv(
            pa.BufferReader(source),
            read_options=pacsv.ReadOptions(column_names=names, skip_rows=1),
            # Quoted line breaks slow Arrow's reader down: allow them only where a quote is.
            parse_options=pacsv.ParseOptions(delimiter=delim, newlines_in_values='"' in text,
                                             ignore_empty_lines=False),
            # Valid UTF-8 already (the text was decoded from these bytes, or encoded to them): not checked again.
            convert_options=pacsv.ConvertOptions(column_types={n: pa.string() for n in names},
                                                 strings_can_be_null=False, quoted_strings_can_be_null=False,
                                                 check_utf8=False))
    except (pa.ArrowInvalid, pa.ArrowException):
        return None


def _arrow_owned(data) -> pa.Buffer:
    """`data` copied into memory Arrow owns (some 9 ms for 44 MB). Arrow's
    reader lets go of its input on its own threads, after read_csv has
    returned; a Python object's memory then takes the GIL to let go, and if
    the interpreter is ending meanwhile that thread is stopped inside Arrow's
    C++ and the process aborts ("terminate called without an active
    exception"). A read can be followed at once by the process's end: a read
    in a thread (auditor.read.early) by a command stopped meanwhile, the
    `columns` command's by its answer."""
    out = pa.allocate_buffer(len(data))
    memoryview(out).cast("B")[:] = data
    return out


# A file this short is read in Python: Arrow's reader costs over a tenth of a
# millisecond a call whatever the size (a cover or séances file of two lines;
# up to 4 KiB, a few hundred short rows, Python is still the cheaper).
_SMALL_TEXT = 4096


def _small_table(text: str, delim: str, width: int) -> pa.Table | None:
    """_arrow_table for a short text without quotes or NUL, whose records are
    its lines and whose fields lie between delimiters; None when the text is
    not such, or when a line is not `width` fields wide (Arrow then says)."""
    if len(text) > _SMALL_TEXT or '"' in text or "\0" in text:
        return None
    lines = _LINE_END.split(text)
    if len(lines) < 2:
        return None   # no line end after the header: Arrow's to say
    body = lines[1:]
    if body[-1] == "":
        body.pop()    # the last line's end
    blank = [""] * width
    rows = [line.split(delim) if line else blank for line in body]
    if any(len(fields) != width for fields in rows):
        return None
    # The cells column after column (the rows turned in one step, zip) in one
    # Arrow array, each column a slice of it: one array built, not one per column.
    n = len(rows)
    cells = text_array([cell for column in zip(*rows) for cell in column])
    return pa.Table.from_arrays([cells.slice(i * n, n) for i in range(width)], names=[f"c{i}" for i in range(width)])


def _nonempty_rows(tbl: pa.Table) -> pa.Array | None:
    """Rows with at least one non-blank cell, or None when every row has one.

    Only rows whose first cell is blank can be blank: the other columns are
    looked at on those rows alone (usually none)."""
    if _none_blank(tbl.column(0)):
        return None
    first = pc.utf8_trim_whitespace(tbl.column(0))
    candidates = pc.indices_nonzero(pc.equal(first, ""))
    if len(candidates) == 0:
        return None
    blank = np.ones(len(candidates), dtype=bool)
    for column in tbl.columns[1:]:
        cells = pc.utf8_trim_whitespace(pc.take(column, candidates))
        blank &= pc.equal(cells, "").to_numpy(zero_copy_only=False)
    keep = np.ones(tbl.num_rows, dtype=bool)
    keep[candidates.to_numpy()[blank]] = False
    return bool_array(keep)


def _none_blank(column: pa.ChunkedArray) -> bool:
    """Every cell of the column starts with a printable ASCII character other
    than the space, so none is blank once trimmed (read from the buffers; any
    other column: False, and the cells are trimmed)."""
    for arr in column.chunks:
        if arr.type != pa.string() or arr.null_count:
            return False
        if not len(arr):
            continue
        offsets, data = string_buffers(arr)
        starts = offsets[:-1]
        if not (offsets[1:] > starts).all():
            return False
        first = data[starts]
        if first.min() < 0x21 or first.max() > 0x7E:
            return False
    return True


def _parse_with_csv_module(table: str, text: str, delim: str, limits: Limits = DEFAULT_LIMITS,
                           mapping=None) -> tuple[RawTable | None, list[ReadProblem]]:
    """Slow path for files pandas refuses (rows longer than the header)."""
    problems: list[ReadProblem] = []
    try:
        records = list(csv.reader(io.StringIO(text, newline=""), delimiter=delim))
    except csv.Error as exc:
        return None, [ReadProblem("EC00-01", "unreadable_table", table=table,
                                  params={"table": table, "reason": str(exc)})]
    if not records:
        df0, _ = frame_from_rows({}, [], 2)
        return RawTable(table, df0), []
    header, rows = records[0], records[1:]
    width = len(header)
    if width > limits.max_columns:
        return _refused(table, "too_many_columns", columns=width, limit=limits.max_columns)
    good, dropped = [], 0
    for i, row in enumerate(rows):
        if len(row) > width and any(v.strip() for v in row[width:]):
            problems.append(ReadProblem("EC00-02", "row_shape", table=table, row=i + 2,
                                        params={"fields": len(row), "expected_fields": width}))
            dropped += 1
            good.append([])  # keeps row numbering; an empty row is skipped below
        else:
            good.append(row)
    keep, notes = _header_keep(table, header, mapping, problems)
    df, _ = frame_from_rows(keep, good, first_row=2)
    if len(df) + dropped > limits.max_rows:
        return _refused(table, "too_many_rows", rows=len(df) + dropped, limit=limits.max_rows)
    return RawTable(table, df, rows_read=len(df) + dropped, rows_dropped=dropped, source_columns=notes), problems
