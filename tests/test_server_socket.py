"""The listening socket: Nagle off on every accepted connection, through the same
asyncio path uvicorn takes (loop.create_server(sock=...))."""

from __future__ import annotations

import asyncio
import socket

from huddle.server import bind


def test_bind_is_tcp_with_nodelay():
    sock = bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        sock.close()


def test_accepted_connections_have_nodelay():
    async def run() -> int:
        seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport):
                conn = transport.get_extra_info("socket")
                seen.set_result(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        sock = bind("127.0.0.1", 0)
        server = await asyncio.get_running_loop().create_server(Probe, sock=sock)
        try:
            port = sock.getsockname()[1]
            _r, w = await asyncio.open_connection("127.0.0.1", port)
            value = await asyncio.wait_for(seen, 10)
            w.close()
            return value
        finally:
            server.close()
            await server.wait_closed()

    assert asyncio.run(run()) != 0
