"""One carnet through read → normalise → check → report, and batches of them."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from auditor import __version__
from auditor.carnet import Carnet, Source
from auditor.catalogue import Profile
from auditor.limits import Limits
from auditor.engine import AuditResult, audit
from auditor.model import Severity, Violation
from auditor.normalise import normalise
from auditor.read import discover, read_carnet
from auditor.report import html_report, json_report
from auditor.report.view import verdict

if TYPE_CHECKING:
    from auditor import series

FORMATS = ("html", "json", "xlsx")


@dataclass
class CarnetJob:
    path: Path          # where the carnet is
    shown: str          # the path as shown in outputs (relative to what the user gave)
    id: str             # output sub-folder
    # What the run brings to this carnet besides its files: the baseline's
    # findings and the recorded reviews (read by the client, so a remote
    # worker needs neither folder).
    context: "series.SeriesContext | None" = None

    def context_digest(self) -> str:
        return self.context.digest() if self.context is not None else ""


# Names the batch writes beside the carnet folders, and names Windows refuses.
RESERVED_IDS = {"index.html", "summary.json", "con", "prn", "aux", "nul",
                *(f"com{i}" for i in range(1, 10)), *(f"lpt{i}" for i in range(1, 10))}
MAX_ID_LENGTH = 120   # well under the 255 bytes of a file name, with room for `-2`


def carnet_id(relative: str) -> str:
    """outputs.md: `/` → `__`, anything outside [A-Za-z0-9._-] → `_`.

    So an id is one plain path component: never empty, `.` or `..`, never a
    name the batch writes itself (`index.html`) or Windows reserves (`CON`),
    and short enough for any file system (a long id keeps its start and ends
    with a hash of the whole path, so two long ids stay distinct).
    """
    cid = re.sub(r"[^A-Za-z0-9._-]", "_", relative.replace("\\", "/").replace("/", "__"))
    if cid.strip(".") == "":
        cid = cid.replace(".", "_") or "_"
    if cid.lower() in RESERVED_IDS or cid.split(".")[0].lower() in RESERVED_IDS:
        cid = f"_{cid}"
    if len(cid) > MAX_ID_LENGTH:
        digest = hashlib.sha256(relative.encode("utf-8", "surrogateescape")).hexdigest()[:12]
        cid = f"{cid[:MAX_ID_LENGTH - 13]}_{digest}"
    return cid


def plan(paths: list[Path]) -> list[CarnetJob]:
    """The carnets to audit, with unique output ids, in a stable order.

    Ids are unique case-insensitively (two carnets `A` and `a` would share a
    folder on macOS or Windows), and a `-2` suffix never takes an id that
    another carnet has on its own.
    """
    jobs: list[CarnetJob] = []
    taken: set[str] = set()
    for given in paths:
        found = discover(given)
        for p in found:
            if p == given:
                shown, rel = str(given), given.name or given.resolve().name
            else:
                rel = p.relative_to(given).as_posix()
                shown = (given / rel).as_posix()
            base = carnet_id(rel)
            cid, n = base, 1
            while cid.lower() in taken:
                n += 1
                cid = f"{base}-{n}"
            taken.add(cid.lower())
            jobs.append(CarnetJob(p, shown, cid))
    return jobs


def audit_path(path: Path, profile: Profile, lang: str = "fr", debug: bool = False,
               limits: Limits | None = None) -> AuditResult:
    try:
        carnet = normalise(read_carnet(path, limits))
        return audit(carnet, profile, lang)
    except Exception as exc:  # a defect of ours must not end the batch: report it as a finding
        if debug:
            raise
        carnet = Carnet(Source(str(path), "", "xlsx" if path.is_file() else "csv"), unreadable=True)
        carnet.problems.append(("EC00-01", Violation(kind="unreadable", params={
            "reason": f"erreur interne de l'auditeur ({type(exc).__name__}: {exc})"[:300]})))
        return audit(carnet, profile, lang)


def render_outputs(result: AuditResult, job: CarnetJob, formats: tuple[str, ...], profile: Profile,
                   generated_at: str | None = None) -> tuple[dict[str, bytes], dict]:
    """The carnet's files (name → bytes) and its row in the batch summary."""
    doc = json_report.findings_document(result, profile, job.shown, generated_at)
    files: dict[str, bytes] = {}
    if "json" in formats:
        files["findings.json"] = json_report.dumps(doc).encode("utf-8")
    if "html" in formats:
        files["report.html"] = html_report.render_report(
            result, job.shown, doc["generated_at"],
            findings_file="findings.json" if "json" in formats else None).encode("utf-8")
    if "xlsx" in formats:
        from auditor.report.excel_report import annotated_bytes

        files["annotated.xlsx"] = annotated_bytes(result, job.path, result.lang, doc["generated_at"])
    entry = {"id": job.id, "path": job.shown, "verdict": verdict(result), "sha256": result.carnet.source.sha256,
             "carnet": doc["carnet"], "summary": doc["summary"],
             "report": f"{job.id}/report.html" if "html" in formats else None}
    return files, entry


def restamp_outputs(files: dict[str, bytes], old: str, new: str) -> dict[str, bytes]:
    """Rendered files stamped `old` (a cached result), stamped `new` instead:
    the same bytes a fresh render at `new` gives. The stamp is replaced only
    where the renderers put it (findings.json's `generated_at`, the report's
    footer, the workbook's properties), never in the carnet's own text."""
    if old == new:
        return files
    out = dict(files)
    if "findings.json" in out:
        out["findings.json"] = out["findings.json"].replace(
            f'"generated_at": "{old}"'.encode(), f'"generated_at": "{new}"'.encode(), 1)
    if "report.html" in out:
        html = out["report.html"]
        at = html.rfind(b"<footer>")
        if at >= 0:
            out["report.html"] = html[:at] + html[at:].replace(old.encode(), new.encode())
    if "annotated.xlsx" in out:
        from auditor.report.xlsx_io import restamp

        out["annotated.xlsx"] = restamp(out["annotated.xlsx"], new)
    return out


def write_outputs(result: AuditResult, job: CarnetJob, out: Path, formats: tuple[str, ...],
                  profile: Profile) -> dict:
    files, entry = render_outputs(result, job, formats, profile)
    folder = out / job.id
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return entry


def worst_of(results: list[AuditResult]) -> Severity | None:
    return max((r.worst() for r in results if r.worst() is not None), default=None)


def write_batch(entries: list[dict], out: Path, formats: tuple[str, ...], lang: str, generated_at: str,
                cross_findings: list[dict] | None = None) -> None:
    totals = {k: sum(e["summary"][k] for e in entries)
              for k in ("errors", "warnings", "info", "impact_cents", "rows_read", "rows_rejected")}
    totals["carnets"] = len(entries)
    totals["cross_carnet_findings"] = len(cross_findings or [])
    doc = {"schema_version": 1, "tool": {"name": "ecarte-auditor", "version": __version__},
           "generated_at": generated_at, "carnets": entries, "totals": totals,
           "cross_carnet_findings": cross_findings or []}
    if "json" in formats:
        (out / "summary.json").write_text(json.dumps(doc, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    if "html" in formats:
        from auditor.report.view import index_view

        (out / "index.html").write_text(html_report.render("index.html.j2", index_view(doc, lang)),
                                        encoding="utf-8")
