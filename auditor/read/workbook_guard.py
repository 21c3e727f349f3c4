"""Checks an .xlsx workbook's zip and XML before calamine parses it.

calamine is fast but trusts its input, so before it sees a byte:

- the zip directory and every member are checked as they are inflated
  (`auditor.zippkg`), and the prolog of every XML part is read for a DOCTYPE or
  an entity declaration (`xml_prolog`);
- a huge `uniqueCount` in sharedStrings.xml, which calamine would reserve,
  is refused here;
- each sheet that holds a carnet table is scanned for the cells it declares
  (`sheet_scan`).

Every refusal is a `Refused(kind, params)`, an EC00-01 message variant.
The names of the modules it was split into stay importable from here.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass

from defusedxml.ElementTree import iterparse as safe_iterparse

from auditor.limits import Limits
from auditor.read.sheet_scan import FormulaCell, SheetScan, check_extent, scan_sheet
from auditor.read.xml_prolog import PrologReader, _local, read_part
from auditor.zippkg import Refused, open_zip

__all__ = ["FormulaCell", "PrologReader", "SheetScan", "WorkbookCheck", "check_extent", "check_workbook", "read_part",
           "scan_sheet"]

XML_SUFFIXES = (".xml", ".rels")
REL_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


@dataclass
class WorkbookCheck:
    """What the guard found in a workbook before calamine opens it: the sheets, their scans, and the sheets it
    refuses."""

    sheet_members: dict[str, str]       # sheet name → zip member (as calamine resolves it)
    scans: dict[str, SheetScan]         # sheet name → scan (sheets asked for only)
    refused_sheets: dict[str, Refused]  # sheet name → why it cannot be read


def check_workbook(data: bytes, wanted, limits: Limits) -> WorkbookCheck:
    """Check the zip and every XML part; scan the sheets `wanted(name)` accepts.

    Raises Refused for the whole workbook; a sheet that alone is unsafe is
    listed in `refused_sheets` and the other tables are still read.
    """
    zf, members = open_zip(data, limits)
    budget = [limits.max_unzipped_bytes]
    parts: dict[str, bytes] = {}
    # The workbook and its relationships first: they say which member is which sheet.
    for key in ("xl/_rels/workbook.xml.rels", "xl/workbook.xml"):
        if key in members:
            parts[key] = read_part(data, members[key], limits, budget)
    sheet_members = _sheet_members(parts)
    wanted_members = {m.lower(): name for name, m in sheet_members.items() if wanted(name)}
    scans: dict[str, SheetScan] = {}
    refused: dict[str, Refused] = {}
    for key, info in sorted(members.items()):
        if key in parts or info.filename.endswith("/") or not key.endswith(XML_SUFFIXES):
            continue
        sheet = wanted_members.get(key)
        if sheet is None:
            prolog = read_part(data, info, limits, budget, keep=False)
            if key == "xl/sharedstrings.xml":
                _check_shared_strings(prolog, info, limits)
            continue
        body = read_part(data, info, limits, budget)
        try:
            scans[sheet] = scan_sheet(body, limits)
        except Refused as exc:
            refused[sheet] = exc
    if _full_calc_on_load(parts.get("xl/workbook.xml", b"")):
        _not_computed(scans)
    return WorkbookCheck(sheet_members, scans, refused)


# `<calcPr fullCalcOnLoad="1"/>`: the writer (xlsxwriter, so pandas'
# `to_excel`; openpyxl) computed nothing and asks the opening program to: the
# values it stored beside its formulas (`0`, or nothing) are not results.
_FULL_CALC = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?calcPr\b[^>]*\bfullCalcOnLoad\s*=\s*[\"'](?:1|true)[\"']")


def _full_calc_on_load(workbook_xml: bytes) -> bool:
    return _FULL_CALC.search(workbook_xml) is not None


def _not_computed(scans: dict[str, SheetScan]) -> None:
    """Every formula of the workbook is not computed (format v1.2): its stored
    value, an error value included, is not the cell's value."""
    for scan in scans.values():
        places = {(f.row, f.col) for f in scan.formulas}
        scan.formulas = [FormulaCell(f.row, f.col, False) for f in scan.formulas]
        scan.errors = [e for e in scan.errors if (e.row, e.col) not in places]


def _check_shared_strings(root, info: zipfile.ZipInfo, limits: Limits) -> None:
    # calamine reserves `uniqueCount` strings up front: a lie there is an
    # allocation of any size. A real count cannot exceed one per 5 bytes (`<si/>`).
    if root is None:
        return
    text = root[1].get("uniqueCount")
    if text is None:
        return
    try:
        count = int(text.strip())
    except ValueError:
        return
    if count > limits.max_cells or count > info.file_size // 5 + 1:
        raise Refused("shared_strings", member=info.filename, count=count)


def _sheet_members(parts: dict[str, bytes]) -> dict[str, str]:
    """Sheet name → zip member, resolved the way calamine resolves it."""
    rels: dict[str, str] = {}
    if "xl/_rels/workbook.xml.rels" in parts:
        for _, elem in _iter_small(parts["xl/_rels/workbook.xml.rels"]):
            if _local(elem.tag) == "Relationship" and elem.get("Id") is not None:
                rels[elem.get("Id")] = elem.get("Target") or ""
    out: dict[str, str] = {}
    if "xl/workbook.xml" not in parts:
        return out
    for _, elem in _iter_small(parts["xl/workbook.xml"]):
        if _local(elem.tag) != "sheet":
            continue
        rid = elem.get(f"{{{REL_NS}}}id")
        target = rels.get(rid or "")
        if target is None or elem.get("name") is None:
            continue
        if target.startswith("/xl/"):
            path = target[1:]
        elif target.startswith("xl/"):
            path = target
        else:
            path = f"xl/{target}"
        out.setdefault(elem.get("name"), path)
    return out


def _iter_small(part: bytes):
    try:
        yield from safe_iterparse(io.BytesIO(part), events=("end",), forbid_dtd=True)
    except Exception:
        return  # malformed: calamine will say so
