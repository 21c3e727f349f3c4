"""Findings across carnets in the batch summary: what each carnet's row
counts of them, and a carnet's verdict raised by them."""

from __future__ import annotations


SEVERITY_KEYS = {"error": "errors", "warning": "warnings", "info": "info"}
VERDICT_RANK = {"ok": 0, "warning": 1, "error": 2, "unreadable": 3}


def attribute(entries: list[dict], cross: list[dict]) -> None:
    """Each finding across carnets is also a finding of every carnet it
    involves (already in its findings.json, verdict and summary): its
    summary.json row gets `cross_carnet`, the findings' positions in
    `cross_carnet_findings`, their counts and their money, so that the
    batch's totals count each of them once (the money of its summary may
    count less: a lost ticket counts once, auditor.stake)."""
    position = {e["id"]: i for i, e in enumerate(entries)}
    for e in entries:
        e["cross_carnet"] = {"findings": [], "errors": 0, "warnings": 0, "info": 0, "impact_cents": 0}
    for k, f in enumerate(cross):
        for cid in dict.fromkeys(p["carnet"] for p in f["across"]):   # once per carnet, in order
            if cid not in position:
                continue
            mine = entries[position[cid]]["cross_carnet"]
            mine["findings"].append(k)
            mine[SEVERITY_KEYS[f["severity"]]] += 1
            mine["impact_cents"] += max(int(f.get("impact_cents") or 0), 0)


def counted_with(summary: dict, across, impact_cents: int) -> dict:
    """A carnet's summary counting also its findings across carnets
    (auditor.model.Finding with `across`) by severity, with `impact_cents` its
    money at stake with them (auditor.stake.total_at_stake: each cent once)."""
    out = dict(summary)
    for f in across:
        out[SEVERITY_KEYS[f.severity.label]] += 1
    out["impact_cents"] = impact_cents
    return out


def combined_verdict(own: str, severities: list[str]) -> str:
    """The carnet's own verdict raised by its cross-carnet findings (an
    unreadable carnet stays unreadable: it has no tickets to share)."""
    rank = {"info": 0, "warning": 1, "error": 2}
    worst = max((rank.get(s, 0) for s in severities), default=0)
    raised = {0: "ok", 1: "warning", 2: "error"}[worst]
    return max(own, raised, key=lambda v: VERDICT_RANK.get(v, 0))
