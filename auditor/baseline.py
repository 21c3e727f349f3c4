"""The baseline and the reviews: what one run brings to a carnet from earlier
runs (the baseline's findings, the reviews recorded on them), and what it
makes of them: each finding's baseline state (new / unchanged / updated), the
baseline's findings now absent, each finding's review, the reviews whose
finding is gone.

The client reads the baseline folder and the review files once and gives
each carnet its part (`CarnetBaseline`): a remote worker needs neither.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from auditor.errors import Message, UsageError
from auditor.model import Finding, Severity
from auditor.reviews import CLEARED, FILE_NAME, latest, load_reviews

STATES = ("new", "updated", "unchanged")   # the order the report shows them in
# What a baseline keeps of each finding: its identity and the values whose
# change makes it `updated`.
KEPT = ("fingerprint", "code", "severity", "seance", "coup", "rang", "message", "expected", "found", "impact_cents")
COMPARED = ("severity", "expected", "found", "impact_cents")


@dataclass(frozen=True)
class CarnetBaseline:
    """What a run brings to one carnet besides its files: the baseline's findings and the recorded reviews."""

    baseline: tuple[dict, ...] | None = None   # the baseline run's findings of this carnet; None: no baseline
    reviews: tuple[dict, ...] = ()             # the review entries recorded for this carnet, in file order
    # A shared review file holds every carnet's reviews: only those recorded on
    # this carnet (by id) are its orphans when their finding is gone.
    orphans_of: str | None = None

    def digest(self, fingerprints: set[str] | None = None) -> str:
        """What decides this carnet's files of it. Given the carnet's
        `fingerprints`, only the reviews that can reach its files count (on its
        findings or its baseline's, or its orphans): a review recorded on
        another carnet of a shared file changes nothing here."""
        reviews = self.reviews
        if fingerprints is not None:
            seen = set(fingerprints) | {b["fingerprint"] for b in self.baseline or ()}
            reviews = tuple(e for e in reviews if e.get("fingerprint") in seen or self.orphans_of is None
                            or e.get("carnet") in (self.orphans_of, None))
        text = json.dumps({"baseline": self.baseline, "reviews": reviews, "orphans_of": self.orphans_of},
                          sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class BaselineComparison:
    """One carnet's findings against its baseline and reviews."""
    has_baseline: bool
    states: dict[str, str] = field(default_factory=dict)        # fingerprint → new / unchanged / updated
    reviews: dict[str, dict] = field(default_factory=dict)      # fingerprint → latest decision (+ history)
    absent: list[dict] = field(default_factory=list)            # the baseline's findings now gone
    orphans: list[dict] = field(default_factory=list)           # reviews whose finding is gone

    def state(self, f: Finding) -> str | None:
        """The finding's state against the baseline (None without a baseline)."""
        return self.states.get(f.fingerprint) if self.has_baseline else None

    def counts(self) -> dict[str, int]:
        """How many findings are in each state, and how many are absent since the baseline."""
        out = {s: 0 for s in STATES}
        for s in self.states.values():
            out[s] += 1
        out["absent"] = len(self.absent)
        return out

    def blocking(self, f: Finding, only_new: bool) -> bool:
        """Does this finding set the exit status? Not when justified or a false
        positive; with --fail-on-new, only when new."""
        review = self.reviews.get(f.fingerprint)
        if review is not None and review["status"] in CLEARED:
            return False
        return not only_new or self.state(f) == "new"

    def any(self) -> bool:
        """There is something of the baseline or the reviews to show."""
        return self.has_baseline or bool(self.reviews) or bool(self.orphans)


def apply(findings: list[Finding], context: CarnetBaseline | None) -> BaselineComparison:
    """The findings set against the run's baseline and reviews."""
    context = context or CarnetBaseline()
    compared = BaselineComparison(has_baseline=context.baseline is not None)
    current = {f.fingerprint for f in findings}
    before = {b["fingerprint"]: b for b in context.baseline or ()}
    if compared.has_baseline:
        for f in findings:
            old = before.get(f.fingerprint)
            if old is None:
                compared.states[f.fingerprint] = "new"
            else:
                now = _kept(f.as_json())
                same = all(old.get(k) == now.get(k) for k in COMPARED)
                compared.states[f.fingerprint] = "unchanged" if same else "updated"
    decided = latest(list(context.reviews))
    compared.reviews = {fp: r for fp, r in decided.items() if fp in current}
    for fp, b in before.items():
        if fp not in current:
            compared.absent.append({**b, "review": decided.get(fp)})
    mine = None if context.orphans_of is None else {e["fingerprint"] for e in context.reviews
                                                    if e.get("carnet") in (context.orphans_of, None)}
    compared.orphans = [{"fingerprint": fp, **_about(context.reviews, fp), **r}
                    for fp, r in decided.items() if fp not in current and fp not in before
                    and (mine is None or fp in mine)]
    return compared


def _about(entries, fp: str) -> dict:
    e = next(e for e in reversed(entries) if e["fingerprint"] == fp)
    return {"code": e.get("code"), "seance": e.get("seance"), "coup": e.get("coup")}


def _kept(finding: dict) -> dict:
    return {k: finding.get(k) for k in KEPT}


def worst(findings: list[Finding], compared: BaselineComparison, only_new: bool) -> Severity | None:
    """The highest severity among the findings that block (only new ones when `only_new`)."""
    return max((f.severity for f in findings if compared.blocking(f, only_new)), default=None)


def decorate(doc: dict, findings: list[Finding], compared: BaselineComparison) -> dict:
    """findings.json v1.1: `baseline_state` and `review` per finding, `absent` at the top."""
    for entry, f in zip(doc["findings"], findings):
        entry["baseline_state"] = compared.state(f)
        entry["review"] = compared.reviews.get(f.fingerprint)
    doc["absent"] = [{k: a.get(k) for k in ("fingerprint", "code", "severity", "seance", "coup", "message",
                                            "impact_cents", "review")} for a in compared.absent]
    if compared.has_baseline:
        doc["baseline_counts"] = compared.counts()
    doc["orphan_reviews"] = compared.orphans
    return doc


# -- the client: building each carnet's context --------------------------------

@dataclass
class Baseline:
    """What the run was given: a baseline folder and/or a shared review file."""
    folder: Path | None = None     # the baseline run's output folder
    reviews: Path | None = None
    problems: list[str] = field(default_factory=list)
    _shared: list[dict] | None = None
    _shared_raw: str = ""

    def __post_init__(self):
        if self.folder is not None and not self.folder.is_dir():
            raise UsageError("audit.baseline_not_folder", path=self.folder)
        if self.reviews is not None:
            if self.reviews.exists() and not self.reviews.is_file():
                raise UsageError("audit.reviews_not_file", path=self.reviews)
            loaded = load_reviews(self.reviews)
            self.problems += loaded.problems
            self._shared = loaded.entries

    def decided(self) -> dict[str, dict]:
        """fingerprint → latest decision of the shared review file (none without one): the history keeps
        those on findings the run did not see."""
        return latest(list(self._shared)) if self._shared else {}

    def context(self, carnet_id: str) -> CarnetBaseline | None:
        """What the run brings to the carnet `carnet_id` (None without baseline or reviews)."""
        if self.folder is None and self.reviews is None:
            return None
        baseline = None
        if self.folder is not None:
            baseline = self._baseline_findings(carnet_id)
        if self._shared is not None:
            # Matched by fingerprint, whatever the carnet's id was when the
            # review was recorded (a renamed or re-saved file keeps them).
            return CarnetBaseline(baseline, tuple(self._shared), orphans_of=carnet_id)
        loaded = load_reviews(self.folder / carnet_id / FILE_NAME)
        self.problems += loaded.problems
        return CarnetBaseline(baseline, tuple(loaded.entries))

    def carry_reviews(self, carnet_id: str, out: Path) -> None:
        """The baseline's review file of this carnet, carried into this run's
        folder (every line, good or bad: nothing is lost); lines the folder's
        own file already has are not written twice."""
        if self.folder is None or self.reviews is not None:
            return
        source, target = self.folder / carnet_id / FILE_NAME, out / carnet_id / FILE_NAME
        try:
            raw = source.read_bytes()
        except OSError:
            return
        if target.exists() and target.resolve() == source.resolve():
            return
        have = set(target.read_bytes().splitlines()) if target.exists() else set()
        lines = [line for line in raw.splitlines() if line.strip() and line not in have]
        if lines:
            with open(target, "ab") as f:
                if target.stat().st_size and not target.read_bytes().endswith(b"\n"):
                    f.write(b"\n")
                f.write(b"\n".join(lines) + b"\n")

    def _baseline_findings(self, carnet_id: str) -> tuple[dict, ...]:
        path = self.folder / carnet_id / "findings.json"
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            found = [_kept(f) for f in doc["findings"] if f.get("fingerprint")]
        except FileNotFoundError:
            return ()   # a carnet the baseline did not have: all its findings are new
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self.problems.append(Message("audit.baseline_unreadable", path=path))
            return ()
        return tuple(found)

    def cross_findings(self) -> list[dict] | None:
        """The baseline's cross-carnet findings (None: no baseline summary)."""
        if self.folder is None:
            return None
        try:
            return json.loads((self.folder / "summary.json").read_text(encoding="utf-8"))["cross_carnet_findings"]
        except (OSError, ValueError, KeyError, TypeError):
            return None


def history_rows(findings: list[Finding], compared: BaselineComparison, seance_dates: dict[int, str]) -> list[dict]:
    """What the history keeps of each finding (auditor/history.py), and the
    decisions on the findings gone (absent, or whose review is an orphan): an
    acknowledgement (`corrige`) closes them in the history."""
    rows = []
    for f in findings:
        review = compared.reviews.get(f.fingerprint) or {}
        rows.append({"fingerprint": f.fingerprint, "code": f.code, "severity": f.severity.label,
                     "article": f.article, "message": f.message, "seance": f.seance,
                     "seance_date": seance_dates.get(f.seance), "coup": f.coup, "rang": f.rang, "row": f.row,
                     "cell": f.cell, "expected": f.expected, "found": f.found,
                     "impact_cents": int(f.impact_cents), "baseline_state": compared.state(f),
                     **_review_columns(review)})
    gone = [(a["fingerprint"], a.get("review")) for a in compared.absent]
    gone += [(o["fingerprint"], o) for o in compared.orphans]
    for fp, review in gone:
        if review:
            rows.append({"row_kind": "review", "fingerprint": fp, **_review_columns(review)})
    return rows


def _review_columns(review: dict) -> dict:
    return {"review_status": review.get("status"), "review_by": review.get("by"), "review_at": review.get("at"),
            "review_justification": review.get("justification"),
            "review_stale": bool(review.get("stale")) if review else None}


MIN_PREFIX = 8


def find_finding(out: Path, fingerprint: str) -> tuple[str, Path, dict]:
    """The finding of a run's output folder with this fingerprint (or a unique
    prefix of at least 8 characters): its carnet id, its folder, the finding."""
    fp = (fingerprint or "").strip().lower()
    if not out.is_dir():
        raise UsageError("review.no_output_folder", out=out)
    if len(fp) < MIN_PREFIX:
        raise UsageError("review.fingerprint_too_short", fingerprint=fingerprint, min=MIN_PREFIX)
    docs = [out / "findings.json"] if (out / "findings.json").is_file() else sorted(out.glob("*/findings.json"))
    if not docs:
        raise UsageError("review.no_findings_here", out=out)
    matches = []
    for path in docs:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            found = [f for f in doc["findings"] if str(f.get("fingerprint") or "").startswith(fp)]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        matches += [(path.parent.name, path.parent, f) for f in found]
    if not matches:
        raise UsageError("review.no_such_finding", fingerprint=fingerprint, out=out)
    if len({m[2]["fingerprint"] for m in matches}) > 1:
        listed = ", ".join(sorted({m[2]["fingerprint"] for m in matches})[:5])
        raise UsageError("review.ambiguous", fingerprint=fingerprint, out=out, listed=listed)
    return matches[0]
