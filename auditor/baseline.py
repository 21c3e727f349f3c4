"""The baseline and the reviews: what one run brings to a carnet from earlier
runs (the baseline's findings, the reviews recorded on them), and what it
makes of them: each finding's baseline state (new / unchanged / updated), the
baseline's findings now absent, each finding's review, the reviews whose
finding is gone.

The baseline follows findings, not paths (outputs.md v1.2): the client
reads the whole previous run once (`PreviousRun`: every carnet's
findings.json, summary.json's findings across carnets and each carnet's
cover), matches this run's carnets to it (`Baseline.match`: same id, or
renamed — same cover, else the most findings in common —, the rest vanished),
and gives each carnet its part (`CarnetBaseline`): the baseline's findings
with its fingerprints, wherever they were, and its predecessor's findings
now found nowhere (its absent ones). A worker that makes its files needs
only that part.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from auditor.errors import Message, UsageError
from auditor.model import Finding, Severity
from auditor.reviews import (ACKNOWLEDGED, CLEARED, FILE_NAME, REVIEWED_VALUES, is_stale, last_entries, latest,
                             load_reviews)

STATES = ("new", "updated", "unchanged")   # the order the report shows them in
# What a baseline keeps of each finding: its identity and the values whose
# change makes it `updated`.
KEPT = ("fingerprint", "code", "severity", "seance", "coup", "rang", "message", "expected", "found", "impact_cents")
COMPARED = ("severity", "expected", "found", "impact_cents")


@dataclass(frozen=True)
class CarnetBaseline:
    """What a run brings to one carnet besides its files: the baseline's findings and the recorded reviews."""

    # The baseline run's findings that concern this carnet: those with its
    # fingerprints (wherever they were), and those of the carnet it was in the
    # baseline (same id, or renamed) found nowhere in this run. None: no baseline.
    baseline: tuple[dict, ...] | None = None
    reviews: tuple[dict, ...] = ()             # the review entries recorded for this carnet, in file order
    # A shared review file holds every carnet's reviews: only those recorded on
    # this carnet (by its id, or its id in the baseline) are its orphans when their finding is gone.
    orphans_of: str | tuple[str, ...] | None = None

    def digest(self, fingerprints: set[str] | None = None) -> str:
        """What decides this carnet's files of it. Given the carnet's
        `fingerprints`, only the reviews that can reach its files count (on its
        findings or its baseline's, or its orphans): a review recorded on
        another carnet of a shared file changes nothing here."""
        reviews = self.reviews
        if fingerprints is not None:
            seen = set(fingerprints) | {b["fingerprint"] for b in self.baseline or ()}
            reviews = tuple(e for e in reviews if e.get("fingerprint") in seen or self.orphans_of is None
                            or e.get("carnet") in (*self.owners(), None))
        text = json.dumps({"baseline": self.baseline, "reviews": reviews, "orphans_of": self.orphans_of},
                          sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def owners(self) -> tuple[str, ...]:
        """The carnet ids whose reviews are this carnet's (its own, its id in the baseline)."""
        if self.orphans_of is None:
            return ()
        return (self.orphans_of,) if isinstance(self.orphans_of, str) else tuple(self.orphans_of)


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
        positive, unless that review is stale (the finding changed since);
        with --fail-on-new, only when new — a finding whose review is stale
        counts as new, and so does one acknowledged corrected that is back."""
        review = self.reviews.get(f.fingerprint)
        stale = bool(review and review.get("stale"))
        if review is not None and review["status"] in CLEARED and not stale:
            return False
        if not only_new:
            return True
        return self.state(f) == "new" or stale or bool(review and review["status"] == ACKNOWLEDGED)

    def stale(self, f: Finding) -> bool:
        """Has the finding changed since its review was made?"""
        review = self.reviews.get(f.fingerprint)
        return bool(review and review.get("stale"))

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
    made_on = last_entries(list(context.reviews))
    # A review holds for what was reviewed: judged against the values it was made on.
    compared.reviews = {f.fingerprint: {**decided[f.fingerprint],
                                        "stale": is_stale(made_on[f.fingerprint], f.as_json())}
                        for f in findings if f.fingerprint in decided}
    for fp, b in before.items():
        if fp not in current:
            compared.absent.append({**b, "review": decided.get(fp)})
    mine = None if context.orphans_of is None else {e["fingerprint"] for e in context.reviews
                                                    if e.get("carnet") in (*context.owners(), None)}
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
                                            "expected", "found", "impact_cents", "review")} for a in compared.absent]
    if compared.has_baseline:
        doc["baseline_counts"] = compared.counts()
    doc["orphan_reviews"] = compared.orphans
    return doc


def changes_part(findings: list[Finding], compared: BaselineComparison, context: CarnetBaseline | None) -> dict:
    """What changed in this carnet since the baseline (changes.json's part of
    it): its new and updated findings, with their review, its absent ones,
    and its findings whose review no longer holds (`reviews_stale`: made on
    other values, or an acknowledgement `corrige` of a finding still found —
    under --fail-on-new they count as new, night after night, as long as
    they stay so). Empty without a baseline."""
    if not compared.has_baseline:
        return {}
    before = {b["fingerprint"]: b for b in (context.baseline if context is not None else None) or ()}
    made_on = last_entries(list(context.reviews)) if context is not None else {}
    new, updated, lapsed = [], [], []
    for f in findings:
        state = compared.state(f)
        review = compared.reviews.get(f.fingerprint)
        item = {"fingerprint": f.fingerprint, "code": f.code, "severity": f.severity.label, "message": f.message,
                "seance": f.seance, "coup": f.coup, "expected": f.expected, "found": f.found,
                "impact_cents": int(f.impact_cents), "review": review,
                "across": [p["carnet"] for p in f.across] if f.across is not None else None}
        if review is not None and (review.get("stale") or review["status"] == ACKNOWLEDGED):
            line = made_on.get(f.fingerprint) or {}
            lapsed.append({**item, "baseline_state": state,
                           "why": "back" if review["status"] == ACKNOWLEDGED else "changed",
                           "reviewed": ({k: line.get(k) for k in REVIEWED_VALUES} if "impact_cents" in line
                                        else None)})
        if state not in ("new", "updated"):
            continue
        if state == "updated":
            old = before.get(f.fingerprint, {})
            item.update({"old_impact_cents": old.get("impact_cents"), "old_expected": old.get("expected"),
                         "old_found": old.get("found"), "old_severity": old.get("severity")})
            updated.append(item)
        else:
            new.append(item)
    absent = [{k: a.get(k) for k in ("fingerprint", "code", "severity", "message", "seance", "coup", "expected",
                                     "found", "impact_cents", "review")} | {"was": a.get("carnet")}
              for a in compared.absent]
    return {"new": new, "updated": updated, "absent": absent, "reviews_stale": lapsed}


# -- the client: the previous run, matched, and each carnet's part -----------------

@dataclass
class PreviousRun:
    """A baseline run's output folder as read once by the client."""

    findings: dict[str, dict] = field(default_factory=dict)   # fingerprint → what is kept of it, with its `carnet`
    # id → {"path", "cover", "fps", "findings": fingerprint → what is kept}. Two carnets
    # alike in casino, table and séances (overlapping carnets) may share a fingerprint:
    # a carnet is compared with its own baseline carnet's finding first.
    carnets: dict[str, dict] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        """No run there (a first night, or a folder of something else)."""
        return not self.carnets and not self.findings


def cover_key(casino, table, first_seance, first_day) -> tuple | None:
    """What recognises a carnet renamed between two runs: its cover (casino,
    table) and its first séance (number and date); None when one is unknown."""
    key = (casino, table, first_seance, first_day)
    return None if any(v is None for v in key) else tuple(str(v) for v in key)


def read_previous(folder: Path, problems: list, memo=None) -> PreviousRun:
    """Every carnet's findings of the run in `folder`, the findings across
    carnets of its summary.json and each carnet's cover (from summary.json's
    tables). A file that cannot be read is said once; its findings count as new.
    `memo` (auditor.batch.cache.BatchMemo): where the run read from the same
    files (their names, sizes, times and inodes) is kept, read back instead
    of their JSON (300 carnets: 0.15–0.2 s of a night from the cache)."""
    if not folder.is_dir():
        return PreviousRun()
    stamp = _files_stamp(folder) if memo is not None else ""
    kept = memo.recall(stamp) if memo is not None else None
    if isinstance(kept, PreviousRun):
        return kept
    said = len(problems)
    out = _read_previous(folder, problems)
    if memo is not None and len(problems) == said:   # a file that could not be read is read again next time
        memo.keep(stamp, out)
    return out


def _files_stamp(folder: Path) -> str:
    """What says that a run's files are still the ones read: each
    findings.json's and summary.json's name, size, time and inode."""
    parts = []
    for path in sorted(folder.glob("*/findings.json")) + [folder / "summary.json"]:
        try:
            st = path.stat()
        except OSError:
            parts.append([path.relative_to(folder).as_posix(), None])
            continue
        parts.append([path.relative_to(folder).as_posix(), st.st_size, st.st_mtime_ns, st.st_ino])
    text = json.dumps(["previous", 2, str(folder.resolve()), parts], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def run_carnets(folder: Path) -> list[str] | None:
    """The carnet ids of the run in `folder` as its summary.json lists them
    (None: no summary.json, or one that cannot be read — a carnet audited
    alone, a batch stopped half-way)."""
    try:
        doc = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
        ids = [c["id"] for c in doc["carnets"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return ids if all(isinstance(i, str) and i and "/" not in i and i not in (".", "..") for i in ids) else None


def _read_previous(folder: Path, problems: list) -> PreviousRun:
    out = PreviousRun()
    # The previous run is what its summary.json lists: a carnet's folder left
    # by an older run (a carnet deleted or renamed since) is not part of it.
    listed = run_carnets(folder)
    paths = (sorted(folder.glob("*/findings.json")) if listed is None
             else [folder / cid / "findings.json" for cid in sorted(set(listed))
                   if (folder / cid / "findings.json").is_file()])
    for path in paths:
        cid = path.parent.name
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            listed = [f for f in doc["findings"] if f.get("fingerprint")]
            shown = (doc.get("source") or {}).get("path")
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            problems.append(Message("audit.baseline_unreadable", path=path))
            out.carnets[cid] = {"path": None, "cover": None, "fps": (), "findings": {}}
            continue
        own: dict[str, dict] = {}
        for f in listed:
            kept = own.setdefault(f["fingerprint"], {**_kept(f), "carnet": cid})
            out.findings.setdefault(kept["fingerprint"], kept)
        out.carnets[cid] = {"path": shown, "cover": None, "fps": tuple(own), "findings": own}
    summary = folder / "summary.json"
    if not summary.is_file():
        return out
    try:
        doc = json.loads(summary.read_text(encoding="utf-8"))
        for t in doc.get("tables") or ():
            for row in t.get("timeline") or ():
                if row.get("id") in out.carnets:
                    out.carnets[row["id"]]["cover"] = cover_key(t.get("casino"), t.get("table"),
                                                                (row.get("seances") or {}).get("first"),
                                                                row.get("first_day"))
        for cf in doc.get("cross_carnet") or doc.get("cross_carnet_findings") or ():
            if cf.get("fingerprint"):
                places = cf.get("across") or [{}]
                out.findings.setdefault(cf["fingerprint"], {**_kept(cf), "carnet": places[0].get("carnet")})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        problems.append(Message("audit.baseline_summary_unreadable", path=summary))
    return out


@dataclass
class Matching:
    """This run's carnets set against the baseline's."""

    predecessor: dict[str, str] = field(default_factory=dict)   # this run's id → its id in the baseline
    renamed: list[dict] = field(default_factory=list)           # [{"from", "to"}], in this run's order
    vanished: list[str] = field(default_factory=list)           # the baseline's carnets found nowhere
    present: set[str] = field(default_factory=set)              # every fingerprint of this run
    total: int = 0

    @property
    def matched(self) -> int:
        """How many of this run's carnets the baseline has (by id, or renamed)."""
        return len(self.predecessor)


def match(previous: PreviousRun, carnets: list[tuple[str, tuple | None, frozenset]]) -> Matching:
    """This run's carnets (`(id, cover key, fingerprints)`, in the run's
    order) against the baseline's: the same id is the same carnet; a new id
    whose cover matches a carnet of the baseline no longer there is that
    carnet renamed — else the one it shares the most findings with; the
    baseline's carnets left are vanished."""
    prev = previous.carnets
    out = Matching(total=len(carnets))
    ids = {cid for cid, _, _ in carnets}
    for cid, _, fps in carnets:
        out.present |= fps
        if cid in prev:
            out.predecessor[cid] = cid
    free = [pid for pid in sorted(prev) if pid not in ids]
    by_cover: dict[tuple, list[str]] = {}
    for pid in free:
        if prev[pid]["cover"] is not None:
            by_cover.setdefault(prev[pid]["cover"], []).append(pid)
    taken: set[str] = set()
    for cid, cover, _ in carnets:
        if cid not in out.predecessor and cover is not None and by_cover.get(cover):
            pid = by_cover[cover].pop(0)
            out.predecessor[cid] = pid
            taken.add(pid)
    # A baseline without covers (a carnet alone, or one whose séances cannot be
    # placed): the carnet it shares the most findings with, if any.
    index: dict[str, str] = {}
    for pid in free:
        if pid not in taken:
            for fp in prev[pid]["fps"]:
                index.setdefault(fp, pid)
    for cid, _, fps in carnets:
        if cid in out.predecessor:
            continue
        shared: dict[str, int] = {}
        for fp in fps:
            pid = index.get(fp)
            if pid is not None and pid not in taken:
                shared[pid] = shared.get(pid, 0) + 1
        if shared:
            pid = min(shared, key=lambda p: (-shared[p], p))
            out.predecessor[cid] = pid
            taken.add(pid)
    out.renamed = [{"from": out.predecessor[cid], "to": cid} for cid, _, _ in carnets
                   if out.predecessor.get(cid, cid) != cid]
    out.vanished = [pid for pid in sorted(prev) if pid not in ids and pid not in taken]
    return out


@dataclass
class Baseline:
    """What the run was given: a baseline folder and/or a shared review file."""
    folder: Path | None = None     # the baseline run's output folder
    reviews: Path | None = None
    problems: list[str] = field(default_factory=list)
    memo: object = None            # where the baseline as read is kept (read_previous)
    previous: PreviousRun | None = None
    matching: Matching | None = None
    _shared: list[dict] | None = None
    _by: tuple | None = None
    # Without --reviews: every review file of the baseline folder (`<id>/reviews.jsonl`,
    # a vanished carnet's too), merged into one sequence (`pooled_reviews`), and the
    # folder id of the file each line comes from.
    _pool: list[dict] | None = None
    _pool_files: list[str] = field(default_factory=list)
    _pool_by: tuple | None = None

    def __post_init__(self):
        if self.folder is not None:
            if self.folder.exists() and not self.folder.is_dir():
                raise UsageError("audit.baseline_not_folder", path=self.folder)
            # Read whole before anything is written (--out may be the baseline folder itself).
            self.previous = read_previous(self.folder, self.problems, self.memo)
        if self.reviews is not None:
            if self.reviews.exists() and not self.reviews.is_file():
                raise UsageError("audit.reviews_not_file", path=self.reviews)
            loaded = load_reviews(self.reviews)
            self.problems += loaded.problems
            self._shared = loaded.entries
        elif self.folder is not None:
            self._pool, self._pool_files = pooled_reviews(self.folder, self.problems)

    def decided(self) -> dict[str, dict]:
        """fingerprint → latest decision of the review files read (the shared
        file, or every review file of the baseline folder): the history keeps
        those on findings the run did not see (a vanished carnet's, acknowledged)."""
        entries = self._shared if self._shared is not None else self._pool
        return latest(list(entries)) if entries else {}

    @property
    def first_night(self) -> bool:
        """A baseline folder that does not exist yet, or holds no run: every finding is new."""
        return self.previous is not None and self.previous.empty

    def match(self, carnets: list[tuple[str, tuple | None, frozenset]]) -> list[str]:
        """Set this run's carnets against the baseline (see `match`); what the
        command says of it: a first night, or few carnets matched."""
        if self.previous is None:
            return []
        self.matching = match(self.previous, carnets)
        if self.first_night:
            return [Message("audit.baseline_first_night", path=self.folder)]
        m = self.matching
        if m.total and 2 * m.matched < m.total:
            return [Message("audit.baseline_few_matched", path=self.folder, matched=m.matched, total=m.total)]
        return []

    def predecessor(self, carnet_id: str) -> str | None:
        """The carnet's id in the baseline (None: it was not there)."""
        if self.matching is not None:
            return self.matching.predecessor.get(carnet_id)
        return carnet_id if self.previous is not None and carnet_id in self.previous.carnets else None

    def context(self, carnet_id: str, fingerprints: frozenset | set = frozenset()) -> CarnetBaseline | None:
        """What the run brings to the carnet `carnet_id` whose findings have
        `fingerprints` (None without baseline or reviews): its part of the
        baseline and the reviews that can reach it."""
        if self.folder is None and self.reviews is None:
            return None
        baseline = None
        pid = self.predecessor(carnet_id)
        if self.previous is not None:
            pool = self.previous.findings
            present = self.matching.present if self.matching is not None else set(fingerprints)
            own = self.previous.carnets[pid]["findings"] if pid is not None else {}
            part = {fp: own.get(fp) or pool[fp] for fp in sorted(fingerprints) if fp in pool}
            for fp, kept in own.items():
                if fp not in present:
                    part.setdefault(fp, kept)
            baseline = tuple(part.values())
        if self._shared is not None:
            # Matched by fingerprint, whatever the carnet's id was when the
            # review was recorded (a renamed or re-saved file keeps them). Only
            # the lines that can reach this carnet travel with it.
            owners = (carnet_id,) if pid in (None, carnet_id) else (carnet_id, pid)
            seen = set(fingerprints) | {b["fingerprint"] for b in baseline or ()}
            present = self.matching.present if self.matching is not None else set()
            by_fp, by_carnet = self._index()
            lines = {n for fp in seen for n in by_fp.get(fp, ())}
            lines |= {n for cid in (*owners, None) for n in by_carnet.get(cid, ())
                      if self._shared[n]["fingerprint"] not in present}
            mine = tuple(self._shared[n] for n in sorted(lines))   # in file order: the last decision is the latest
            return CarnetBaseline(baseline, mine, orphans_of=owners)
        # Every review file of the baseline folder, matched by fingerprint
        # whichever carnet's file holds the line (a finding across carnets is
        # reviewed once, in one of its carnets' files), and every line of this
        # carnet's own file (its id in the baseline, when renamed): its orphans.
        by_fp, by_file = self._pool_index()
        own = pid or carnet_id
        seen = set(fingerprints) | {b["fingerprint"] for b in baseline or ()}
        lines = {n for fp in seen for n in by_fp.get(fp, ())} | set(by_file.get(own, ()))
        return CarnetBaseline(baseline, tuple(self._pool[n] for n in sorted(lines)))

    def carry_reviews(self, carnet_id: str, out: Path) -> None:
        """The baseline's review file of this carnet (of its id in the
        baseline, when renamed), carried into this run's folder (every line,
        good or bad: nothing is lost); lines the folder's own file already has
        are not written twice."""
        if self.folder is None or self.reviews is not None:
            return
        source = self.folder / (self.predecessor(carnet_id) or carnet_id) / FILE_NAME
        self._carry(source, out / carnet_id / FILE_NAME)

    @staticmethod
    def _carry(source: Path, target: Path) -> None:
        """`source`'s lines appended to `target` (made if need be), those it already has left out."""
        try:
            raw = source.read_bytes()
        except OSError:
            return
        if target.exists() and target.resolve() == source.resolve():
            return
        have = set(target.read_bytes().splitlines()) if target.exists() else set()
        lines = [line for line in raw.splitlines() if line.strip() and line not in have]
        if lines:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "ab") as f:
                if target.stat().st_size and not target.read_bytes().endswith(b"\n"):
                    f.write(b"\n")
                f.write(b"\n".join(lines) + b"\n")

    def _pool_index(self) -> tuple[dict, dict]:
        """The baseline folder's review lines by fingerprint and by file (positions in the pool), made once."""
        if self._pool_by is None:
            by_fp: dict[str, list[int]] = {}
            by_file: dict[str, list[int]] = {}
            for n, (e, cid) in enumerate(zip(self._pool or (), self._pool_files)):
                by_fp.setdefault(e["fingerprint"], []).append(n)
                by_file.setdefault(cid, []).append(n)
            self._pool_by = (by_fp, by_file)
        return self._pool_by

    def carry_gone_reviews(self, ids: set[str] | list[str], out: Path) -> None:
        """The review files of the baseline folder whose carnet is not in this
        run (vanished, or gone earlier and never back), carried into this
        run's folder under the same id: a decision is never lost from a
        series of runs, and a carnet back after a night away finds its
        reviews again. A renamed carnet's file goes with it (carry_reviews)."""
        if self.folder is None or self.reviews is not None:
            return
        taken = set(ids) | {self.predecessor(cid) for cid in ids}
        for cid in sorted(set(self._pool_files)):
            if cid not in taken:
                self._carry(self.folder / cid / FILE_NAME, out / cid / FILE_NAME)

    def _index(self) -> tuple[dict, dict]:
        """The shared file's lines by fingerprint and by carnet id (positions in the file), made once."""
        if self._by is None:
            by_fp: dict[str, list[int]] = {}
            by_carnet: dict[str | None, list[int]] = {}
            for n, e in enumerate(self._shared or ()):
                by_fp.setdefault(e["fingerprint"], []).append(n)
                carnet = e.get("carnet")
                if carnet is None or isinstance(carnet, str):   # a hand-edited line may hold anything there
                    by_carnet.setdefault(carnet, []).append(n)
            self._by = (by_fp, by_carnet)
        return self._by

    def summary(self) -> dict | None:
        """summary.json's `baseline` (None without --baseline)."""
        if self.folder is None or self.matching is None:
            return None
        m = self.matching
        return {"path": str(self.folder), "matched_carnets": m.matched, "renamed": m.renamed,
                "vanished": m.vanished}

    def vanished(self) -> list[dict]:
        """The baseline's carnets found nowhere in this run, each with its
        findings found nowhere either (and their latest review). A finding
        across carnets is listed once: under the first of its vanished
        carnets (by id), with `across` the baseline's carnets it involved,
        that one first."""
        if self.matching is None or self.previous is None:
            return []
        out = []
        decided = self.decided()
        gone = {fp for pid in self.matching.vanished for fp in self.previous.carnets[pid]["findings"]
                if fp not in self.matching.present}
        held: dict[str, list[str]] = {}
        for cid in sorted(self.previous.carnets):
            for fp in self.previous.carnets[cid]["findings"]:
                if fp in gone:
                    held.setdefault(fp, []).append(cid)
        listed: set[str] = set()
        for pid in self.matching.vanished:
            c = self.previous.carnets[pid]
            findings = []
            for fp, kept in c["findings"].items():
                if fp in self.matching.present or fp in listed:
                    continue
                listed.add(fp)
                entry = {**{k: kept.get(k) for k in ("fingerprint", "code", "severity", "message", "seance", "coup",
                                                     "expected", "found", "impact_cents")},
                         "review": decided.get(fp)}
                if len(held.get(fp, ())) > 1:
                    entry["across"] = [pid, *(cid for cid in held[fp] if cid != pid)]
                findings.append(entry)
            out.append({"carnet": pid, "path": c["path"], "findings": findings})
        return out

    def cross_findings(self) -> list[dict] | None:
        """The baseline's cross-carnet findings (None: no baseline summary)."""
        if self.folder is None:
            return None
        try:
            return json.loads((self.folder / "summary.json").read_text(encoding="utf-8"))["cross_carnet_findings"]
        except (OSError, ValueError, KeyError, TypeError):
            return None


def pooled_reviews(folder: Path, problems: list) -> tuple[list[dict], list[str]]:
    """Every review file of a run's folder (`<id>/reviews.jsonl`) as one
    sequence, and the folder id of each line's file, in the order the
    decisions were recorded (`at`, read as a moment: `11:00+02:00` is before
    `10:00Z`), ties in the order of the files' ids, then of their lines — so
    that when two carnets' files hold decisions on one fingerprint (a finding
    across carnets), the latest recorded is its decision, the same for every
    carnet it involves, whatever other lines the files hold."""
    lines = []
    for path in sorted(folder.glob(f"*/{FILE_NAME}")):
        loaded = load_reviews(path)
        problems += loaded.problems
        lines += [(_moment(e.get("at")), path.parent.name, n, e) for n, e in enumerate(loaded.entries)]
    entries, owners, kept = [], [], set()
    for _, cid, _, e in sorted(lines, key=lambda line: line[:3]):
        # A line carried into another carnet's folder (renamed, in a folder that is
        # its own baseline) is one decision, not two.
        key = json.dumps(e, sort_keys=True, ensure_ascii=False, default=str)
        if key not in kept:
            kept.add(key)
            entries.append(e)
            owners.append(cid)
    return entries, owners


def _moment(at) -> float:
    """A review's `at` as seconds since 1970 (UTC when it names no zone; an unreadable one first)."""
    from datetime import datetime, timezone

    try:
        moment = datetime.fromisoformat(str(at).replace("Z", "+00:00"))
    except ValueError:
        return float("-inf")
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()


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
    prefix of at least 8 characters): its carnet id, its folder, the finding.
    Besides each carnet's findings, those the run lists as gone — a carnet's
    `absent`, changes.json's findings of vanished carnets — can be found, to
    be acknowledged (`--status corrige`)."""
    fp = (fingerprint or "").strip().lower()
    if not out.is_dir():
        raise UsageError("review.no_output_folder", out=out)
    if len(fp) < MIN_PREFIX:
        raise UsageError("review.fingerprint_too_short", fingerprint=fingerprint, min=MIN_PREFIX)
    docs = [out / "findings.json"] if (out / "findings.json").is_file() else sorted(out.glob("*/findings.json"))
    changes = out / "changes.json"
    if not docs and not changes.is_file():
        raise UsageError("review.no_findings_here", out=out)
    matches = []
    for path in docs:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            found = [f for f in [*doc["findings"], *(doc.get("absent") or ())]
                     if str(f.get("fingerprint") or "").startswith(fp)]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        matches += [(path.parent.name, path.parent, f) for f in found]
    if not matches and changes.is_file():
        try:
            gone = json.loads(changes.read_text(encoding="utf-8")).get("vanished") or ()
            matches = [(c["carnet"], out / c["carnet"], f) for c in gone for f in c["findings"]
                       if str(f.get("fingerprint") or "").startswith(fp)]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            matches = []
    if not matches:
        raise UsageError("review.no_such_finding", fingerprint=fingerprint, out=out)
    if len({m[2]["fingerprint"] for m in matches}) > 1:
        listed = ", ".join(sorted({m[2]["fingerprint"] for m in matches})[:5])
        raise UsageError("review.ambiguous", fingerprint=fingerprint, out=out, listed=listed)
    return matches[0]


def still_found(folder: Path, fingerprint: str) -> bool:
    """Is the finding among the findings (not the absent ones) of the
    findings.json in `folder` (a carnet's folder of a run)? Then the run saw
    it: `corrige` on it is an acknowledgement made from the last run that saw
    it (its carnet vanished since), or made too early."""
    try:
        doc = json.loads((folder / "findings.json").read_text(encoding="utf-8"))
        return any(f.get("fingerprint") == fingerprint for f in doc["findings"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False
