"""Build the hostile-input carnets into a folder (default: tests/hostile/build/).

Nothing large is committed: a zip bomb is a few hundred kilobytes of deflated
zeros, a declared-size bomb is a patched zip header. `EXPECTED` says what the
audit must report for each carnet: the EC00 code and the catalogue message
variant (kind) that must appear among its findings.

    python tests/hostile/make_hostile.py [FOLDER]
"""

from __future__ import annotations

import io
import re
import random
import shutil
import struct
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from auditor.synth.generate import Spec, generate, write_csv_folder, write_xlsx  # noqa: E402

# The texts a hostile clerk (or casino) could type in a cell: markup for the
# HTML report, formula starters for Excel and CSV consumers.
SCRIPT = "<script>alert(1)</script>"
IMG = '<img src=x onerror="alert(2)">'
FORMULAS = ['=HYPERLINK("http://evil.example/","clic")', "+cmd|' /C calc'!A0", "-1+1", "@SUM(A1:A9)"]
# Characters that reorder what a page shows around them ("Trojan Source"): U+202E
# shows "00,01" as "10,00"; an isolate left open (U+2066) runs to the end of its line.
BIDI = "\u202e00,01 \u2066x"
HOSTILE_TEXTS = [SCRIPT, IMG, *FORMULAS, BIDI]

# carnet (relative path) → (code, kind) that its findings must include
EXPECTED: dict[str, tuple[str, str]] = {
    "truncated.xlsx": ("EC00-01", "not_xlsx"),
    "random-bytes.xlsx": ("EC00-01", "not_xlsx"),
    "zip-bomb.xlsx": ("EC00-01", "zip_ratio"),
    "zip-bomb-declared.xlsx": ("EC00-01", "zip_too_large"),
    "entity-bomb.xlsx": ("EC00-01", "xml_dtd"),
    "far-cell.xlsx": ("EC00-01", "too_many_columns"),
    "shared-strings-count.xlsx": ("EC00-01", "shared_strings"),
    "duplicate-cell.xlsx": ("EC00-01", "duplicate_cell"),
    "formulas-without-values.xlsx": ("EC00-02", "formula_no_value"),
    "script-and-formula-text.xlsx": ("EC00-02", "unparseable"),
    "script-and-formula-text": ("EC00-02", "unparseable"),
    "undecodable": ("EC00-01", "unreadable_table"),
    "wide-header": ("EC00-01", "too_many_columns"),
    "wide-line": ("EC00-02", "row_shape"),
    "nul-bytes": ("EC00-02", "enum"),
    f"odd-name-{IMG.replace('/', '')}": ("EC00-02", "unparseable"),
    "x": ("EC00-02", "unparseable"),   # audited as `deep/deeper/../../x`
}


def small_tables(seed: int = 3) -> dict:
    return generate(Spec(seances=1, coups=4, mises=3, seed=seed))


def workbook_bytes(tables: dict | None = None) -> bytes:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return write_xlsx(tables or small_tables(), Path(tmp) / "c.xlsx").read_bytes()


def rezip(data: bytes, replace: dict[str, bytes] | None = None, add: dict[str, bytes] | None = None,
          level: int = 6) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED,
                                                                   compresslevel=level) as zout:
        for info in zin.infolist():
            body = (replace or {}).get(info.filename, zin.read(info.filename))
            zout.writestr(info.filename, body)
        for name, body in (add or {}).items():
            zout.writestr(name, body)
    return out.getvalue()


