"""Hypothesis strategies for hostile carnets, shared by the fuzz driver
(fuzz/fuzz_reader.py) and the property tests (tests/test_fuzz_reader.py).

Each strategy draws one input as `(kind, payload)`; `materialise` writes it
where the reader can read it and returns the path.
"""

from __future__ import annotations

import io
import zipfile
from functools import lru_cache
from pathlib import Path

from hypothesis import strategies as st

TABLES = ("carnet", "seances", "coups", "mises", "tickets", "fiches", "carnets_tickets")

# Tokens that steer random text towards the reader's edge cases.
CSV_TOKENS = [";", ",", '"', "\n", "\r\n", "\r", " ", "\u00a0", "€", "1", "12,50", "1.250", "-0", "a", "b",
              "simple", "chouette", "2026-03-02", "02/03/2026", "=1+1", "<script>", "\x00", "\ufeff", "é",
              # error values and month-first dates (issue 29)
              "#N/A", "#REF!", "Err:502", "#VALEUR!", "02/13/2026", "13/02/2026"]
XML_TOKENS = [b'<c r="XFD1048576"><v>1</v></c>', b'<c r="A1"><v>1</v></c>', b'<c><v>2</v></c>',
              b'<row r="2000000">', b'<row>', b"</row>", b"<f>1+1</f>", b"<v/>", b'<c r="A99999999999">',
              b"<!DOCTYPE x [<!ENTITY a 'b'>]>", b"&a;", b"<x:c r='B2'>", b'uniqueCount="999999999"',
              b"\x00", b"\xff", b'<c r="a1">', b"<is><t>x</t></is>", b'<c r="ZZZ1">',
              # error cells, far formatted cells, fullCalcOnLoad (issue 29)
              b'<c r="B2" t="e"><v>#REF!</v></c>', b'<c r="C2" t="e"><f>1/0</f><v>#DIV/0!</v></c>',
              b'<c r="XFD1048576" s="1"/>', b'<c r="XFD1" s="1"></c>', b't="e"', b'<calcPr fullCalcOnLoad="1"/>']


@lru_cache(maxsize=1)
def base_workbook() -> tuple[tuple[str, bytes], ...]:
    """A small valid carnet workbook, as its (member, bytes) list."""
    from auditor.synth.generate import Spec, generate, write_xlsx

    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = write_xlsx(generate(Spec(seances=1, coups=3, mises=3, seed=5)), Path(tmp) / "base.xlsx")
        with zipfile.ZipFile(path) as z:
            return tuple((i.filename, z.read(i.filename)) for i in z.infolist())


@lru_cache(maxsize=1)
def base_tables() -> dict[str, str]:
    """The same carnet as CSV texts (`;`, decimal commas)."""
    from auditor.synth.generate import Spec, generate, write_csv_folder
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        folder = write_csv_folder(generate(Spec(seances=1, coups=3, mises=3, seed=5)), Path(tmp) / "c")
        return {p.stem: p.read_text(encoding="utf-8") for p in folder.iterdir()}


def rezip(members, method=zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as z:
        for name, data in members:
            z.writestr(name, data)
    return out.getvalue()


def _splice(data: bytes, edits) -> bytes:
    for pos, cut, insert in edits:
        if not data:
            data = insert
            continue
        pos %= len(data)
        data = data[:pos] + insert + data[pos + cut:]
    return data


random_xlsx = st.binary(max_size=4096).map(lambda b: ("xlsx", b))

xml_edit = st.tuples(st.integers(0, 1 << 20), st.integers(0, 8),
                     st.one_of(st.sampled_from(XML_TOKENS), st.binary(max_size=8)))


@st.composite
def mutated_xlsx(draw):
    members = list(base_workbook())
    i = draw(st.integers(0, len(members) - 1))
    name, data = members[i]
    members[i] = (name, _splice(data, draw(st.lists(xml_edit, min_size=1, max_size=6))))
    if draw(st.booleans()):
        raw = rezip(members)
        return "xlsx", _splice(raw, draw(st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 4),
                                                            st.binary(max_size=4)), max_size=2)))
    return "xlsx", rezip(members, draw(st.sampled_from([zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED])))


random_csv = st.tuples(st.sampled_from(TABLES), st.binary(max_size=2048)).map(lambda t: ("csv", {t[0]: t[1]}))

