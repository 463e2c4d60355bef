"""Server-Sent Events: board changes and new events, pushed to every open page.

Every message has an id from one counter. The last messages are kept, so a page
that reconnects with Last-Event-ID gets what it missed; if that is gone (or the
server restarted) it gets a `reset` and reloads. Comment pings keep proxies and
the browser from dropping an idle stream.

Messages: `hello` (on connect; its id is the current one), `board`
({"sessions": [changed rows], "removed": [ids]}), `events` ({"session", "epoch",
"events": [...]}, only to pages that follow that session), `reset` (reload).
"""

from __future__ import annotations

import asyncio
import json
from collections import deque

import msgspec
from starlette.requests import Request
from starlette.responses import StreamingResponse

from huddle.views import api
from huddle.views.lookup import check_int

PING_EVERY = 15.0
KEEP = 2000  # messages kept for resuming
QUEUE_MAX = 1000  # a page that falls this far behind gets a reset instead


def _json(data: dict) -> str:
    """A message's JSON, its rows typed (model.rows) said as the API says them."""
    try:
        return msgspec.json.encode(data).decode()
    except (TypeError, msgspec.EncodeError):  # (what only the standard library says)
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=msgspec.to_builtins)


class Message:
    __slots__ = ("frame", "id", "kind", "session")

    def __init__(self, id: int, kind: str, data: dict, session: str | None):
        self.id = id
        self.kind = kind
        self.session = session
        payload = _json(data)
        self.frame = f"id: {id}\nevent: {kind}\ndata: {payload}\n\n".encode()


class Client:
    def __init__(self, session: str | None, queue_max: int = QUEUE_MAX):
        self.session = session
        self.queue: asyncio.Queue = asyncio.Queue(queue_max)
        self.behind = False

    def wants(self, m: Message) -> bool:
        return m.session is None or m.session == self.session


class Hub:
    """Lives on the server's event loop; `publish` is called there (the watcher
    thread hands messages over with `loop.call_soon_threadsafe`)."""

    def __init__(self, keep: int = KEEP, ping_every: float = PING_EVERY, queue_max: int = QUEUE_MAX):
        self.kept: deque[Message] = deque(maxlen=keep)
        self.queue_max = queue_max  # messages a page may fall behind before it gets a reset
        self.last_id = 0
        self.clients: set[Client] = set()
        self.ping_every = ping_every
        self.closed = False

    def followed(self) -> set[str]:
        """The sessions pages follow now (their ids). Called from the watcher's thread: the
        set of clients is copied in one step first (it changes on the event loop's)."""
        return {c.session for c in list(self.clients) if c.session is not None}

    def publish(self, kind: str, data: dict, session: str | None = None) -> Message:
        self.last_id += 1
        m = Message(self.last_id, kind, data, session)
        self.kept.append(m)
        for c in self.clients:
            if c.behind or not c.wants(m):
                continue
            try:
                c.queue.put_nowait(m)
            except asyncio.QueueFull:
                _give_up(c)
        return m

    def publish_many(self, items: list[tuple[str, dict, str | None]]) -> None:
        for kind, data, session in items:
            self.publish(kind, data, session)

    def close(self) -> None:
        self.closed = True
        for c in self.clients:
            try:
                c.queue.put_nowait(None)
            except asyncio.QueueFull:
                _give_up(c)

    def missed(self, client: Client, last: int) -> list[Message] | None:
        """What a page that saw message `last` has missed; None if it cannot be told."""
        if last > self.last_id:
            return None  # an id from before a restart
        if last == self.last_id:
            return []
        if not self.kept or self.kept[0].id > last + 1:
            return None
        return [m for m in self.kept if m.id > last and client.wants(m)]

    def frame(self, kind: str, data: dict, id: int | None = None) -> bytes:
        payload = _json(data)
        return f"id: {self.last_id if id is None else id}\nevent: {kind}\ndata: {payload}\n\n".encode()

    async def stream(self, request: Request) -> StreamingResponse:
        session = request.query_params.get("session") or None
        if session is not None:
            api.check_id(session)
        last_raw = request.headers.get("last-event-id") or request.query_params.get("last_id")
        last = check_int(last_raw, "Last-Event-ID") if last_raw else None
        client = Client(session, self.queue_max)
        # Register before reading the backlog: nothing falls between the two.
        self.clients.add(client)
        backlog = None if last is None else self.missed(client, last)

        async def body():
            try:
                yield b"retry: 1000\n\n"
                if last is not None and backlog is None:
                    yield self.frame("reset", {"why": "missed messages are gone; reload"})
                else:
                    yield self.frame("hello", {"id": self.last_id, "session": session})
                    sent = last or 0
                    for m in backlog or ():
                        sent = m.id
                        yield m.frame
                    while not self.closed:
                        try:
                            m = await asyncio.wait_for(client.queue.get(), self.ping_every)
                        except TimeoutError:
                            yield b": ping\n\n"
                            continue
                        if m is None:
                            if client.behind:
                                yield self.frame("reset", {"why": "too far behind; reload"})
                            return
                        if m.id <= sent:
                            continue  # already sent from the backlog
                        sent = m.id
                        yield m.frame
            finally:
                self.clients.discard(client)

        headers = {"cache-control": "no-store", "x-accel-buffering": "no"}
        return StreamingResponse(body(), media_type="text/event-stream", headers=headers)


def _give_up(c: Client) -> None:
    """A page too far behind: drop its queue and tell it to reload."""
    c.behind = True
    while not c.queue.empty():
        c.queue.get_nowait()
    c.queue.put_nowait(None)
