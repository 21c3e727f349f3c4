"""Text the procès-verbal's fonts cannot show (CJK, emoji, private use):
written `<U+XXXX>`, visibly, so that the PV is made (PDF/A forbids a missing
glyph and Typst then refuses the whole document); findings.json attached
as written beside it. Typst failing for any other reason stops the run
with one line, as a file that cannot be written does."""

from __future__ import annotations

import io
import json
import re
import struct
import tomllib
from pathlib import Path

import pytest

from auditor.cli import main
from auditor.errors import WriteError
from auditor.report import pv

ROOT = Path(__file__).resolve().parent.parent
EMOJI = "\U0001F600"


# -- what is written, and how (fast) ---------------------------------------------

@pytest.mark.parametrize(("text", "shown"), [
    ("李雷", "<U+674E><U+96F7>"),
    (f"2,00 {EMOJI}", "2,00 <U+1F600>"),
    ("\ue000 and \x7f", "<U+E000> and <U+007F>"),         # private use, DEL: a font's glyph there means nothing
    ("\x01\x1b", "<U+0001><U+001B>"),                        # control characters
    ("bad \udc80 name", "bad <U+DC80> name"),                # a lone surrogate (a name not in UTF-8)
    ("é\u0301 œ € ’ « » … — \u00a0\u202f Ω Ж ⚠", "é\u0301 œ € ’ « » … — \u00a0\u202f Ω Ж ⚠"),   # in the fonts
    ("ligne\tun\nligne deux\r\n", "ligne\tun\nligne deux\r\n"),   # laid out as white space
])
def test_characters_the_fonts_lack_are_written_as_code_points(text, shown):
    assert pv.shown_text(text) == shown


def test_the_labels_the_pv_prints_are_all_shown_as_they_are():
    """French and English as the tool writes them never go through the code-point form."""
    for lang in ("fr", "en"):
        labels = tomllib.loads((ROOT / "auditor" / "templates" / "i18n" / f"{lang}.toml").read_text(encoding="utf-8"))
        texts = []

        def walk(value):
            if isinstance(value, str):
                texts.append(value)
            elif isinstance(value, dict):
                [walk(v) for v in value.values()]
            elif isinstance(value, list):
                [walk(v) for v in value]

        walk(labels)
        assert len(texts) > 100
        assert [t for t in texts if pv.shown_text(t) != t] == []


def test_the_pdf_metadata_keeps_the_text_as_it_is():
    data = {"author": "李雷", "keywords": ["findings-sha256:" + "0" * 64], "title": "PV", "visit": [{"value": "李雷"}]}
    assert pv.shown_data(data) == {"author": "李雷", "keywords": data["keywords"], "title": "PV",
                                   "visit": [{"value": "<U+674E><U+96F7>"}]}


def _typst_error(message: str, diagnostic: str = ""):
    import typst

    exc = typst.TypstError(message)
    exc.message, exc.diagnostic = message, diagnostic or f"error: {message}\n"
    return exc


def _glyph_error(texts: list[str]):
    """The error Typst gives for text no font displays: each text quoted as Rust
    quotes a string (a control character as `\\u{1}`), one error each."""
    def quoted(text: str) -> str:
        return '"' + "".join(f"\\u{{{ord(c):x}}}" if ord(c) < 0x20 else c for c in text) + '"'

    said = [f"PDF/A-3b error: the text `{quoted(t)}` could not be displayed with font `\"Libertinus Serif\"`"
            for t in texts]
    return _typst_error(said[0], "".join(f"error: {s}\n  = hint: try using a different font\n\n" for s in said))


def _typeset(data: dict) -> str:
    """The texts of the template's document that Typst typesets (not the PDF's metadata)."""
    out = []

    def walk(value):
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            [walk(v) for v in value.values()]
        elif isinstance(value, list):
            [walk(v) for v in value]

    walk({k: v for k, v in data.items() if k not in pv.METADATA})
    return "\n".join(out)


