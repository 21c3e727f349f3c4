"""A carnet's outputs, in two steps.

Where the carnet is audited (a worker), `carnet_audit` turns its audit into
data: the findings, the findings.json document, the report's and the
workbook's drafts (everything that needs the Carnet), the facts the checks
over the batch need. That value is what a worker hands back and what the
cache keeps; nothing is rendered there.

Once the whole run is known, `finish` makes the files of one carnet from it,
with what the run adds: the findings across carnets that involve it, its
baseline states and reviews, the run's time stamp. Every file is rendered
once, there. `write_batch` writes the batch's summary.json and index.html.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from auditor import __version__, jsontext
from auditor.clock import generated_at
from auditor.model import AuditResult, BatchCarnet, Finding, RuleStatus, Severity, Status, sort_findings
from auditor.report import html_report, json_report

if TYPE_CHECKING:
    from auditor.batch.plan import CarnetJob, Options
    from auditor.report.pv import Visit
    from auditor.baseline import CarnetBaseline



@dataclass
class CarnetAudit:
    """One carnet audited: data, never rendered bytes (a worker hands it back,
    the cache keeps it, the run finishes it into files)."""

    index: int
    id: str
    shown: str
    findings: list[Finding]        # the carnet's own findings, in the spec's order, with fingerprints
    document: dict                 # findings.json but for the time stamp, the findings and the run's decorations
    entry: dict                    # the carnet's row of summary.json, for its own findings
    seance_dates: dict[int, str]   # séance → its day: the history's rows
    report: object = None          # report_view.ReportDraft (html)
    workbook: object = None        # excel_report.WorkbookDraft (xlsx)
    facts: BatchCarnet | None = None   # what the checks over the batch need (None: nothing to compare)
    fault: str | None = None       # the audit did not finish: killed, timeout, memory_limit
    pid: int | None = None         # the worker process that audited it
    cached: bool = False
    # Per séance, its totals as the history keeps them (report/seance_totals.py):
    # computed here, where the carnet is, in integer cents.
    seances: list[dict] | None = None

    @property
    def worst_own(self) -> Severity | None:
        """The highest severity among the carnet's own findings."""
        return max((f.severity for f in self.findings), default=None)


def carnet_audit(index: int, job: CarnetJob, result: AuditResult, options: Options,
                 facts: BatchCarnet | None = None) -> CarnetAudit:
    """The carnet's audit as data: its findings document and the drafts of its
    report and annotated workbook, in the formats the run asked for."""
    from auditor.fingerprint import seance_dates
    from auditor.report.report_view import period_of, report_draft, verdict

    formats = options.formats
    doc = json_report.findings_document(result, result.profile, job.shown, "")
    report = workbook = None
    if "html" in formats or "pdf" in formats:   # the procès-verbal is laid out from the report's view
        report = report_draft(result, job.shown, findings_file="findings.json" if "json" in formats else None,
                              annotated_file="annotated.xlsx" if "xlsx" in formats else None)
    if "xlsx" in formats:
        from auditor.report.excel_report import workbook_draft

        workbook = workbook_draft(result, job.path, result.lang)
    entry = {"id": job.id, "path": job.shown, "verdict": verdict(result), "sha256": result.carnet.source.sha256,
             "carnet": doc["carnet"], "period": period_of(result), "summary": doc["summary"],
             "report": f"{job.id}/report.html" if "html" in formats else None}
    dates = seance_dates(result.carnet)
    return CarnetAudit(index, job.id, job.shown, list(result.findings), doc, entry, dates,
                       report, workbook, facts, seances=_seance_totals(result, dates))


def _seance_totals(result: AuditResult, dates: dict[int, str]) -> list[dict]:
    """The séances' totals for the history; none for a carnet too damaged to total."""
    from auditor.report.seance_totals import seance_totals

    try:
        return seance_totals(result.carnet, result.profile, dates)
    except Exception:   # noqa: BLE001 — a total the history lacks never stops the audit
        return []


