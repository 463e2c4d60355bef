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
    r = _Routes(store, token, log, cap)
    routes = [
        Route("/v1/logs", r.logs, methods=["POST"]),
        Route("/v1/metrics", r.metrics, methods=["POST"]),
        Route("/v1/traces", r.traces, methods=["POST"]),
    ]
    app = Starlette(routes=routes, exception_handlers={404: r.not_found, 405: r.not_found})
    app.router.redirect_slashes = False
    return app


def _type_of(request: Request) -> str:
    return (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()


class _Routes:
    """What the receiver answers an exporter: its records taken into the store, or why not."""

    def __init__(self, store: Store, token: str | None, log: Log | None, cap: int) -> None:
        self.store = store
        self.say: Log = log or (lambda m: None)
        self.want = f"Bearer {token}".encode() if token else None
        self.cap = cap

    def answer(self, status: int, ct: str, what: str = "", peer: str = "") -> Response:
        if status >= 400:
            self.say(f"otlp: {status} to {peer or 'a client'}: {what}")
        if ct == otlp.PROTOBUF:  # an empty Export*ServiceResponse
            return Response(b"", status_code=status, media_type=otlp.PROTOBUF)
        body = {} if status < 400 else {"code": status, "message": what}
        return Response(json.dumps(body), status_code=status, media_type=otlp.JSON)

    def refused(self, request: Request, ct: str, peer: str) -> Response | None:
        """A browser's request, or one without this receiver's token (when it has one)."""
        if request.headers.get("origin") is not None:
            return self.answer(403, ct, "a browser's request (Origin) is not an exporter's", peer)
        if self.want is not None:
            got = (request.headers.get("authorization") or "").encode()
            if not hmac.compare_digest(got, self.want):
                return self.answer(401, ct, "no token, or not this receiver's", peer)
        return None

    async def take(self, request: Request, kind: str) -> Response:
        peer = request.client.host if request.client else ""
        ct = _type_of(request)
        no = self.refused(request, ct, peer)
        if no is not None:
            return no
        try:
            body = await _body(request, self.cap)
            req = otlp.parse(body, ct, kind)
            records = list(otlp.logs(req) if kind == "logs" else otlp.metrics(req))
        except _TooBig:
            return self.answer(413, ct, f"body over {self.cap:,} bytes", peer)
        except BadRequest as exc:
            return self.answer(400 if ct in (otlp.JSON, otlp.PROTOBUF) else 415, ct, str(exc), peer)
        except Exception as exc:  # a body no rule foresaw still costs only itself
            return self.answer(400, ct, f"unreadable {kind}: {type(exc).__name__}", peer)
        try:
            self.store.take(records, kind)
        except OSError as exc:
            return self.answer(503, ct, f"cannot keep telemetry: {exc.strerror or exc}", peer)
        return self.answer(200, ct)

    async def logs(self, request: Request) -> Response:
        return await self.take(request, "logs")

    async def metrics(self, request: Request) -> Response:
        return await self.take(request, "metrics")

    async def traces(self, request: Request) -> Response:  # (taken and dropped: exporters configured for all three)
        return self.answer(200, _type_of(request))

    async def not_found(self, request: Request, exc: Any) -> Response:
        return self.answer(404, otlp.JSON, f"no route {request.method} {request.url.path[:80]}")


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
        from huddle.server.running import QuietServer, bind

        self.store = Store(huddle_home)
        self.sock = bind(host, port)
        self.host = host
        self.port = self.sock.getsockname()[1]
        self.app = create_app(self.store, token=token, log=log)
        config = uvicorn.Config(
            self.app, log_level="warning", access_log=False, lifespan="off", http=GuardedH11Protocol
        )
        self.server = QuietServer(config)
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