def test_text_typst_still_refuses_is_written_as_code_points_and_the_pv_made_again(monkeypatch):
    """A typst whose fonts differ from the table: what it names is written as code
    points too, all it names at once, and the PV is made on the next try."""
    import typst

    lacking = {"Ж", "\x01"}   # in the table, refused by this (pretend) typst
    calls = []

    def compile(*args, sys_inputs, **kwargs):
        calls.append(sys_inputs["data"])
        named = sorted(c for c in lacking if c in _typeset(json.loads(sys_inputs["data"])))
        if named:
            raise _glyph_error(named)
        return b"%PDF-pretend"

    monkeypatch.setattr(typst, "compile", compile)
    monkeypatch.setattr(pv, "NOT_SHOWN_RE", re.compile(r"(?!)"))   # the table lets everything through
    data = {"author": "Ж", "keywords": [], "visit": [{"value": "Жанна \x01 李"}], "t": {"x": "ok"}}
    assert pv.render_pdf(data, b"{}", "2026-01-01T00:00:00Z", carnet="c") == b"%PDF-pretend"
    assert len(calls) == 2
    last = json.loads(calls[-1])
    assert last["visit"][0]["value"] == "<U+0416>анна <U+0001> 李" and last["author"] == "Ж"


def test_the_retries_are_bounded(monkeypatch):
    import typst

    calls = []

    def compile(*args, sys_inputs, **kwargs):
        calls.append(1)
        raise _glyph_error([chr(0x4E00 + len(calls))])   # each time another character

    monkeypatch.setattr(typst, "compile", compile)
    with pytest.raises(WriteError, match="c: the procès-verbal could not be typeset"):
        pv.render_pdf({"author": "", "keywords": []}, b"{}", "2026-01-01T00:00:00Z", carnet="c")
    assert len(calls) == pv.RETRIES + 1


def test_any_other_typst_error_is_one_line(monkeypatch):
    import typst

    def compile(*args, **kwargs):
        raise _typst_error("unknown variable: dd\nsecond line", "error: unknown variable: dd\n  ┌─ x.typ:3:2\n")

    monkeypatch.setattr(typst, "compile", compile)
    with pytest.raises(WriteError) as caught:
        pv.render_pdf({"author": "", "keywords": []}, b"{}", "2026-01-01T00:00:00Z", carnet="carnets/c.xlsx")
    assert str(caught.value) == "carnets/c.xlsx: the procès-verbal could not be typeset (unknown variable: dd second line)"


# -- end to end: one hostile CSV carnet, audited with --format pdf ---------------

MADE: list = []


def carnet_with_a_stake_typed(carnet: Path, typed: str) -> Path:
    """A generated CSV carnet whose first stake's amount (2,00) reads `typed`, as a clerk typed it."""
    assert main(["generate", str(carnet), "--seances", "2", "--coups", "5", "--mises", "3", "--container", "csv",
                 "--seed", "1"]) == 0
    mises = (carnet / "mises.csv").read_text(encoding="utf-8").split("\n")
    mises[1] = mises[1].replace(";2,00;", f";{typed};", 1)
    assert typed in mises[1]
    (carnet / "mises.csv").write_text("\n".join(mises), encoding="utf-8")
    return carnet


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A CSV carnet with an emoji typed in an amount, a casino named in Chinese,
    audited with an inspector's name in Chinese: its output folder."""
    base = tmp_path_factory.mktemp("glyphs")
    carnet = carnet_with_a_stake_typed(base / "c", f"2,00 {EMOJI}")
    head = (carnet / "carnet.csv").read_text(encoding="utf-8").split("\n")
    head[1] = "澳门赌场" + head[1][head[1].index(";"):]
    (carnet / "carnet.csv").write_text("\n".join(head), encoding="utf-8")
    out = base / "out"
    made = []
    with pytest.MonkeyPatch.context() as mp:
        render = pv.render_pdf
        mp.setattr(pv, "render_pdf", lambda *args, **kwargs: made.append((args, kwargs)) or render(*args, **kwargs))
        code = main(["audit", str(carnet), "--out", str(out), "--format", "json,pdf", "--quiet", "--inspector", "李雷"])
    assert code == 1   # the emoji makes an unreadable amount: an error, as without the PV
    MADE[:] = made   # what the PV was made of, for test_typst_itself_names_what_it_refuses
    return out / "c"


