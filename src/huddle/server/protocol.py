"""uvicorn's h11 protocol with what it lacks against a hostile or broken client.

uvicorn times out a kept-alive connection only after a response: a client that
connects and sends nothing, or half a request head, holds a descriptor for ever,
and about a thousand of them stop the server accepting. Here:
- a request head must arrive within HEAD_TIMEOUT seconds of the connection (or of
  its first byte on a kept-alive connection), else the connection is closed;
- at most `max_connections` are open: a new one past the cap closes the connection
  that has been idle longest (no request in progress), else the event stream opened
  first (its page reconnects and resumes from Last-Event-ID), or is itself answered
  503 and closed when every connection is busy with a plain request (and dropped at
  once past twice the cap);
- event streams hold at most `stream_cap` of them: the rest is a reserve for plain
  requests, and a stream past it closes the oldest stream rather than wait for one.

`raise_fd_limit` (at the server's start) takes the soft descriptor limit to the hard
one: the common 1,024 soft limit made the cap 128, and 128 pages the whole server.
"""

from __future__ import annotations

import asyncio
import resource
import time

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEAD_TIMEOUT = 10.0
STREAM_PATH = "/api/stream"


def raise_fd_limit() -> None:
    """The soft descriptor limit up to the hard one (the kernel's own ceiling when the
    hard limit is unlimited). A soft limit is a default, not a choice of the user's."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = hard
        if hard == resource.RLIM_INFINITY:
            with open("/proc/sys/fs/nr_open") as f:
                want = int(f.read())
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (OSError, ValueError):
        pass  # (not Linux, or not allowed: the cap follows what there is)


def stream_cap(cap: int) -> int:
    """How many connections event streams may hold: the cap but an eighth of it (at
    least one), kept for plain requests."""
    return max(1, cap - max(1, cap // 8))


def connection_cap() -> int:
    """256, or an eighth of the descriptor limit when that is lower (files, watches,
    the event loop and connections not yet closed need the rest)."""
    try:
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (OSError, ValueError):
        soft = 1024
    if soft == resource.RLIM_INFINITY:
        return 256
    return max(8, min(256, soft // 8))


BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 20\r\nconnection: close\r\n\r\ntoo many connections"
)


class GuardedH11Protocol(H11Protocol):
    head_timeout: float = HEAD_TIMEOUT
    max_connections: int = connection_cap()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._head_timer: asyncio.TimerHandle | None = None
        self.idle_since = time.monotonic()
        self.stream_since: float | None = None  # an event stream: when it began
        self.refusing = False
        if len(self.connections) >= 2 * self.max_connections:
            transport.abort()  # far past the cap: no niceties
            return
        at_cap = len(self.connections) >= self.max_connections
        if at_cap and not self._evict_idlest() and not self._evict_oldest_stream():
            # Every connection is busy: this one is answered 503 once its request has been
            # read (closing with a request unread would reset it before the answer arrives).
            self.refusing = True
        super().connection_made(transport)
        self._arm_head_timer()

    def data_received(self, data: bytes) -> None:
        if self.refusing:
            if not self.transport.is_closing():
                self.transport.write(BUSY)
                self.transport.close()
            return
        super().data_received(data)
        if self.stream_since is None and self._streaming():
            self.stream_since = time.monotonic()
            streams = self._streams()
            for _ in range(len(streams) - stream_cap(self.max_connections)):
                self._evict_oldest_stream()
        if not self._waiting_for_head():
            self._cancel_head_timer()
        elif self.conn.trailing_data[0] and self._head_timer is None:
            self._arm_head_timer()  # part of a head on a kept-alive connection: it has a deadline too

    def on_response_complete(self) -> None:
        self.idle_since = time.monotonic()
        self.stream_since = None
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        if getattr(self, "transport", None) is None:
            return  # refused at the cap: uvicorn never knew this one
        super().connection_lost(exc)

    # -- the head deadline ------------------------------------------------------------

    def _waiting_for_head(self) -> bool:
        idle = self.cycle is None or self.cycle.response_complete
        return idle and self.conn.their_state is h11.IDLE

    def _arm_head_timer(self) -> None:
        self._cancel_head_timer()
        self._head_timer = self.loop.call_later(self.head_timeout, self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        timer = getattr(self, "_head_timer", None)
        if timer is not None:
            timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if (self.refusing or self._waiting_for_head()) and not self.transport.is_closing():
            self.transport.close()

    # -- the cap ----------------------------------------------------------------------

    def _evict_idlest(self) -> bool:
        idle = [
            c
            for c in self.connections
            if isinstance(c, GuardedH11Protocol) and c._waiting_for_head() and not c.transport.is_closing()
        ]
        if not idle:
            return False
        oldest = min(idle, key=lambda c: c.idle_since)
        oldest.transport.close()
        oldest.connections.discard(oldest)  # counted out now, not when the loop gets to it
        return True

    # -- event streams --------------------------------------------------------------

    def _streaming(self) -> bool:
        cycle = self.cycle
        return cycle is not None and not cycle.response_complete and cycle.scope.get("path") == STREAM_PATH

    def _streams(self) -> list[GuardedH11Protocol]:
        return [
            c
            for c in self.connections
            if isinstance(c, GuardedH11Protocol) and c.stream_since is not None and not c.transport.is_closing()
        ]

    def _evict_oldest_stream(self) -> bool:
        """Close the event stream opened first (not this connection's): its page
        reconnects and gets what it missed from Last-Event-ID."""
        others = [c for c in self._streams() if c is not self]
        if not others:
            return False
        oldest = min(others, key=lambda c: c.stream_since or 0.0)
        oldest.transport.close()
        oldest.connections.discard(oldest)
        return True
