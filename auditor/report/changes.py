"""What changed since the baseline: `OUT/changes.json` and `OUT/changes.txt`,
the controller's morning reading (outputs.md v1.2, "What changed since the
baseline").

The new findings (message and money), the updated ones (old → new money,
and their review), the findings whose review no longer holds (stale, or
acknowledged `corrige` and still found: what, besides the new ones, makes
--fail-on-new fail), the absent ones, the carnets renamed and vanished (with
the findings gone with them), the reviews whose finding is gone, and the
findings across carnets: each list most money first, then by carnet,
séance, coup, code and fingerprint, so that the same runs give the same
bytes. A finding across carnets is listed once (under the carnet it is
first placed in, with the others in `across`); one that involved a vanished
carnet is listed with that carnet's findings, not also as absent. The
fields are documented in docs/changes.md.
"""

from __future__ import annotations


from auditor import jsontext
from auditor.i18n import format_day, labels
from auditor.money import format_cents
from auditor.reviews import STATUS_TEXT

SCHEMA_VERSION = 1
JSON_FILE, TEXT_FILE = "changes.json", "changes.txt"


def _order(item: dict) -> tuple:
    """Most money first; then a stable order by place and identity."""
    def n(v):
        return (v is None, v if isinstance(v, int) else 0)
    return (-int(item.get("impact_cents") or 0), str(item.get("carnet") or ""), n(item.get("seance")),
            n(item.get("coup")), str(item.get("code") or ""), str(item.get("fingerprint") or ""))


def _review(r: dict | None) -> dict | None:
    if r is None:
        return None
    out = {k: r.get(k) for k in ("status", "justification", "by", "at")}
    if "stale" in r:
        out["stale"] = bool(r["stale"])
    return out


def changes_document(jobs, finished, cross: list[dict], baseline, generated_at: str) -> dict:
    """changes.json of the run: `jobs` and `finished` in the same order (each
    Finished with its `changes` part), `cross` the run's findings across
    carnets as summary.json lists them, `baseline` the run's Baseline (matched)."""
    from auditor import __version__

    owner = {cf["fingerprint"]: (cf.get("across") or [{}])[0].get("carnet") for cf in cross}
    # The vanished carnets' findings first: a finding across carnets that involved a
    # vanished carnet went with it (it stays open until acknowledged), and is not also
    # absent from the carnet still here — each finding once in the lists, the counts, the money.
    vanished = []
    for v in baseline.vanished():
        findings = sorted(({**f, "review": _review(f.get("review"))} for f in v["findings"]), key=_order)
        vanished.append({"carnet": v["carnet"], "path": v["path"], "findings": findings})
    went = {f["fingerprint"] for v in vanished for f in v["findings"]}
    kinds = ("new", "updated", "absent", "reviews_stale")
    seen: dict[str, set[str]] = {kind: set() for kind in kinds}
    lists: dict[str, list[dict]] = {kind: [] for kind in kinds}
    renamed = {r["to"]: r["from"] for r in (baseline.matching.renamed if baseline.matching else ())}
    absent_of: dict[str, list[str]] = {}
    for job, fin in zip(jobs, finished):
        part = getattr(fin, "changes", None) or {}
        for kind in kinds:
            for item in part.get(kind) or ():
                fp = item["fingerprint"]
                across = item.get("across")
                if fp in seen[kind] or (across and owner.get(fp, job.id) != job.id):
                    continue   # a finding across carnets: listed once, under its first carnet
                if kind == "absent" and fp in went:
                    continue   # listed with its vanished carnet
                seen[kind].add(fp)
                entry = {"carnet": job.id, "path": job.shown, **item, "review": _review(item.get("review"))}
                if kind != "absent" and not across:
                    entry.pop("across", None)
                if kind == "absent":
                    absent_of.setdefault(job.id, []).append(fp)
                lists[kind].append(entry)
    gone = [{"fingerprint": a["fingerprint"], "code": a.get("code"), "carnet": a["carnet"],
             "impact_cents": a.get("impact_cents"), "why": "absent", **a["review"]}
            for a in lists["absent"] if a.get("review")]
    gone += [{"fingerprint": f["fingerprint"], "code": f.get("code"), "carnet": v["carnet"],
              "impact_cents": f.get("impact_cents"), "why": "vanished", **f["review"]}
             for v in vanished for f in v["findings"] if f.get("review")]
    across = [{"fingerprint": cf.get("fingerprint"), "code": cf.get("code"), "severity": cf.get("severity"),
               "message": cf.get("message"), "impact_cents": cf.get("impact_cents"),
               "carnets": [p.get("carnet") for p in cf.get("across") or ()],
               "carnet": (cf.get("across") or [{}])[0].get("carnet"),
               "baseline_state": cf.get("baseline_state"), "review": _review(cf.get("review"))} for cf in cross]
    summary = baseline.summary() or {}
    doc = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "ecarte-auditor", "version": __version__},
        "generated_at": generated_at,
        "baseline": {**summary, "first_night": baseline.first_night},
        "counts": {"new": len(lists["new"]), "updated": len(lists["updated"]), "absent": len(lists["absent"]),
                   "renamed": len(renamed), "vanished": len(vanished),
                   "vanished_findings": sum(len(v["findings"]) for v in vanished),
                   "reviews_gone": len(gone), "across": len(across), "reviews_stale": len(lists["reviews_stale"])},
        "new": sorted(lists["new"], key=_order),
        "updated": sorted(lists["updated"], key=_order),
        "reviews_stale": sorted(lists["reviews_stale"], key=_order),
        "absent": sorted(lists["absent"], key=_order),
        "renamed": [{"from": r["from"], "to": r["to"], "path": next((j.shown for j in jobs if j.id == r["to"]), None),
                     "absent": sorted(absent_of.get(r["to"], []))} for r in summary.get("renamed") or ()],
        "vanished": sorted(vanished, key=lambda v: (-sum(int(f.get("impact_cents") or 0) for f in v["findings"]),
                                                    v["carnet"])),
        "reviews_gone": sorted(gone, key=_order),
        "across": sorted(across, key=_order),
    }
    return doc


