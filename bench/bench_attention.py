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
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_server import bench_idle, start_server  # noqa: E402  (one server runner, one CPU reading)


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
        from huddle.server import create_app, make_server

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


# -- a registry flip to painted ---------------------------------------------------------

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]  # fmt: skip


def _proc_start(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as f:
        stat = f.read().decode()
    return stat[stat.rfind(")") + 2 :].split()[19]


class LiveClaude:
    """One live session in the corpus: a real process and its registry file, flipped
    in place as Claude Code rewrites it."""

    def __init__(self, claude: Path):
        import shutil

        snap = HERE.parent / "tests" / "fixtures" / "samples" / "claude-live" / "03-working-bash-running"
        shutil.copytree(snap / "config" / "projects", claude / "projects", dirs_exist_ok=True)
        self.sid = json.loads((snap / "truth.json").read_text())["session_id"]
        self.proc = subprocess.Popen(["sleep", "3600"])
        self.path = claude / "sessions" / f"{self.proc.pid}.json"
        self.path.parent.mkdir(exist_ok=True)
        self.base = {"pid": self.proc.pid, "sessionId": self.sid, "procStart": _proc_start(self.proc.pid),
                     "kind": "interactive", "version": "2.1.332"}  # fmt: skip
        self.set("busy")

    def set(self, status: str, waiting_for: str | None = None) -> None:
        now = int(time.time() * 1000)
        rec = {**self.base, "status": status, "updatedAt": now, "statusUpdatedAt": now}
        if waiting_for:
            rec["waitingFor"] = waiting_for
        with open(self.path, "w") as f:
            f.write(json.dumps(rec))

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def bench_flip(url: str, live: LiveClaude, flips: int, timeout_s: float = 120) -> dict:
    from playwright.sync_api import sync_playwright

    key = f"claude:{live.sid}"
    lags: list[float] = []
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        page = b.new_page()
        page.goto(url)
        page.wait_for_selector(f'tr[data-key="{key}"].r-working', timeout=120_000)
        for i in range(flips):
            want, status = ("needs_you", "waiting") if i % 2 == 0 else ("working", "busy")
            page.evaluate(
                """([key, want]) => {
                window.__painted = null;
                const obs = new MutationObserver(() => {
                  const tr = document.querySelector(`tr[data-key="${key}"]`);
                  if (tr && tr.classList.contains('r-' + want)) {
                    requestAnimationFrame(() => { window.__painted = performance.timeOrigin + performance.now(); });
                    obs.disconnect();
                  }
                });
                obs.observe(document.getElementById('rows'), {childList: true, subtree: true, attributes: true});
            }""",
                [key, want],
            )
            t0 = time.time() * 1000
            live.set(status, "permission prompt" if status == "waiting" else None)
            page.wait_for_function("() => window.__painted !== null", timeout=timeout_s * 1000)
            lags.append(page.evaluate("() => window.__painted") - t0)
            time.sleep(0.3)  # let the page settle between flips (not part of any figure)
        b.close()
    return {"flips": flips, "lags": lags}


def print_flip(r: dict, what: str) -> None:
    xs = r["lags"]
    print(
        f"registry flip -> painted on the board ({what}), {r['flips']} flips: median {statistics.median(xs):.0f} ms, "
        f"p90 {_pct(xs, 0.9):.0f} ms, max {max(xs):.0f} ms"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", nargs="*", default=["roundtrip", "flip", "idle"])
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--flips", type=int, default=20)
    ap.add_argument("--idle", type=int, default=60)
    ap.add_argument("--server-python", default=sys.executable, help="the interpreter (and so the checkout) that serves")
    args = ap.parse_args()
    from huddle.sources import Settings

    with tempfile.TemporaryDirectory(prefix="huddle-bench-") as tmp:
        root = Path(tmp)
        corpus = _corpus(root / "big", args.sessions)
        settings = Settings(folders={"claude": str(corpus), "codex": str(root / "none"), "vibe": str(root / "none")})
        if "flip" in args.what or "idle" in args.what:
            live = LiveClaude(corpus)
            env = {**os.environ, **settings.env(), "HUDDLE_HOME": str(root / "home")}
            p, url = start_server(env, args.server_python)
            try:
                if "idle" in args.what:
                    idle = bench_idle(p.pid, url, args.idle)
                    print(
                        f"idle CPU of huddle serve, {args.sessions} sessions + 1 live, a page connected, "
                        f"{idle['seconds']} s (settled after {idle['settled_after']:.0f} s): "
                        f"{idle['cpu_percent']:.2f}%   [target < 1%]"
                    )
                if "flip" in args.what:
                    print_flip(bench_flip(url, live, args.flips), f"{args.sessions} sessions beside it")
            finally:
                p.terminate()
                p.wait(timeout=30)
                live.stop()
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
