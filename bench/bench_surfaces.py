"""Seconds from a live signal's change to every surface that shows it.

    python bench/bench_surfaces.py [--sessions 1000] [--trials 5] [--server-src PATH]

One `huddle serve` (as a person runs it, notifications on) over 1,000 Claude sessions
plus three live ones: a Claude session whose registry file (sessions/<pid>.json) a real
process flips busy -> waiting -> busy, a Codex thread (codex-live 03, an approval
pending) whose writer lock another process takes and releases, and a Vibe session
(3.0.3 approval waiting) likewise with its session lock. For each change, the time
until it shows on:

  api        GET /api/sessions?state=... (polled every 20 ms)
  stream     the SSE stream (/api/stream)
  painted    the board row drawn in Chromium (/usr/bin/chromium)
  notify     the desktop notification (Notify / CloseNotification) reaching a recording
             notification server on a real D-Bus session bus (dbus-run-session)
  watch      a line from `huddle watch` (the light follower)
  statusline `huddle statusline --json` answering with it (asked 4 times a second, as
             Claude Code asks at most every 300 ms: up to 0.25 s of the figure is the asking)

--server-src runs the server (and the watcher) from another checkout's src/ (e.g. a
worktree of the revision before the fix) to measure "before"; surfaces that revision
lacks are left out. The machine is shared: trials of the three agents are interleaved,
figures are noisy; medians and p90 are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "tests"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(TESTS))

from bench_attention import ARGS, CHROMIUM, LiveClaude, _corpus, _pct  # noqa: E402
from bench_server import start_server  # noqa: E402
from live_agents import LockHolder, Stream  # noqa: E402  (the live tests' real stand-ins)
from test_notify import Bus  # noqa: E402  (dbus-run-session and the recording notification server)

SAMPLES = TESTS / "fixtures" / "samples"
LIMIT = 120.0  # seconds a surface may take before the trial gives up on it (before the fix: ~45 s)

ARM = """([k, s, t]) => {
  window.__seen = window.__seen || {};
  const look = () => {
    const tr = document.querySelector(`tr[data-key="${k}"]`);
    if (tr && tr.classList.contains('r-' + s) && !(t in window.__seen)) {
      window.__seen[t] = performance.timeOrigin + performance.now();
      return true;
    }
    return false;
  };
  if (look()) return;
  const obs = new MutationObserver(() => { if (look()) obs.disconnect(); });
  obs.observe(document.getElementById('rows'), {childList: true, subtree: true, attributes: true});
}"""


def first_call(bus: Bus, call: str, after: float) -> float | None:
    return next((c["t"] for c in bus.calls(call) if c["t"] >= after), None)


class Lines:
    """A child's stdout lines, each with the time it arrived."""

    def __init__(self, proc: subprocess.Popen):
        self.lines: list[tuple[float, str]] = []
        self.proc = proc
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append((time.time(), line))

    def first(self, after: float, *words: str) -> float | None:
        for t, line in list(self.lines):
            if t >= after and all(w in line for w in words):
                return t
        return None


class StatusLine:
    """`huddle statusline --json` asked every `every` seconds: (asked, answered, summary)."""

    def __init__(self, env: dict, every: float = 0.25):
        self.env, self.every = env, every
        self.answers: list[tuple[float, float, dict]] = []
        self.stop = threading.Event()
        threading.Thread(target=self._ask, daemon=True).start()

    def _ask(self) -> None:
        while not self.stop.is_set():
            t0 = time.time()
            p = subprocess.run(
                [sys.executable, "-m", "huddle", "statusline", "--json"],
                input="{}",
                capture_output=True,
                text=True,
                env=self.env,
            )
            try:
                self.answers.append((t0, time.time(), json.loads(p.stdout)))
            except ValueError:
                pass
            self.stop.wait(max(0.0, self.every - (time.time() - t0)))

    def first(self, after: float, sid: str, needs_you: bool) -> float | None:
        for asked, answered, s in list(self.answers):
            if asked >= after and (sid in {r.get("id") for r in s.get("needs_you") or ()}) == needs_you:
                return answered
        return None

    def ready(self) -> bool:
        return any(not s.get("stale") for _a, _b, s in self.answers[-3:])


