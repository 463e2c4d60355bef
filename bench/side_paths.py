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
  tables           what a person types over the whole history, nothing changed: `status --all`
                   and `usage --by session` as tables (80 and 120 columns), `doctor`
  board            the board page over the whole history (Chromium): its first row drawn, and
                   the CPU of the open tab over 10 s of nothing changing

Standard library and the bench's own helpers only; peers looked for as bench_side does.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
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


@contextlib.contextmanager
def served(bench) -> Iterator[str]:
    """`huddle serve` on the bench's home, its first read done: its URL."""
    import re
    import signal
    import urllib.request

    p = subprocess.Popen(
        [sys.executable, "-m", "huddle", "serve", "--port", "0", "--no-open", "--no-notify"],
        env=bench.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        url = re.search(r"(http://\S+/)", p.stdout.readline() or "").group(1)
        while True:
            try:
                with urllib.request.urlopen(url + "api/info", timeout=60) as r:
                    if not json.loads(r.read()).get("reading"):
                        break
            except OSError:
                time.sleep(0.2)
        yield url
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(30)


def page_solo(bench, appends: int) -> None:
    from bench_server import bench_paint

    with served(bench) as url:
        # a session of some size with a conversation on its page, as one a person follows
        r = bench_paint(url, bench.claude, appends, NewSessions(bench.claude).model)
        print(f"  appended line -> painted: median {r['median_ms']:.0f} ms, p90 {r['p90_ms']:.0f} ms")
        bench.said("appended line -> on the open page", f"median {r['median_ms']:.0f} ms, p90 {r['p90_ms']:.0f} ms")


def tables_solo(bench, huddle: list[str], runs: int) -> None:
    """The views a person reads over every session (rows as many as the history's
    sessions), nothing changed since the last run: wall and CPU of each, alone."""
    from bench_side import timed

    for name, args, columns in (
        ("status --all (table, 120 columns)", ["status", "--all"], 120),
        ("usage --by session (table, 80)", ["usage", "--by", "session"], 80),
        ("usage --by session (table, 120)", ["usage", "--by", "session"], 120),
        ("doctor", ["doctor"], 120),
    ):
        env = {**bench.env(), "COLUMNS": str(columns)}
        timed([*huddle, *args], env)  # (what it keeps, as after any earlier run)
        bench.solo(name, [timed([*huddle, *args], env) for _ in range(runs)])


def board_solo(bench) -> None:
    """The board page over every session: from its load until its first row is drawn,
    and the open tab's CPU over 10 s of nothing changing (Chromium's own counters)."""
    from playwright.sync_api import sync_playwright

    from bench_server import ARGS, CHROMIUM

    with served(bench) as url, sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        firsts = []
        for _ in range(3):
            page = b.new_page(viewport={"width": 1400, "height": 900})
            t0 = time.perf_counter()
            page.goto(url)
            page.wait_for_selector("#rows tr[data-key]", timeout=120_000)
            firsts.append(time.perf_counter() - t0)
            rows = page.locator("#rows tr[data-key]").count()
            cdp = page.context.new_cdp_session(page)
            cdp.send("Performance.enable")
            page.wait_for_timeout(2000)
            c0 = _task_seconds(cdp)
            page.wait_for_timeout(10_000)
            idle = _task_seconds(cdp) - c0
            page.close()
        b.close()
    first = sorted(firsts)[1]
    bench.said("board page: first row", f"median {first:.2f} s of 3 loads ({rows} rows drawn)")
    bench.said("board page: idle tab", f"{idle:.2f} s of CPU over 10 s")


def _task_seconds(cdp) -> float:
    """Chromium's count of the seconds a page's main thread has been busy."""
    got = cdp.send("Performance.getMetrics")["metrics"]
    return next(m["value"] for m in got if m["name"] == "TaskDuration")


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
