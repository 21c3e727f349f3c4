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
from auditor.limits import DEFAULT_LIMITS, Limits, size_text
from auditor.read import WORKBOOK_SUFFIXES
from auditor.serve.labels import page_label, page_labels
from auditor.serve.private import KEEP_BYTES, KEEP_RUNS, evict
from auditor.serve.runs import Runs
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
               workers: int = 1, on_startup=None, reviews=None, keep_bytes: int | None = None) -> Starlette:
    """The application; `root` is the private folder (it must exist);
    `keep_bytes`: what its runs may take before the oldest are evicted."""
    limits_in_force = limits or DEFAULT_LIMITS
    keep_bytes = keep_bytes or KEEP_BYTES
    runs = Runs(root, limits, workers)
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
            review_file=str(reviews.path) if reviews else "", review_name=reviews.name if reviews else "",
            limit_text=page_label("page.limit", lang, size=size_text(limits_in_force.max_file_bytes),
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
            return error(413, "errors.too_large_total", lang, limit=size_text(total_limit))
        parser = UploadParser(request.headers, limited(request.stream(), total_limit), spool_dir=spool,
                              max_file_bytes=limits_in_force.max_file_bytes, max_files=MAX_UPLOAD_FILES,
                              max_fields=20)
        try:
            form = await parser.parse()
        except UploadTooLarge as exc:
            if exc.name:
                return error(413, "errors.too_large", lang, name=exc.name, limit=size_text(exc.limit))
            return error(413, "errors.too_large_total", lang, limit=size_text(exc.limit))
        except Exception:   # a malformed body: say so, never a traceback
            return error(400, "errors.bad_upload", lang)
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
        from starlette.concurrency import run_in_threadpool

        # Room for it in the private folder (the oldest runs there go), off the request loop.
        await run_in_threadpool(evict, runs, root, keep_bytes, KEEP_RUNS, sum(p.stat().st_size for _, p in files))
        run = runs.upload(files, lang)
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
        if not path.exists():
            return error(400, "errors.folder_missing", lang, folder=text)
        from auditor.batch.plan import plan

        if not plan([path]):
            return error(400, "errors.folder_empty", lang, folder=text)
        run = runs.folder(path, lang)
        return JSONResponse(run.status(), status_code=202)

    async def status(request: Request) -> Response:
        run = runs.get(request.path_params["run"])
        if run is None:
            return Response(status_code=404)
        return JSONResponse(run.status())

    async def run_file(request: Request) -> Response:
        run = runs.get(request.path_params["run"])
        if run is None:
            return Response(status_code=404)
        path = _inside(run.out, request.path_params["path"])
        if path is None:
            return Response(status_code=404)
        headers = {}
        if path.suffix == ".html":
            headers["content-security-policy"] = REPORT_CSP
        if request.query_params.get("download"):
            return FileResponse(path, headers=headers, filename=_download_name(run, path))
        return FileResponse(path, headers=headers)

    async def cell(request: Request) -> Response:
        from auditor.serve.cells import cell_page

        run = runs.get(request.path_params["run"])
        cid = request.path_params["carnet"]
        job = run.jobs.get(cid) if run else None
        if job is None:
            return Response(status_code=404)
        lang = _lang(request, run.lang)
        q = request.query_params
        html = cell_page(job, q.get("table", ""), q.get("row", ""), q.get("column", ""), q.get("cell", ""),
                         lang, runs.limits)
        return HTMLResponse(html)

    async def review(request: Request) -> Response:
        if reviews is None:
            return Response(status_code=404)
        run = runs.get(request.path_params["run"])
        cid = request.path_params["carnet"]
        if run is None or cid not in {c["id"] for c in run.carnets}:
            return Response(status_code=404)
        try:
            body = await request.json()
            assert isinstance(body, dict)
        except Exception:
            return error(400, "errors.bad_request", run.lang)
        return await reviews.record(run, cid, body)

    async def review_file(request: Request) -> Response:
        if reviews is None:
            return Response(status_code=404)
        return JSONResponse({"file": str(reviews.path), "latest": reviews.current()})

    routes = [
        Route("/", page),
        Route("/assets/{name}", asset),
        Route("/api/audit", upload, methods=["POST"]),
        Route("/api/folder", folder, methods=["POST"]),
        Route("/api/runs/{run:str}", status),
        Route("/api/runs/{run:str}/{carnet:str}/review", review, methods=["POST"]),
        Route("/api/reviews", review_file),
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


def _js_labels(lang: str, reviews=None) -> dict[str, str]:
    """What the page's script shows: its own words, the reports' verdicts, and
    the review statuses (those of the review workflow, in `lang`)."""
    from auditor.i18n import labels

    words = {k: v for k, v in page_labels(lang).items() if k.startswith("js.")}
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