def api_state(url: str, key: str, state: str) -> str | None:
    # asked with the route's own filter (a small answer: polling the whole board of a
    # thousand rows every 20 ms would load the server it measures); a revision without
    # the filter answers everything, and the row's state still decides
    for r in httpx.get(url + "api/sessions", params={"state": state}, timeout=30).json()["sessions"]:
        if f"{r['source']}:{r['id']}" == key:
            return r["state"]
    return None


def stream_at(stream: Stream, key: str, state: str, after: float) -> float | None:
    for t, kind, data in list(stream.msgs):
        if t >= after and kind == "board":
            for r in data.get("sessions", ()):
                if f"{r['source']}:{r['id']}" == key and r["state"] == state:
                    return t
    return None


class Trials:
    def __init__(self, url, page, stream, bus, watch, status):
        self.url, self.page, self.stream, self.bus, self.watch, self.status = url, page, stream, bus, watch, status
        self.figures: dict[tuple[str, str], dict[str, list[float]]] = {}
        self.n = 0

    def measure(self, what: str, key: str, sid: str, state: str, change) -> None:
        """Arm the page, make the change (`change()` returns when it happened), then wait
        for each surface on its own, up to LIMIT."""
        self.n += 1
        tag = f"t{self.n}"
        self.page.evaluate(ARM, [key, state, tag])
        t0 = change()
        got: dict[str, float] = {}
        end = t0 + LIMIT
        while time.time() < end:
            if "api" not in got and api_state(self.url, key, state) == state:
                got["api"] = time.time()
            if "stream" not in got and self.stream is not None and (t := stream_at(self.stream, key, state, t0)):
                got["stream"] = t
            if "painted" not in got:
                at = self.page.evaluate("(t) => (window.__seen || {})[t] || null", tag)
                if at:
                    got["painted"] = at / 1000
            if self.bus is not None and "notify" not in got:
                call = "Notify" if state == "needs_you" else "CloseNotification"
                if state in ("needs_you", "working", "ended") and (t := first_call(self.bus, call, t0)):
                    got["notify"] = t
            if self.watch is not None and "watch" not in got:
                word = {"needs_you": "needs you", "your_turn": "your turn"}.get(state, state)
                if t := self.watch.first(t0, word, sid[:8]):
                    got["watch"] = t
            shown = self.status is not None and state in ("needs_you", "working", "ended")
            if shown and "statusline" not in got and (t := self.status.first(t0, sid, state == "needs_you")):
                got["statusline"] = t
            if {"api", "painted"} <= got.keys() and len(got) >= self.expected(state):
                break
            time.sleep(0.02)
        row = self.figures.setdefault((what, state), {})
        for k, t in got.items():
            row.setdefault(k, []).append(t - t0)
        time.sleep(1.5)  # let every surface settle before the next change (not part of any figure)

    def expected(self, state: str) -> int:
        n = 2 + (self.stream is not None) + (self.watch is not None)
        if state in ("needs_you", "working", "ended"):
            n += (self.bus is not None) + (self.status is not None)
        return n

    def report(self) -> None:
        surfaces = ["api", "stream", "painted", "notify", "watch", "statusline"]
        print(f"{'change':<34}" + "".join(f"{s:>17}" for s in surfaces))
        print(f"{'':<34}" + "".join(f"{'median / p90 s':>17}" for _ in surfaces))
        for (what, state), row in self.figures.items():
            cells = []
            for s in surfaces:
                xs = row.get(s)
                cells.append(f"{statistics.median(xs):7.2f} /{_pct(xs, 0.9):6.2f}" if xs else "-")
            print(f"{what + ' -> ' + state:<34}" + "".join(f"{c:>17}" for c in cells))


def codex_home(root: Path) -> tuple[Path, str]:
    snap = SAMPLES / "codex-live" / "03-needs-you-approval-tui"
    home = root / "codex"
    shutil.copytree(snap / "codex_home" / "sessions", home / "sessions")
    (home / "thread-writer-locks").mkdir()
    return home, json.loads((snap / "truth.json").read_text())[0]["thread_id"]


