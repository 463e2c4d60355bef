"""The measures bench_side.py adds for issue 29, on any corpus (real-shaped or synthetic):

  new session      `huddle status --json` / `usage --json` after a new session file (every
                   `claude` start writes one), paired with AgentsView's list / usage
  export           `huddle export ID --format html` of a ~1 MB session | `claude-code-log
                   FILE -o out.html` (its HTML of one transcript)
  idle             `huddle serve` with a page connected: RSS after 60 s and CPU over 60 s of
                   nothing changing, right after its start (cache there) and after a cold start
  page             an appended line until it is painted on the open conversation page
                   (Chromium, bench_server.bench_paint)
  parse            full parse, MB per CPU second, Claude and Codex (bench_parse/bench_codex children)

Standard library and the bench's own helpers only; peers looked for as bench_side does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

CCL = next(
    (
        p
        for p in (os.environ.get("CLAUDE_CODE_LOG"), "/tmp/perf-peers/ccl/bin/claude-code-log")
        if p and os.path.exists(p)
    ),
    None,
)


class NewSessions:
    """A fresh Claude session file before each run: a clone (fresh ids) of a small real
    file of a recent Claude Code (2.1: no `summary` records, as every `claude` start
    writes today), put in the folder its original sits in. All are taken away at the end."""

    def __init__(self, claude: Path) -> None:
        files = sorted(
            (
                p
                for p in claude.glob("projects/*/*.jsonl")
                if 20_000 < p.stat().st_size < 200_000 and b'"version":"2.1.' in p.read_bytes()[:20_000]
            ),
            key=lambda p: p.stat().st_size,
        )
        self.model = files[len(files) // 2] if files else next(claude.glob("projects/*/*.jsonl"))
        self.made: list[Path] = []

    def __call__(self) -> None:
        from real_corpus import _pieces, fresh

        k = 10_000 + len(self.made)
        cache: dict[bytes, bytes] = {}
        parts = _pieces(self.model.read_bytes())
        body = b"".join(p if i % 2 == 0 else cache.setdefault(p, fresh(p, k)) for i, p in enumerate(parts))
        name = b"".join(
            p if i % 2 == 0 else cache.setdefault(p, fresh(p, k))
            for i, p in enumerate(_pieces(self.model.name.encode()))
        )
        dest = self.model.parent / name.decode()
        dest.write_bytes(body)
        self.made.append(dest)

    def restore(self) -> None:
        for p in self.made:
            p.unlink(missing_ok=True)
        self.made = []


def export_session(claude: Path, target: int = 1_200_000) -> Path:
    """The session file closest to `target` bytes (the issue's ~1.2 MB session)."""
    files = [p for p in claude.glob("projects/*/*.jsonl") if p.stat().st_size > 0]
    return min(files, key=lambda p: abs(p.stat().st_size - target))


def export_pair(bench, huddle: list[str], runs: int) -> None:
    from bench_side import Run, timed

    if CCL is None:
        print("  export: claude-code-log not found (pip install claude-code-log into /tmp/perf-peers/ccl)")
        return
    session = export_session(bench.claude)
    out = bench.work / "export"
    out.mkdir(exist_ok=True)
    print(f"  export: {session.name} ({session.stat().st_size / 1e6:.2f} MB)")
    timed([*huddle, "status", "--json"], bench.env())  # huddle's cache, as a user's is there

    def ours() -> Run:
        return timed([*huddle, "export", session.stem, "--format", "html", "-o", str(out / "h.html")], bench.env())

    def theirs() -> Run:
        # its cache off: each run converts the file (as huddle's export reads it)
        return timed([CCL, str(session), "-o", str(out / "c.html"), "--no-cache"], bench.env())

    bench.pair("export (~1 MB session)", "ccl", ours, theirs, runs)
    shutil.rmtree(out, ignore_errors=True)


def idle_solo(bench, huddle_home: str, seconds: int, label: str) -> None:
    """A server's RSS and CPU over `seconds` of nothing changing, a page (an event stream)
    connected, once its start's work is done (its first read, and its search index built
    or brought level: /api/info says both), and how long that work took."""
    import urllib.request

    from bench_side import free_port, proc_cpu_rss

    port = free_port()
    env = bench.env(huddle_home=huddle_home)
    p = subprocess.Popen(
        [sys.executable, "-m", "huddle", "serve", "--port", str(port), "--no-open", "--no-notify"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}/api/"
    try:
        started = time.perf_counter()
        deadline = time.time() + 900
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(base + "info", timeout=60) as r:
                    info = json.loads(r.read())
                if not info.get("reading") and not info.get("indexing"):
                    break
            except OSError:
                pass
            time.sleep(0.2)
        settled = time.perf_counter() - started
        time.sleep(2)  # (a child that built the index is reaped: its CPU is the server's then)
        stream = urllib.request.urlopen(base + "stream", timeout=seconds + 60)  # a page connected
        c0, _ = proc_cpu_rss(p.pid)
        t0 = time.perf_counter()
        time.sleep(seconds)
        c1, rss = proc_cpu_rss(p.pid)
        wall = time.perf_counter() - t0
        stream.close()
        bench.said(
            f"serve idle {label}",
            f"{100 * (c1 - c0) / wall:.1f}% CPU over {wall:.0f} s, RSS {rss:.0f} MB (its start's work done in {settled:.0f} s)",
        )
    finally:
        import signal

        os.killpg(p.pid, signal.SIGTERM)
        p.wait(30)


def page_solo(bench, appends: int) -> None:
    import re

    from bench_server import bench_paint

    env = bench.env()
    p = subprocess.Popen(
        [sys.executable, "-m", "huddle", "serve", "--port", "0", "--no-open", "--no-notify"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        url = re.search(r"(http://\S+/)", p.stdout.readline() or "").group(1)
        import urllib.request

        while True:
            try:
                with urllib.request.urlopen(url + "api/info", timeout=60) as r:
                    if not json.loads(r.read()).get("reading"):
                        break
            except OSError:
                time.sleep(0.2)
        # a session of some size with a conversation on its page, as one a person follows
        r = bench_paint(url, bench.claude, appends, NewSessions(bench.claude).model)
        print(f"  appended line -> painted: median {r['median_ms']:.0f} ms, p90 {r['p90_ms']:.0f} ms")
        bench.said("appended line -> on the open page", f"median {r['median_ms']:.0f} ms, p90 {r['p90_ms']:.0f} ms")
    finally:
        import signal

        os.killpg(p.pid, signal.SIGTERM)
        p.wait(30)


def parse_solo(bench) -> None:
    """Full parse, MB per CPU second, each agent alone, best of three fresh processes."""
    from common import run_child

    for agent, script, root, pattern in (
        ("Claude", "bench_parse.py", bench.claude, "projects/**/*.jsonl"),
        ("Codex", "bench_codex.py", bench.codex, "sessions/*/*/*/rollout-*.jsonl"),
    ):
        if not root.exists():
            continue
        size = sum(p.stat().st_size for p in root.glob(pattern))
        best = min((run_child(str(HERE / script), "huddle", root) for _ in range(3)), key=lambda r: r["cpu"])
        bench.said(
            f"full parse {agent}",
            f"{size / 1e6 / best['cpu']:.0f} MB per CPU s ({size / 1e6:.0f} MB, peak RSS {best['rss_mb']:.0f} MB)",
        )