csv_text = st.lists(st.one_of(st.sampled_from(CSV_TOKENS), st.text(max_size=6)), max_size=80).map("".join)


@st.composite
def mutated_csv(draw, whole: bool = True):
    """The valid carnet, one table's text edited with tokens, in a random
    encoding; `whole=False` keeps only the edited table (faster to read)."""
    tables = dict(base_tables())
    name = draw(st.sampled_from(sorted(tables)))
    text = tables[name]
    for _ in range(draw(st.integers(1, 5))):
        pos = draw(st.integers(0, max(len(text), 1)))
        cut = draw(st.integers(0, 10))
        text = text[:pos] + draw(csv_text) + text[pos + cut:]
    delimiter = draw(st.sampled_from([";", ","]))
    if delimiter == ",":
        text = text.replace(";", ",")
    encoding = draw(st.sampled_from(["utf-8", "utf-8-sig", "cp1252"]))
    files = {k: v.encode("utf-8") for k, v in tables.items()} if whole else {}
    files[name] = text.encode(encoding, "replace")
    return "csv", files


@lru_cache(maxsize=1)
def base_rows() -> dict[str, tuple[list[str], list[list[str]]]]:
    """A carnet with simple and chouette coups, every table as (header, rows) of cell texts."""
    import csv
    import tempfile

    from auditor.synth.generate import Spec, generate, write_csv_folder

    with tempfile.TemporaryDirectory() as tmp:
        folder = write_csv_folder(generate(Spec(seances=2, coups=5, mises=3, seed=9, chouette=True)),
                                  Path(tmp) / "c")
        out = {}
        for p in folder.iterdir():
            records = list(csv.reader(io.StringIO(p.read_text(encoding="utf-8"), newline=""), delimiter=";"))
            out[p.stem] = (records[0], records[1:])
        return out


CELL_TOKENS = ["", " ", "x", "douze", "12,555", "1.250", "-1", "0", "99999999999999999", "31/02/2026", "02.03.2026",
               "46083", "zz", "A", "APRES", "chouette", "1e3", "NaN", "∞", "١٢", "=1+1", "\x00",
               "#N/A", " #REF! ", "#VALUE!", "#DIV/0!", "Err:502", "#NOM?", "02/13/2026", "13/02/2026", "12/31/2026"]