@dataclass
class Finished:
    """One carnet's files and what the run keeps of it once they are written."""

    files: dict[str, bytes]
    entry: dict                    # its row of summary.json
    worst: Severity | None         # the highest severity that sets the exit status
    history: list[dict] = field(default_factory=list)   # per finding, what --history keeps
    # Per finding across carnets: its baseline state and review, as summary.json lists them.
    across_states: dict[str, dict] = field(default_factory=dict)
    # Where it was made (a pool worker writes the files it makes, see auditor/batch/finishing.py).
    index: int = -1
    fault: str | None = None       # its worker was lost or overran a bound: the run makes it itself
    pid: int | None = None
    error: object = None           # a write error (WriteError) in a worker, raised by the run
    stamped: dict = field(default_factory=dict)   # findings.json and report.html with their time slots (Stamped)
    # What changed since the baseline (baseline.changes_part): changes.json's part of this carnet.
    changes: dict = field(default_factory=dict)
    seances: list[dict] | None = None   # per séance, its totals for --history (CarnetAudit.seances)
    # Its own findings' money at stake (auditor.stake.stake_parts), for the batch's total.
    stake: tuple | None = None


@dataclass(frozen=True)
class StampSlots:
    """Placeholders for the run's time in one rendering: letters and digits
    only (no escaping changes them), with a random part the carnet's own text
    cannot contain, so only the renderer's own slots are filled."""

    iso: str       # where the ISO time stamp goes
    moment: str    # where the time as the reader writes it goes

    @classmethod
    def new(cls) -> "StampSlots":
        """Fresh slots for one rendering."""
        import secrets

        token = secrets.token_hex(16)
        return cls(f"ecartestampiso{token}", f"ecartestampmoment{token}")


@dataclass
class Stamped:
    """A rendered file with slots where the run's time goes: its text cut at
    the slots the renderer left (`parts`, the slots as None and "moment"), so
    that filling it with a time gives the bytes a rendering at that time gives."""

    parts: list
    kind: str              # json or html: how the time is written in it
    lang: str = "fr"

    @classmethod
    def of(cls, text: str, slot: StampSlots, kind: str, lang: str = "fr") -> "Stamped":
        """`text` as rendered with `slot`, cut at its slots (plain splits: the
        slots are new in each rendering, and a pattern made of them would be
        compiled anew for every file)."""
        parts: list = []
        for i, chunk in enumerate(text.split(slot.iso)):
            if i:
                parts.append(None)
            for j, piece in enumerate(chunk.split(slot.moment)):
                if j:
                    parts.append("moment")
                parts.append(piece.encode("utf-8"))
        return cls(parts, kind, lang)

    def fill(self, at: str) -> bytes:
        """The file at the time `at` (ISO, UTC)."""
        from markupsafe import escape

        from auditor.report.page import moment_text

        moment = moment_text(at, self.lang)
        moment = str(escape(moment)) if self.kind == "html" else json.dumps(moment, ensure_ascii=False)[1:-1]
        iso, moment = at.encode("utf-8"), moment.encode("utf-8")
        return b"".join(iso if p is None else moment if p == "moment" else p for p in self.parts)


