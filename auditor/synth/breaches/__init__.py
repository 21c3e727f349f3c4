"""Surgical breaches for generated carnets: each injector breaks one rule and
keeps the rest of the carnet intact, and says which codes the audit must then
give (sometimes a breach necessarily shows under two codes).

Used by `ecarte-audit generate --breaches`, the sample carnets, and the
metamorphic tests. Injectors are registered per article module with
`@injector(code)` (`registry.py`) and share the helpers of `tables.py`. The
chouette injectors (EC65-*, EC66-02) need a carnet generated with
`Spec(chouette=True)` and raise `CannotInject` without a chouette coup; the
others touch simple coups, tickets, fiches or séances only.
"""

from __future__ import annotations

import random

# The article modules register their injectors when imported.
from auditor.synth.breaches import art63, art64, art65, art66, ec00_format, tickets
from auditor.errors import Message
from auditor.synth.breaches.registry import INJECTORS, CannotInject, Tables

MODULES = (ec00_format, art63, art64, art65, art66, tickets)

__all__ = ["INJECTORS", "CannotInject", "MODULES", "Tables", "inject"]


def inject(tables: Tables, codes: list[str], seed: int = 0) -> set[str]:
    """Break each rule of `codes` once; return every code the audit must give."""
    rng = random.Random(seed)
    unknown = [c for c in codes if c not in INJECTORS]
    if unknown:
        raise CannotInject(Message("generate.no_injector", codes=", ".join(unknown),
                                   available=", ".join(sorted(INJECTORS))))
    expected: set[str] = set()
    for code in codes:
        try:
            expected |= INJECTORS[code](tables, rng)
        except CannotInject as exc:
            # The reason is the injector's own (synthetic-carnet internals, English).
            raise CannotInject(Message("generate.cannot_make", code=code, reason=exc)) from None
        except (TypeError, ValueError, KeyError, IndexError) as exc:
            # An earlier breach (an unreadable cell, a dropped row) left this
            # injector a carnet it cannot work on: refuse the combination.
            done = ", ".join(codes[:codes.index(code)])
            raise CannotInject(Message("generate.cannot_combine", code=code, earlier=done,
                                       reason=type(exc).__name__)) from None
    return expected
