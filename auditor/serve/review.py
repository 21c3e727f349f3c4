"""Reviews from the page: a finding's status and justification, written to
the same append-only review file as `ecarte-audit review` writes, through
its API (`auditor.reviews.record_review`)."""

from __future__ import annotations

import getpass
import json
from pathlib import Path

from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse

from auditor.batch.plan import carnet_id
from auditor.errors import os_reason, text_of
from auditor.reviews import ACKNOWLEDGED, STATUS_TEXT, STATUSES, ReviewError, latest, load_reviews, record_review
from auditor.serve.labels import page_label


def default_name() -> str:
    """This computer's user name, offered as who reviews."""
    try:
        return getpass.getuser()
    except Exception:   # no user name in this environment: the page asks for one
        return ""


class PageReviews:
    """The review file this server writes (`serve --reviews FILE`)."""

    def __init__(self, path: Path):
        self.path = path.resolve()
        self.name = default_name()

    def statuses(self, lang: str) -> list[tuple[str, str]]:
        """The review statuses, with their words in `lang`."""
        # `corrige` acknowledges a finding that is gone: never one the page shows.
        return [(s, STATUS_TEXT[lang][s]) for s in STATUSES if s != ACKNOWLEDGED]

    def current(self) -> dict[str, dict]:
        """fingerprint → latest decision, as the file holds it now."""
        return latest(load_reviews(self.path).entries)

    async def record(self, run, cid: str, body: dict) -> JSONResponse:
        """Check the page's decision on finding `body["index"]`, then append it to the file."""
        lang = run.lang

        def refuse(key: str, **params) -> JSONResponse:
            return JSONResponse({"error": page_label(f"errors.{key}", lang, **params)}, status_code=400)

        try:
            doc = json.loads((run.out / cid / "findings.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return refuse("bad_request")
        index = body.get("index")
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(doc["findings"]):
            return refuse("bad_request")
        finding = doc["findings"][index]
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
        try:
            entry = await run_in_threadpool(record_review, self.path, finding["fingerprint"], status, justification,
                                            by, carnet=carnet_id(Path(shown).name or shown), finding=finding)
        except ReviewError as exc:
            return JSONResponse({"error": text_of(exc, lang)}, status_code=400)   # in the page's language
        except OSError as exc:
            return JSONResponse({"error": page_label("errors.review_write", lang, file=self.path,
                                                     reason=text_of(os_reason(exc), lang))}, status_code=500)
        return JSONResponse({"entry": entry, "file": str(self.path)})
