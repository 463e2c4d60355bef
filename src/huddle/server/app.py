"""The app factory: routes (thin clients of huddle.views.api), pages, the stream.

`create_app(huddle, host, port, token)` gives a Starlette app behind the security
middleware; server/running.py runs it on uvicorn (`bind`, `make_server`, and
`ServerThread` in the background: tests, bench, the demo).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time

import msgspec
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from huddle import __version__
from huddle.answer.asks import AnswerRefused, NotAnswerable
from huddle.errors import BadRequest, Forbidden, HuddleError, NotFound, RequestError
from huddle.live.boardfile import BoardFile
from huddle.live.watcher import Watcher
from huddle.model.rows import HubRow
from huddle.views import api
from huddle.views.board import board_notes, parse_at
from huddle.views.operations import BY_NAME, OPERATIONS, Operation
from huddle.views.select import Select

from .extras import Extras
from .extras import routes as extra_routes
from .security import Security, allowed_hosts, new_token
from .stream import Hub

STATIC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "static")
_encode = msgspec.json.Encoder().encode


def _fresh_core(h):
    """A core with no cache, read once: what `huddle status --at` reads."""
    from huddle.core import Huddle

    fresh = Huddle(h.settings)
    fresh.refresh()
    return fresh


def json_response(data, status: int = 200) -> Response:
    return Response(
        _encode(data), status_code=status, media_type="application/json", headers={"cache-control": "no-store"}
    )


def _indexer(h, after: threading.Event | None = None):
    """The search index's thread, when huddle has a home folder to keep the index in."""
    from huddle.search import index_for
    from huddle.search.live import LiveIndexer

    index = index_for(h)
    return LiveIndexer(h, index, after) if index is not None else None


# The error tree (huddle.errors) has no HTTP in it: the server says which status each
# class is. Not the client's fault (a file huddle cannot use): 500, with its one line.
STATUS: dict[type[HuddleError], int] = {
    BadRequest: 400,
    NotFound: 404,
    Forbidden: 403,
    RequestError: 400,
    AnswerRefused: 409,  # stale, repeated or not offered: the request's state says no
    NotAnswerable: 409,  # a session huddle only reads, or a run it cannot speak to
}


def status_of(exc: HuddleError) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500


class State:
    """What the routes share: the core, its watcher, the stream hub, the search indexer."""

    def __init__(self, h, demo=None, watch_options: dict | None = None, watcher=None):
        self.h = h
        self.demo = demo
        self.hub = Hub()
        self.extras = Extras(h, self._publish)  # voices, translation: opt-in, nothing runs until asked
        self.loop: asyncio.AbstractEventLoop | None = None
        # `watcher(h, publish)` makes another source of board rows (huddle serve --hub)
        self.watcher = (
            watcher(h, self._publish)
            if watcher
            else Watcher(h, self._publish, followed=self.hub.followed, **(watch_options or {}))
        )
        self.indexer = _indexer(h, getattr(self.watcher, "ready", None)) if watcher is None else None
        if self.indexer is not None:
            self.watcher.listeners.append(self.indexer.notify)
        if watcher is None and demo is None:  # the status line reads what this board shows
            self.watcher.listen(BoardFile(self.watcher))

    def close_streams(self) -> None:
        """End every open stream now: a server shutting down waits for its open
        responses, and a stream never ends by itself."""
        loop = self.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.hub.close)

    def _publish(self, msgs) -> None:
        self.extras.heard(msgs)
        loop = self.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.hub.publish_many, msgs)


def create_app(
    h,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    demo=None,
    watch_options: dict | None = None,
    watcher=None,
) -> Starlette:
    st = State(h, demo=demo, watch_options=watch_options, watcher=watcher)
    answer_token = token or new_token()  # the write's token (security.py): pages read it from /api/info
    app = Starlette(
        routes=Handlers(h, st, answer_token).routes(),
        lifespan=_lifespan(st),
        exception_handlers={HuddleError: on_error, HTTPException: on_error, Exception: on_error},
        middleware=[
            Middleware(Security, hosts=allowed_hosts(host, port), token=token, port=port, answer_token=answer_token)
        ],
    )
    app.router.redirect_slashes = False  # an odd path is a 404, not a redirect to guess at
    app.state.huddle = st
    return app


