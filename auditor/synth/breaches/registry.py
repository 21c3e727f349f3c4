"""The injector registry: code ↔ function, declared once beside each function
with `@injector("EC64-01")`, as `@check` does for the rules."""

from __future__ import annotations

import inspect
import random
from typing import Callable

from auditor.catalogue import CODE_PATTERN

Tables = dict[str, list[dict]]
Injector = Callable[[Tables, random.Random], set[str]]

INJECTORS: dict[str, Injector] = {}


class CannotInject(ValueError):
    """The carnet has no place where this breach can be made cleanly."""


def injector(code: str):
    """Register a function `(tables, rng) -> codes` that breaks rule `code` once
    and returns every code the audit must then give (sometimes a breach
    necessarily shows under two codes). Refuses a malformed code, a code
    registered twice and a function of another shape."""
    if not CODE_PATTERN.match(code):
        raise ValueError(f"bad rule code {code!r}")

    def register(func: Injector) -> Injector:
        if code in INJECTORS:
            raise ValueError(f"{code} has two injectors ({INJECTORS[code].__qualname__}, {func.__qualname__})")
        if len(inspect.signature(func).parameters) != 2:
            raise TypeError(f"injector {func.__qualname__} must take (tables, rng)")
        INJECTORS[code] = func
        return func

    return register