def sheet_member(data: bytes, sheet: str) -> str:
    """The zip member of a sheet (openpyxl numbers them in creation order)."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        wb = z.read("xl/workbook.xml").decode()
    names = [part.split('"', 1)[0] for part in wb.split('name="')[1:]]
    return f"xl/worksheets/sheet{names.index(sheet) + 1}.xml"


def declared_size_bomb(data: bytes, member: str, size: int) -> bytes:
    """Patch the uncompressed size a member declares (local and central headers)."""
    buf = bytearray(data)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        info = z.getinfo(member)
    struct.pack_into("<I", buf, info.header_offset + 22, size)
    name = member.encode()
    pos = 0
    while True:
        pos = buf.find(b"PK\x01\x02", pos)
        if pos < 0:
            break
        n = struct.unpack_from("<H", buf, pos + 28)[0]
        if bytes(buf[pos + 46:pos + 46 + n]) == name:
            struct.pack_into("<I", buf, pos + 24, size)
        pos += 4
    return bytes(buf)


def hostile_tables() -> dict:
    t = small_tables()
    t["carnet"][0]["casino"] = SCRIPT
    texts = iter(HOSTILE_TEXTS * 20)
    for s in t["seances"]:
        s["jeux"] = next(texts)
    for m in t["mises"][:len(HOSTILE_TEXTS)]:
        m["montant"] = next(texts)
    t["coups"][0]["gagnant"] = SCRIPT
    t["coups"][1]["type"] = FORMULAS[0]
    t["tickets"][0]["premier"] = IMG
    return t


def build(folder: Path) -> Path:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    good = workbook_bytes()
    rng = random.Random(7)

    (folder / "truncated.xlsx").write_bytes(good[: len(good) // 2])
    (folder / "random-bytes.xlsx").write_bytes(bytes(rng.randrange(256) for _ in range(4096)))
    # 100 MB of zeros deflate to about 100 KB: a ratio near 1000.
    (folder / "zip-bomb.xlsx").write_bytes(rezip(good, add={"xl/media/zeros.bin": bytes(100 * 1024 * 1024)},
                                                 level=9))
    member = sheet_member(good, "mises")
    (folder / "zip-bomb-declared.xlsx").write_bytes(declared_size_bomb(good, member, 0xF0000000))
    laughs = ('<?xml version="1.0"?><!DOCTYPE sst [<!ENTITY a "hahahahahahahahahaha">'
              + "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(8))
              + ']><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="1" '
              'uniqueCount="1"><si><t>&i;</t></si></sst>')
    (folder / "entity-bomb.xlsx").write_bytes(rezip(good, add={"xl/sharedStrings.xml": laughs.encode()}))
    with zipfile.ZipFile(io.BytesIO(good)) as z:
        mises_xml = z.read(member)
    far = mises_xml.replace(b"</sheetData>",
                            b'<row r="1048576"><c r="XFD1048576"><v>1</v></c></row></sheetData>')
    (folder / "far-cell.xlsx").write_bytes(rezip(good, replace={member: far}))
    sst = (b'<?xml version="1.0"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
           b'count="1" uniqueCount="4000000000"><si><t>x</t></si></sst>')
    (folder / "shared-strings-count.xlsx").write_bytes(rezip(good, add={"xl/sharedStrings.xml": sst}))
    dup = mises_xml.replace(b'<c r="A2"', b'<c r="A2" t="n"><v>9</v></c><c r="A2"', 1)
    (folder / "duplicate-cell.xlsx").write_bytes(rezip(good, replace={member: dup}))
    _formula_workbook(folder / "formulas-without-values.xlsx")

    write_xlsx(hostile_tables(), folder / "script-and-formula-text.xlsx")
    write_csv_folder(hostile_tables(), folder / "script-and-formula-text")

    undecodable = write_csv_folder(small_tables(), folder / "undecodable")
    (undecodable / "coups.csv").write_bytes((undecodable / "coups.csv").read_bytes() + b"1;\x81\x8d\x8f\x90\x9d\n")
    wide = write_csv_folder(small_tables(), folder / "wide-header")
    head, _, rest = (wide / "coups.csv").read_bytes().partition(b"\r\n")
    (wide / "coups.csv").write_bytes(head + b"".join(b";extra%d" % i for i in range(10_000)) + b"\r\n" + rest)
    line = write_csv_folder(small_tables(), folder / "wide-line")
    (line / "mises.csv").write_bytes((line / "mises.csv").read_bytes() + b"1;1;9;9;a;5,00" + b";x" * 10_000
                                     + b"\r\n")
    nul = write_csv_folder(small_tables(), folder / "nul-bytes")
    data = (nul / "mises.csv").read_bytes()
    (nul / "mises.csv").write_bytes(data.replace(b";a;", b";a\x00;", 1))
    write_csv_folder(hostile_tables(), folder / f"odd-name-{IMG.replace('/', '')}")
    # Audited through a path that climbs back out: `deep/deeper/../../x`.
    (folder / "deep" / "deeper").mkdir(parents=True)
    write_csv_folder(hostile_tables(), folder / "x")
    return folder


def _formula_workbook(path: Path) -> None:
    """Stakes as formulas Excel never computed (openpyxl writes no saved value),
    and totals as formulas whose saved value is there."""
    from openpyxl import load_workbook

    write_xlsx(small_tables(), path)
    wb = load_workbook(path)
    ws = wb["mises"]
    head = [c.value for c in ws[1]]
    col = head.index("montant") + 1
    ws.cell(row=2, column=col).value = "=2+3"
    ws.cell(row=3, column=col).value = "=SUM(F2:F2)"
    ws.append([None] * (col - 1) + ["=1+1"])     # a row holding only a formula
    coups = wb["coups"]
    chead = [c.value for c in coups[1]]
    tcol = chead.index("total_a") + 1
    saved = {}
    for r in range(2, coups.max_row + 1):
        saved[r] = coups.cell(row=r, column=tcol).value
        coups.cell(row=r, column=tcol).value = f"={saved[r]}*1"
    wb.save(path)
    # Give the totals their saved value, as Excel would have.
    data = path.read_bytes()
    member = sheet_member(data, "coups")
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        xml = z.read(member).decode()
    letter = chr(64 + tcol)
    for r, value in saved.items():
        xml = xml.replace(f'<c r="{letter}{r}"><f>{value}*1</f><v /></c>',
                          f'<c r="{letter}{r}"><f>{value}*1</f><v>{value}</v></c>')
    # Excel, having computed them, does not ask for a recalculation on opening
    # as openpyxl does (`fullCalcOnLoad`): without that, the stakes stay
    # formulas without a value and the totals are computed ones (format v1.2).
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        book = z.read("xl/workbook.xml").decode()
    book = re.sub(r'\sfullCalcOnLoad="[^"]*"', "", book)
    path.write_bytes(rezip(data, replace={member: xml.encode(), "xl/workbook.xml": book.encode()}))


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("build")
    print(build(target))