def failing_new(doc: dict, threshold) -> tuple[int, int]:
    """Why --fail-on-new fails, as changes.json lists it: how many new
    findings, and how many findings whose review no longer holds, block at
    `threshold` (a Severity) — each finding once (a new finding whose review
    no longer holds counts with the latter), as auditor.baseline's
    `BaselineComparison.blocking` judges them."""
    from auditor.model import Severity
    from auditor.reviews import CLEARED

    def at_or_above(item: dict) -> bool:
        try:
            return Severity.parse(str(item.get("severity") or "")) >= threshold
        except ValueError:
            return False

    lapsed = {x["fingerprint"] for x in doc.get("reviews_stale") or () if at_or_above(x)}
    new = {x["fingerprint"] for x in doc.get("new") or () if at_or_above(x) and x["fingerprint"] not in lapsed
           and not ((x.get("review") or {}).get("status") in CLEARED and not (x.get("review") or {}).get("stale"))}
    return len(new), len(lapsed)


def write_changes(doc: dict, out, lang: str) -> None:
    """Write changes.json and changes.txt (in `lang`) into the run's folder `out`."""
    from auditor.atomic import write_atomic

    write_atomic(out / JSON_FILE, jsontext.dumps(doc) + "\n")
    write_atomic(out / TEXT_FILE, changes_text(doc, lang))


