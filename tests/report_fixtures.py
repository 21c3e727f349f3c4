"""Carnets with known findings for the report tests (HTML, Excel, browser):
a generated carnet, mutated in a few places, written in either container."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import html5lib

from auditor.catalogue import load_catalogue, load_profile
from auditor.model import AuditResult
from auditor.synth.generate import Spec, generate, write_csv_folder, write_xlsx
from auditor.model import Finding, Severity, sort_findings
from auditor.audit import audit_path

XSS = "<script>alert(1)</script>"


def breached_tables(casino: str = "Casino de Forges-les-Eaux", seances: int = 3, coups: int = 12) -> dict:
    """A generated carnet with errors, a warning and (from the ticket books) info."""
    t = generate(Spec(seances=seances, coups=coups, casino=casino))
    t["coups"][3]["prelevement"] += 10           # séance 1 coup 4: levy too high, tickets short
    t["coups"][5]["prelevement"] -= 20           # séance 1 coup 6: levy short
    t["mises"][4]["montant"] = 1234              # a stake not a multiple of 0,10 €
    victim = (2, 5)                              # séance 2 coup 5 loses its stakes: a warning
    t["mises"] = [m for m in t["mises"] if (m["seance"], m["coup"]) != victim]
    return t


def write(tables: dict, folder: Path, container: str = "xlsx") -> Path:
    if container == "xlsx":
        return write_xlsx(tables, folder / "carnet.xlsx")
    return write_csv_folder(tables, folder / "carnet")


def audited(tables: dict, folder: Path, container: str = "xlsx", lang: str = "fr") -> tuple[AuditResult, Path]:
    path = write(tables, folder, container)
    return audit_path(path, load_profile(), lang), path


def with_many_findings(result: AuditResult, n: int) -> AuditResult:
    """The same carnet with `n` synthetic findings spread over the catalogue's
    codes and the carnet's séances: the report's behaviour at scale, without
    auditing a carnet big enough to produce them."""
    metas = [m for m in load_catalogue().values() if not m.retired]
    seances = sorted({f.seance for f in result.findings if f.seance is not None} | {1, 2, 3})
    made = []
    for i in range(n):
        meta = metas[i % len(metas)]
        made.append(Finding(
            code=meta.code, severity=meta.severity, article=meta.article,
            message=f"{meta.title['fr']} — constat synthétique n° {i} " + "x" * (i % 50),
            table="coups", row=2 + i % 5000, column="prelevement", cell=f"L{2 + i % 5000}",
            seance=seances[i % len(seances)], coup=1 + i % 400, rang=None,
            expected="12,50\u00a0€", found="12,40\u00a0€", impact_cents=10 * (i % 7)))
    findings = sort_findings(made)
    summary = dict(result.summary)
    summary.update(errors=sum(f.severity is Severity.ERROR for f in findings),
                   warnings=sum(f.severity is Severity.WARNING for f in findings),
                   info=sum(f.severity is Severity.INFO for f in findings),
                   impact_cents=sum(f.impact_cents for f in findings if f.impact_cents > 0))
    counts = {}
    for f in findings:
        counts[f.code] = counts.get(f.code, 0) + 1
    rules = [dataclasses.replace(st, findings=counts.get(st.code, 0)) for st in result.rules]
    return dataclasses.replace(result, findings=findings, summary=summary, rules=rules)


def parse_strict(html: str):
    """Parse as an HTML5 validator would: any parse error raises."""
    parser = html5lib.HTMLParser(strict=True, tree=html5lib.treebuilders.getTreeBuilder("etree"),
                                 namespaceHTMLElements=False)
    return parser.parse(html)


def text(el) -> str:
    return " ".join("".join(el.itertext()).split())
