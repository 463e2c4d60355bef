"""The socket side of the host: JSON lines in, JSON lines out, on `D/host.sock`.

Calls: {"op":"attach","from":N} (replay from the log, then live; ends after this
run's `exited`), {"op":"write","line":"<one JSON value>"} or {"op":"write","json":V}
(to the agent's stdin, logged first), {"op":"stop"} (optionally "now": true),
{"op":"status"}. A reply is {"ok":true,"op":...} or {"ok":false,"error":...}, with
the request's "id" echoed. Bad input gets an error reply; the connection stays.

Attach is gap-free by construction: one event loop appends and serves, and a
reader is served by seq, from the file while it is behind the in-memory ring and
from the ring after. A live reader stuck 1,024 entries behind is let go with the
seq to attach again from.
"""

from __future__ import annotations

import asyncio
import os
import socket
from typing import TYPE_CHECKING, Any

import msgspec

from huddle.answer.asks import AnswerRefused, BadAnswer, parse_answer

from .log import as_json, read_entries
from .paths import SOCK_NAME, unix_address

if TYPE_CHECKING:
    from .server import Host

BEHIND_LIMIT = 1024  # entries a live reader may lag before it is let go
HIGH_WATER = 256 << 10  # bytes queued on a connection before its reader must catch up
REQUEST_LIMIT = 64 << 20
STDIN_MAX = 4 << 20  # bytes waiting for an agent to read its stdin: past it, `write` is refused
OPS = ("attach", "write", "stop", "status", "answer", "asks")
_decode = msgspec.json.decode
_encode = msgspec.json.encode


class Conn:
    """One client connection; replies and attach entries share its writer."""

    def __init__(self, writer: asyncio.StreamWriter):
        self.writer = writer
        self.attach: asyncio.Task | None = None
        self.next = 0  # the next seq this connection's attach will send
        self.live = False  # its attach has caught up once (a replay is never let go)
        self.waiting = False  # its attach is blocked on a full connection
        self.cut = False
        self.pending: set[asyncio.Task] = set()  # replies still to come (a stop's)

    def send_bytes(self, data: bytes) -> None:
        if not self.writer.is_closing():
            self.writer.write(data)

    def send(self, msg: dict) -> None:
        self.send_bytes(_encode(msg) + b"\n")

    @property
    def queued(self) -> int:
        return self.writer.transport.get_write_buffer_size()


