"""The rules every request passes before it reaches a route.

This server can read every prompt a person ever typed, so it trusts nothing it
did not hand out itself:
- the Host must be the loopback name and port it serves (DNS rebinding);
- a cross-origin request (a foreign Origin, Sec-Fetch-Site cross-site/same-site) is refused;
- a request body is refused (400, 413 over 256 KB) and its connection closed: no
  route takes one, but for the writes (below);
- the writes, POST /api/sessions/{id}/answer (huddle.answer) and .../pin (views.pins),
  pass only as a same-origin request from huddle's own page: an Origin equal to the Host it serves,
  Sec-Fetch-Site same-origin when the browser sends it, a JSON body (no form can
  send one without a preflight, and no preflight is answered), and this server's
  answer token in the X-Huddle-Token header (never a cookie: a cookie comes with any
  request), on loopback as off it; the page reads the token from GET /api/info;
- off loopback, a token is required on every request: a header, or a cookie set
  from a `?token=` link (then the token leaves the address bar), compared in
  constant time;
- every answer carries CSP, no-framing, nosniff and no-referrer headers.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import re
import secrets
from urllib.parse import parse_qsl, urlencode

BODY_MAX = 256 * 1024
DRAIN_MAX = 4 << 20  # past this a body is not even read to the end
BODY_WAIT = 5.0  # seconds a refused body may take to arrive
TOKEN_HEADER = b"x-huddle-token"
POSTS = re.compile(r"^/api/sessions/[^/]+/(answer|pin)$")  # the only routes that take a body

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=()"),
]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    return host.strip("[]") in ("0.0.0.0", "::", "")


def allowed_hosts(host: str, port: int) -> set[str] | None:
    """The Host headers this server answers to; None = any (a wildcard bind, where
    the token is what keeps strangers out)."""
    if is_wildcard(host):
        return None
    names = {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}
    bare = host.strip("[]")
    names.add(f"[{bare}]:{port}" if ":" in bare else f"{bare}:{port}")
    return names


def new_token() -> str:
    return secrets.token_urlsafe(24)


class Security:
    """Pure ASGI middleware (streaming responses such as SSE pass through untouched)."""

    def __init__(
        self,
        app,
        *,
        hosts: set[str] | None,
        token: str | None,
        port: int,
        body_max: int = BODY_MAX,
        answer_token: str | None = None,
    ):
        self.app = app
        self.hosts = hosts
        self.token = token.encode() if token else None
        # the write's token: off loopback the access token, on loopback one of its own
        self.answer_token = (answer_token or token or new_token()).encode()
        self.cookie = f"huddle_token_{port}".encode()  # cookies ignore ports: keep servers apart
        self.body_max = body_max

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            return await self.app(scope, receive, send)
        if scope["type"] != "http":
            return  # no websockets here: refuse by closing
        send_with_headers = _with_headers(send)
        headers: dict[bytes, bytes] = {}
        for k, v in scope.get("headers", []):
            headers.setdefault(k.lower(), v)
        why = self._refuse(scope, headers)
        if why is not None:
            status, text = why
            return await _error(send_with_headers, status, text)
        if scope["method"] == "POST" and POSTS.match(scope.get("path", "")):
            return await self._post(scope, headers, receive, send_with_headers)
        return await self._read(scope, headers, receive, send_with_headers)

    async def _read(self, scope, headers, receive, send_with_headers):
        """A read: no body, GET or HEAD, and off loopback the token (a link's sets a cookie)."""
        refused = await self._refuse_body(scope, headers, receive)
        if refused is not None:
            status, text = refused
            return await _error(send_with_headers, status, text, close=True)
        if scope["method"] not in ("GET", "HEAD"):
            return await _error(send_with_headers, 405, "huddle's API only reads: use GET")

        token = self.token
        if token is not None:
            ok = self._token_ok(scope, headers, token)
            if ok == "link":
                return await self._set_cookie(scope, send_with_headers, token)
            if not ok:
                return await _error(send_with_headers, 401, "a token is required: open the link huddle printed")
        await self.app(scope, receive, send_with_headers)

    async def _refuse_body(self, scope, headers, receive) -> tuple[int, str] | None:
        """No route takes a body, so any body is refused and the connection closed.
        It is read (and dropped) first, up to DRAIN_MAX and for BODY_WAIT seconds at
        most: answering mid-upload makes clients see a reset. The app never sees the
        request, so nothing downstream waits on a body (or on a disconnect) that a
        replaced `receive` would never deliver."""
        length = headers.get(b"content-length")
        chunked = b"chunked" in headers.get(b"transfer-encoding", b"").lower()
        if length is None and not chunked:
            return None
        if length is not None and (not length.isdigit() or int(length) > DRAIN_MAX):
            return 413, f"request body over {self.body_max} bytes"
        if length == b"0" and not chunked:
            return None
        try:
            size = await asyncio.wait_for(_drain(receive, DRAIN_MAX), BODY_WAIT)
        except TimeoutError:
            return 408, f"request body not sent within {BODY_WAIT:g} s"
        if size > self.body_max:
            return 413, f"request body over {self.body_max} bytes"
        if scope["method"] not in ("GET", "HEAD"):
            return 405, "huddle's API only reads: use GET"
        if size:
            return 400, "huddle's routes take no request body"
        return None

    async def _post(self, scope, headers, receive, send) -> None:
        """A write: refused unless it is huddle's own page asking, with the token."""
        why = self._write_refused(headers)
        if why is not None:
            await _drain_quietly(receive)
            return await _error(send, why[0], why[1], close=True)
        try:
            body = await asyncio.wait_for(_read(receive, self.body_max), BODY_WAIT)
        except TimeoutError:
            return await _error(send, 408, f"request body not sent within {BODY_WAIT:g} s", close=True)
        if body is None:
            return await _error(send, 413, f"request body over {self.body_max} bytes", close=True)
        await self.app(scope, _replay(body, receive), send)

    def _write_refused(self, headers) -> tuple[int, str] | None:
        """Why a write is refused (None: it is not): not huddle's own page, not JSON, no
        answer token, a body too big."""
        if headers.get(b"origin") is None:
            return 403, "a write must come from huddle's own page (no Origin header)"
        if headers.get(b"sec-fetch-site", b"same-origin").lower() != b"same-origin":
            return 403, "a write must be a same-origin request"
        if headers.get(b"content-type", b"").split(b";")[0].strip().lower() != b"application/json":
            return 415, "a write takes a JSON body (content-type: application/json)"
        given = headers.get(TOKEN_HEADER)
        if given is None or not hmac.compare_digest(given, self.answer_token):
            return 403, "a write needs this server's answer token (X-Huddle-Token), as huddle's page sends it"
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.body_max):
            return 413, f"request body over {self.body_max} bytes"
        return None

    def _refuse(self, scope, headers) -> tuple[int, str] | None:
        host = headers.get(b"host", b"").decode("latin-1")
        if self.hosts is not None and host not in self.hosts:
            return 403, "unknown Host: huddle answers only to the loopback address it serves"
        origin = headers.get(b"origin")
        if origin is not None and origin.decode("latin-1") != f"http://{host}":
            return 403, "cross-origin request refused"
        site = headers.get(b"sec-fetch-site", b"").lower()
        if site in (b"cross-site", b"same-site"):
            return 403, "cross-site request refused"
        return None

    def _token_ok(self, scope, headers, token: bytes) -> bool | str:
        given = headers.get(TOKEN_HEADER)
        auth = headers.get(b"authorization", b"")
        if given is None and auth[:7].lower() == b"bearer ":
            given = auth[7:].strip()
        if given is None:
            given = _cookie(headers.get(b"cookie", b""), self.cookie)
        if given is not None and hmac.compare_digest(given, token):
            return True
        for k, v in parse_qsl(scope.get("query_string", b"").decode("latin-1")):
            if k == "token" and hmac.compare_digest(v.encode("latin-1", "replace"), token):
                return "link"
        return False

    async def _set_cookie(self, scope, send, token: bytes) -> None:
        """A valid `?token=` link: keep the token in a cookie and drop it from the URL."""
        rest = [(k, v) for k, v in parse_qsl(scope.get("query_string", b"").decode("latin-1")) if k != "token"]
        location = scope.get("path", "/") + (("?" + urlencode(rest)) if rest else "")
        cookie = self.cookie + b"=" + token + b"; HttpOnly; SameSite=Strict; Path=/"
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    (b"location", location.encode("latin-1")),
                    (b"set-cookie", cookie),
                    (b"cache-control", b"no-store"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})