@st.composite
def spoiled_carnet(draw):
    """A sound carnet (simple and chouette coups) spoiled as clerks do: columns
    dropped, cells corrupted, rows repeated or out of order. These inputs are
    audited whole: they reach the rules, not only the reader."""
    import csv

    tables = {name: (list(header), [list(r) for r in rows]) for name, (header, rows) in base_rows().items()}
    names = sorted(tables)
    for name in draw(st.lists(st.sampled_from(names), max_size=2, unique=True)):   # tables left out
        if name != "coups":
            tables.pop(name)
    for _ in range(draw(st.integers(0, 3))):                                      # columns dropped
        name = draw(st.sampled_from(sorted(tables)))
        header, rows = tables[name]
        if len(header) > 1:
            j = draw(st.integers(0, len(header) - 1))
            tables[name] = (header[:j] + header[j + 1:], [r[:j] + r[j + 1:] for r in rows])
    for _ in range(draw(st.integers(0, 8))):                                      # cells corrupted
        name = draw(st.sampled_from(sorted(tables)))
        header, rows = tables[name]
        if rows:
            r, j = draw(st.integers(0, len(rows) - 1)), draw(st.integers(0, len(header) - 1))
            rows[r][j] = draw(st.one_of(st.sampled_from(CELL_TOKENS), st.text(max_size=5)))
    for _ in range(draw(st.integers(0, 2))):                                      # rows repeated or moved
        name = draw(st.sampled_from(sorted(tables)))
        rows = tables[name][1]
        if rows:
            i, k = draw(st.integers(0, len(rows) - 1)), draw(st.integers(0, len(rows)))
            rows.insert(k, list(rows[i]) if draw(st.booleans()) else rows.pop(i))
    files = {}
    for name, (header, rows) in tables.items():
        buf = io.StringIO()
        w = csv.writer(buf, delimiter=";", lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
        files[name] = buf.getvalue().encode("utf-8", "replace")
    return "spoiled", files


XLSB = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "office3" / "far" / "far-pyxlsbwriter.xlsb"


def _record(typ: int, payload: bytes) -> bytes:
    """One .xlsb record (MS-XLSB 2.1.4): its type and size as variable-length integers, then its payload."""
    head = bytes([typ]) if typ < 0x80 else bytes([(typ & 0x7F) | 0x80, typ >> 7])
    size, n = b"", len(payload)
    while True:
        byte, n = n & 0x7F, n >> 7
        size += bytes([byte | (0x80 if n else 0)])
        if not n:
            return head + size + payload


def _row(r: int) -> bytes:
    return _record(0x0000, r.to_bytes(4, "little") + bytes(4) + b"\x2c\x01\x00\x00\x00\x01\x00\x00\x00" + bytes(8))


def _cell(typ: int, col: int, tail: bytes) -> bytes:
    return _record(typ, col.to_bytes(4, "little") + bytes(4) + tail)


# Records that steer an .xlsb sheet towards the guard's edge cases: far rows
# (past Excel's last, where calamine stops reading), formatted blanks and values
# far away, error cells, lying or inverted declared grids, cut records.
XLSB_TOKENS = [_row(1048575), _row(0x100001), _row(5), _row(0xFFFFFFFF),
               _cell(0x0001, 16383, b""), _cell(0x0002, 16383, b"\x06\x00\x00\x00"),
               _cell(0x0002, 300, b"\x06\x00\x00\x00"), _cell(0x0002, 3, b"\x06\x00\x00\x00"),
               _cell(0x0003, 2, b"\x17"), _cell(0x0003, 2, b"\x99"), _cell(0x000B, 1, b"\x07\x00\x00"),
               _cell(0x0005, 0, b"\x00" * 8), _cell(0x0006, 1, b"\xff\xff\x00\x00"),
               _cell(0x0007, 1, b"\xff\xff\xff\x7f"), _record(0x0002, b"\x01"),
               _record(0x0094, (0).to_bytes(4, "little") + (1048575).to_bytes(4, "little") + bytes(4)
                       + (16383).to_bytes(4, "little")),
               _record(0x0094, (9).to_bytes(4, "little") + bytes(4) + (9).to_bytes(4, "little") + bytes(4)),
               _record(0x0092, b""), b"\x80", b"\xff\xff\xff\xff"]

xlsb_edit = st.tuples(st.integers(0, 1 << 20), st.integers(0, 8),
                      st.one_of(st.sampled_from(XLSB_TOKENS), st.binary(max_size=8)))


@lru_cache(maxsize=1)
def base_xlsb() -> tuple[tuple[str, bytes], ...]:
    """A carnet .xlsb (pyxlsbwriter's, with Excel's far formatted cell), as its (member, bytes) list."""
    with zipfile.ZipFile(XLSB) as z:
        return tuple((i.filename, z.read(i.filename)) for i in z.infolist())


@st.composite
def mutated_xlsb(draw):
    """The .xlsb carnet with one part's records edited (a worksheet's, mostly)."""
    members = list(base_xlsb())
    sheets = [i for i, (name, _) in enumerate(members) if name.startswith("xl/worksheets/sheet")]
    i = draw(st.one_of(st.sampled_from(sheets), st.integers(0, len(members) - 1)))
    name, data = members[i]
    members[i] = (name, _splice(data, draw(st.lists(xlsb_edit, min_size=1, max_size=6))))
    return "xlsb", rezip(members)


any_input = st.one_of(random_xlsx, mutated_xlsx(), mutated_xlsb(), random_csv, mutated_csv(), spoiled_carnet())
# For the fuzz driver: the same inputs, one table per CSV carnet.
fast_input = st.one_of(random_xlsx, mutated_xlsx(), mutated_xlsb(), random_csv, mutated_csv(whole=False),
                       spoiled_carnet())


def materialise(item, folder: Path) -> Path:
    kind, payload = item
    folder.mkdir(parents=True, exist_ok=True)
    if kind in ("xlsx", "xlsb"):
        path = folder / f"carnet.{kind}"
        path.write_bytes(payload)
        return path
    path = folder / "carnet"
    path.mkdir(exist_ok=True)
    for old in path.iterdir():
        old.unlink()
    for name, data in payload.items():
        (path / f"{name}.csv").write_bytes(data)
    if not (path / "coups.csv").exists():
        (path / "coups.csv").write_bytes(b"")
    return path
