"""The check registry: code ↔ function, declared once beside each function.

`@check("EC64-01", needs=("coups",))` registers a function that takes the
normalised carnet and the profile and yields Violations. The engine joins
each code with its catalogue entry (severity, article, messages), so a check
never states its own severity or article.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from auditor.catalogue import CODE_PATTERN
from auditor.model import Violation

CheckFn = Callable[..., Iterable[Violation]]


@dataclass(frozen=True)
class CheckSpec:
    code: str
    func: CheckFn
    needs: tuple[str, ...]          # "table" or "table.column" the rule cannot run without
    module: str
    # Coup types the check does not handle yet; the engine says how many were passed over.
    passes_over: tuple[str, ...] = ()


REGISTRY: dict[str, CheckSpec] = {}


def check(code: str, *, needs: tuple[str, ...] = (), passes_over: tuple[str, ...] = ()):
    if not CODE_PATTERN.match(code):
        raise ValueError(f"bad rule code {code!r}")

    def register(func: CheckFn) -> CheckFn:
        if code in REGISTRY:
            raise ValueError(f"{code} registered twice ({REGISTRY[code].func.__qualname__}, {func.__qualname__})")
        REGISTRY[code] = CheckSpec(code, func, tuple(needs), func.__module__, tuple(passes_over))
        return func

    return register


def registered() -> dict[str, CheckSpec]:
    """Every registered check (importing the explicit list of article modules)."""
    import auditor.checks  # noqa: F401  (the module list registers the checks)

    return REGISTRY
