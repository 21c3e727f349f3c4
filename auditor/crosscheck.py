"""Checks across the carnets of a batch: EC82-03, the same ticket (value and
number) detached at two tables of one casino. Works on ticket runs (intervals),
never on single tickets."""

from __future__ import annotations

import pandas as pd

from auditor.catalogue import load_catalogue
from auditor.money import format_cents

COLUMNS = ["valeur", "premier", "dernier", "seance", "coup", "row"]


def cross_carnet_duplicates(entries: list[dict], runs: list[list[list]], lang: str = "fr") -> list[dict]:
    frames = []
    for i, (entry, r) in enumerate(zip(entries, runs)):
        if r:
            df = pd.DataFrame(r, columns=COLUMNS, dtype="int64")
            df["carnet"] = i
            df["casino"] = entry["carnet"].get("casino") or ""
            frames.append(df)
    if not frames:
        return []
    d = pd.concat(frames, ignore_index=True).sort_values(["casino", "valeur", "premier", "carnet", "row"],
                                                          kind="stable").reset_index(drop=True)
    g = d.groupby(["casino", "valeur"], sort=False)
    top = g["dernier"].cummax()
    # Which carnet holds the running maximum: the last row that reached it.
    owner = d["carnet"].where(d["dernier"] == top).groupby([d["casino"], d["valeur"]]).ffill()
    prev_top = top.groupby([d["casino"], d["valeur"]]).shift()
    prev_owner = owner.groupby([d["casino"], d["valeur"]]).shift()
    hit = d[(d["premier"] <= prev_top) & (prev_owner != d["carnet"]) & prev_owner.notna()].copy()
    if hit.empty:
        return []
    hit["last"] = pd.concat([hit["dernier"], prev_top[hit.index]], axis=1).min(axis=1).astype("int64")
    hit["other"] = prev_owner[hit.index].astype("int64")
    meta = load_catalogue()["EC82-03"]
    out = []
    for r in hit.itertuples():
        other = d[(d["carnet"] == r.other) & (d["valeur"] == r.valeur) & (d["premier"] <= r.last)
                  & (d["dernier"] >= r.premier)].iloc[0]
        here, there = entries[r.carnet], entries[r.other]
        first, last = int(r.premier), int(r.last)
        span = str(first) if first == last else f"{first} … {last}"
        message = meta.message("cross_carnet", lang).format(
            valeur=format_cents(int(r.valeur), lang), span=span, count=last - first + 1,
            other=there["path"], other_table=_table(there["carnet"].get("table")))
        out.append({
            "code": "EC82-03", "severity": meta.severity.label, "article": meta.article, "message": message,
            "casino": r.casino, "valeur_cents": int(r.valeur), "first": first, "last": last,
            "carnets": [
                {"id": here["id"], "path": here["path"], "table": here["carnet"].get("table"),
                 "seance": int(r.seance), "coup": int(r.coup), "row": int(r.row)},
                {"id": there["id"], "path": there["path"], "table": there["carnet"].get("table"),
                 "seance": int(other["seance"]), "coup": int(other["coup"]), "row": int(other["row"])},
            ],
            "impact_cents": 0,
        })
    return out


def _table(number) -> str:
    """A table number for a sentence; "?" when the cover does not give one (EC64-06)."""
    return "?" if number is None or number == "" else str(number)


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
