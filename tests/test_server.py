"""The web server against a real uvicorn on a free port: routes, stream, security."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import httpx
import msgspec
import pytest

import incli
import web_corpus
from conftest import fingerprint
from helpers import wait_for
from huddle.server import ServerThread
from huddle.views import api

FAST = {"poll_watched": 0.5, "poll_unwatched": 0.2}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("web")
    return web_corpus.build(root), root


@pytest.fixture(scope="module")
def server(corpus):
    settings, _ = corpus
    with ServerThread(web_corpus.core(settings), watch_options=FAST) as srv:
        yield srv


@pytest.fixture
def client(server):
    with httpx.Client(base_url=server.url, timeout=20) as c:
        yield c


@pytest.fixture
def live(tmp_path):
    """A server on one session that the test makes grow."""
    settings, sid, main = web_corpus.one_session(tmp_path)
    with ServerThread(web_corpus.core(settings), watch_options=FAST) as srv:
        yield srv, sid, main


def _lib(server, fn, *args, **kw):
    h = server.state.h
    with h.lock:
        return json.loads(msgspec.json.encode(fn(h, *args, **kw)))


def test_every_route_on_the_samples_is_the_library_answer(server, client):
    board = client.get("/api/sessions").json()
    assert board == _lib(server, api.sessions)
    assert len(board["sessions"]) > 20
    for row in board["sessions"]:
        sid = row["id"]
        base = f"/api/sessions/{sid}"
        assert client.get(base).json() == _lib(server, api.session_detail, sid)
        assert client.get(base + "/events").json() == _lib(server, api.events, sid)
        lanes = client.get(base + "/transcripts").json()
        assert lanes == _lib(server, api.transcripts, sid)
        for a in lanes["agents"]:
            t = client.get(base + "/transcript", params={"agent": a["id"], "limit": 500}).json()
            assert t == _lib(server, api.transcript, sid, agent=a["id"], limit=500)
            for m in t["messages"][:3]:
                if "ref" in m:
                    r = client.get(f"{base}/content/{m['ref']}")
                    assert r.status_code == 200 and r.json() == _lib(server, api.content, sid, m["ref"])


def test_paging_cursors_over_http(live):
    srv, sid, main = live
    web_corpus.lengthen(main, 120)
    srv.state.watcher.wake.set()
    with httpx.Client(base_url=srv.url) as c:
        deadline = time.time() + 120
        while c.get(f"/api/sessions/{sid}/transcript").json()["total"] < 120 and time.time() < deadline:
            time.sleep(0.1)
        page = c.get(f"/api/sessions/{sid}/transcript", params={"limit": 50}).json()
        total, lines = page["total"], [m["line"] for m in page["messages"]]
        while page["has_more"]:
            page = c.get(f"/api/sessions/{sid}/transcript", params={"before": page["first_line"], "limit": 50}).json()
            lines = [m["line"] for m in page["messages"]] + lines
        assert lines == list(range(total))
        ev = c.get(f"/api/sessions/{sid}/events", params={"after": 10, "limit": 5}).json()
        assert [e["seq"] for e in ev["events"]] == [11, 12, 13, 14, 15] and ev["next_after"] == 15 and ev["has_more"]


def test_unknown_session_is_404_and_unknown_agent_empty(client):
    r = client.get("/api/sessions/no-such-session")
    assert r.status_code == 404 and "no session" in r.json()["error"]
    sid = client.get("/api/sessions").json()["sessions"][0]["id"]
    t = client.get(f"/api/sessions/{sid}/transcript", params={"agent": "nobody"}).json()
    assert t["messages"] == [] and t["total"] == 0


def test_the_pages_are_served(client):
    sid = client.get("/api/sessions").json()["sessions"][0]["id"]
    for path in ("/", f"/session/{sid}", "/static/js/board.js", "/static/css/huddle.css", "/favicon.ico"):
        r = client.get(path)
        assert r.status_code == 200, path
    assert client.get("/session/..%2f..%2fetc").status_code in (400, 404)
    assert client.get("/static/../api.py").status_code == 404


# -- the stream ----------------------------------------------------------------------


def read_sse(url, until, headers=None, on_hello=None, timeout=20):
    """Messages of an SSE stream ({"id", "event", "data"}) until `until(messages)`."""
    msgs, cur = [], {}
    deadline = time.time() + timeout
    with httpx.stream("GET", url, headers=headers or {}, timeout=10) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if time.time() > deadline:
                raise AssertionError(f"stream: nothing matched in {timeout}s: {msgs}")
            if line.startswith(":"):
                continue
            if not line:
                if "event" in cur:
                    cur["data"] = json.loads(cur["data"])
                    msgs.append(cur)
                    if cur["event"] == "hello" and on_hello:
                        on_hello()
                    if until(msgs):
                        return msgs
                cur = {}
                continue
            k, _, v = line.partition(": ")
            cur[k] = v
    raise AssertionError(f"stream ended: {msgs}")


def _said(msgs, text):
    return any(m["event"] == "events" and any(e.get("text") == text for e in m["data"]["events"]) for m in msgs)


def test_an_appended_line_is_pushed_with_ids(live):
    srv, sid, main = live
    msgs = read_sse(
        f"{srv.url}api/stream?session={sid}",
        lambda ms: _said(ms, "pushed live"),
        on_hello=lambda: web_corpus.append_say(main, "pushed live"),
    )
    assert all(m.get("id", "").isdigit() for m in msgs)
    ev = next(m for m in msgs if m["event"] == "events")
    assert ev["data"]["session"] == sid and all("ref" in e for e in ev["data"]["events"])
    # the board change reaches a page that follows no session
    msgs = read_sse(
        f"{srv.url}api/stream",
        lambda ms: any(m["event"] == "board" for m in ms),
        on_hello=lambda: web_corpus.append_say(main, "board moves"),
    )
    row = next(m for m in msgs if m["event"] == "board")["data"]["sessions"][0]
    assert row["id"] == sid and row["events"]["say"] >= 2


def test_a_page_resumes_with_last_event_id(live):
    srv, sid, main = live
    url = f"{srv.url}api/stream?session={sid}"
    first = read_sse(url, lambda ms: _said(ms, "one"), on_hello=lambda: web_corpus.append_say(main, "one"))
    last = int(first[-1]["id"])
    # the page is gone while two more lines arrive
    web_corpus.append_say(main, "two")
    srv.state.watcher.wake.set()
    deadline = time.time() + 120
    while srv.state.hub.last_id <= last and time.time() < deadline:
        time.sleep(0.05)
    web_corpus.append_say(main, "three")
    back = read_sse(url, lambda ms: _said(ms, "three"), headers={"Last-Event-ID": str(last)})
    assert back[0]["event"] == "hello"
    assert int(back[1]["id"]) == last + 1  # nothing missed, nothing twice
    assert [int(m["id"]) for m in back[1:]] == list(range(last + 1, last + len(back)))
    replayed = [m for m in back if m["event"] == "events"]
    assert _said(replayed[:1], "two")
    texts = [e.get("text") for m in replayed for e in m["data"]["events"] if e["kind"] == "say"]
    assert texts == ["two", "three"]
    # an id from a server that no longer exists (or far too old) asks the page to reload
    gone = read_sse(url, lambda ms: True, headers={"Last-Event-ID": str(last + 10_000)})
    assert gone[0]["event"] == "reset"


def test_keep_alive_pings(live):
    srv, _sid, _ = live
    srv.state.hub.ping_every = 0.2
    with httpx.stream("GET", f"{srv.url}api/stream", timeout=5) as r:
        seen = []
        for line in r.iter_lines():
            seen.append(line)
            if line == ": ping":
                break
    assert ": ping" in seen


def test_a_page_too_far_behind_gets_a_reset(live):
    """A page that stops reading while messages pour in is let go: its queue is dropped
    and, once it reads again, it is told to reload (never an unbounded queue)."""
    import socket

    from hosting import wait_until

    srv, _sid, _ = live
    hub = srv.state.hub
    hub.queue_max = 8
    host, port = srv.url.split("//")[1].rstrip("/").rsplit(":", 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a slow page: a small window
    s.connect((host, int(port)))
    s.sendall(f"GET /api/stream HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    got = b""
    while b"event: hello" not in got:
        got += s.recv(4096)
    clients = list(hub.clients)
    assert len(clients) == 1 and not clients[0].behind
    pad = "x" * 65536  # big messages: the socket's buffers fill, then the page's queue
    for _ in range(300):  # ~20 MB: far more than the socket buffers and 8 queued messages hold
        srv.state.loop.call_soon_threadsafe(hub.publish, "board", {"pad": pad})
    wait_until(lambda: clients[0].behind, "the page to be let go")
    s.settimeout(20)
    while b"event: reset" not in got:
        chunk = s.recv(1 << 20)
        assert chunk, "the stream ended without a reset"
        got += chunk
    s.close()
    tail = got[got.index(b"event: reset") :]
    assert b"too far behind; reload" in tail


# -- the CLI twins ----------------------------------------------------------------------


def _cli(settings, *args):
    env = {**os.environ, **web_corpus.env_of(settings)}
    out = incli.huddle(*args, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_cli_json_is_exactly_what_the_route_returns(corpus, client):
    settings, _ = corpus
    board = client.get("/api/sessions").json()
    assert _cli(settings, "status", "--json") == board
    row = next(r for r in board["sessions"] if len(r["agents"]) == 4)
    sid = row["id"]
    sub = row["agents"][2]["id"]
    base = f"/api/sessions/{sid}"
    assert _cli(settings, "show", sid, "--json") == client.get(base).json()
    assert (
        _cli(settings, "events", sid, "--after", "5", "--limit", "9", "--json")
        == client.get(base + "/events", params={"after": 5, "limit": 9}).json()
    )
    assert _cli(settings, "transcripts", sid, "--json") == client.get(base + "/transcripts").json()
    page = client.get(base + "/transcript", params={"agent": sub, "limit": 3, "before": 6}).json()
    assert _cli(settings, "transcript", sid, "--agent", sub, "--limit", "3", "--before", "6", "--json") == page
    ref = next(m["ref"] for m in page["messages"] if "ref" in m)
    assert _cli(settings, "content", sid, ref, "--json") == client.get(f"{base}/content/{ref}").json()


# -- security ---------------------------------------------------------------------------


def test_security_headers_on_every_answer(client):
    for path in ("/", "/api/sessions", "/api/sessions/nope", "/static/js/common.js"):
        h = client.get(path).headers
        assert (
            "default-src 'self'" in h["content-security-policy"]
            and "frame-ancestors 'none'" in h["content-security-policy"]
        )
        assert "unsafe-inline" not in h["content-security-policy"]
        assert h["x-frame-options"] == "DENY" and h["x-content-type-options"] == "nosniff"
        assert h["referrer-policy"] == "no-referrer"


def test_a_foreign_host_is_refused(server, client):
    assert client.get("/api/sessions", headers={"host": "evil.example:80"}).status_code == 403
    assert client.get("/api/sessions", headers={"host": f"evil.example:{server.port}"}).status_code == 403
    assert client.get("/api/sessions", headers={"host": "127.0.0.1"}).status_code == 403  # another port
    for ok in (f"127.0.0.1:{server.port}", f"localhost:{server.port}", f"[::1]:{server.port}"):
        assert client.get("/api/sessions", headers={"host": ok}).status_code == 200


def test_cross_origin_requests_are_refused(server, client):
    me = f"http://127.0.0.1:{server.port}"
    assert client.get("/api/sessions", headers={"origin": "http://evil.example"}).status_code == 403
    assert client.get("/api/sessions", headers={"origin": "null"}).status_code == 403
    assert client.get("/api/sessions", headers={"origin": f"http://localhost:{server.port}"}).status_code == 403
    assert client.get("/api/sessions", headers={"origin": me}).status_code == 200
    for site in ("cross-site", "same-site"):
        assert client.get("/api/stream", headers={"sec-fetch-site": site}).status_code == 403
    for site in ("same-origin", "none"):
        assert client.get("/api/sessions", headers={"sec-fetch-site": site}).status_code == 200


def test_bodies_are_capped_and_nothing_writes(client):
    r = client.post("/api/sessions", content=b"x" * (256 * 1024 + 1))
    assert r.status_code == 413
    r = client.post("/api/sessions", content=b"x" * 10)
    assert r.status_code == 405
    for method in ("PUT", "DELETE", "PATCH"):
        assert client.request(method, "/api/sessions").status_code == 405

    def chunks():
        for _ in range(300):
            yield b"y" * 1024

    assert client.post("/api/sessions", content=chunks()).status_code == 413


@pytest.mark.parametrize(
    "path",
    ["/api/sessions/a%20b", "/api/sessions/-x", "/api/sessions/%C3%A9", "/api/sessions/" + "x" * 300, "/session/a%20b"],
)
def test_bad_ids_are_400(client, path):
    r = client.get(path)
    assert r.status_code == 400 and "bad" in r.json()["error"]


def test_bad_params_and_refs_are_400(client):
    sid = client.get("/api/sessions").json()["sessions"][0]["id"]
    for q in ({"limit": "-1"}, {"limit": "abc"}, {"after": "1", "before": "2"}, {"agent": "../x"}):
        assert client.get(f"/api/sessions/{sid}/transcript", params=q).status_code == 400
    for ref in ("x", "0-0", "0-0-1-2-3", "%2e%2e-1-1"):
        assert client.get(f"/api/sessions/{sid}/content/{ref}").status_code == 400
    assert client.get(f"/api/sessions/{sid}/content/0-0-1").status_code == 404
    assert client.get("/api/stream", params={"session": "../x"}).status_code == 400
    assert client.get("/api/sessions", params={"at": "yesterday-ish"}).status_code == 400


def test_a_symlink_pointing_out_is_not_followed(tmp_path):
    settings, sid, main = web_corpus.one_session(tmp_path)
    sub = next((main.parent / sid / "subagents").glob("agent-*.jsonl"))
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_bytes(sub.read_bytes())
    os.symlink(outside, sub.parent / "agent-aevil0000000000000.jsonl")
    agent = sub.stem[len("agent-") :]
    # (no notice, no poll: the swap below is met by the content read itself, not by a
    # round that saw the link first and dropped the agent: that would answer 404)
    still = {"use_watchfiles": False, "poll_unwatched": 600.0, "full_every": 600.0}
    with ServerThread(web_corpus.core(settings), watch_options=still) as srv, httpx.Client(base_url=srv.url) as c:
        t = c.get(f"/api/sessions/{sid}/transcript", params={"agent": "aevil0000000000000"}).json()
        assert t["messages"] == []  # the linked file is not read as an agent at all
        t = c.get(f"/api/sessions/{sid}/transcript", params={"agent": agent}).json()
        ref = [m["ref"] for m in t["messages"] if "ref" in m][-1]
        sub.unlink()
        os.symlink(outside, sub)  # swapped for a link after it was read
        r = c.get(f"/api/sessions/{sid}/content/{ref}")
        assert r.status_code == 403 and "outside the agent folders" in r.json()["error"]


def test_off_loopback_a_token_is_required_on_every_request(tmp_path):
    settings, sid, _ = web_corpus.one_session(tmp_path)
    with ServerThread(web_corpus.core(settings), host="0.0.0.0", token="s3cret-token", watch_options=FAST) as srv:
        base = f"http://127.0.0.1:{srv.port}"
        with httpx.Client(base_url=base) as c:
            for path in ("/", "/api/sessions", f"/api/sessions/{sid}", "/api/stream", "/static/js/board.js"):
                assert c.get(path).status_code == 401, path
            assert c.get("/api/sessions", headers={"x-huddle-token": "wrong"}).status_code == 401
            assert c.get("/api/sessions", headers={"x-huddle-token": "s3cret-token"}).status_code == 200
            assert c.get("/api/sessions", headers={"authorization": "Bearer s3cret-token"}).status_code == 200
            assert c.get("/", params={"token": "nope"}).status_code == 401
            r = c.get("/", params={"token": "s3cret-token"})
            assert r.status_code == 303 and r.headers["location"] == "/" and "HttpOnly" in r.headers["set-cookie"]
            assert c.get("/api/sessions").status_code == 200  # the cookie now
        assert (
            httpx.get(
                f"{base}/api/sessions", headers={"origin": "http://evil.example", "x-huddle-token": "s3cret-token"}
            ).status_code
            == 403
        )


def test_serve_prints_the_real_url_and_a_token_off_loopback(tmp_path):
    settings, sid, _ = web_corpus.one_session(tmp_path)
    env = {**os.environ, **web_corpus.env_of(settings), "PYTHONUNBUFFERED": "1"}
    for host, wants_token in (("127.0.0.1", False), ("0.0.0.0", True)):
        p = subprocess.Popen(
            [sys.executable, "-m", "huddle", "serve", "--host", host, "--port", "0", "--no-open"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            line = p.stdout.readline()
            m = re.search(r"(http://[^\s/]+:(\d+)/)(\?token=(\S+))?", line)
            assert m and m.group(2) != "0", line
            assert bool(m.group(4)) == wants_token
            url = f"http://127.0.0.1:{m.group(2)}/api/sessions"
            deadline = time.time() + 120
            while True:  # up, and its first read done (a first start reads in a child process)
                try:
                    info = httpx.get(url.replace("sessions", "info"), headers={"x-huddle-token": m.group(4) or ""})
                    if not info.json().get("reading"):
                        r = httpx.get(url, headers={"x-huddle-token": m.group(4) or ""})
                        break
                except httpx.ConnectError:
                    pass
                assert time.time() < deadline
                time.sleep(0.1)
            assert r.status_code == 200 and r.json()["sessions"][0]["id"] == sid
            if wants_token:
                assert httpx.get(url).status_code == 401
        finally:
            p.terminate()
            p.communicate(timeout=10)  # (closes the pipes too)


def test_serving_reads_only(corpus, server, client):
    _, root = corpus
    before = fingerprint(root / "claude")
    for row in client.get("/api/sessions").json()["sessions"]:
        for m in client.get(f"/api/sessions/{row['id']}/transcript").json()["messages"]:
            if "ref" in m:
                client.get(f"/api/sessions/{row['id']}/content/{m['ref']}")
    assert fingerprint(root / "claude") == before


def test_plain_huddle_serves_the_demo_when_no_agent_folders_exist(tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "BROWSER": "true"}  # "open the browser" runs `true`
    for args in ([], ["demo", "--no-open", "--speed", "5"]):
        p = subprocess.Popen(
            [sys.executable, "-m", "huddle", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        try:
            line = p.stdout.readline()
            assert "the built-in demo" in line, line + p.stderr.read()
            url = re.search(r"(http://\S+/)", line).group(1)
            deadline = time.time() + 30
            rows = []
            while len(rows) < 2 and time.time() < deadline:
                try:
                    rows = httpx.get(url + "api/sessions").json()["sessions"]
                except httpx.HTTPError:
                    pass
                time.sleep(0.2)
            assert len(rows) == 2 and httpx.get(url + "api/info").json()["demo"] is True
        finally:
            p.terminate()
            p.communicate(timeout=10)  # (closes the pipes too)
        assert not list((tmp_path / "huddle-home" / "demo").glob("run-*")), "the demo cleans up after itself"


def test_ctrl_c_during_a_first_read_in_a_child_ends_everything_quietly(tmp_path):
    """A first start reads in a child process with forked workers of its own
    (live.firstread): Ctrl+C to the terminal's whole process group leaves no traceback
    and no process behind, whether the child was still reading or had just done."""
    settings, sid, main = web_corpus.one_session(tmp_path)
    data = main.read_bytes()
    for i in range(400):  # enough that the child is likely still reading when Ctrl+C comes
        (main.parent / f"{sid[:-8]}{i:08d}.jsonl").write_bytes(
            data.replace(sid.encode(), f"{sid[:-8]}{i:08d}".encode())
        )
    env = {**os.environ, **web_corpus.env_of(settings), "PYTHONUNBUFFERED": "1"}
    p = subprocess.Popen(
        [sys.executable, "-m", "huddle", "serve", "--port", "0", "--no-open", "--no-notify"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # its own group: the test's terminal, Ctrl+C to all of it
    )
    try:
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", p.stdout.readline())
        assert m
        wait_for(lambda: _info(f"http://127.0.0.1:{m.group(1)}/api/info"), "the server up")
        os.killpg(p.pid, signal.SIGINT)
        _out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0 and "Traceback" not in err, err

    def left() -> list[str]:  # (multiprocessing's resource tracker ends just after the server)
        return subprocess.run(["pgrep", "-g", str(p.pid)], capture_output=True, text=True).stdout.split()

    wait_for(lambda: not left(), "every process of its group gone")


def _info(url: str) -> dict | None:
    try:
        return httpx.get(url).json()
    except httpx.TransportError:
        return None
