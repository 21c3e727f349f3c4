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
its end in each carnet (a carnet's own total) and, in the batch's total, to
both: the ticket was lost at the end of the earlier carnet or at the start
of the later, and the two séances are one account.

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
    plain, buckets = stake_parts(findings)
    return plain + sum(max(kinds.values()) for kinds in buckets.values())


def batch_at_stake(parts: dict[str, tuple[int, Buckets]], cross: Iterable[dict]) -> int:
    """A batch's money at stake, each cent once. `parts`: per carnet id, its own
    findings' `stake_parts`; `cross`: the findings across carnets as
    summary.json lists them (`code`, `impact_cents`, `across` with each
    place's `carnet` and `seance`). A finding across carnets of a same-loss
    group joins the séances of all its places into one account."""
    of = loss_kinds()
    plain = sum(p for p, _ in parts.values())
    parent: dict[tuple, tuple] = {}

    def root(key: tuple) -> tuple:
        parent.setdefault(key, key)
        while parent[key] != key:
            parent[key] = parent[parent[key]]   # halve the path: the chains stay short
            key = parent[key]
        return key

    kinds_of: dict[tuple, dict[str, int]] = {}
    for carnet, (_, buckets) in parts.items():
        for (group, seance), kinds in buckets.items():
            key = (carnet, group, seance)
            root(key)
            kinds_of[key] = dict(kinds)
    extra: list[tuple[tuple, str, int]] = []
    for f in cross:
        cents = int(f.get("impact_cents") or 0)
        if cents <= 0:
            continue
        grouped = of.get(f["code"])
        keys = [(p["carnet"], grouped[0], p.get("seance")) for p in f.get("across") or ()] if grouped else []
        if not keys:
            plain += cents
            continue
        first = root(keys[0])
        for key in keys[1:]:
            other = root(key)
            if other != first:
                parent[other] = first
        extra.append((keys[0], grouped[1], cents))
    merged: dict[tuple, dict[str, int]] = {}
    for key, kinds in kinds_of.items():
        into = merged.setdefault(root(key), {})
        for kind, cents in kinds.items():
            into[kind] = into.get(kind, 0) + cents
    for key, kind, cents in extra:
        into = merged.setdefault(root(key), {})
        into[kind] = into.get(kind, 0) + cents
    # Sorted: the same sum whatever the order of the carnets (integers: exact anyway).
    return plain + sum(max(kinds.values()) for _, kinds in sorted(merged.items(), key=lambda kv: repr(kv[0])))
