"""The check registry: code ↔ function, declared once beside each function.

`@check("EC64-01", needs=("coups.seance,coup",))` registers a function that
takes the normalised carnet and the profile and yields Violations. `needs`
lists every table and column the rule reads to decide (`table.column`, or
`table.a,b,c` for several columns of one table): the engine runs the rule only
when all of them are in the carnet, and marks it `not_checked` naming what is
absent otherwise. An optional column the format gives a default (`restitue`,
`dernier` …) is in the carnet when absent (its default), never when two source
columns name it (`Carnet.has`). The engine joins
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
    """A registered rule: its code, function, and what it needs to run."""

    code: str
    func: CheckFn
    needs: tuple[str, ...]          # "table" or "table.column" the rule cannot run without (expanded)
    module: str
    # Coup types the check does not handle yet; the engine says how many were passed over.
    passes_over: tuple[str, ...] = ()
    # Columns of an optional table the rule reads when the table is there (without
    # the table it does without, e.g. books as the aligned blocks of art. 82).
    needs_if_present: tuple[str, ...] = ()

    def required(self, tables) -> tuple[str, ...]:
        """What the rule needs in a carnet holding `tables`."""
        return self.needs + tuple(n for n in self.needs_if_present if n.partition(".")[0] in tables)


REGISTRY: dict[str, CheckSpec] = {}


def check(code: str, *, needs: tuple[str, ...] = (), passes_over: tuple[str, ...] = (),
          needs_if_present: tuple[str, ...] = ()):
    """Register a rule: a function `(carnet, profile)` yielding Violations,
    run only when the carnet has every table or column of `needs` (and, for a
    table of `needs_if_present` that the carnet has, its columns)."""
    if not CODE_PATTERN.match(code):
        raise ValueError(f"bad rule code {code!r}")

    def register(func: CheckFn) -> CheckFn:
        if code in REGISTRY:
            raise ValueError(f"{code} registered twice ({REGISTRY[code].func.__qualname__}, {func.__qualname__})")
        REGISTRY[code] = CheckSpec(code, func, expand_needs(needs), func.__module__, tuple(passes_over),
                                   expand_needs(needs_if_present))
        return func

    return register


@dataclass(frozen=True)
class BatchCheckSpec:
    """A check over the carnets of a whole batch (EC82-03 across tables)."""

    code: str
    func: CheckFn
    module: str
    needs: tuple[str, ...] = ()     # the carnet tables whose facts it compares (tickets)


BATCH_REGISTRY: dict[str, BatchCheckSpec] = {}


def batch_check(code: str, needs: tuple[str, ...] = ()):
    """Register a function that takes a batch (a sequence of `BatchCarnet`) and
    the profile and yields Violations, located in the carnet where each one
    shows. A code may have a check per carnet as well (EC82-03: the same
    ticket twice within one carnet, or at two tables of one casino)."""
    if not CODE_PATTERN.match(code):
        raise ValueError(f"bad rule code {code!r}")

    def register(func: CheckFn) -> CheckFn:
        if code in BATCH_REGISTRY:
            raise ValueError(f"{code} has two batch checks ({BATCH_REGISTRY[code].func.__qualname__}, "
                             f"{func.__qualname__})")
        BATCH_REGISTRY[code] = BatchCheckSpec(code, func, func.__module__, tuple(needs))
        return func

    return register


def expand_needs(needs) -> tuple[str, ...]:
    """`("coups.seance,coup", "fiches")` → `("coups.seance", "coups.coup", "fiches")`, without repeats."""
    out: list[str] = []
    for need in needs:
        table, dot, columns = need.partition(".")
        for item in ([f"{table}.{c.strip()}" for c in columns.split(",")] if dot else [table]):
            if item not in out:
                out.append(item)
    return tuple(out)

