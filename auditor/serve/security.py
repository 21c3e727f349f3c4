"""Who may talk to the server: the browser that was given the token, on this
machine, through a loopback name.

- The token (32 random bytes, printed at start) comes once as `?token=` in
  the address the command opens; the answer sets it as a cookie (HttpOnly,
  SameSite=Strict, named after the port so two servers never mix) and
  redirects to the same address without it, so it stays out of the history.
  Every later request carries the cookie, or the `X-Ecarte-Token` header.
  Anything else is 403 — Jupyter's scheme.
- The Host header must be `127.0.0.1` or `localhost` (any port): a page of
  another site whose name was made to resolve to 127.0.0.1 (DNS rebinding)
  sends its own name and is refused.
- A request that changes something (POST) must not come from another origin:
  an `Origin` header, when the browser sends one, must be this server's.
- Every answer says: no sniffing, no referrer, not cached, framed only by
  this server; an answer that set no Content-Security-Policy gets a strict one.
- A report (report.html, index.html) is served sandboxed (`REPORT_CSP`):
  its scripts run, but in an origin of their own, never this server's — a
  script slipped into a report could not call the API with the cookie. It
  talks to the page only by messages the page checks.
- So a sandboxed report still follows its own links (the index to a
  carnet's report, a finding to its cell's page), which its opaque origin
  sends without the SameSite cookie, a GET of a run's file
  (`/runs/<run id>/…`) is let through on the run's id alone: 64 random bits
  that only the page which made the run was told (the run's files, nothing
  else; never the API).
"""

from __future__ import annotations

import hmac
import re
from urllib.parse import parse_qsl, urlencode

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse, RedirectResponse

LOOPBACK_NAMES = ("127.0.0.1", "localhost")
_HOST = re.compile(r"^(?P<name>[^:\[\]]+)(?::(?P<port>\d{1,5}))?$")
# A run's files: its id (secrets.token_hex(8) in runs.py) is the capability.
RUN_FILE = re.compile(r"^/runs/[0-9a-f]{16}/[^?]+$")
STRICT_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
              "connect-src 'self'; frame-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'self'")
# report.html's own policy (templates/base.html.j2), sent as a header too,
# framed only by this server's page, and sandboxed: scripts (its filters),
# its print (modals), its links to a cell's page in a new tab (popups, which
# leave the sandbox: the cell's page is this server's own) and downloads —
# but never this server's origin (no allow-same-origin).
REPORT_CSP = ("sandbox allow-scripts allow-modals allow-popups allow-popups-to-escape-sandbox allow-downloads; "
              "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
              "frame-ancestors 'self'")
SECURITY_HEADERS = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"),
                    (b"cache-control", b"no-store"), (b"x-frame-options", b"SAMEORIGIN"),
                    (b"cross-origin-opener-policy", b"same-origin"),
                    (b"cross-origin-resource-policy", b"same-origin")]


def host_allowed(host: str | None) -> bool:
    """A Host header naming this machine's loopback: 127.0.0.1 or localhost, any port."""
    m = _HOST.match((host or "").strip())
    return bool(m) and m["name"].lower() in LOOPBACK_NAMES


def cookie_name(port: int) -> str:
    """The token cookie of the server on `port` (cookies do not tell ports apart)."""
    return f"ecarte-audit-token-{port}"


class Guard:
    """ASGI middleware in front of the whole application."""

    def __init__(self, app, token: str, port: int, forbidden_text=lambda reason: reason):
        self.app = app
        self.token = token
        self.port = port
        self.cookie = cookie_name(port)
        self.forbidden_text = forbidden_text

    def _is_token(self, value: str | None) -> bool:
        return bool(value) and hmac.compare_digest(value.encode("utf-8", "replace"), self.token.encode())

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            return await self.app(scope, receive, send)
        if scope["type"] != "http":    # no websocket here
            return
        headers = Headers(scope=scope)
        if not host_allowed(headers.get("host")):
            return await self._forbid(scope, receive, send, "host")
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))
        cookies = _cookies(headers.get("cookie", ""))
        given = query.get("token")
        if given is not None:
            if not self._is_token(given):
                return await self._forbid(scope, receive, send, "token")
            if scope["method"] in ("GET", "HEAD"):
                rest = urlencode([(k, v) for k, v in query.items() if k != "token"])
                target = scope["path"] + (f"?{rest}" if rest else "")
                response = RedirectResponse(target, status_code=303)
                response.set_cookie(self.cookie, self.token, httponly=True, samesite="strict", path="/")
                return await self._send_with_headers(response, scope, receive, send)
        elif not (self._is_token(cookies.get(self.cookie)) or self._is_token(headers.get("x-ecarte-token"))
                  or (scope["method"] in ("GET", "HEAD") and RUN_FILE.match(scope["path"]))):
            return await self._forbid(scope, receive, send, "token")
        if scope["method"] not in ("GET", "HEAD", "OPTIONS"):
            origin = headers.get("origin")
            if origin is not None and not _same_origin(origin, headers.get("host", "")):
                return await self._forbid(scope, receive, send, "origin")
        await self._send_with_headers(self.app, scope, receive, send)

    async def _forbid(self, scope, receive, send, reason: str):
        response = PlainTextResponse(self.forbidden_text(reason), status_code=403)
        await self._send_with_headers(response, scope, receive, send)

    async def _send_with_headers(self, app, scope, receive, send):
        async def with_headers(message):
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in SECURITY_HEADERS if k not in present]
                if b"content-security-policy" not in present:
                    extra.append((b"content-security-policy", STRICT_CSP.encode()))
                message = {**message, "headers": list(message.get("headers", [])) + extra}
            await send(message)

        await app(scope, receive, with_headers)


def _cookies(text: str) -> dict[str, str]:
    out = {}
    for part in text.split(";"):
        name, _, value = part.strip().partition("=")
        if name:
            out.setdefault(name, value)
    return out


def _same_origin(origin: str, host: str) -> bool:
    return origin.lower() in (f"http://{host.lower()}",)