class Handlers:
    """The routes, over one core and the server's state: each a thin client of a view."""

    def __init__(self, h, st: State, answer_token: str) -> None:
        self.h = h
        self.st = st
        self.answer_token = answer_token

    def routes(self) -> list:
        return [
            Route("/", page("index.html")),
            Route("/session/{id}", page("session.html")),
            Route("/search", page("search.html")),
            Route("/usage", page("usage.html")),
            Route("/overview", page("overview.html")),
            Route("/favicon.ico", page("favicon.svg")),
            Route("/api/info", self.info),
            Route("/api/sessions", self.board),
            *(Route(op.route, self.operation(op)) for op in OPERATIONS if not op.by_hand),  # views/operations.py
            Route("/api/overview.csv", self.overview_csv),
            Route("/api/sessions/{id}/export", self.export),
            Route("/api/sessions/{id}/answer", self.answer, methods=["POST"]),
            Route("/api/sessions/{id}/pin", self.pin, methods=["POST"]),
            Route("/api/stream", self.stream),
            *extra_routes(self.h, self.st.extras, json_response),
            Mount("/static", StaticFiles(directory=STATIC, follow_symlink=False), name="static"),
        ]

    def operation(self, op: Operation):
        """A declared operation's route: its parameters from the request, its answer as JSON."""

        def endpoint(request: Request):
            return json_response(op.from_query(self.h, request.path_params, request.query_params))

        endpoint.__name__ = op.name
        return endpoint

    def call(self, fn, *args, **kw):
        with self.h.lock:
            return json_response(fn(self.h, *args, **kw))

    def board(self, request: Request):
        q = request.query_params
        pick = Select(q.getlist("state") or None, q.get("project"), q.get("since"))
        at = q.get("at")
        if at:
            return self._board_at(pick, at)
        t0 = time.perf_counter()
        data = self.st.watcher.board()
        machine = request.query_params.get("machine")
        if machine:  # a hub's board: one machine's sessions (those it holds a copy of)
            data = {
                **data,
                "sessions": [r for r in data["sessions"] if isinstance(r, HubRow) and machine in r.machines],
            }
        response = json_response(pick.apply(data))
        response.headers["server-timing"] = f"app;dur={(time.perf_counter() - t0) * 1000:.2f}"
        return response

    def _board_at(self, pick: Select, at: str):
        """The board as of a past moment (?at=)."""
        when = parse_at(at)
        if when is None:
            raise BadRequest(f"not a time: {at[:40]!r} (use ISO 8601 or unix seconds)")
        if getattr(self.h, "lazy", False):
            # a past moment is replayed from whole timelines, which a core from the
            # cache does not hold: read afresh, as `huddle status --at` does (outside
            # the core's lock: the board goes on meanwhile)
            return json_response(pick.apply(api.sessions(_fresh_core(self.h), at=when)))
        return self.call(lambda h, **kw: pick.apply(api.sessions(h, **kw)), at=when)

    def overview_csv(self, request: Request):
        from huddle.views.overview_tables import TABLES, to_csv  # loaded when first asked

        q = request.query_params
        name = q.get("table")
        data = BY_NAME["overview"].from_query(self.h, {}, q)
        if name not in TABLES:
            raise BadRequest(f"bad table: {str(name)[:40]!r} (want {', '.join(TABLES)})")
        return Response(
            to_csv(data, name),
            media_type="text/csv; charset=utf-8",
            headers={"content-disposition": f'attachment; filename="huddle-{name}.csv"', "cache-control": "no-store"},
        )

    def export(self, request: Request):
        q = request.query_params
        with self.h.lock:
            sid = api.check_id(request.path_params["id"])
        from huddle.views import export as export_view  # loaded when first asked: not on a server's start

        blob, media, name, summary = export_view.export_file(
            self.h, sid, q.get("format"), redact=q.get("redact"), images=q.get("images")
        )
        return Response(
            blob,
            media_type=media,
            headers={
                "content-disposition": f'attachment; filename="{name}"',
                "cache-control": "no-store",
                "x-huddle-export": summary[:1000],
            },
        )

    def info(self, request: Request):
        st = self.st
        return json_response(
            {
                "version": __version__,
                "demo": st.demo is not None,
                "watching": st.watcher.watching,
                # the first read is still running (a server from the cache answers before it)
                "reading": not getattr(st.watcher, "started", True),
                # the search index is being built or brought level (its first build: minutes on a big home)
                "indexing": st.indexer is not None and not st.indexer.idle.is_set(),
                "notes": board_notes(self.h),
                "error": st.watcher.last_error,
                "answer_token": self.answer_token,
            }
        )

    async def answer(self, request: Request):
        from huddle.answer.session import answer as answer_session  # loaded when first asked

        raw = await request.body()
        try:
            body = msgspec.json.decode(raw) if raw else None
        except msgspec.DecodeError as exc:
            raise BadRequest(f"not JSON: {exc}") from None
        by = body.get("by") if isinstance(body, dict) else None
        by = by if by in ("web", "keyboard", "notification") else "web"
        sid = request.path_params["id"]
        return json_response(await asyncio.to_thread(answer_session, self.h, sid, body, by, self.h.lock))

    async def pin(self, request: Request):
        from huddle.views.pins import pin as pin_session  # loaded when first asked

        raw = await request.body()
        try:
            body = msgspec.json.decode(raw) if raw else None
        except msgspec.DecodeError as exc:
            raise BadRequest(f"not JSON: {exc}") from None
        return await asyncio.to_thread(self.call, pin_session, request.path_params["id"], body)

    async def stream(self, request: Request):
        return await self.st.hub.stream(request)


def page(name: str):
    path = os.path.join(STATIC, name)

    def endpoint(request: Request):
        if "id" in request.path_params:
            api.check_id(request.path_params["id"])
        return FileResponse(path, headers={"cache-control": "no-store"})

    return endpoint


async def on_error(request: Request, exc: Exception):
    if isinstance(exc, HuddleError):
        return json_response({"error": str(exc)}, status_of(exc))
    if isinstance(exc, HTTPException):
        return json_response({"error": exc.detail or "not found"}, exc.status_code)
    return json_response({"error": "internal error"}, 500)


def _lifespan(st: State):
    @contextlib.asynccontextmanager
    async def lifespan(app):
        st.loop = asyncio.get_running_loop()
        if st.demo is not None:
            st.demo.start()
        await asyncio.to_thread(st.watcher.start)
        if st.indexer is not None:
            st.indexer.start()
        try:
            yield
        finally:
            st.hub.close()
            await asyncio.to_thread(st.extras.close)
            if st.indexer is not None:
                await asyncio.to_thread(st.indexer.stop)
            await asyncio.to_thread(st.watcher.stop)
            if st.demo is not None:
                await asyncio.to_thread(st.demo.stop)

    return lifespan
