"""A huddle app on uvicorn: a listening socket (`bind`), the server (`make_server`: its
head timeout and connection cap, a stop that ends the process within EXIT_DEADLINE),
and `ServerThread`, one on its own thread (tests, bench, the demo)."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from types import FrameType

import uvicorn
from starlette.applications import Starlette

from .app import State, create_app
from .protocol import GuardedH11Protocol, connection_cap, raise_fd_limit

# asyncio accepts up to `backlog` connections per wake-up: a small one keeps a flood of
# connections from outrunning the closes that the connection cap makes.
BACKLOG = 64
EXIT_DEADLINE = 5.0  # seconds from a stop signal to the process's end, whatever is stuck


def bind(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A listening socket; port 0 picks a free one (read it back from the socket).

    Made with protocol IPPROTO_TCP, not 0: asyncio turns Nagle off (TCP_NODELAY) only on
    accepted sockets whose protocol says TCP, and with Nagle on every answer's body waits
    ~40 ms for the client's delayed ACK of its headers. The listener gets TCP_NODELAY too
    (Linux hands it down to accepted connections), so no server loop can miss it."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host.strip("[]"), port))
    sock.listen(BACKLOG)
    sock.set_inheritable(True)
    return sock


def url_for(host: str, port: int, token: str | None = None) -> str:
    from .security import is_wildcard

    shown = "127.0.0.1" if is_wildcard(host) else host.strip("[]")
    shown = f"[{shown}]" if ":" in shown else shown
    return f"http://{shown}:{port}/" + (f"?token={token}" if token else "")


class QuietServer(uvicorn.Server):
    """uvicorn's server but for its loop: uvicorn's wakes ten times a second to see
    whether it should stop; this one sleeps until a stop is asked (`should_exit` set,
    from a signal or another thread) or a second passes (the Date header's clock). An
    idle server wakes once a second."""

    _should_exit = False
    _exit_asked: asyncio.Event | None = None
    _loop: asyncio.AbstractEventLoop | None = None

    @property
    def should_exit(self) -> bool:
        return self._should_exit

    @should_exit.setter
    def should_exit(self, value: bool) -> None:
        self._should_exit = value
        loop, asked = self._loop, self._exit_asked
        if value and loop is not None and asked is not None:
            try:
                loop.call_soon_threadsafe(asked.set)
            except RuntimeError:  # (its loop closed: it stopped already)
                pass

    async def main_loop(self) -> None:
        self._exit_asked = asked = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 10) % 864000  # (each tick a second: on_tick's clock ticks every tenth)
            try:
                await asyncio.wait_for(asked.wait(), 1.0)
            except TimeoutError:
                pass
            should_exit = await self.on_tick(counter)


class _Server(QuietServer):
    def __init__(self, config: uvicorn.Config, app: Starlette) -> None:
        super().__init__(config)
        self.app = app
        self._deadline: threading.Timer | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.app.state.huddle.close_streams()  # open event streams end, so the shutdown need not wait on them
        if self._deadline is None:
            # A graceful stop waits on open responses and on the watcher's thread (a read
            # can block in the kernel): past the deadline the process ends anyway.
            self._deadline = threading.Timer(EXIT_DEADLINE, os._exit, [128 + sig])
            self._deadline.daemon = True
            self._deadline.start()
        super().handle_exit(sig, frame)


def make_server(app: Starlette) -> uvicorn.Server:
    raise_fd_limit()
    GuardedH11Protocol.max_connections = connection_cap()  # (of the limit now in force)
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=2,
        access_log=False,
        timeout_keep_alive=30,
        http=GuardedH11Protocol,  # head timeout and connection cap
        backlog=BACKLOG,
    )
    return _Server(config, app)


class ServerThread:
    """A real uvicorn on its own thread: `with ServerThread(h) as srv: srv.url`."""

    def __init__(
        self,
        h,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        demo=None,
        watch_options: dict | None = None,
        watcher=None,
    ):
        self.sock = bind(host, port)
        self.host = host
        self.port = self.sock.getsockname()[1]
        self.token = token
        self.app = create_app(
            h, host=host, port=self.port, token=token, demo=demo, watch_options=watch_options, watcher=watcher
        )
        self.server = make_server(self.app)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    @property
    def url(self) -> str:
        return url_for(self.host, self.port)

    @property
    def state(self) -> State:
        return self.app.state.huddle

    def start(self) -> ServerThread:
        self.thread.start()
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("the server did not start")
            self.thread.join(0.01)
        return self

    def stop(self) -> None:
        self.state.close_streams()
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
