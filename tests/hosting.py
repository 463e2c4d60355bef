"""Starting real hosts and agents for the tests (no mocks: processes and sockets)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from huddle.host.client import running

HELPERS = Path(__file__).parent / "helpers"
REPLAY = str(HELPERS / "replay_stream.py")
HUDDLE = [sys.executable, "-m", "huddle"]
PY = sys.executable


def wait_until(cond, what: str = "the condition", limit: float = 60.0):
    """Poll until `cond()` is true. The limit is a safety net, not a measurement."""
    end = time.monotonic() + limit
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.01)


# What a test opened here (hosts and their pipes, raw sockets): `cleanup()` closes what is
# left after each test (conftest), so nothing leaks into the next one.
_opened: list = []


def cleanup() -> None:
    while _opened:
        x = _opened.pop()
        if isinstance(x, subprocess.Popen):
            if x.poll() is None:
                x.kill()
            x.communicate(timeout=30)  # reads what is left and closes the pipes
        else:
            x.close()


def start_host(d, *cmd, grace: float = 0.3, sock: str | None = None, env=None, **kw) -> subprocess.Popen:
    args = [*HUDDLE, "host", "--dir", str(d), "--grace", str(grace), *(["--socket", sock] if sock else []), "--", *cmd]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, **kw)
    _opened.append(p)
    # through D's host.sock, as clients look (with --socket elsewhere, the link in D is
    # made just after that socket listens)
    wait_until(lambda: running(str(d)) or p.poll() is not None, "the host to listen")
    return p


def huddle(*args, env=None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*HUDDLE, *args], capture_output=True, env=env, timeout=120, **kw)


def log_lines(d) -> list[bytes]:
    """The log's whole lines (one being written as we read is left out)."""
    path = Path(d) / "events.jsonl"
    if not path.exists():
        return []
    lines = path.read_bytes().splitlines(keepends=True)
    return lines if not lines or lines[-1].endswith(b"\n") else lines[:-1]


def entries(d) -> list[dict]:
    return [json.loads(line) for line in log_lines(d)]


def kinds(d) -> list[str]:
    return [e["kind"] for e in entries(d)]


def has_entry(d, **match) -> bool:
    return any(all(e.get(k) == v for k, v in match.items()) for e in entries(d))


class Raw:
    """A bare socket client: send anything, read JSON lines back."""

    def __init__(self, d, sock: str | None = None):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        _opened.append(self)
        self.s.connect(sock or os.path.join(str(d), "host.sock"))
        self.buf = b""

    def send(self, data) -> None:
        if not isinstance(data, bytes):
            data = json.dumps(data).encode()
        self.s.sendall(data + b"\n")

    def line(self) -> bytes | None:
        while b"\n" not in self.buf:
            chunk = self.s.recv(1 << 16)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def reply(self) -> dict:
        """The next line that is not a log entry."""
        while True:
            line = self.line()
            assert line is not None, "the host closed the connection"
            if not line.startswith(b'{"seq":'):
                return json.loads(line)

    def close(self) -> None:
        self.s.close()


def agent(code: str) -> list[str]:
    """A Python agent from source text."""
    return [PY, "-c", code]


ECHO = agent(
    "import json, sys\n"
    "print(json.dumps({'type': 'system', 'subtype': 'init', 'session_id': 's'}), flush=True)\n"
    "print('a plain line', flush=True)\n"
    "print('to stderr', file=sys.stderr, flush=True)\n"
    "for line in sys.stdin:\n"
    "    print(json.dumps({'echo': json.loads(line)}), flush=True)\n"
    "print('bye', flush=True)\n"
)