def _cookie(raw: bytes, name: bytes) -> bytes | None:
    for part in raw.split(b";"):
        k, _, v = part.strip().partition(b"=")
        if k == name:
            return v
    return None


async def _drain(receive, limit: int) -> int:
    """Read and drop a request body; stop counting past `limit` bytes."""
    size = 0
    while size <= limit:
        message = await receive()
        if message["type"] != "http.request":
            break
        size += len(message.get("body", b""))
        if not message.get("more_body"):
            break
    return size


async def _read(receive, limit: int) -> bytes | None:
    """The whole request body, or None past `limit` bytes."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        parts.append(chunk)
        if not message.get("more_body"):
            break
    return b"".join(parts)


async def _drain_quietly(receive) -> None:
    try:
        await asyncio.wait_for(_drain(receive, DRAIN_MAX), BODY_WAIT)
    except TimeoutError:
        pass


async def _error(send, status: int, text: str, close: bool = False) -> None:
    body = json.dumps({"error": text}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
    ]
    if close:  # what is left of a refused body must not be read as the next request
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _with_headers(send):
    """`send`, adding huddle's security headers to every response's start."""

    async def send_with_headers(message):
        if message["type"] == "http.response.start":
            message = dict(message)
            message["headers"] = list(message.get("headers", [])) + HEADERS
        await send(message)

    return send_with_headers


def _replay(body: bytes, receive):
    """A `receive` that gives the body read once, then what the client sends (a
    disconnect, when the route waits for one)."""
    sent = False

    async def replay():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
