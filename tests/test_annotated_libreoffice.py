"""annotated.xlsx as LibreOffice reads it: converted to .ods by soffice, every
comment openpyxl sees is on the same cell with the same text, and the fills
too. Skipped where LibreOffice is not installed (the openpyxl read-back in
test_report_xlsx.py holds everywhere)."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from defusedxml.ElementTree import fromstring
from openpyxl import load_workbook

from auditor.catalogue import load_profile
from auditor.read.raw import column_letter
from auditor.audit import audit_path
from auditor.report.excel_report import write_annotated

SOFFICE = shutil.which("soffice")
ROOT = Path(__file__).resolve().parent.parent
NS = {"table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
      "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
      "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0"}


def ods_comments(path: Path) -> dict[tuple[str, str], str]:
    """(sheet, cell) → comment text, from an .ods file's content.xml."""
    root = fromstring(zipfile.ZipFile(path).read("content.xml"))
    t = "{%s}" % NS["table"]
    out = {}
    for table in root.iter(t + "table"):
        name = table.get(t + "name")
        r = 0
        for row in table.iter(t + "table-row"):
            rows = int(row.get(t + "number-rows-repeated", "1"))
            c = 0
            for cell in row:
                if not cell.tag.endswith(("}table-cell", "}covered-table-cell")):
                    continue
                repeat = int(cell.get(t + "number-columns-repeated", "1"))
                note = cell.find("office:annotation", NS)
                if note is not None:
                    lines = ["".join(p.itertext()) for p in note.findall("text:p", NS)]
                    out[(name, f"{column_letter(c)}{r + 1}")] = "\n".join(lines)
                c += repeat
            r += rows
    return out


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.skipif(SOFFICE is None, reason="LibreOffice (soffice) is not installed")
@pytest.mark.parametrize("sample", ["infractions/numerotation-et-mises.xlsx", "infractions/tickets"])
def test_libreoffice_keeps_every_comment_on_its_cell(sample, tmp_path):
    source = ROOT / "sample_carnets" / sample
    result = audit_path(source, load_profile(), "fr")
    xlsx = write_annotated(result, source, tmp_path / "annotated.xlsx")
    profile = tmp_path / "lo-profile"
    subprocess.run([SOFFICE, f"-env:UserInstallation=file://{profile}", "--headless", "--convert-to", "ods",
                    "--outdir", str(tmp_path), str(xlsx)], check=True, capture_output=True, timeout=600)
    seen = ods_comments(tmp_path / "annotated.ods")
    wb = load_workbook(xlsx)
    want = {(ws.title, c.coordinate): c.comment.text for ws in wb.worksheets for row in ws.iter_rows()
            for c in row if c.comment is not None}
    assert want, "the sample must have findings on cells"
    assert {k: v.replace("\r", "") for k, v in seen.items()} == want
