"""The one cache of derived facts: a memo held by the carnet itself, so a fact
lives exactly as long as its carnet and is never found again for another one."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Callable, TypeVar

from auditor.threads import build_once

if TYPE_CHECKING:
    from auditor.carnet import Carnet

T = TypeVar("T")


def per_carnet(build: Callable[..., T]) -> Callable[..., T]:
    """Derive something once per carnet (and per further arguments, such as the
    profile, compared by identity): several rules, the summary and the report
    read the same expected levies, the same card holders, the same ledger."""
    @functools.wraps(build)
    def derived(carnet: "Carnet", *args):
        memo = carnet.__dict__.setdefault("_derived", {})
        key = (build, *map(id, args))
        got = memo.get(key)
        if got is None:
            # Kept with the args, which keeps them alive with their ids.
            got = build_once(carnet.__dict__, memo, key, lambda: (args, build(carnet, *args)))
        return got[1]
    return derived


def forget(carnet: "Carnet", derived: Callable) -> None:
    """Drop what `derived` (a `per_carnet` function) holds for this carnet, so
    that the next call builds it again (benchmarks time the building)."""
    build = getattr(derived, "__wrapped__", derived)
    memo = carnet.__dict__.get("_derived", {})
    for key in [k for k in memo if k[0] is build]:
        del memo[key]