def finish(audit: CarnetAudit, options: Options, *, across: list[Finding] = (), context: CarnetBaseline | None = None,
           reports: dict[str, str | None] | None = None, history_of: set[str] = frozenset(),
           checked_across: dict[str, str | None] | None = None, visit: Visit | None = None,
           sign: Callable[[bytes], bytes] | None = None) -> Finished:
    """The carnet's files, now that the run is known. `across`: the findings
    across carnets that involve it, each seen from it (`Finding.across`, this
    carnet first): they are findings of the carnet like its own, counted in
    its verdict, summary and money; `context`: its baseline and reviews;
    `reports`: each carnet id's report path in the batch (links to the other
    carnets); `history_of`: the fingerprints of the findings across carnets
    whose history row this carnet carries (each is in the history once);
    `checked_across`: per rule checked across the carnets of a table, None
    when every pair of this carnet was checked, else why not; `visit`: who
    audits, where (the procès-verbal); `sign`: signs the procès-verbal
    (auditor.sign), None leaves it unsigned."""
    from auditor import baseline
    from auditor.report.cross_carnet import combined_verdict, counted_with
    from auditor.stake import stake_parts, total_at_stake

    formats, at = options.formats, options.generated_at or generated_at()
    # findings.json and report.html are rendered with slots where the run's
    # time goes (`Stamped`): the same rendering serves this run and, kept by
    # the cache, the next nights whose carnet and context did not change.
    slot = StampSlots.new()
    findings = sort_findings([*audit.findings, *across]) if across else audit.findings
    compared = baseline.apply(findings, context)
    # The money of its findings across carnets counts as its own (a lost ticket
    # shows as EC661-01 here and EC83-04 with its neighbour: once, auditor.stake).
    own = audit.document["summary"]
    summary = counted_with(own, across, total_at_stake(findings) if across else own["impact_cents"])
    statuses = _across_statuses(checked_across or {}, across)
    rules = [statuses[r["code"]].as_json() if r["code"] in statuses else r for r in audit.document["rules"]]
    doc = {**audit.document, "generated_at": slot.iso, "summary": summary, "rules": rules,
           "findings": [f.as_json() for f in findings]}
    doc = baseline.decorate(doc, findings, compared)
    findings_json = Stamped.of(json_report.dumps(doc), slot, "json")
    stamped: dict[str, Stamped] = {"findings.json": findings_json} if "json" in formats else {}
    report = audit.report if {"html", "pdf"} & set(formats) else None
    if report is not None:
        from auditor.report.baseline_view import report_part
        from auditor.report.report_view import finish_report

        lang = report.view.lang
        part = report_part(findings, lang, compared) if compared.any() else None
        if "html" in formats:
            stamped["report.html"] = Stamped.of(html_report.render("report.html.j2", finish_report(
                report, slot.iso, list(across), reports, part, statuses, moment=slot.moment, summary=summary)),
                slot, "html", lang)
    files = {name: st.fill(at) for name, st in stamped.items()}
    if report is not None and "pdf" in formats:
        from auditor.report.pv import FILE_NAME, Visit, proces_verbal

        # The view report.html shows, at this run's time: the PDF holds its time inside, made for this run.
        shown = finish_report(report, at, list(across), reports, part, statuses, summary=summary)
        pdf = proces_verbal(shown, compared.reviews, {**doc, "generated_at": at}, findings_json.fill(at),
                            visit or Visit())
        files[FILE_NAME] = sign(pdf) if sign is not None else pdf
    if "xlsx" in formats and audit.workbook is not None:
        from auditor.report.excel_report import finish_workbook

        # The workbook's time is in its zip entries and properties: made for this run.
        files["annotated.xlsx"] = finish_workbook(audit.workbook, findings, at, compared.reviews)
    entry = {**audit.entry, "summary": summary,
             "verdict": combined_verdict(audit.entry["verdict"], [f.severity.label for f in across])}
    if compared.has_baseline:
        entry["baseline_counts"] = compared.counts()
    # Justified and false-positive findings never set the exit status; with
    # --fail-on-new, only new findings do.
    worst = baseline.worst(findings, compared, options.fail_on_new)
    kept = [f for f in findings if f.across is None or f.fingerprint in history_of]
    rows = baseline.history_rows(kept, compared, audit.seance_dates)
    states = {f.fingerprint: {"baseline_state": compared.state(f), "review": compared.reviews.get(f.fingerprint)}
              for f in across}
    return Finished(files, entry, worst, rows, states, stamped=stamped,
                    changes=baseline.changes_part(findings, compared, context), seances=audit.seances,
                    stake=stake_parts(audit.findings))


def _across_statuses(checked: dict[str, str | None], across: list[Finding]) -> dict[str, RuleStatus]:
    """The rules checked across carnets as this carnet's `rules` list them: checked, with the findings
    across carnets of that rule that involve it, or not checked and why."""
    out = {}
    for code, reason in checked.items():
        if reason is None:
            out[code] = RuleStatus(code, Status.CHECKED, findings=sum(1 for f in across if f.code == code))
        else:
            out[code] = RuleStatus(code, Status.NOT_CHECKED, reason=reason)
    return out


