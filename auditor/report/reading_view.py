"""The report's reading-notes section: how the source was understood (the
`reading` section of findings.json, for an inspector's eyes)."""

from __future__ import annotations

from auditor.model import AuditResult


def _rows(rows: list[int]) -> str:
    """[1, 2, 3, 7] → `1–3, 7`."""
    parts, start = [], None
    for i, r in enumerate(rows):
        if start is None:
            start = r
        if i + 1 == len(rows) or rows[i + 1] != r + 1:
            parts.append(str(start) if start == r else f"{start}–{r}")
            start = None
    return ", ".join(parts)


def reading_section(result: AuditResult, lab: dict) -> dict | None:
    """The report's reading section (how the carnet was read), or None without reading notes."""
    notes = result.carnet.reading
    if not notes or not notes.get("tables"):
        return None
    container = notes["container"]
    lines = [lab["rd_intro"].format(container=container)]
    if notes.get("columns_file"):
        cf = notes["columns_file"]
        lines.append(lab["rd_mapping"].format(file=cf["file"], sha256=cf["sha256"][:16] + "…"))
    if container not in ("xlsx", "csv"):
        lines.append(lab["rd_annotated"].format(container=container))
    rows = []
    for t in notes["tables"]:
        columns = []
        for c in t["columns"]:
            where = f"{c['letter']} " if c["letter"] else ""
            if c["column"]:
                how = lab.get(f"rd_how_{c['how']}", "")
                columns.append(f"{where}« {c['source']} » → {c['column']}" + (f" ({how})" if c["how"] != "name" else ""))
            else:
                columns.append(f"{where}« {c['source']} » ({lab['rd_ignored']})")
        left = []
        if t["title_rows"]:
            left.append(lab["rd_title_rows"].format(rows=_rows(t["title_rows"])))
        if t["totals_rows"]:
            left.append(lab["rd_totals_rows"].format(rows=_rows(t["totals_rows"])))
        rows.append({"table": t["table"], "sheet": t["sheet"], "header_row": t["header_row"],
                     "columns": columns, "left_out": "; ".join(left) or lab["rd_none"]})
    return {"lines": lines, "rows": rows}