class Serving:
    """The calls on the socket, for one Host, whose log, ring and agent it serves."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.conns: set[Conn] = set()
        self._sock_ino: int | None = None

    def readers(self) -> int:
        """Connections with an attach still running."""
        return sum(1 for c in self.conns if c.attach is not None and not c.attach.done())

    def let_go_behind(self, seq: int) -> None:
        """Let go of live readers stuck on a full connection more than BEHIND_LIMIT entries before `seq`."""
        for c in self.conns:
            if c.waiting and c.live and not c.cut and c.attach is not None and seq - c.next + 1 > BEHIND_LIMIT:
                c.cut = True
                c.attach.cancel()

    # -- the socket ----------------------------------------------------------------

    async def listen(self) -> asyncio.AbstractServer:
        link = os.path.join(self.host.dir, SOCK_NAME)
        if self.host.socket != link and _answers(self.host.socket):
            raise OSError(f"another host answers on {self.host.socket}")
        for path in {self.host.socket, link}:
            if os.path.lexists(path):  # a stale socket: we hold the log's lock, no host is here
                os.unlink(path)
        with unix_address(self.host.socket) as addr:
            server = await asyncio.start_unix_server(self._client, path=addr, limit=REQUEST_LIMIT)
        os.chmod(self.host.socket, 0o600)  # it writes to the agent's stdin: the user's alone (--socket may be anywhere)
        self._sock_ino = os.stat(self.host.socket).st_ino
        if self.host.socket != link:
            os.symlink(self.host.socket, link)  # clients look in D
        return server

    def unlisten(self) -> None:
        link = os.path.join(self.host.dir, SOCK_NAME)
        try:
            if os.stat(self.host.socket).st_ino == self._sock_ino:
                os.unlink(self.host.socket)
        except OSError:
            pass
        if link != self.host.socket and os.path.islink(link):
            os.unlink(link)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = Conn(writer)
        self.conns.add(conn)
        try:
            while True:
                try:
                    line = await reader.readline()
                except ValueError:
                    conn.send({"ok": False, "error": f"request longer than {REQUEST_LIMIT} bytes"})
                    break
                except ConnectionError:
                    return  # gone: what it asked for goes nowhere
                if not line:
                    break
                if line.strip():
                    self._request(conn, line)
            # The client is done asking (`echo '{"op":"attach"}' | socat ...` closes its
            # side at once): what it asked for still goes out.
            waits = [t for t in (conn.attach, *conn.pending) if t is not None and not t.done()]
            if waits:
                await asyncio.wait(waits)
        except asyncio.CancelledError:
            # The host is ending with this client still connected (asyncio.run cancels what is
            # left). Ended normally: Python 3.11's stream callback calls task.exception() on a
            # cancelled task and prints a CancelledError traceback otherwise.
            return
        finally:
            if conn.attach is not None and not conn.attach.done():
                conn.attach.cancel()
            self.conns.discard(conn)
            if not conn.cut:
                writer.close()

    def _attach_request(self, conn: Conn, req: dict[str, Any], reply: dict[str, Any]) -> None:
        """`attach` from a seq number: the log from there, then what comes (one at a time)."""
        start = req.get("from", 1)
        if not isinstance(start, int) or isinstance(start, bool):
            conn.send({**reply, "ok": False, "error": f'"from" must be a seq number, not {start!r}'})
        elif conn.attach is not None and not conn.attach.done():
            conn.send({**reply, "ok": False, "error": "already attached on this connection"})
        else:
            conn.attach = asyncio.get_running_loop().create_task(self._attach(conn, max(1, start), reply))

    def _request(self, conn: Conn, line: bytes) -> None:
        try:
            req = _decode(line)
        except msgspec.DecodeError as exc:
            conn.send({"ok": False, "error": f"not JSON: {exc}"})
            return
        if not isinstance(req, dict):
            conn.send({"ok": False, "error": 'a call is a JSON object with an "op"'})
            return
        op = req.get("op")
        reply = {"op": op, **({"id": req["id"]} if "id" in req else {})}
        if op == "attach":
            self._attach_request(conn, req, reply)
        elif op == "write":
            conn.send({**reply, **self._write(req)})
        elif op == "stop":
            t = self.host.spawn(self._stop_reply(conn, bool(req.get("now")), reply))
            conn.pending.add(t)
            t.add_done_callback(conn.pending.discard)
        elif op == "status":
            conn.send({**reply, "ok": True, **self.host.status()})
        elif op == "asks":
            conn.send({**reply, "ok": True, "protocol": self.host.asking.protocol, "asks": self.host.asking.listing()})
        elif op == "answer":
            conn.send({**reply, **self._answer(req)})
        else:
            known = ", ".join(OPS)
            conn.send({**reply, "ok": False, "error": f"unknown op {op!r} (known: {known})"})

    def _write(self, req: dict) -> dict:
        if "line" in req:
            if not isinstance(req["line"], str):
                return {"ok": False, "error": '"line" must be a string holding one JSON value'}
            raw = as_json(req["line"].strip().encode())
            if raw is None:
                return {"ok": False, "error": f"not one JSON value: {req['line'][:200]!r}"}
            if b"\n" in raw:
                raw = _encode(_decode(raw))  # one line on the agent's stdin
        elif "json" in req:
            raw = _encode(req["json"])
        else:
            return {"ok": False, "error": 'write needs "line" (one JSON value, as text) or "json"'}
        if not self.host.agent.running or not self.host.agent.stdin_open or self.host.stop_task is not None:
            return {"ok": False, "error": "the agent's stdin is closed"}
        waiting = self.host.agent.stdin_waiting()
        if waiting + len(raw) > STDIN_MAX:  # held here for an agent that never reads: bounded
            return {"ok": False, "error": f"the agent is not reading its stdin ({waiting:,} bytes wait): not sent"}
        seq = self.host.to_agent(raw)
        if seq is None:
            return {"ok": False, "error": f"not written: {self.host.broken}"}
        self.host.asking.written(_decode(raw))
        return {"ok": True, "seq": seq}

    def _answer(self, req: dict) -> dict:
        """An answer to a pending request (huddle.answer): passed on, or refused saying why."""
        if self.host.asking.channel is None:
            return {
                "ok": False,
                "refused": True,
                "error": "this run cannot be answered: huddle does not speak its agent's protocol",
            }
        try:
            a = parse_answer(req, str(req.get("by") or "api"))
            return {"ok": True, **self.host.asking.answer(a)}
        except (AnswerRefused, BadAnswer) as exc:
            return {"ok": False, "refused": True, "error": str(exc)}

    async def _stop_reply(self, conn: Conn, now: bool, reply: dict) -> None:
        await self.host.stop(fast=now, by="socket")
        await self.host.done.wait()
        conn.send({**reply, "ok": True, "exited": self.host.exit_info, "seq": self.host.exited_seq})

    # -- attach --------------------------------------------------------------------

    async def _attach(self, conn: Conn, start: int, reply: dict) -> None:
        conn.next = start
        try:
            while True:
                wake = self.host.wake
                if conn.next <= self.host.log.last_seq:
                    if await self._send_some(conn):
                        break
                    continue
                if self.host.exited_seq is not None and conn.next > self.host.exited_seq:
                    break
                conn.live = True
                await wake.wait()
            conn.send({**reply, "ok": True, "end": "exited", "last": self.host.exited_seq})
        except asyncio.CancelledError:
            if not conn.cut:
                raise
            conn.send(
                {
                    **reply,
                    "ok": False,
                    "from": conn.next,
                    "error": f"let go: fell {BEHIND_LIMIT} entries behind; attach again from seq {conn.next}",
                }
            )
            conn.writer.close()  # what is queued still goes out first
            asyncio.get_running_loop().call_later(30, conn.writer.transport.abort)
        except ConnectionError:
            pass

    async def _send_some(self, conn: Conn) -> bool:
        """Send what `conn` has not had yet, up to a full connection; True once this
        run's `exited` has been sent."""
        if conn.next < self.host.ring_first:
            before = conn.next
            for seq, line in read_entries(self.host.log.path, conn.next, upto=self.host.ring_first - 1):
                conn.send_bytes(line)
                conn.next = seq + 1
                if conn.queued > HIGH_WATER:
                    await self._drain(conn)
                    if conn.next >= self.host.ring_first:
                        break
            if conn.next == before:  # not in the file (it cannot be): go on rather than spin
                conn.next = self.host.ring_first
            return False
        while conn.next <= self.host.log.last_seq and conn.next >= self.host.ring_first:
            seq = conn.next
            conn.send_bytes(self.host.ring[seq])
            conn.next = seq + 1
            if seq == self.host.exited_seq:
                return True
            if conn.queued > HIGH_WATER:
                await self._drain(conn)
        return False

    async def _drain(self, conn: Conn) -> None:
        conn.waiting = True
        try:
            await conn.writer.drain()
        finally:
            conn.waiting = False


def _answers(path: str) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with unix_address(path) as addr:
            s.connect(addr)
        return True
    except OSError:
        return False
    finally:
        s.close()
