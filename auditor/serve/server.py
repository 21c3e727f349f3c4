"""Run the page: a socket on 127.0.0.1, the address with its token printed,
the browser opened, and on Ctrl-C a clean stop that removes the private
folder and everything in it."""

from __future__ import annotations

import secrets
import shutil
import socket
import sys
import tempfile
import threading
import webbrowser
from pathlib import Path

HOST = "127.0.0.1"   # loopback only, by construction: no option changes it


def bind(port: int | None) -> socket.socket:
    """A listening socket on 127.0.0.1: `port`, or a free one chosen by the system."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port or 0))
    sock.listen(64)
    sock.set_inheritable(True)
    return sock


def serve(port: int | None = None, open_browser: bool = True, lang: str = "fr", ui: str = "en",
          limits=None, workers: int = 1, reviews_file: Path | None = None, out=sys.stdout,
          workspace: Path | None = None) -> int:
    """Serve the page on 127.0.0.1 until Ctrl-C, then remove the private folder."""
    import uvicorn

    from auditor.i18n import cli_label
    from auditor.serve.app import create_app

    sock = bind(port)
    port = sock.getsockname()[1]
    token = secrets.token_urlsafe(32)
    url = f"http://{HOST}:{port}/?token={token}"
    root = Path(tempfile.mkdtemp(prefix="ecarte-audit-serve-"))   # mode 0700: this user only

    def started():
        print(cli_label("serve.listening", ui, url=url), file=out, flush=True)
        print(cli_label("serve.stop_hint", ui), file=out, flush=True)
        if open_browser:
            threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()

    app = None
    try:
        app = create_app(root, token, port, lang=lang, limits=limits, workers=workers, on_startup=started,
                         reviews=_reviews(reviews_file), workspace=workspace)
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on",
                                timeout_graceful_shutdown=5)
        try:
            uvicorn.Server(config).run(sockets=[sock])
        except KeyboardInterrupt:   # uvicorn stopped gracefully, then passed Ctrl-C on
            pass
    finally:
        sock.close()
        if app is not None:
            app.runs.close()
        shutil.rmtree(root, ignore_errors=True)
    print(cli_label("serve.stopped", ui), file=out, flush=True)
    return 0


def _reviews(path: Path | None):
    """The review file the page writes, when the review workflow is there
    (None: the page offers no review)."""
    try:
        from auditor.serve.review import PageReviews
    except ImportError:
        return None
    return PageReviews(path)