def vibe_home(root: Path) -> tuple[Path, str]:
    home = root / "vibe"
    shutil.copytree(SAMPLES / "vibe" / "3.0.3-unified-approval-waiting" / "logs", home / "logs")
    active = home / "logs" / "session" / "active"
    (sid,) = {p.name.split(".")[0] for p in active.glob("*.lock.json")}
    for p in active.glob(f"{sid}.lock*"):
        p.unlink()  # the recorded process is long gone: a live one is played here
    return home, sid


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--server-src", default=None, help="serve from this checkout's src/ (the 'before' figure)")
    ap.add_argument("--only", default="claude,codex,vibe")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    from huddle.sources import Settings

    only = set(args.only.split(","))
    with tempfile.TemporaryDirectory(prefix="huddle-bench-") as tmp:
        root = Path(tmp)
        claude = _corpus(root / "big", args.sessions)
        live = LiveClaude(claude)
        codex, thread = codex_home(root)
        vibe, vsid = vibe_home(root)
        settings = Settings(folders={"claude": str(claude), "codex": str(codex), "vibe": str(vibe)})
        env = {**os.environ, **settings.env(), "HUDDLE_HOME": str(root / "home"), "HUDDLE_NOTIFY": "dbus"}
        if args.server_src:
            env["PYTHONPATH"] = str(Path(args.server_src).resolve())
        bus = None
        if shutil.which("dbus-run-session"):
            bus = Bus(root)
            env["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        made: list = []
        try:
            server, url = start_server(env)
            made.append(server)
            has_watch = (
                "watch"
                in subprocess.run(
                    [sys.executable, "-m", "huddle", "--help"], capture_output=True, text=True, env=env
                ).stdout
            )
            watch = None
            if has_watch:
                wp = subprocess.Popen(
                    [sys.executable, "-m", "huddle", "watch"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    text=True, env={**env, "PYTHONUNBUFFERED": "1"},
                )  # fmt: skip
                made.append(wp)
                assert wp.stderr is not None
                while "watching" not in (line := wp.stderr.readline()):
                    if not line:
                        raise SystemExit("huddle watch did not start")
                watch = Lines(wp)
            status = StatusLine(env)
            end = time.time() + 300
            while not status.ready() and time.time() < end:  # its first refresh reads every session
                time.sleep(0.2)
            stream = Stream(url)
            with sync_playwright() as pw:
                b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
                page = b.new_page()
                page.goto(url)
                page.wait_for_selector(f'tr[data-key="claude:{live.sid}"].r-working', timeout=300_000)
                t = Trials(url, page, stream, bus if has_watch else None, watch, status)

                def flip(status_word: str, why: str | None = None):
                    def change() -> float:
                        at = time.time()
                        live.set(status_word, why)
                        return at

                    return change

                for _ in range(args.trials):
                    if "claude" in only:
                        t.measure("claude registry", f"claude:{live.sid}", live.sid, "needs_you",
                                  flip("waiting", "permission prompt"))  # fmt: skip
                        t.measure("claude registry", f"claude:{live.sid}", live.sid, "working", flip("busy"))
                    for what, key, sid, lock, meta in (
                        ("codex thread lock", f"codex:{thread}", thread,
                         codex / "thread-writer-locks" / f"{thread}.lock", None),
                        ("vibe session lock", f"vibe:{vsid}", vsid, vibe / "logs" / "session" / "active" /
                         f"{vsid}.lock", vibe / "logs" / "session" / "active" / f"{vsid}.lock.json"),
                    ):  # fmt: skip
                        if what.split()[0] not in only:
                            continue
                        held: list[LockHolder] = []

                        def take(lock=lock, meta=meta, sid=sid, held=held) -> float:
                            held.append(LockHolder(lock, meta, sid if meta else ""))
                            return held[-1].taken_at

                        def release(held=held) -> float:
                            at = time.time()
                            held[-1].release()
                            return at

                        t.measure(what, key, sid, "needs_you", take)
                        t.measure(what, key, sid, "ended", release)
                b.close()
            status.stop.set()
            stream.close()
            print(
                f"{args.sessions} sessions beside the live ones, {args.trials} trials each, server from "
                f"{args.server_src or 'this checkout'}:"
            )
            t.report()
        finally:
            for p in reversed(made):
                p.terminate()
                p.wait(timeout=30)
            live.stop()
            if bus is not None:
                bus.stop()


if __name__ == "__main__":
    main()