@pytest.mark.slow
def test_the_pv_is_made_with_the_characters_written_as_code_points(hostile):
    from pypdf import PdfReader

    reader = PdfReader(hostile / "proces-verbal.pdf")
    text = "\n".join(page.extract_text() for page in reader.pages)
    assert "<U+674E><U+96F7>" in text                          # the inspector
    assert "<U+6FB3><U+95E8><U+8D4C><U+573A>" in text          # the casino, on every page's footer too
    assert all("<U+6FB3>" in page.extract_text() for page in reader.pages)
    assert "2,00 <U+1F600>" in text                            # the value quoted in the finding
    assert str(reader.metadata["/Author"]) == "李雷"           # the metadata is not typeset: kept as it is


@pytest.mark.slow
def test_the_attached_findings_are_those_written_beside_it(hostile):
    from pypdf import PdfReader

    written = (hostile / "findings.json").read_bytes()
    assert EMOJI.encode() in written and "澳门赌场".encode() in written
    assert PdfReader(hostile / "proces-verbal.pdf").attachments["findings.json"] == [written]


@pytest.mark.slow
def test_typst_itself_names_what_it_refuses(hostile, monkeypatch):
    """Without the table, Typst's own errors (in its words) lead to the same PV."""
    import typst

    from pypdf import PdfReader

    compiled = []
    real = typst.compile
    monkeypatch.setattr(typst, "compile", lambda *args, **kwargs: compiled.append(1) or real(*args, **kwargs))
    monkeypatch.setattr(pv, "NOT_SHOWN_RE", re.compile(r"(?!)"))   # the table lets everything through
    ((args, kwargs),) = MADE
    made = pv.render_pdf(*args, **kwargs)
    assert len(compiled) == 2   # Typst names all it refuses at once
    text = "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(made)).pages)
    assert "<U+674E><U+96F7>" in text and "2,00 <U+1F600>" in text and "<U+6FB3><U+95E8><U+8D4C><U+573A>" in text
    assert made == (hostile / "proces-verbal.pdf").read_bytes()   # the very same PV


