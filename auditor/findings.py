"""A check's violation as the finding the outputs show: its message in the
document's language, its values written as the reports write them.

Apart from auditor.audit so that the checks over a batch, and the findings
across carnets seen from each carnet, are made in a process that imports
neither pandas nor the checks of one carnet (auditor.across)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from auditor.catalogue import RuleMeta
from auditor.i18n import format_day
from auditor.model import Cents, Day, Finding, Violation
from auditor.money import format_cents

if TYPE_CHECKING:
    from auditor.carnet import Carnet


def make_finding(meta: RuleMeta, v: Violation, carnet: Carnet | None, lang: str) -> Finding:
    """A check's violation as a finding: severity and article from the
    catalogue, the message in `lang`, the source column and cell from the
    carnet (none for a check over a batch, `carnet` None)."""
    table = carnet.tables.get(v.table) if v.table and carnet is not None else None
    column = table.source_column(v.column) if table else v.column
    cell = table.cell(v.column, v.row) if table else None
    params = {"seance": v.seance, "coup": v.coup, "rang": v.rang, "table": v.table, "column": column}
    for key, value in v.params.items():
        if key.endswith("_cents"):
            params[key[:-6]] = format_cents(value, lang)
        params[key] = format_day(value, lang) if isinstance(value, Day) else value
    expected, found = _shown(v.expected, lang), _shown(v.found, lang)
    params.setdefault("expected", expected)
    params.setdefault("found", found)
    return Finding(
        code=meta.code, severity=meta.severity, article=meta.article,
        message=meta.message(v.kind, lang).format(**params),
        table=v.table, row=v.row, column=column, cell=cell,
        seance=v.seance, coup=v.coup, rang=v.rang,
        expected=expected, found=found, impact_cents=int(v.impact_cents), field=v.column,
    )


def _shown(value, lang: str) -> str | None:
    if isinstance(value, Cents):
        return format_cents(int(value), lang)
    if isinstance(value, Day):
        return format_day(value, lang)
    return None if value is None else str(value)
