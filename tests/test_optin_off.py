"""With voices and translation off (the default), huddle starts no process for them and
opens no connection: a real `huddle serve` and the CLI are used as a person would, with
traps set for every way out (a `claude`, an `espeak-ng`, audio players that leave a mark
if run; the model API, the translation API and the model mirror pointed at a canary that
counts connections), the server's descendants watched, its sockets listed."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

import web_corpus

TRAPPED = ("claude", "espeak-ng", "espeak", "aplay", "paplay", "pw-play", "npm", "node")


class Canary:
    """A listener on 127.0.0.1 that counts the connections made to it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.hits = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.hits += 1
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(2)
        self.sock.close()


def descendants(pid: int) -> dict[int, str]:
    """Every process below `pid`, with its command line."""
    out: dict[int, str] = {}
    todo = [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                kids = (task / "children").read_text().split()
            except OSError:
                continue
            for k in map(int, kids):
                try:
                    out[k] = Path(f"/proc/{k}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    out[k] = "?"
                todo.append(k)
    return out


def sockets(pid: int) -> list[tuple[str, str, str]]:
    """(protocol, local, remote) of each internet socket the process holds."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").glob("*"):
        try:
            m = re.match(r"socket:\[(\d+)\]", os.readlink(fd))
        except OSError:
            continue
        if m:
            inodes.add(m.group(1))
    out = []
    for proto in ("tcp", "tcp6", "udp", "udp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{proto}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if f[9] in inodes:
                out.append((proto, f[1], f[2]))
    return out


def port_of(hexaddr: str) -> int:
    return int(hexaddr.rsplit(":", 1)[1], 16)


def loopback(hexaddr: str) -> bool:
    host = hexaddr.rsplit(":", 1)[0]
    return host in ("0100007F", "00000000000000000000000001000000", "0000000000000000FFFF00000100007F")


def test_with_the_options_off_nothing_starts_and_nothing_connects(tmp_path):
    settings, sid, main = web_corpus.one_session(tmp_path)
    traps = tmp_path / "traps"
    traps.mkdir()
    marks = tmp_path / "marks"
    for name in TRAPPED:
        p = traps / name
        p.write_text(f"#!/bin/sh\necho {name} >> {marks}\nexit 1\n")
        p.chmod(0o755)
    canary = Canary()
    env = {
        **os.environ,
        "PATH": f"{traps}:{os.path.dirname(sys.executable)}:/usr/bin:/bin",
        "CLAUDE_CONFIG_DIR": settings.folders["claude"],
        "HUDDLE_HOME": settings.huddle_home,
        "ANTHROPIC_BASE_URL": canary.url,
        "HUDDLE_TRANSLATE_API_URL": canary.url,
        "HUDDLE_TRANSLATE_API_KEY": "sk-canary",
        "HUDDLE_KOKORO_MIRROR": canary.url,
        "HTTP_PROXY": canary.url,
        "HTTPS_PROXY": canary.url,
    }
    env.pop("HUDDLE_TRANSLATE", None)
    env.pop("HUDDLE_CLAUDE", None)
    server = subprocess.Popen(
        [sys.executable, "-m", "huddle.cli", "serve", "--no-open", "--no-notify", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    seen: dict[int, str] = {}
    held: list[tuple[str, str, str]] = []
    watching = threading.Event()

    def watch() -> None:
        while not watching.is_set():
            seen.update(descendants(server.pid))
            held.extend(sockets(server.pid))
            time.sleep(0.05)

    try:
        assert server.stdout is not None
        url = ""
        deadline = time.time() + 60
        while not url and time.time() < deadline:
            line = server.stdout.readline()
            m = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
            url = m.group(1) if m else ""
        assert url, "the server did not say where it serves"
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        with httpx.Client(base_url=url, timeout=30) as c:
            assert c.get("/").status_code == 200
            assert c.get(f"/session/{sid}").status_code == 200
            end = time.time() + 60
            while sid not in c.get("/api/sessions").text:  # (the first read runs in a child)
                assert time.time() < end, "the session never came up"
                time.sleep(0.1)
            assert c.get(f"/api/sessions/{sid}/events").status_code == 200
            assert c.get(f"/api/sessions/{sid}/transcript").status_code == 200
            assert c.get("/api/voice").json()["on"] is False
            assert c.get("/api/translation").json()["on"] is False
            assert c.get(f"/api/voice/claim?session={sid}&window=w").status_code == 404
            assert c.get(f"/api/sessions/{sid}/translation?seq=1").status_code == 404
            with c.stream("GET", f"/api/stream?session={sid}") as r:
                web_corpus.append_say(main, "A new line nobody asked to hear or translate.")
                end = time.time() + 3
                for chunk in r.iter_text():
                    if "nobody asked" in chunk or time.time() > end:
                        break
            assert c.get("/api/usage").status_code == 200
        for argv in (["status", "--json"], ["usage", "--json"], ["usage"], ["voices"], ["translate"]):
            done = subprocess.run(
                [sys.executable, "-m", "huddle.cli", *argv], env=env, capture_output=True, timeout=120
            )
            assert done.returncode == 0, (argv, done.stderr)
        time.sleep(0.5)
    finally:
        watching.set()
        server.terminate()
        server.wait(10)
        if server.stdout is not None:
            server.stdout.close()
        canary.close()
    ours = {pid: cmd for pid, cmd in seen.items() if re.search(r"voice\.worker|claude|espeak|play\b|npm|node", cmd)}
    assert ours == {}
    assert not marks.exists(), marks.read_text()
    assert canary.hits == 0
    # every internet socket the server held is its own listener or a connection to it
    ports = {port_of(loc) for proto, loc, rem in held if proto.startswith("tcp") and port_of(rem) == 0}
    assert len(ports) == 1, held
    for proto, loc, rem in held:
        assert proto.startswith("tcp"), (proto, loc, rem)  # no UDP: not even a DNS lookup
        assert loopback(loc) and (port_of(rem) == 0 or loopback(rem)), (loc, rem)
        assert port_of(loc) in ports, (loc, rem)
