"""`huddle serve --otlp`: an OTLP/HTTP receiver for the agents' own telemetry.

It answers the standard `POST /v1/logs` and `POST /v1/metrics` (JSON, or protobuf with
the extra) on 127.0.0.1:4318 by default, the port exporters send to, and writes what
the records say under $HUDDLE_HOME/telemetry (telemetry.Store), where the board and
`huddle usage` read it as sessions.

Nothing it is sent stops it: a body past the cap is refused (413) before it is read
whole, so is a compressed one that grows past it; a body that is not OTLP, a schema it
does not know, a record of the wrong shape: a 4xx and one line in the log, and the
receiver goes on. A browser page cannot post to it (a request with an Origin is
refused, and OTLP's content types need a CORS preflight it never answers). Off
loopback every request needs the token (`Authorization: Bearer TOKEN`, which an
exporter sends from `OTEL_EXPORTER_OTLP_HEADERS`).
"""

from __future__ import annotations

import hmac
import json
import threading
import zlib
from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from huddle.errors import BadRequest

from . import otlp
from .telemetry import Store

PORT = 4318  # OTLP/HTTP's own
BODY_MAX = 16 << 20  # bytes of a request, compressed or not
Log = Callable[[str], None]


class _TooBig(Exception):  # (control flow: a body past the cap, caught where it is read)
    pass


async def _body(request: Request, cap: int) -> bytes:
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > cap):
        raise _TooBig
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            raise _TooBig
        chunks.append(chunk)
    body = b"".join(chunks)
    enc = (request.headers.get("content-encoding") or "").strip().lower()
    if enc in ("", "identity"):
        return body
    if enc not in ("gzip", "deflate"):
        raise BadRequest(f"content encoding {enc[:30]!r} is not one OTLP uses (gzip)")
    d = zlib.decompressobj(wbits=47)  # gzip or zlib, by their headers
    try:
        out = d.decompress(body, cap + 1)
    except zlib.error as exc:
        raise BadRequest(f"the {enc} body does not decompress: {exc}") from None
    if len(out) > cap or d.unconsumed_tail:
        raise _TooBig
    return out


def create_app(store: Store, token: str | None = None, log: Log | None = None, cap: int = BODY_MAX) -> Starlette:
    say = log or (lambda m: None)
    want = f"Bearer {token}".encode() if token else None

    def answer(status: int, ct: str, what: str = "", peer: str = "") -> Response:
        if status >= 400:
            say(f"otlp: {status} to {peer or 'a client'}: {what}")
        if ct == otlp.PROTOBUF:  # an empty Export*ServiceResponse
            return Response(b"", status_code=status, media_type=otlp.PROTOBUF)
        body = {} if status < 400 else {"code": status, "message": what}
        return Response(json.dumps(body), status_code=status, media_type=otlp.JSON)

    async def take(request: Request, kind: str) -> Response:
        peer = request.client.host if request.client else ""
        ct = (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
        if request.headers.get("origin") is not None:
            return answer(403, ct, "a browser's request (Origin) is not an exporter's", peer)
        if want is not None:
            got = (request.headers.get("authorization") or "").encode()
            if not hmac.compare_digest(got, want):
                return answer(401, ct, "no token, or not this receiver's", peer)
        try:
            body = await _body(request, cap)
            req = otlp.parse(body, ct, kind)
            records = list(otlp.logs(req) if kind == "logs" else otlp.metrics(req))
        except _TooBig:
            return answer(413, ct, f"body over {cap:,} bytes", peer)
        except BadRequest as exc:
            return answer(400 if ct in (otlp.JSON, otlp.PROTOBUF) else 415, ct, str(exc), peer)
        except Exception as exc:  # a body no rule foresaw still costs only itself
            return answer(400, ct, f"unreadable {kind}: {type(exc).__name__}", peer)
        try:
            store.take(records, kind)
        except OSError as exc:
            return answer(503, ct, f"cannot keep telemetry: {exc.strerror or exc}", peer)
        return answer(200, ct)

    async def logs(request: Request) -> Response:
        return await take(request, "logs")

    async def metrics(request: Request) -> Response:
        return await take(request, "metrics")

    async def traces(request: Request) -> Response:  # (taken and dropped: exporters configured for all three)
        return answer(200, (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower())

    async def not_found(request: Request, exc: Any) -> Response:
        return answer(404, otlp.JSON, f"no route {request.method} {request.url.path[:80]}")

    routes = [
        Route("/v1/logs", logs, methods=["POST"]),
        Route("/v1/metrics", metrics, methods=["POST"]),
        Route("/v1/traces", traces, methods=["POST"]),
    ]
    app = Starlette(routes=routes, exception_handlers={404: not_found, 405: not_found})
    app.router.redirect_slashes = False
    return app


class Receiver:
    """The receiver on its own uvicorn, in a thread of the process that serves the board."""

    def __init__(
        self,
        huddle_home: str,
        host: str = "127.0.0.1",
        port: int = PORT,
        token: str | None = None,
        log: Log | None = None,
    ) -> None:
        import uvicorn

        from huddle.server.protocol import GuardedH11Protocol
        from huddle.server.running import bind

        self.store = Store(huddle_home)
        self.sock = bind(host, port)
        self.host = host
        self.port = self.sock.getsockname()[1]
        self.app = create_app(self.store, token=token, log=log)
        config = uvicorn.Config(
            self.app, log_level="warning", access_log=False, lifespan="off", http=GuardedH11Protocol
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    @property
    def url(self) -> str:
        shown = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host.strip("[]")
        return f"http://{f'[{shown}]' if ':' in shown else shown}:{self.port}"

    def start(self) -> Receiver:
        self.thread.start()
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("the OTLP receiver did not start")
            self.thread.join(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=5)
        self.sock.close()

    def __enter__(self) -> Receiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def exporter_env(url: str, token: str | None) -> str:
    """The environment that points Claude Code (and any OTel SDK) at this receiver."""
    env = (
        "CLAUDE_CODE_ENABLE_TELEMETRY=1 OTEL_LOGS_EXPORTER=otlp OTEL_METRICS_EXPORTER=otlp"
        f" OTEL_EXPORTER_OTLP_PROTOCOL=http/json OTEL_EXPORTER_OTLP_ENDPOINT={url}"
    )
    if token:
        env += f" OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20{token}"
    return env


def serve_beside(huddle_home: str, host: str, port: int, echo: Log) -> Receiver:
    """Start the receiver for `huddle serve --otlp` (a token off loopback) and say where it is."""
    from huddle.server.security import is_loopback, new_token

    token = None if is_loopback(host) else new_token()
    try:
        r = Receiver(huddle_home, host=host, port=port, token=token, log=echo).start()
    except OSError as exc:
        raise OSError(exc.errno, f"cannot listen on {host}:{port} for OTLP: {exc.strerror or exc}") from None
    echo(f"OTLP receiver at {r.url} (POST /v1/logs, /v1/metrics)")
    echo(f"send Claude Code's telemetry there: {exporter_env(r.url, token)}")
    if token:
        echo("not on loopback: every OTLP request needs that Authorization header")
    return r
