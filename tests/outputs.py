"""The outputs of an audit, in a form two runs can be compared by: every file
written by `ecarte-audit audit`, with the annotated workbook replaced by a
text dump of what a reader sees in it (cell values, types, comments, fills,
fonts, links, sheets) rather than its zip bytes.

Used by the gold test (`tests/test_gold.py`, `make gold`) and by
`scripts/compare_outputs.py` (a digest of the outputs of many generated
carnets, to compare before and after a refactor).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
from pathlib import Path

EPOCH = "1767225600"   # 2026-01-01T00:00:00Z: the one timestamp of every gold output
WORKBOOK_DUMP = ".dump.txt"


@contextlib.contextmanager
def fixed_clock(epoch: str = EPOCH):
    """SOURCE_DATE_EPOCH set for the block, restored after."""
    old = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = epoch
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("SOURCE_DATE_EPOCH", None)
        else:
            os.environ["SOURCE_DATE_EPOCH"] = old


def audit_tree(paths: list[Path], out: Path, lang: str = "fr", jobs: int = 1) -> int:
    """Audit `paths` into `out` (html, json and xlsx) with the fixed clock, as
    the command line does; returns the exit status."""
    from auditor.cli import main

    with fixed_clock():
        return main(["audit", *map(str, paths), "--out", str(out), "--format", "html,json,xlsx",
                     "--lang", lang, "--fail-on", "never", "--jobs", str(jobs), "--quiet"])


def workbook_dump(data: bytes) -> str:
    """What a reader sees in a workbook, as stable text: a line per sheet, then
    a line per cell holding a value, a comment or a style (`A1 {json}`), so a
    difference shows as a readable diff."""
    from openpyxl import load_workbook

    def line(obj) -> str:
        return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)

    wb = load_workbook(io.BytesIO(data), rich_text=False)
    out = [line({"active": wb.index(wb.active) if wb.worksheets else None,
                 "created": wb.properties.created, "modified": wb.properties.modified,
                 "creator": wb.properties.creator})]
    for ws in wb.worksheets:
        out.append("sheet " + line({"title": ws.title, "state": ws.sheet_state, "freeze": ws.freeze_panes,
                                    "tab_selected": bool(ws.sheet_view.tabSelected),
                                    "auto_filter": ws.auto_filter.ref,
                                    "widths": {k: v.width for k, v in sorted(ws.column_dimensions.items())
                                               if v.customWidth}}))
        for row in ws.iter_rows():
            for c in row:
                entry: dict = {}
                if c.value is not None:
                    entry["v"] = c.value if isinstance(c.value, (int, str, bool)) else repr(c.value)
                    entry["t"] = c.data_type
                if c.number_format != "General":
                    entry["fmt"] = c.number_format
                if c.quotePrefix:
                    entry["quote"] = True
                if c.fill is not None and c.fill.fill_type:
                    entry["fill"] = [c.fill.fill_type, _colour(c.fill.fgColor)]
                f = c.font
                if f is not None and (f.b or f.i or f.u or _colour(f.color) not in (None, "FF000000", "theme:1")):
                    entry["font"] = [bool(f.b), bool(f.i), f.u, _colour(f.color)]
                if c.comment is not None:
                    entry["comment"] = [c.comment.author, c.comment.text, c.comment.width, c.comment.height]
                if c.hyperlink is not None:
                    entry["link"] = [c.hyperlink.location, c.hyperlink.target]
                if entry:
                    out.append(f"{c.coordinate} {line(entry)}")
    return "\n".join(out) + "\n"


def _colour(color) -> str | None:
    """An rgb colour as its hex, a theme or indexed one by its number."""
    if color is None:
        return None
    if color.type == "rgb":
        return color.rgb
    return f"{color.type}:{getattr(color, color.type)}"


def comparable_files(out: Path) -> dict[str, bytes]:
    """Every file under `out` (relative POSIX path → bytes), each `.xlsx`
    replaced by its dump under the name `<file>.dump.json`."""
    files: dict[str, bytes] = {}
    for p in sorted(out.rglob("*")):
        if not p.is_file():
            continue
        rel = p.relative_to(out).as_posix()
        if p.suffix == ".xlsx":
            files[rel + WORKBOOK_DUMP] = workbook_dump(p.read_bytes()).encode("utf-8")
        else:
            files[rel] = p.read_bytes()
    return files


def digest_lines(files: dict[str, bytes]) -> list[str]:
    """One `sha256  path` line per file, sorted by path."""
    return [f"{hashlib.sha256(data).hexdigest()}  {name}" for name, data in sorted(files.items())]


ROOT = Path(__file__).resolve().parent.parent
GOLD = ROOT / "tests" / "gold"
# Kept as `<file>.gold`: data, not code or pages, for the tools that read the tree.
SUFFIX = ".gold"
LANGS = ("fr", "en")


def kept_gold(lang: str) -> dict[str, bytes]:
    """The outputs kept under `tests/gold/<lang>/`, by the names `gold_files` gives."""
    folder = GOLD / lang
    return {p.relative_to(folder).as_posix().removesuffix(SUFFIX): p.read_bytes()
            for p in sorted(folder.rglob("*" + SUFFIX)) if p.is_file()}


def gold_files(lang: str) -> dict[str, bytes]:
    """The comparable outputs of `sample_carnets/` audited as one batch in
    `lang`, from the repository root (so the paths shown are `sample_carnets/…`)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="ecarte-gold-") as tmp, contextlib.chdir(ROOT):
        out = Path(tmp) / "out"
        audit_tree([Path("sample_carnets")], out, lang)
        return comparable_files(out)


# -- the procès-verbal's gold: its text as pypdf extracts it ---------------------

PV_GOLD = ROOT / "tests" / "gold-pv"
PV_SAMPLE = ROOT / "sample_carnets" / "infractions" / "prelevements"   # findings with money and an information


def pv_text(data: bytes) -> str:
    """The text of a PDF, page by page (a form feed between pages), as pypdf extracts it."""
    from pypdf import PdfReader

    return "\f\n".join(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages) + "\n"


def pv_gold_text(lang: str, out: Path) -> str:
    """The unsigned procès-verbal of PV_SAMPLE in `lang`, with the fixed clock and a visit, as text."""
    from auditor.cli import main

    # From the repository, with a relative path: the PV names its source as given.
    with fixed_clock(), contextlib.chdir(ROOT):
        main(["audit", str(PV_SAMPLE.relative_to(ROOT)), "--out", str(out), "--format", "pdf", "--lang", lang, "--fail-on", "never",
              "--jobs", "1", "--quiet", "--inspector", "Jeanne Dupont", "--grade", "Inspectrice principale",
              "--place", "Forges-les-Eaux"])
    return pv_text((out / PV_SAMPLE.name / "proces-verbal.pdf").read_bytes())
