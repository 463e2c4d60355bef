"""Attention figures: how fast a change reaches the person.

    python bench/bench_attention.py [roundtrip] [flip] [idle] [--sessions 1000] [--rounds 5]

roundtrip  GET /api/sessions round trip on loopback with the listening socket made the
           old way (protocol 0: Nagle stays on for accepted connections) and with
           `bind()` (IPPROTO_TCP + TCP_NODELAY), interleaved, median and p90 of each.
flip       a real process's Claude registry file (sessions/<pid>.json) flips busy ->
           waiting -> busy: time from the write to the board row painted in Chromium,
           median and p90 (the board beside 1,000 other sessions).
idle       CPU of `huddle serve` on 1,000 sessions, one live, a page connected and
           nothing changing (target < 1%).

The machine is shared: rounds are interleaved and repeated, figures are noisy.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


# -- round trip before / after the socket fix -------------------------------------------


def _old_bind(host: str = "127.0.0.1") -> socket.socket:
    """The listening socket as `bind()` made it before the fix (protocol 0)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    sock.listen(128)
    return sock


class _Served:
    def __init__(self, h, sock: socket.socket):
        from huddle.server.app import create_app, make_server

        self.sock = sock
        port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/"
        self.server = make_server(create_app(h, port=port))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)

    def __enter__(self):
        self.thread.start()
        while not self.server.started:
            self.thread.join(0.01)
        return self

    def __exit__(self, *exc):
        self.server.config.app.state.huddle.close_streams()
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


def _trips(url: str, n: int) -> list[float]:
    out = []
    with httpx.Client(base_url=url, timeout=60) as c:
        for _ in range(5):
            c.get("/api/sessions")
        for _ in range(n):
            t0 = time.perf_counter()
            c.get("/api/sessions").raise_for_status()
            out.append((time.perf_counter() - t0) * 1000)
    return out


def bench_roundtrip(settings, rounds: int, per_round: int = 40) -> dict:
    from huddle.core import Huddle
    from huddle.server import bind

    h = Huddle(settings)
    before: list[float] = []
    after: list[float] = []
    for _ in range(rounds):  # interleaved: the machine's noise falls on both alike
        with _Served(h, _old_bind()) as s:
            before += _trips(s.url, per_round)
        with _Served(h, bind("127.0.0.1", 0)) as s:
            after += _trips(s.url, per_round)
    n = len(h.sessions())
    return {"sessions": n, "before": before, "after": after}


def print_roundtrip(r: dict) -> None:
    b, a = r["before"], r["after"]
    print(
        f"board round trip, {r['sessions']} sessions, {len(b)} requests each, interleaved:\n"
        f"  protocol-0 socket (Nagle on): median {statistics.median(b):.1f} ms, p90 {_pct(b, 0.9):.1f} ms\n"
        f"  bind() (TCP_NODELAY):         median {statistics.median(a):.1f} ms, p90 {_pct(a, 0.9):.1f} ms\n"
        f"  ratio {statistics.median(b) / statistics.median(a):.1f}x"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", nargs="*", default=["roundtrip", "flip", "idle"])
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--flips", type=int, default=20)
    ap.add_argument("--idle", type=int, default=60)
    args = ap.parse_args()
    from huddle.sources import Settings

    with tempfile.TemporaryDirectory(prefix="huddle-bench-") as tmp:
        root = Path(tmp)
        corpus = _corpus(root / "big", args.sessions)
        settings = Settings(folders={"claude": str(corpus), "codex": str(root / "none"), "vibe": str(root / "none")})
        if "roundtrip" in args.what:
            # A small board (the stall shows whole: one short body behind its headers) and
            # the big one (a 1 MB body sent in full segments, where Nagle matters less).
            small = _corpus(root / "small", 20)
            few = Settings(folders={"claude": str(small), "codex": str(root / "none"), "vibe": str(root / "none")})
            print_roundtrip(bench_roundtrip(few, args.rounds))
            print_roundtrip(bench_roundtrip(settings, args.rounds))


def _corpus(root: Path, n: int) -> Path:
    from claude_corpus import write_claude_corpus

    claude = root / "claude"
    t = time.time()
    write_claude_corpus(str(claude), n, 20 << 20, seed=0, big_bytes=2 << 20)
    print(f"corpus: {n} Claude sessions written in {time.time() - t:.1f}s")
    return claude


if __name__ == "__main__":
    main()
