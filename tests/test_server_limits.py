"""Limits that protect the server (issue 34): with the common 1,024 open-file limit, 128
open event streams made every other request answer 503. The server raises its soft
descriptor limit to the hard one at start, keeps a reserve of connections for plain
requests, and drops the oldest event stream (its page reconnects and resumes from
Last-Event-ID) rather than refuse the board. A real `huddle serve` and raw sockets."""

from __future__ import annotations

import os
import re
import resource
import socket
import subprocess
import sys
import time

import httpx

import web_corpus
from huddle.server.protocol import GuardedH11Protocol


def _serve(tmp_path, soft: int, hard: int):
    settings, sid, _ = web_corpus.one_session(tmp_path)
    env = {**os.environ, **web_corpus.env_of(settings), "PYTHONUNBUFFERED": "1"}

    def limits():
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    p = subprocess.Popen(
        [sys.executable, "-m", "huddle", "serve", "--port", "0", "--no-open"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=limits,
    )
    m = re.search(r"http://127\.0\.0\.1:(\d+)/", p.stdout.readline())
    assert m, p.stderr.read()
    port = int(m.group(1))
    deadline = time.monotonic() + 30
    while True:
        try:
            if not httpx.get(f"http://127.0.0.1:{port}/api/info", timeout=5).json().get("reading"):
                break
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "the server did not come up"
        time.sleep(0.05)
    return p, port, sid


def _stop(p) -> None:
    p.terminate()
    try:
        p.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()


def _limits(pid: int) -> tuple[int, int]:
    with open(f"/proc/{pid}/limits") as f:
        lines = f.read().splitlines()
    for line in lines:
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return int(soft), int(hard)
    raise AssertionError("no open-files line")


def _stream(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(f"GET /api/stream HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    head = s.recv(65536)
    assert head.startswith(b"HTTP/1.1 200"), head[:100]
    return s


def _closed(s: socket.socket) -> bool:
    s.settimeout(0.0)
    try:
        while True:
            part = s.recv(65536)
            if not part:
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def test_the_soft_descriptor_limit_is_raised_to_the_hard_one(tmp_path):
    p, _port, _sid = _serve(tmp_path, 1024, 4096)
    try:
        assert _limits(p.pid) == (4096, 4096)
    finally:
        _stop(p)


def test_event_streams_past_the_cap_never_refuse_the_board(tmp_path):
    """1,024 descriptors and no higher hard limit: the cap stays 128; 140 streams open."""
    p, port, sid = _serve(tmp_path, 1024, 1024)
    streams: list[socket.socket] = []
    try:
        for _ in range(140):
            streams.append(_stream(port))
        with httpx.Client(timeout=20) as c:
            for path in ("/api/sessions", f"/api/sessions/{sid}", "/api/info"):
                r = c.get(f"http://127.0.0.1:{port}{path}")
                assert r.status_code == 200, (path, r.status_code)
        deadline = time.monotonic() + 10
        while not _closed(streams[0]):  # the oldest made room
            assert time.monotonic() < deadline, "the oldest stream was not dropped"
            time.sleep(0.05)
        assert not _closed(streams[-1])  # the newest stands
        assert p.poll() is None
    finally:
        for s in streams:
            s.close()
        _stop(p)


def test_streams_keep_a_reserve_for_plain_requests(monkeypatch):
    monkeypatch.setattr(GuardedH11Protocol, "max_connections", 16)
    from huddle.server.protocol import stream_cap

    assert stream_cap(16) < 16 and stream_cap(256) <= 256 - 16 and stream_cap(8) >= 1
