"""The money at stake, each cent once (docs/interpretations.md, "Money at
stake"): a carnet's total, the same with its findings across carnets, and a
batch's.

A lost ticket shows under several rules of one same-loss group of the
catalogue: its coup's levy recorded without its tickets (EC661-01), and its
number missing from the value's series — inside a carnet (EC83-01) or
between two carnets of the table (EC83-04). Within a group, the rules that
count the same kind of money (`Money`: the levy without its tickets, or the
face value of missing numbers) add up: they are different tickets; the
kinds are two accounts of the same tickets, and the total takes the larger,
per séance. A number missing between two carnets belongs to the séance at
its end in each carnet (a carnet's own total); in the batch's total it is
the ticket whose levy one of the two carnets recorded without it, at its
end or at its start (`batch_at_stake`).

Money is integer cents; only positive impacts count (money owed, not money
over-collected).
"""

from __future__ import annotations

from typing import Iterable

from auditor.catalogue import load_catalogue, same_loss_groups

# A carnet's money at stake in two parts: the cents outside every same-loss
# group, and per (group, séance) the cents of each kind of money.
Buckets = dict[tuple, dict[str, int]]


def loss_kinds() -> dict[str, tuple[str, str]]:
    """Per rule of a same-loss group: its group and its kind of money."""
    catalogue = load_catalogue()
    return {code: (group, catalogue[code].money.value) for group, codes in same_loss_groups().items()
            for code in codes}


def stake_parts(findings: Iterable) -> tuple[int, Buckets]:
    """The findings' positive impacts: those outside any same-loss group
    summed, the others per (group, séance) and kind of money."""
    of = loss_kinds()
    plain, buckets = 0, {}
    for f in findings:
        cents = int(f.impact_cents or 0)
        if cents <= 0:
            continue
        grouped = of.get(f.code)
        if grouped is None:
            plain += cents
        else:
            kinds = buckets.setdefault((grouped[0], f.seance), {})
            kinds[grouped[1]] = kinds.get(grouped[1], 0) + cents
    return plain, buckets


def total_at_stake(findings: Iterable) -> int:
    """A carnet's money at stake, each cent once: per séance, the larger kind
    of money of each same-loss group. A finding across carnets (seen from
    this carnet: its séance is this carnet's) counts in this carnet's séance."""
    return _counted(*stake_parts(findings))


def _counted(plain: int, buckets: Buckets) -> int:
    """`stake_parts`' two parts as one total: per (group, séance), the larger kind."""
    return plain + sum(max(kinds.values()) for kinds in buckets.values())


def batch_at_stake(parts: dict[str, tuple[int, Buckets]], cross: Iterable[dict]) -> int:
    """A batch's money at stake, each cent once. `parts`: per carnet id, its own
    findings' `stake_parts`; `cross`: the findings across carnets as
    summary.json lists them (`code`, `impact_cents`, `across` with each
    place's `carnet` and `seance`).

    The carnets' own totals, plus each finding across carnets' money except
    what one of its places' séances already counts under the other kind of
    its group: a number missing between two carnets is the ticket whose levy
    one of them recorded without it (EC661-01 there), if that séance's levy
    without tickets exceeds its own missing numbers. Each séance's room is
    used once; a finding takes from its last place first (EC83-04's earlier
    carnet, whose end comes first in the table), in the order of `cross`.
    Never below a carnet's own total: a loss of one carnet never cancels
    another's."""
    of = loss_kinds()
    total = sum(_counted(*own) for own in parts.values())
    seances = {(carnet, group, seance): dict(kinds)
               for carnet, (_, buckets) in parts.items() for (group, seance), kinds in buckets.items()}
    for f in cross:
        cents = int(f.get("impact_cents") or 0)
        if cents <= 0:
            continue
        grouped = of.get(f["code"])
        for p in reversed(f.get("across") or ()) if grouped is not None else ():
            kinds = seances.get((p["carnet"], grouped[0], p.get("seance")))
            if kinds is None:
                continue
            # Up to its larger kind, the séance takes them in without counting more.
            taken = min(cents, max(kinds.values()) - kinds.get(grouped[1], 0))
            kinds[grouped[1]] = kinds.get(grouped[1], 0) + taken
            cents -= taken
        total += cents
    return total
