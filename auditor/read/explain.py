"""`ecarte-audit columns PATH`: how each sheet and column of a carnet was understood."""

from __future__ import annotations

from auditor.read.columns import AMBIGUOUS_KINDS
from auditor.read.raw import RawCarnet

# The words come from the command line's label files, [columns] `word_…`
# (this text is what `ecarte-audit columns` prints).
_WORDS = {
    "container": "columns.word_container",
    "header": "columns.word_header",
    "title": "columns.word_title",
    "totals": "columns.word_totals",
    "ignored": "columns.word_ignored",
    "ambiguous": "columns.word_ambiguous",
    "name": "columns.word_name",
    "variant": "columns.word_variant",
    "mapping": "columns.word_mapping",
    "rows": "columns.word_rows",
    "unreadable": "columns.word_unreadable",
    "missing": "columns.word_missing",
    "problem": "columns.word_problem",
    "mapping_file": "columns.word_mapping_file",
    "colon": "columns.word_colon",
}


class _Blank(dict):
    """Format values; a placeholder the problem does not fill reads empty."""

    def __missing__(self, key):
        return ""


def _problem_text(p, lang: str) -> str:
    """A reading problem in words: the catalogue's message of its EC00 code and kind."""
    from auditor.catalogue import load_catalogue

    meta = load_catalogue().get(p.code)
    values = _Blank({"table": p.table or "", "column": p.column or "", **p.params})
    try:
        return meta.message(p.kind, lang).format_map(values) if meta else f"{p.kind} {_params(p.params)}".strip()
    except (ValueError, IndexError, AttributeError, KeyError):   # a template this problem cannot fill
        return f"{p.kind} {_params(p.params)}".strip()


def explain_reading(raw: RawCarnet, shown: str, lang: str = "fr") -> str:
    """How the carnet was read, in words: container, header rows, columns found and mapped, rows left out."""
    from auditor.i18n import cli_label
    from auditor.read.columns import table_columns

    w = {word: cli_label(key, lang) for word, key in _WORDS.items()}
    notes = raw.reading()
    lines = [f"{shown} ({w['container']} {notes['container']})"]
    if notes["columns_file"]:
        lines.append(f"  {w['mapping_file']}{w['colon']}{notes['columns_file']['file']} "
                     f"(sha256 {notes['columns_file']['sha256'][:12]}…)")
    for p in raw.problems:
        if p.table is None:
            lines.append(f"  {w['problem']}{w['colon']}{_problem_text(p, lang)}")
    if raw.unreadable:
        lines.append(f"  {w['unreadable']}")
        return "\n".join(lines)
    ambiguous = {(p.table, p.column) for p in raw.problems if p.kind in AMBIGUOUS_KINDS}
    for t in notes["tables"]:
        spec = table_columns(t["table"])
        lines.append(f"  {t['table']} ← « {t['sheet']} », {w['header']} {t['header_row']}, "
                     f"{w['rows']} {t['rows_read']}")
        for c in t["columns"]:
            letter = f"{c['letter']}{w['colon']}" if c["letter"] else ""
            if c["column"]:
                lines.append(f"    {letter}« {c['source']} » → {c['column']} ({w[c['how']]})")
            else:
                lost = [col for (tab, col) in ambiguous if tab == t["table"]
                        and spec is not None and col in _targets(c["source"], t["table"])]
                why = f"{w['ambiguous']}{w['colon']}{lost[0]}" if lost else w["ignored"]
                lines.append(f"    {letter}« {c['source']} » ({why})")
        used = {c["column"] for c in t["columns"] if c["column"]}
        missing = [c for c in (spec.required if spec else ()) if c not in used]
        if missing:
            lines.append(f"    {w['missing']}{w['colon']}{', '.join(missing)}")
        if t["title_rows"]:
            lines.append(f"    {w['title']}{w['colon']}{', '.join(map(str, t['title_rows']))}")
        if t["totals_rows"]:
            lines.append(f"    {w['totals']}{w['colon']}{', '.join(map(str, t['totals_rows']))}")
    for p in raw.problems:
        if p.table is not None and p.kind not in AMBIGUOUS_KINDS and p.code == "EC00-01":
            lines.append(f"  {p.table}{w['colon']}{w['problem']}{w['colon']}{_problem_text(p, lang)}")
    return "\n".join(lines)


def _targets(source: str, table: str) -> set[str]:
    from auditor.read.columns import fold, table_columns

    spec = table_columns(table)
    hit = spec.names.get(fold(source)) if spec else None
    return {hit} if hit else set()


def _params(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items() if k != "table")
