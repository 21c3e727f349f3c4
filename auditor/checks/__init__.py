"""The checks, one module per article group. The lists below are the manifest:
a test asserts that every module of this folder is in one of them. Importing
a module registers its checks: the tables are asked for here (`registered`,
`registered_batch`), which import their modules first, so that the registry
they register into never imports the checks back.

The checks over a batch (`BATCH_MODULES`) need neither pandas nor the checks
of one carnet: a batch's command, which runs only these, imports neither
(its workers audit the carnets)."""

from __future__ import annotations

import functools
import importlib

from auditor.registry import BATCH_REGISTRY, REGISTRY, BatchCheckSpec, CheckSpec

# In the order they always registered in (a dict's order is the registry's).
CARNET_MODULES = ("art63", "art64", "art65", "art66", "ec00_format", "tickets_amounts", "tickets_books",
                  "tickets_series")
BATCH_MODULES = ("archive", "cross_carnet")


@functools.cache   # asked for at each carnet's audit
def _imported(names: tuple[str, ...]) -> tuple:
    return tuple(importlib.import_module(f"auditor.checks.{name}") for name in names)


def registered() -> dict[str, CheckSpec]:
    """Every registered check of one carnet: code → its function, needs and module."""
    _imported(CARNET_MODULES)
    return REGISTRY


def registered_batch() -> dict[str, BatchCheckSpec]:
    """Every registered check over a batch of carnets."""
    _imported(BATCH_MODULES)
    return BATCH_REGISTRY


def __getattr__(name: str):
    if name == "MODULES":   # every module of checks, imported
        return _imported(CARNET_MODULES + BATCH_MODULES)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
