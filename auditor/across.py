"""Findings across carnets (outputs.md v1.2): a check over the batch finds
them once; each is a `CrossFinding` with its places, and every carnet it
involves shows it as one of its own findings, seen from its side
(`seen_from`): located at its own place, its message naming the other
carnet, the same fingerprint everywhere.

The fingerprint is built from what the carnets say (the rule's `identity`
values: casino, table, value, numbers, periods), never from paths, ids or
rows, so a renamed or re-saved carnet keeps it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import Sequence

from auditor.catalogue import Profile, RuleMeta, load_catalogue
from auditor.fingerprint import LENGTH, VERSION
from auditor.model import BatchCarnet, Finding, Violation

# The keys of a place, as findings.json's `across` writes them.
PLACE_KEYS = ("carnet", "path", "table_no", "seance", "coup", "table", "row", "column", "cell")


@dataclass(frozen=True)
class CrossFinding:
    """One finding of a check over the batch, with every place it involves
    (the carnet where it shows first)."""

    meta: RuleMeta
    violation: Violation
    places: tuple[dict, ...]
    fingerprint: str
    lang: str
    # Each carnet's view, made once: summary.json's (`as_json`) is its first carnet's, which that carnet's files use too.
    _seen: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def code(self) -> str:
        """The rule's code."""
        return self.meta.code

    def carnets(self) -> list[str]:
        """The ids of the carnets it involves, each once, in the order of its places."""
        return list(dict.fromkeys(p["carnet"] for p in self.places))

    def seen_from(self, carnet_id: str) -> Finding:
        """The finding as the carnet `carnet_id` shows it: at its own place, its
        message naming the other carnet, `across` listing this carnet's place first."""
        seen = self._seen.get(carnet_id)
        if seen is None:
            seen = self._seen[carnet_id] = self._seen_from(carnet_id)
        return seen

    def _seen_from(self, carnet_id: str) -> Finding:
        # Imported here: a night whose checks over the batch are kept beside
        # the cache reads them back without making a finding.
        from auditor.findings import make_finding

        mine = [p for p in self.places if p["carnet"] == carnet_id]
        others = [p for p in self.places if p["carnet"] != carnet_id]
        here = mine[0]
        v = self.violation
        other = others[0] if others else {}
        first = self.places[0]["carnet"] == carnet_id
        # The catalogue may word the other side's message apart (`<kind>_other`).
        kind = v.kind if first or f"{v.kind}_other" not in self.meta.messages else f"{v.kind}_other"
        params = {k: x for k, x in v.params.items() if k not in ("places", "carnets", "identity")}
        params.update(other=other.get("path", ""), other_table="?" if other.get("table_no") in (None, "")
                      else str(other.get("table_no")))
        # Each place says its own column (P's last ticket is its `dernier`): the finding, seen from it, too.
        located = Violation(table=here.get("table"), row=here.get("row"), column=here.get("column") or v.column,
                            seance=here.get("seance"),
                            coup=here.get("coup"), rang=None, expected=v.expected, found=v.found,
                            impact_cents=v.impact_cents, kind=kind, params=params)
        f = make_finding(self.meta, located, None, self.lang)
        return replace(f, cell=here.get("cell"), fingerprint=self.fingerprint, across=tuple(mine + others))

    def as_json(self) -> dict:
        """The finding as summary.json lists it once: seen from its first carnet, with all its places."""
        f = self.seen_from(self.places[0]["carnet"])
        return {"code": f.code, "severity": f.severity.label, "article": f.article, "message": f.message,
                "expected": f.expected, "found": f.found, "impact_cents": int(f.impact_cents),
                "fingerprint": self.fingerprint, "across": [dict(p) for p in self.places]}


def places_of(v: Violation) -> tuple[dict, ...]:
    """The violation's places in findings.json's form. A check gives them as
    `places` (`table` the casino's table number, `sheet_table` the carnet's
    table) or, as EC82-03 does, as `carnets` (its ticket rows)."""
    out = []
    if "places" in v.params:
        for p in v.params["places"]:
            out.append({"carnet": p["carnet"], "path": p.get("path"), "table_no": p.get("table"),
                        "seance": p.get("seance"), "coup": p.get("coup"), "table": p.get("sheet_table"),
                        "row": p.get("row"), "column": p.get("column", v.column), "cell": p.get("cell")})
    else:
        for c in v.params.get("carnets", ()):
            out.append({"carnet": c["id"], "path": c.get("path"), "table_no": c.get("table"),
                        "seance": c.get("seance"), "coup": c.get("coup"), "table": v.table or "tickets",
                        "row": c.get("row"), "column": c.get("column", v.column), "cell": c.get("cell")})
    return tuple(out)


def identity_of(code: str, v: Violation, places: tuple[dict, ...]) -> list:
    """What identifies the finding across runs: the check's own `identity`
    values, or (EC82-03) the casino, value, numbers and tables involved."""
    if "identity" in v.params:
        return [VERSION, "across", code, v.params["identity"]]
    p = v.params
    tables = sorted(str(x.get("table_no")) for x in places)
    return [VERSION, "across", code, p.get("casino"), p.get("valeur_cents"), p.get("first"), p.get("last"), tables]


def check_batch(batch: Sequence[BatchCarnet], profile: Profile, lang: str = "fr") -> list[CrossFinding]:
    """Every check over the batch (catalogue order) → its findings across
    carnets, each with a fingerprint (findings alike in all they say are
    numbered in the order the checks give them)."""
    from auditor.checks import registered_batch

    catalogue = load_catalogue()
    checks = registered_batch()
    found: list[tuple[RuleMeta, Violation, tuple[dict, ...], str]] = []
    for code, meta in catalogue.items():
        spec = checks.get(code)
        if spec is None or meta.retired:
            continue
        for v in spec.func(batch, profile):
            places = places_of(v)
            found.append((meta, v, places, json.dumps(identity_of(code, v, places), ensure_ascii=False, default=str)))
    seen: dict[str, int] = {}
    out = []
    for meta, v, places, text in found:
        n = seen.get(text, 0)
        seen[text] = n + 1
        digest = hashlib.sha256(f"{text}#{n}".encode("utf-8")).hexdigest()[:LENGTH]
        out.append(CrossFinding(meta, v, places, digest, lang))
    return out


def by_carnet(cross: list[CrossFinding]) -> dict[str, list[Finding]]:
    """Each carnet's findings across carnets, seen from it."""
    out: dict[str, list[Finding]] = {}
    for cf in cross:
        for cid in cf.carnets():
            out.setdefault(cid, []).append(cf.seen_from(cid))
    return out