def changes_text(doc: dict, lang: str) -> str:
    """changes.json as a reader reads it in the morning, in `lang`."""
    t = labels(lang)["changes"]
    status = STATUS_TEXT.get(lang, STATUS_TEXT["fr"])

    def money(cents) -> str:
        return format_cents(int(cents or 0), lang)

    def where(item: dict) -> str:
        bits = [item.get("path") or item.get("carnet") or ""]
        if item.get("seance") is not None:
            bits.append(t["seance"].format(n=item["seance"]))
        if item.get("coup") is not None:
            bits.append(t["coup"].format(n=item["coup"]))
        return ", ".join(b for b in bits if b != "")

    def review(r: dict | None) -> str:
        if not r:
            return ""
        text = t["review"].format(status=status.get(r["status"], r["status"]), by=r.get("by") or "",
                                  at=format_day((r.get("at") or "")[:10], lang),
                                  justification=r.get("justification") or "")
        return text + (t["stale"] if r.get("stale") else "")

    b = doc["baseline"]
    lines = [t["title"], t["generated"].format(at=format_day((doc["generated_at"] or "")[:10], lang)),
             t["baseline"].format(path=b.get("path"), matched=b.get("matched_carnets", 0),
                                  renamed=len(b.get("renamed") or ()), vanished=len(b.get("vanished") or ()))]
    if b.get("first_night"):
        lines.append(t["first_night"])
    c = {"reviews_stale": 0, **doc["counts"]}
    lines.append(t["counts"].format(**c))

    def section(key: str, items: list, render) -> None:
        lines.append("")
        lines.append(t[f"h_{key}"].format(n=len(items)))
        if not items:
            lines.append("  " + t["none"])
        for item in items:
            lines.extend("  " + x for x in render(item))

    def finding(item: dict) -> list[str]:
        head = f"{money(item.get('impact_cents')):>12}  {item.get('code')}  {where(item)}"
        out = [head, f"{'':>14}{item.get('message') or ''}", f"{'':>14}{t['fingerprint']} {item['fingerprint']}"]
        if item.get("review"):
            out.append(f"{'':>14}{review(item['review'])}")
        return out

    def updated(item: dict) -> list[str]:
        out = finding(item)
        out[0] = (f"{money(item.get('old_impact_cents')):>12} → {money(item.get('impact_cents'))}  "
                  f"{item.get('code')}  {where(item)}")
        if item.get("old_expected") != item.get("expected") or item.get("old_found") != item.get("found"):
            out.insert(2, f"{'':>14}" + t["values"].format(old_expected=item.get("old_expected"),
                                                            old_found=item.get("old_found"),
                                                            expected=item.get("expected"), found=item.get("found")))
        return out

    def lapsed(item: dict) -> list[str]:
        out = finding(item)
        made = item.get("reviewed")
        if item.get("why") == "back":
            out.insert(2, f"{'':>14}{t['why_back']}")
        elif made is not None:
            out.insert(2, f"{'':>14}" + t["why_changed"].format(money=money(made.get("impact_cents")),
                                                               expected=made.get("expected"),
                                                               found=made.get("found")))
        return out

    section("new", doc["new"], finding)
    section("updated", doc["updated"], updated)
    if "reviews_stale" in doc:
        section("reviews_stale", doc["reviews_stale"], lapsed)
    section("absent", doc["absent"], finding)
    section("renamed", doc["renamed"], lambda r: [t["renamed_line"].format(old=r["from"], new=r["to"],
                                                                             absent=len(r["absent"]))])

    def vanished(v: dict) -> list[str]:
        out = [t["vanished_line"].format(carnet=v["carnet"], path=v.get("path") or "", n=len(v["findings"]))]
        for f in v["findings"]:
            lines_of = finding({**f, "path": v.get("path") or v["carnet"]})
            if f.get("across"):
                lines_of.insert(2, f"{'':>14}" + t["across_line"].format(carnets=", ".join(f["across"])))
            out.extend("  " + x for x in lines_of)
        return out

    section("vanished", doc["vanished"], vanished)
    section("reviews_gone", doc["reviews_gone"],
            lambda r: [f"{money(r.get('impact_cents')):>12}  {r.get('code')}  {r.get('carnet')}  "
                       f"{t['why_' + r['why']]}", f"{'':>14}{t['fingerprint']} {r['fingerprint']}",
                       f"{'':>14}{review(r)}"])

    def across(item: dict) -> list[str]:
        state = t.get(f"state_{item.get('baseline_state')}", "") if item.get("baseline_state") else ""
        out = [f"{money(item.get('impact_cents')):>12}  {item.get('code')}  {', '.join(item['carnets'])}"
               + (f"  [{state}]" if state else ""),
               f"{'':>14}{item.get('message') or ''}", f"{'':>14}{t['fingerprint']} {item['fingerprint']}"]
        if item.get("review"):
            out.append(f"{'':>14}{review(item['review'])}")
        return out

    section("across", doc["across"], across)
    return "\n".join(lines) + "\n"
