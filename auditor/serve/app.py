"""The routes of the local page (Starlette)."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from auditor import __version__
from auditor.i18n import LANGS
from starlette.concurrency import run_in_threadpool

from auditor.errors import WriteError
from auditor.limits import DEFAULT_LIMITS, Limits
from auditor.read import WORKBOOK_SUFFIXES, canonical_name, table_names
from auditor.serve.labels import page_label, page_labels
from auditor.serve.runs import Runs, no_carnet_text
from auditor.serve.security import REPORT_CSP, Guard
from auditor.serve.uploads import UploadParser, UploadTooLarge, limited
from auditor.serve.templates import render as render_template

ASSETS = {"page.js": "text/javascript; charset=utf-8", "page.css": "text/css; charset=utf-8"}
LANG_COOKIE = "ecarte-audit-lang"
CARNET_ID = re.compile(r"^[A-Za-z0-9._-]+$")
MAX_UPLOAD_FILES = 500   # a drop of carnets, or the CSV files of a few


def _lang(request: Request, default: str) -> str:
    for value in (request.query_params.get("lang"), request.cookies.get(LANG_COOKIE)):
        if value in LANGS:
            return value
    return default


def create_app(root: Path, token: str, port: int, lang: str = "fr", limits: Limits | None = None,
               workers: int = 1, on_startup=None, reviews=None, workspace: Path | None = None,
               settings_file: Path | None = None,
               keep_bytes: int | None = None) -> Starlette:
    """The application; `root` is the private folder (it must exist).
    `workspace`: the visit's folder for this session (default: the
    settings', else the documents folder's); `settings_file`: where the page
    keeps its settings (default: the user's configuration folder);
    `keep_bytes`: what the private folder (the uploads waiting, the audits'
    cache) may take before the oldest of the cache is evicted."""
    from auditor.serve.settings import PageSettings

    limits_in_force = limits or DEFAULT_LIMITS
    settings = PageSettings(settings_file, workspace, lang)
    runs = Runs(root, limits, workers, workspace=settings.workspace(), pv_settings=settings.pv,
                keep_bytes=keep_bytes)
    runs.workspace.clear_pending()
    spool = root / "spool"
    spool.mkdir(exist_ok=True, mode=0o700)
    default_lang = lang

    def error(status: int, key: str, lang: str, **params) -> JSONResponse:
        return JSONResponse({"error": page_label(key, lang, **params)}, status_code=status)

    async def page(request: Request) -> Response:
        lang = _lang(request, default_lang)
        labels = page_labels(lang)
        accept = ",".join([*WORKBOOK_SUFFIXES, ".csv", ".zip"])
        html = render_template(
            "page.html.j2", lang=lang, t={k.replace(".", "_"): v for k, v in labels.items()}, langs=LANGS, accept=accept,
            version=__version__, js_labels=_js_labels(lang, reviews),
            review_name=settings.values.inspector,   # who decides: the settings' inspector, never the login name
            limit_text=page_label("page.limit", lang, size=size_words(limits_in_force.max_file_bytes, lang),
                                  suffixes=", ".join([*WORKBOOK_SUFFIXES, ".csv", ".zip"])),
            reviews=reviews is not None)
        response = HTMLResponse(html)
        if request.query_params.get("lang") in LANGS:
            response.set_cookie(LANG_COOKIE, lang, httponly=True, samesite="strict", path="/")
        return response

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ASSETS:
            return Response(status_code=404)
        data = resources.files("auditor.serve").joinpath("assets", name).read_bytes()
        return Response(data, media_type=ASSETS[name])

    async def upload(request: Request) -> Response:
        lang = _lang(request, default_lang)
        if request.headers.get("content-type", "").split(";")[0].strip() != "multipart/form-data":
            return error(400, "errors.no_file", lang)
        declared = request.headers.get("content-length")
        total_limit = limits_in_force.max_unzipped_bytes
        if declared and declared.isdigit() and int(declared) > total_limit:
            return error(413, "errors.too_large_total", lang, limit=size_words(total_limit, lang))
        parser = UploadParser(request.headers, limited(request.stream(), total_limit), spool_dir=spool,
                              max_file_bytes=limits_in_force.max_file_bytes, max_files=MAX_UPLOAD_FILES,
                              max_fields=20)
        try:
            form = await parser.parse()   # what a refused or broken body wrote is removed there
        except UploadTooLarge as exc:
            if exc.name:
                return error(413, "errors.too_large", lang, name=exc.name, limit=size_words(exc.limit, lang))
            return error(413, "errors.too_large_total", lang, limit=size_words(exc.limit, lang))
        except Exception:   # a malformed body: say so, never a traceback
            return error(400, "errors.bad_upload", lang)
        # From here every file of the upload is in the spool: handed to the run
        # (which consumes them), or removed, whichever way this ends.
        run = None
        try:
            try:
                lang = form.get("lang") if form.get("lang") in LANGS else lang
                files = []
                for _, value in form.multi_items():
                    if hasattr(value, "read") and value.filename:
                        files.append((value.filename, parser.path_of(value)))   # on disk, never read here
            finally:
                await form.close()
            parser.discard(keep={path for _, path in files})   # a file part without a name: not kept
            if not files:
                return error(400, "errors.no_file", lang)
            refused = _not_a_carnet(files)
            if refused:
                return JSONResponse({"error": no_carnet_text(lang), "ignored": refused}, status_code=400)
            try:
                run = runs.upload(files, lang)   # the private folder is kept within --keep-mb by the run
            except (OSError, WriteError) as exc:
                return _workspace_error(exc, runs.workspace.folder, lang)
        finally:
            if run is None:
                parser.discard()   # nothing of it is kept
        return JSONResponse(run.status(), status_code=202)

    async def folder(request: Request) -> Response:
        lang = _lang(request, default_lang)
        try:
            body = await request.json()
            text = str(body.get("folder", "")).strip()
            lang = body.get("lang") if body.get("lang") in LANGS else lang
        except Exception:
            return error(400, "errors.bad_request", lang)
        if not text:
            return error(400, "errors.no_folder", lang)
        path = Path(text).expanduser()
        from auditor.batch.plan import plan

        def look():
            # Off the request loop: a folder of thousands of carnets, or a
            # network share, must not freeze the page.
            if not path.exists():
                return "errors.folder_missing", None
            if not path.is_dir() and not path.is_file():
                return "errors.folder_missing", None
            try:
                if path.is_dir():
                    next(iter(path.iterdir()), None)
                return None, plan([path])
            except OSError:
                return "errors.folder_unreadable", None

        try:
            problem, jobs = await run_in_threadpool(look)
        except OSError:
            problem, jobs = "errors.folder_unreadable", None
        if problem:
            return error(400, problem, lang, folder=text)
        if not jobs:
            return error(400, "errors.folder_empty", lang, folder=text)
        try:
            run = runs.folder(path, lang, jobs)
        except (OSError, WriteError) as exc:
            return _workspace_error(exc, runs.workspace.folder, lang)
        return JSONResponse(run.status(), status_code=202)

    async def status(request: Request) -> Response:
        run = await run_in_threadpool(runs.get, request.path_params["run"])
        if run is None:
            return Response(status_code=404)
        return JSONResponse(run.status())

    async def run_file(request: Request) -> Response:
        run = await run_in_threadpool(runs.get, request.path_params["run"])
        if run is None:
            return Response(status_code=404)
        path = _inside(run.out, request.path_params["path"])
        if path is None:
            return Response(status_code=404)
        headers = {"cache-control": "no-store"}   # made again when a decision is recorded
        if path.suffix == ".html":
            headers["content-security-policy"] = REPORT_CSP
        if request.query_params.get("download"):
            return FileResponse(path, headers=headers, filename=_download_name(run, path))
        return FileResponse(path, headers=headers)

    async def cell(request: Request) -> Response:
        from auditor.serve.cells import cell_page

        run = await run_in_threadpool(runs.get, request.path_params["run"])
        cid = request.path_params["carnet"]
        job = run.jobs.get(cid) if run else None
        if job is None:
            return Response(status_code=404)
        lang = _lang(request, run.lang)
        q = request.query_params
        html = await run_in_threadpool(cell_page, job, q.get("table", ""), q.get("row", ""), q.get("column", ""),
                                       q.get("cell", ""), lang, runs.limits)
        return HTMLResponse(html)

    async def review(request: Request) -> Response:
        if reviews is None:
            return Response(status_code=404)
        run = await run_in_threadpool(runs.get, request.path_params["run"])
        cid = request.path_params["carnet"]
        if run is None or cid not in {c["id"] for c in run.carnets}:
            return Response(status_code=404)
        try:
            body = await request.json()
            assert isinstance(body, dict)
        except Exception:
            return error(400, "errors.bad_request", run.lang)
        answer = await reviews.record(run, cid, body)
        if answer.status_code == 200 and run.record is not None:
            runs.again(run)   # the report, findings.json, the workbook and the PV show it
        return answer

    async def audits(request: Request) -> Response:
        lang = _lang(request, default_lang)
        try:
            listed = await run_in_threadpool(_visits, runs, lang)
        except OSError as exc:
            return _workspace_error(exc, runs.workspace.folder, lang)
        return JSONResponse(listed)

    async def settings_api(request: Request) -> Response:
        lang = _lang(request, default_lang)
        if request.method == "POST":
            try:
                body = await request.json()
                assert isinstance(body, dict)
            except Exception:
                return error(400, "errors.bad_request", lang)
            from auditor.errors import UsageError, text_of

            try:
                await run_in_threadpool(settings.update, body)
            except UsageError as exc:
                return JSONResponse({"error": text_of(exc, lang)}, status_code=400)
            except (OSError, WriteError) as exc:
                return error(400, "errors.settings_write", lang, file=settings.path, reason=_reason(exc, lang))
            runs.workspace = settings.workspace()
        return JSONResponse(settings.as_json())

    routes = [
        Route("/", page),
        Route("/assets/{name}", asset),
        Route("/api/audit", upload, methods=["POST"]),
        Route("/api/folder", folder, methods=["POST"]),
        Route("/api/audits", audits),
        Route("/api/settings", settings_api, methods=["GET", "POST"]),
        Route("/api/runs/{run:str}", status),
        Route("/api/runs/{run:str}/{carnet:str}/review", review, methods=["POST"]),
        Route("/runs/{run:str}/{carnet:str}/cell", cell),
        Route("/runs/{run:str}/{path:path}", run_file),
    ]

    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(app):
        if on_startup is not None:
            on_startup()
        yield
        runs.close()

    app = Starlette(routes=routes, lifespan=lifespan)
    guard = Guard(app, token, port, forbidden_text=lambda reason: page_label(f"errors.forbidden_{reason}",
                                                                           default_lang))
    guard.runs = runs
    return guard


def size_words(n: int, lang: str) -> str:
    """A size as the inspector writes it: `200 Mo`, `36 ko` (`200 MB` in English),
    whole units (integer arithmetic)."""
    from auditor.limits import MB

    if n >= MB:
        tenths = n * 10 // MB
        number = str(tenths // 10) if tenths % 10 == 0 else f"{tenths // 10}{',' if lang == 'fr' else '.'}{tenths % 10}"
        return page_label("units.mb", lang, n=number)
    if n >= 1024:
        return page_label("units.kb", lang, n=n // 1024)
    return page_label("units.b", lang, n=n)


def _not_a_carnet(files: list[tuple[str, Path]]) -> list[str]:
    """The dropped names, when none of them can be a carnet (else [])."""
    from auditor.serve.uploads import base_name, suffix

    tables = table_names()
    for name, _ in files:
        kind = suffix(name)
        if kind in WORKBOOK_SUFFIXES or kind == ".zip":
            return []
        if kind == ".csv" and canonical_name(base_name(name)[:-4]) in tables:
            return []
    return [name for name, _ in files]


def _reason(exc: Exception, lang: str) -> str:
    from auditor.errors import os_reason, text_of

    if isinstance(exc, WriteError):
        return text_of(exc, lang)
    return text_of(os_reason(exc), lang)


def _workspace_error(exc: Exception, folder: Path, lang: str) -> JSONResponse:
    return JSONResponse({"error": page_label("errors.workspace", lang, folder=folder, reason=_reason(exc, lang))},
                        status_code=400)


def _visits(runs: Runs, lang: str) -> dict:
    """The workspace's audits by visit (a local day), newest first; today's first."""

    from auditor.serve.runs import when_text
    from auditor.serve.workspace import local_moment

    ws = runs.workspace
    visits: dict[str, dict] = {}
    for folder, record in ws.audits():
        day = local_moment(record.created).date().isoformat()
        visit = visits.setdefault(day, {"day": day, "audits": []})
        rel = folder.relative_to(ws.folder).as_posix() if ws.folder in folder.parents else str(folder)
        visit["audits"].append({
            "id": record.id, "place": rel, "created": record.created, "when": when_text(record.created, lang),
            "carnets": [{"id": c.id, "shown": c.shown, "casino": c.casino, "table": c.table, "verdict": c.verdict,
                         "errors": (c.summary or {}).get("errors"), "warnings": (c.summary or {}).get("warnings"),
                         "previous": c.previous, "baseline_counts": c.baseline_counts} for c in record.carnets]})
    today = local_moment(_now()).date().isoformat()
    ordered = sorted(visits.values(), key=lambda v: v["day"], reverse=True)
    for v in ordered:
        v["today"] = v["day"] == today
        first = local_moment(v["audits"][-1]["created"])
        v["day_text"] = first.strftime("%d/%m/%Y" if lang == "fr" else "%Y-%m-%d")
    return {"workspace": str(ws.folder), "visits": ordered}


def _now() -> str:
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _js_labels(lang: str, reviews=None) -> dict[str, str]:
    """What the page's script shows: its own words, the reports' verdicts, and
    the review statuses (those of the review workflow, in `lang`)."""
    from auditor.i18n import labels

    from auditor.serve.runs import expected_names

    words = {k: v for k, v in page_labels(lang).items() if k.startswith("js.")}
    words["js.expected"] = expected_names()
    report = labels(lang)
    words.update({f"js.verdict_{v}": report[f"verdict_{v}"] for v in ("ok", "warning", "error", "unreadable")})
    if reviews is not None:
        words["js.review_statuses"] = json.dumps(reviews.statuses(lang), ensure_ascii=False)
    return words


def _inside(folder: Path, relative: str) -> Path | None:
    """`relative` under `folder`, or None: plain components only, no `..`, no
    hidden names, and the resolved file still inside (no link out)."""
    parts = relative.split("/")
    if not parts or any(not p or p.startswith(".") or "\\" in p or not CARNET_ID.match(p) for p in parts):
        return None
    path = (folder / Path(*parts)).resolve()
    root = folder.resolve()
    if not path.is_file() or root not in path.parents:
        return None
    return path


def _download_name(run, path: Path) -> str:
    """`<carnet shown>-<file>`, in plain characters, for the browser's save box."""
    carnet = next((c for c in run.carnets if c["id"] == path.parent.name), None)
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(carnet["shown"]).stem if carnet else "ecarte")[:60].strip("._")
    return f"{stem or 'carnet'}-{path.name}"
