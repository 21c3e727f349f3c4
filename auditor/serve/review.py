"""Reviews from the page: a finding's status and justification, written to
the audit's own review file in the workspace (`<audit>/reviews.jsonl`, the
file `ecarte-audit audit --reviews` reads), through the review API
(`auditor.reviews.record_review`); with `serve --reviews FILE`, to that file
as well."""

from __future__ import annotations

import json
from pathlib import Path

from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse

from auditor.batch.plan import carnet_id
from auditor.errors import os_reason, text_of
from auditor.reviews import ACKNOWLEDGED, STATUS_TEXT, STATUSES, ReviewError, latest, load_reviews, record_review
from auditor.serve.labels import page_label


class PageReviews:
    """Where this server writes decisions: each audit's file, and `serve --reviews FILE` if given."""

    def __init__(self, path: Path | None = None):
        self.path = path.resolve() if path is not None else None

    def statuses(self, lang: str) -> list[tuple[str, str]]:
        """The review statuses, with their words in `lang`."""
        # `corrige` acknowledges a finding that is gone: never one the page shows.
        return [(s, STATUS_TEXT[lang][s]) for s in STATUSES if s != ACKNOWLEDGED]

    def current(self, run) -> dict[str, dict]:
        """fingerprint → latest decision, as the audit's file holds it now."""
        return latest(load_reviews(audit_reviews(run)).entries)

    async def record(self, run, cid: str, body: dict) -> JSONResponse:
        """Check the page's decision on finding `body["fingerprint"]` (or
        `body["index"]`, its place in findings.json), then append it to the
        audit's file."""
        lang = run.lang

        def refuse(key: str, **params) -> JSONResponse:
            return JSONResponse({"error": page_label(f"errors.{key}", lang, **params)}, status_code=400)

        try:
            doc = json.loads((run.out / cid / "findings.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return refuse("bad_request")
        finding = _finding(doc, body)
        if finding is None:
            return refuse("bad_request")
        status = body.get("status")
        justification = str(body.get("justification") or "").strip()
        by = str(body.get("by") or "").strip()
        if status not in STATUSES:
            return refuse("review_status")
        if not justification:
            return refuse("review_justification")
        if not by:
            return refuse("review_name")
        if not finding.get("fingerprint"):
            return refuse("bad_request")
        shown = next((c["shown"] for c in run.carnets if c["id"] == cid), cid)
        target = audit_reviews(run)
        carnet = carnet_id(Path(shown).name or shown)
        try:
            entry = await run_in_threadpool(record_review, target, finding["fingerprint"], status, justification,
                                            by, carnet=carnet, finding=finding)
            if self.path is not None and self.path != target.resolve():
                await run_in_threadpool(record_review, self.path, finding["fingerprint"], status, justification, by,
                                        at=entry["at"], carnet=carnet, finding=finding)
        except ReviewError as exc:
            return JSONResponse({"error": text_of(exc, lang)}, status_code=400)   # in the page's language
        except OSError as exc:
            return JSONResponse({"error": page_label("errors.review_write", lang, file=target,
                                                     reason=text_of(os_reason(exc), lang))}, status_code=400)
        return JSONResponse({"entry": entry, "file": str(target)})


def audit_reviews(run) -> Path:
    """The audit's review file, beside its carnets and reports."""
    from auditor.serve.workspace import reviews_file

    return reviews_file(run.folder)


def _finding(doc: dict, body: dict) -> dict | None:
    """The finding the page names: by fingerprint (a finding of the carnet, or
    one across carnets that involves it), or by its index in `findings`."""
    fingerprint = body.get("fingerprint")
    if isinstance(fingerprint, str) and fingerprint:
        for f in [*doc.get("findings", []), *doc.get("cross_carnet", []), *doc.get("cross_carnet_findings", [])]:
            if isinstance(f, dict) and f.get("fingerprint") == fingerprint:
                return f
        return None
    index = body.get("index")
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(doc["findings"]):
        return None
    return doc["findings"][index]
