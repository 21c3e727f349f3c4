"""The report's and index's part about the baseline and the reviews: baseline states
(new findings first, each state counted), reviews with their history,
reviews whose finding is gone, and the trend per table from the history."""

from __future__ import annotations

from auditor.i18n import LANGS, format_day, labels as catalogue
from auditor.money import format_cents
from auditor.reviews import STATUS_TEXT
from auditor.baseline import STATES

MAX_ROWS = 300   # the full list is in findings.json


def labels(lang: str) -> dict:
    """The baseline part's labels in `lang` (the catalogue's `[baseline]`; French for an unknown language)."""
    return catalogue(lang if lang in LANGS else "fr")["baseline"]


def review_view(r: dict | None, lang: str) -> dict | None:
    """A review decision (with its earlier ones) as the report and the procès-verbal show it."""
    if r is None:
        return None
    text = STATUS_TEXT.get(lang, STATUS_TEXT["fr"])

    def one(d):
        return {"status": d["status"], "status_text": text.get(d["status"], d["status"]),
                "justification": d["justification"], "by": d["by"], "at": format_day(d["at"][:10], lang)}
    return {**one(r), "history": [one(h) for h in r.get("history") or []], "stale": bool(r.get("stale")),
            "stale_text": labels(lang)["stale"] if r.get("stale") else ""}


def report_part(findings, lang: str, compared) -> dict:
    """What the report shows of the compared: baseline states, reviews, findings absent since."""
    lab = labels(lang)
    order = {s: i for i, s in enumerate(STATES)}
    rows = []
    for f in sorted(findings, key=lambda f: order.get(compared.state(f) or "", 9)):
        state = compared.state(f)
        rows.append({"state": state or "", "state_text": lab[state] if state else lab["none"], "code": f.code,
                     "severity": f.severity.label, "seance": "" if f.seance is None else f.seance,
                     "coup": "" if f.coup is None else f.coup, "message": f.message,
                     "impact": format_cents(f.impact_cents, lang) if f.impact_cents else "",
                     "fingerprint": f.fingerprint, "review": review_view(compared.reviews.get(f.fingerprint), lang)})
    counts = compared.counts()
    return {"t": lab, "has_baseline": compared.has_baseline,
            "counts": [(s, lab[s], counts[s]) for s in (*STATES, "absent")],
            "rows": rows[:MAX_ROWS], "more": lab["more"].format(left=len(rows) - MAX_ROWS) if len(rows) > MAX_ROWS else "",
            "absent": [{"code": a.get("code"), "seance": a.get("seance") or "", "coup": a.get("coup") or "",
                        "message": a.get("message"), "fingerprint": a.get("fingerprint"),
                        "review": review_view(a.get("review"), lang)} for a in compared.absent[:MAX_ROWS]],
            "orphans": [{"code": o.get("code"), "seance": o.get("seance") or "", "coup": o.get("coup") or "",
                         "fingerprint": o["fingerprint"], "review": review_view(o, lang)} for o in compared.orphans]}


def index_part(entries: list[dict], lang: str, trends: list[dict] | None, baseline: dict | None = None,
               changes: str | None = None) -> dict | None:
    """The index's baseline part: states counted over the batch, the carnets
    with new findings first, a trend chart per table (with a history), the
    link to what changed since the baseline (`changes`: changes.txt) with the
    carnets renamed and vanished (`baseline`: summary.json's)."""
    with_baseline = [e for e in entries if e.get("baseline_counts")]
    if not with_baseline and not trends and not changes:
        return None
    lab = labels(lang)
    totals = {s: sum(e["baseline_counts"][s] for e in with_baseline) for s in (*STATES, "absent")}
    new_first = sorted((e for e in with_baseline if e["baseline_counts"]["new"]),
                       key=lambda e: (-e["baseline_counts"]["new"], e["id"]))
    return {"t": lab, "has_baseline": bool(with_baseline),
            "counts": [(s, lab[s], totals[s]) for s in (*STATES, "absent")],
            "carnets": [{"path": e["path"], "report": e.get("report"), "counts": e["baseline_counts"]}
                        for e in new_first],
            "trends": trends or [], "changes": changes,
            "changes_json": changes.rsplit(".", 1)[0] + ".json" if changes else None,
            "renamed": len((baseline or {}).get("renamed") or ()), "vanished": len((baseline or {}).get("vanished") or ())}
