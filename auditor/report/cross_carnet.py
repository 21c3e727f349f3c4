"""Cross-carnet findings (EC82-03 across tables) as each carnet sees them:
counted in its verdict and summary row, listed in its report with the other
carnet named."""

from __future__ import annotations


SEVERITY_KEYS = {"error": "errors", "warning": "warnings", "info": "info"}
VERDICT_RANK = {"ok": 0, "warning": 1, "error": 2, "unreadable": 3}


def attribute(entries: list[dict], cross: list[dict]) -> None:
    """Each cross-carnet finding is also a finding of every carnet it involves:
    its summary.json row gets `cross_carnet` (the findings' positions in
    `cross_carnet_findings` and their counts by severity) and a verdict that
    counts them. `summary` stays the carnet's own audit, as findings.json."""
    position = {e["id"]: i for i, e in enumerate(entries)}
    for e in entries:
        e["cross_carnet"] = {"findings": [], "errors": 0, "warnings": 0, "info": 0, "impact_cents": 0}
    for k, f in enumerate(cross):
        for cid in dict.fromkeys(c["id"] for c in f["carnets"]):   # once per carnet, in order
            if cid not in position:
                continue
            mine = entries[position[cid]]["cross_carnet"]
            mine["findings"].append(k)
            mine[SEVERITY_KEYS[f["severity"]]] += 1
            mine["impact_cents"] += max(int(f.get("impact_cents") or 0), 0)
    for e in entries:
        e["verdict"] = combined_verdict(e["verdict"], [cross[k]["severity"] for k in e["cross_carnet"]["findings"]])


def combined_verdict(own: str, severities: list[str]) -> str:
    """The carnet's own verdict raised by its cross-carnet findings (an
    unreadable carnet stays unreadable: it has no tickets to share)."""
    rank = {"info": 0, "warning": 1, "error": 2}
    worst = max((rank.get(s, 0) for s in severities), default=0)
    raised = {0: "ok", 1: "warning", 2: "error"}[worst]
    return max(own, raised, key=lambda v: VERDICT_RANK.get(v, 0))


def for_carnet(cross: list[dict], carnet_id: str) -> list[dict]:
    """The cross-carnet findings involving one carnet, each seen from it:
    `here` its own place, `others` the other carnets' places."""
    mine = []
    for f in cross:
        places = f["carnets"]
        if not any(c["id"] == carnet_id for c in places):
            continue
        mine.append({**f, "here": [c for c in places if c["id"] == carnet_id],
                     "others": [c for c in places if c["id"] != carnet_id]})
    return mine