def write_batch(entries: list[dict], out: Path, formats: tuple[str, ...], lang: str, generated_at: str,
                cross_findings: list[dict] | None = None, trends: list[dict] | None = None,
                tables: list[dict] | None = None, baseline: dict | None = None, changes: str | None = None,
                dashboard: str | None = None, memo=None, impact_cents: int = 0) -> None:
    """Write the batch's summary.json and index.html beside the carnets' folders.
    Each carnet's row counts the findings across carnets that involve it; the
    totals count each of them once, and `impact_cents` is the batch's money
    at stake, each cent once (auditor.stake.batch_at_stake). `tables`: per casino and table, its
    carnets in order and how the rules across its carnets went. `baseline`:
    summary.json's `baseline` (path, matched carnets, renamed, vanished);
    `changes`: the file of what changed since it, which the index links;
    `dashboard`: the indicators' page the index links (with --history).
    `memo` (auditor.batch.cache.BatchMemo): where the two files are kept as
    made, with their time slots, for the next run whose inputs are the same
    (recalled from it when they are)."""
    from auditor.atomic import write_atomic

    if memo is not None:
        import hashlib
        import pickle

        digest = hashlib.sha256(pickle.dumps((entries, formats, lang, cross_findings, trends, tables, baseline,
                                              changes, dashboard, impact_cents),
                                             protocol=pickle.HIGHEST_PROTOCOL)).hexdigest()
        files = memo.recall(digest)
        if files is None:
            files = _batch_files(entries, formats, lang, cross_findings, trends, tables, baseline, changes, dashboard,
                                 impact_cents)
            memo.keep(digest, files)
    else:
        files = _batch_files(entries, formats, lang, cross_findings, trends, tables, baseline, changes, dashboard,
                             impact_cents)
    for name, stamped in files.items():
        write_atomic(out / name, stamped.fill(generated_at))


def _batch_files(entries: list[dict], formats: tuple[str, ...], lang: str, cross_findings: list[dict] | None,
                 trends: list[dict] | None, tables: list[dict] | None, baseline: dict | None, changes: str | None,
                 dashboard: str | None, impact_cents: int) -> dict[str, Stamped]:
    """summary.json and index.html as `write_batch` writes them, with slots where the run's time goes."""
    from auditor.report.cross_carnet import SEVERITY_KEYS

    cross_findings = cross_findings or []
    totals = {k: impact_cents if k == "impact_cents" else sum(e["summary"][k] for e in entries)
              for k in ("errors", "warnings", "info", "impact_cents", "rows_read", "rows_rejected")}
    for e in entries:   # what each carnet counted of the findings across carnets
        cc = e.get("cross_carnet") or {}
        for k in ("errors", "warnings", "info"):
            totals[k] -= int(cc.get(k, 0))
    for f in cross_findings:   # … counted once
        totals[SEVERITY_KEYS[f["severity"]]] += 1
    totals["carnets"] = len(entries)
    totals["cross_carnet_findings"] = len(cross_findings)
    slot = StampSlots.new()
    doc = {"schema_version": 1, "tool": {"name": "ecarte-auditor", "version": __version__},
           "generated_at": slot.iso, "carnets": entries, "totals": totals,
           # `cross_carnet` is v1.2's name of the list; `cross_carnet_findings`, the
           # same list, is kept for readers of v1.1 (schema_version stays 1).
           "cross_carnet": cross_findings, "cross_carnet_findings": cross_findings, "tables": tables or []}
    if baseline is not None:
        doc["baseline"] = baseline
    files = {}
    if "json" in formats:
        # The one list under its two names, written once (a 1,000-carnet night's is 8 MB of text).
        listed = jsontext.Text(jsontext.dumps(cross_findings, pad="  "))
        text = jsontext.dumps({**doc, "cross_carnet": listed, "cross_carnet_findings": listed}) + "\n"
        files["summary.json"] = Stamped.of(text, slot, "json", lang)
        # Its text is in the file's parts now: not held while index.html is made (a 1,000-carnet
        # batch's is megabytes, twice that as Python text when a name has an accent).
        del text, listed
    if "html" in formats:
        from auditor.report.archive_view import archive_view
        from auditor.report.baseline_view import index_part
        from auditor.report.index_view import index_view

        view = index_view(doc, lang)
        view.generated_text = slot.moment
        view.series = index_part(entries, lang, trends, baseline, changes)
        view.archive = archive_view(doc, lang)
        view.dashboard = dashboard
        files["index.html"] = Stamped.of(html_report.render("index.html.j2", view), slot, "html", lang)
    return files
