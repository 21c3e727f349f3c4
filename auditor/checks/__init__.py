"""The checks, one module per article group. The list below is the manifest:
a test asserts that every module of this folder is in it. Importing them
registers their checks: the tables are asked for here (`registered`,
`registered_batch`), once every module has registered, so that the registry
they register into never imports the checks back."""

from auditor.checks import (archive, art63, art64, art65, art66, cross_carnet, ec00_format, tickets_amounts,
                            tickets_books, tickets_series)

from auditor.registry import BATCH_REGISTRY, REGISTRY, BatchCheckSpec, CheckSpec

MODULES = (ec00_format, art63, art64, art65, art66, tickets_amounts, tickets_series, tickets_books, cross_carnet,
           archive)


def registered() -> dict[str, CheckSpec]:
    """Every registered check: code → its function, needs and module."""
    return REGISTRY


def registered_batch() -> dict[str, BatchCheckSpec]:
    """Every registered check over a batch of carnets."""
    return BATCH_REGISTRY