@pytest.mark.slow
def test_a_typst_failure_stops_the_run_with_one_line(tmp_path, monkeypatch, capsys):
    import typst

    def compile(*args, **kwargs):
        raise _typst_error("layout did not converge", "error: layout did not converge\n")

    monkeypatch.setattr(typst, "compile", compile)
    carnet = ROOT / "sample_carnets" / "compliant" / "forges-table3.xlsx"
    assert main(["audit", str(carnet), "--out", str(tmp_path), "--format", "json,pdf", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip() == (f"ecarte-audit: {carnet}: the procès-verbal could not be typeset (layout did not "
                           "converge). The run stopped after 0 of 1 carnet(s); with --cache DIR, a new run resumes "
                           "where the last one stopped")
    assert not (tmp_path / carnet.name).exists()   # its files whole or absent: none half made


# -- the table against the fonts of the installed typst --------------------------

def _embedded_fonts_coverage() -> set[int]:
    """Every code point a font embedded in the typst extension maps to a glyph
    (its cmap subtables of formats 4 and 12), read from the extension's bytes."""
    import typst

    binary = next(p for p in Path(typst.__file__).parent.iterdir() if p.name.startswith("_typst"))
    data = binary.read_bytes()
    covered: set[int] = set()
    fonts = 0
    for m in re.finditer(rb"(?:OTTO|\x00\x01\x00\x00)(?=[\x00][\x05-\x3c])", data):
        start = m.start()
        tables = {}
        for i in range(struct.unpack(">H", data[start + 4:start + 6])[0]):
            record = data[start + 12 + 16 * i:start + 28 + 16 * i]
            if len(record) < 16 or not re.fullmatch(rb"[A-Za-z0-9/ ]{4}", record[:4]):
                tables = {}   # not a font's table directory: bytes that only look like its start
                break
            tag, _, offset, _ = struct.unpack(">4sIII", record)
            tables[tag] = offset
        if b"cmap" not in tables or b"name" not in tables or b"glyf" not in tables and b"CFF " not in tables:
            continue
        fonts += 1
        base = start + tables[b"cmap"]
        for i in range(struct.unpack(">H", data[base + 2:base + 4])[0]):
            platform, encoding, offset = struct.unpack(">HHI", data[base + 4 + 8 * i:base + 12 + 8 * i])
            if not (platform == 0 or platform == 3 and encoding in (1, 10)):
                continue   # only Unicode's subtables
            sub = base + offset
            kind = struct.unpack(">H", data[sub:sub + 2])[0]
            if kind == 4:
                n = struct.unpack(">H", data[sub + 6:sub + 8])[0] // 2
                ends = struct.unpack(f">{n}H", data[sub + 14:sub + 14 + 2 * n])
                starts = struct.unpack(f">{n}H", data[sub + 16 + 2 * n:sub + 16 + 4 * n])
                deltas = struct.unpack(f">{n}h", data[sub + 16 + 4 * n:sub + 16 + 6 * n])
                at = sub + 16 + 6 * n
                ranges = struct.unpack(f">{n}H", data[at:at + 2 * n])
                for k in range(n):
                    for c in range(starts[k], min(ends[k], 0xFFFE) + 1):
                        if ranges[k] == 0:
                            glyph = (c + deltas[k]) & 0xFFFF
                        else:
                            where = at + 2 * k + ranges[k] + 2 * (c - starts[k])
                            glyph = struct.unpack(">H", data[where:where + 2])[0]
                            glyph = (glyph + deltas[k]) & 0xFFFF if glyph else 0
                        if glyph:
                            covered.add(c)
            elif kind == 12:
                for k in range(struct.unpack(">I", data[sub + 12:sub + 16])[0]):
                    first, last, glyph = struct.unpack(">III", data[sub + 16 + 12 * k:sub + 28 + 12 * k])
                    covered.update(c for c in range(first, last + 1) if glyph + c - first)
    assert fonts >= 17   # Libertinus Serif (6), New Computer Modern (4) and its Math (3), DejaVu Sans Mono (4)
    return covered


STYLES = b"""#let s = json(bytes(sys.inputs.data))
#set text(font: "Libertinus Serif", size: 8pt)
#for x in s [#x #text(weight: "bold", x) #text(style: "italic", x) #text(font: "DejaVu Sans Mono", x) #parbreak()]
"""


def _refused(chars: list[int], context: str = "") -> set[int]:
    """Those of `chars` Typst refuses to set in a PDF/A-3b document in the
    PV's serif (regular, bold, italic) and its monospace font, each in a
    paragraph of its own (after `context`): Typst then names all it refuses
    at once."""
    import typst

    refused: set[int] = set()
    for _ in range(5):
        try:
            typst.compile(STYLES, font_paths=[], ignore_system_fonts=True, pdf_standards=["a-3b"],
                          sys_inputs={"data": json.dumps([context + chr(c) for c in chars if c not in refused])})
            return refused
        except typst.TypstError as exc:
            more = {ord(c) for c in pv._refused_characters(exc)} - refused
            assert more, exc
            refused |= more
    raise AssertionError("typst kept refusing")


def shown_table() -> str:
    """SHOWN as auditor/report/pv.py writes it, made from the installed typst:
    what its fonts map, less DEL and the private use areas, less what Typst
    refuses all the same (a glyph of DejaVu Sans Mono's upright fonts only,
    refused in italic; a combining mark after a Latin letter, which Typst
    sets in the letter's font)."""
    import textwrap
    import unicodedata

    fonts = sorted(c for c in _embedded_fonts_coverage()
                   if c != 0x7F and not (0xE000 <= c <= 0xF8FF or c >= 0xF0000))
    marks = [c for c in fonts if unicodedata.category(chr(c)) in ("Mn", "Me", "Mc")]
    shown = set(fonts) - _refused(fonts) - _refused(marks, "a")
    ranges: list[list[int]] = []
    for c in sorted(shown):
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    text = " ".join(f"{a:X}" if a == b else f"{a:X}-{b:X}" for a, b in ranges)
    return "\n".join(textwrap.wrap(text, 104, break_on_hyphens=False))


def _table() -> set[int]:
    out = set()
    for item in pv.SHOWN.split():
        first, _, last = item.partition("-")
        out.update(range(int(first, 16), int(last or first, 16) + 1))
    return out


@pytest.mark.slow
def test_the_table_is_what_the_installed_typst_shows():
    """Made again from the fonts of the installed typst and what it refuses (`python tests/test_pv_glyphs.py`)."""
    assert pv.SHOWN.strip() == shown_table(), \
        "typst's fonts changed: write SHOWN again in auditor/report/pv.py (python tests/test_pv_glyphs.py)"


if __name__ == "__main__":
    print(shown_table())
