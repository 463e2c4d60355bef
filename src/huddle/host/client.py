"""Talking to a host over `D/host.sock` (blocking sockets: a client is one thing
at a time), and reading its log straight from the file when no host runs."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator

from huddle.errors import HostingError

from .log import read_entries, seq_of
from .paths import log_path, sock_path, unix_address


class HostError(HostingError):
    """A host answered with an error, or none answers."""


class Connection:
    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.buf = b""

    def close(self) -> None:
        self.sock.close()

    def send(self, msg: dict) -> None:
        self.sock.sendall(json.dumps(msg).encode() + b"\n")

    def lines(self, tick: float | None = None) -> Iterator[bytes | None]:
        """Lines from the host (without the newline) until it closes; with `tick`,
        None every `tick` seconds of silence (for a spinner, or a Ctrl-C)."""
        self.sock.settimeout(tick)
        while True:
            nl = self.buf.find(b"\n")
            if nl >= 0:
                line, self.buf = self.buf[:nl], self.buf[nl + 1 :]
                yield line
                continue
            try:
                chunk = self.sock.recv(1 << 18)
            except TimeoutError:
                yield None
                continue
            except ConnectionError:
                return
            if not chunk:
                return
            self.buf += chunk


def connect(d: str, sock: str | None = None) -> Connection | None:
    """A connection to the host serving D, or None when none answers."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with unix_address(sock or sock_path(d)) as addr:
            s.connect(addr)
    except OSError:
        s.close()
        return None
    return Connection(s)


def running(d: str, sock: str | None = None) -> bool:
    c = connect(d, sock)
    if c is None:
        return False
    c.close()
    return True


def call(d: str, msg: dict, sock: str | None = None) -> dict:
    """One call and its reply (entries of an attach on the way are skipped)."""
    c = connect(d, sock)
    if c is None:
        raise HostError(f"no host is running in {d}")
    try:
        c.send(msg)
        for line in c.lines():
            if line is None or line.startswith(b'{"seq":'):
                continue
            reply = json.loads(line)
            if isinstance(reply, dict) and reply.get("op") == msg.get("op"):
                return reply
    finally:
        c.close()
    raise HostError(f"the host in {d} went away before it answered")


def attach(
    d: str, start: int = 1, sock: str | None = None, tick: float | None = None, note=None
) -> Iterator[bytes | None]:
    """Every log entry from seq `start`, as the log's own lines: through the host
    while one runs (until its agent's `exited`), else from the file. Attaches again
    when let go for being slow; finishes from the file if the host goes away."""
    nxt = max(1, start)
    while True:
        c = connect(d, sock)
        if c is None:
            break
        try:
            c.send({"op": "attach", "from": nxt})
            again = False
            for line in c.lines(tick):
                if line is None:
                    yield None
                    continue
                seq = seq_of(line)
                if seq is not None:
                    nxt = seq + 1
                    yield line + b"\n"
                    continue
                msg = json.loads(line)
                if not isinstance(msg, dict) or msg.get("op") != "attach":
                    continue
                if msg.get("ok") and msg.get("end"):
                    return
                if isinstance(msg.get("from"), int):
                    if note:
                        note(msg.get("error", "let go"))
                    nxt, again = msg["from"], True
                    break
                raise HostError(str(msg.get("error")))
        finally:
            c.close()
        if not again:
            break
    for _, line in read_entries(log_path(d), nxt):
        yield line


def host_dir_exists(d: str) -> bool:
    return os.path.exists(log_path(d)) or os.path.exists(sock_path(d))
