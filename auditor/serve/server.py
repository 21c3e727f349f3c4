"""Run the page: a socket on 127.0.0.1, the address with its token printed,
the browser opened, and a clean stop that removes the private folder and
everything in it — on Ctrl-C, on SIGTERM (`kill`, a service manager), on
SIGHUP (the terminal window closed, the session ended), on the Windows
console's close, and on a normal return. Private folders that servers
killed outright left behind are removed at start (`private.remove_stale`).

uvicorn stops gracefully on SIGINT and SIGTERM and then raises the signal
again, which would end the process before any clean-up of ours: its
signal capture is replaced (`_Server`) so the signal comes back to `serve`,
which cleans up first and then ends the way the signal asks.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import sys
import threading
import webbrowser
from pathlib import Path

from auditor.serve import private

HOST = "127.0.0.1"   # loopback only, by construction: no option changes it


def bind(port: int | None) -> socket.socket:
    """A listening socket on 127.0.0.1: `port`, or a free one chosen by the system."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port or 0))
    sock.listen(64)
    sock.set_inheritable(True)
    return sock


# The signals that stop the page: Ctrl-C, kill, the terminal's hang-up, Ctrl-Break.
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGBREAK")
                     if hasattr(signal, name))


class _Stop(BaseException):
    """A stop signal arrived outside uvicorn's run (while starting): unwind to the clean-up."""

    def __init__(self, sig: int):
        super().__init__(sig)
        self.sig = sig


def _make_server_class():
    import uvicorn

    class _Server(uvicorn.Server):
        """uvicorn's server, stopped gracefully by any of STOP_SIGNALS, which
        are then left to `serve` (uvicorn would raise them again at once)."""

        @contextlib.contextmanager
        def capture_signals(self):
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            original = {sig: signal.signal(sig, self.handle_exit) for sig in STOP_SIGNALS}
            try:
                yield
            finally:
                for sig, handler in original.items():
                    signal.signal(sig, handler)

    return _Server


def serve(port: int | None = None, open_browser: bool = True, lang: str = "fr", ui: str = "en",
          limits=None, workers: int = 1, reviews_file: Path | None = None, out=sys.stdout,
          keep_bytes: int | None = None, workspace: Path | None = None) -> int:
    """Serve the page on 127.0.0.1 until stopped, then remove the private folder.

    Ctrl-C returns 0; SIGTERM and SIGHUP end the process by their signal once
    the folder is removed (as a program stopped by it is expected to)."""
    from auditor.i18n import cli_label
    from auditor.serve.app import create_app

    sock = bind(port)
    port = sock.getsockname()[1]
    token = secrets.token_urlsafe(32)
    url = f"http://{HOST}:{port}/?token={token}"
    private.remove_stale()
    root = private.make()   # mode 0700: this user only; marked with our pid
    cleaned = threading.Event()
    server = None
    received: list[int] = []

    def on_signal(sig, frame):   # before uvicorn runs, or after: unwind to the clean-up
        raise _Stop(sig)

    def stop():   # from the Windows console's handler thread: as a SIGTERM would
        received.append(signal.SIGTERM)
        if server is not None:
            server.should_exit = True
        else:
            signal.raise_signal(signal.SIGTERM)

    def started():
        print(cli_label("serve.listening", ui, url=url), file=out, flush=True)
        print(cli_label("serve.stop_hint", ui), file=out, flush=True)
        # The browser gets a file of ours that sends it on, never the token
        # on its command line (where every user's `ps` reads it); the
        # shortcut opens the same file again on a second click.
        target = redirect_file(root, url, ui).as_uri()
        if open_browser:
            threading.Thread(target=webbrowser.open, args=(target,), daemon=True).start()

    app, console, original = None, None, {}
    try:
        original = _install(on_signal)
        console = private.watch_console(stop, cleaned, root)   # kept alive until we return
        app = create_app(root, token, port, lang=lang, limits=limits, workers=workers, on_startup=started,
                         reviews=_reviews(reviews_file), workspace=workspace, keep_bytes=keep_bytes)
        import uvicorn

        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on",
                                timeout_graceful_shutdown=5)
        _quiet_cancelled_requests()   # after Config, which sets uvicorn's logging up
        server = _make_server_class()(config)
        try:
            server.run(sockets=[sock])
        except KeyboardInterrupt:   # a second Ctrl-C while stopping
            pass
        received.extend(server._captured_signals)
    except (_Stop, KeyboardInterrupt) as exc:
        received.append(exc.sig if isinstance(exc, _Stop) else signal.SIGINT)
    finally:
        # Nothing interrupts the clean-up: a second signal waits for it.
        _install(lambda sig, frame: received.append(sig))
        sock.close()
        if app is not None:
            app.runs.close()
        private.remove(root)
        cleaned.set()
    print(cli_label("serve.stopped", ui), file=out, flush=True)
    console = None   # the Windows handler's routine was kept alive until here
    ending = next((sig for sig in received if sig != signal.SIGINT), None)
    if ending is None:
        _restore(original)
        return 0
    # Ended as the signal asks (the exit status says so), now that nothing is left.
    signal.signal(ending, signal.SIG_DFL)
    signal.raise_signal(ending)
    _restore(original)   # pragma: no cover - a signal whose default is not to end
    return 0


def _quiet_cancelled_requests() -> None:
    """A request still under way when the page stops (an upload being
    received) is cancelled once the graceful wait is over: uvicorn logs that
    as an application error with its traceback. It is the stop asked for,
    not a fault: that record is left out (uvicorn's one line saying it
    cancelled a task stays)."""
    import asyncio
    import logging

    class Cancelled(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            return not (record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError))

    logger = logging.getLogger("uvicorn.error")
    if not any(type(f).__name__ == "Cancelled" for f in logger.filters):
        logger.addFilter(Cancelled())


REDIRECT_FILE = "open.html"   # private.running() looks for it


def redirect_file(root: Path, url: str, ui: str) -> Path:
    """A page only this user can read (0600, in the 0700 private folder)
    that sends the browser to `url` at once, with a link should it not: the
    token stays out of the browser's command line (Jupyter's way)."""
    from html import escape

    from auditor.i18n import cli_label

    path = root / REDIRECT_FILE
    link = escape(url, quote=True)
    text = ('<!DOCTYPE html>\n<html lang="{lang}"><head><meta charset="utf-8">'
            '<meta http-equiv="refresh" content="0;url={link}"><meta name="referrer" content="no-referrer">'
            '<title>{title}</title></head>\n<body><p>{words} <a href="{link}">{title}</a></p></body></html>\n'
            ).format(lang=escape(ui), link=link, title=escape(cli_label("serve.open_title", ui)),
                     words=escape(cli_label("serve.open_words", ui)))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def _install(handler) -> dict:
    """`handler` for every stop signal (main thread only); the handlers it replaced."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}


def _restore(original: dict) -> None:
    for sig, handler in original.items():
        signal.signal(sig, handler)


def _reviews(path: Path | None):
    """The review file the page writes, when the review workflow is there
    (None: the page offers no review)."""
    try:
        from auditor.serve.review import PageReviews
    except ImportError:
        return None
    return PageReviews(path)
