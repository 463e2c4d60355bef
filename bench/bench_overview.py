"""The overview on a big home: time to first paint of /overview, cold and warm, and the
command's time.

    python bench/bench_overview.py [--home DIR] [--copies 23] [--synthetic-gb 1.0] [--rounds 5]

`--home DIR`: a home already built (folders `claude/`, `codex/` under it, as
bench/real_corpus.py writes them); else the real-shaped corpus is built
(bench/real_corpus.py, `--copies` clones) or, with `--synthetic-gb`, the synthetic
Claude one (bench/claude_corpus.py). Each scenario runs `huddle serve` as a user does
(its own process, a fresh $HUDDLE_HOME unless said) and opens /overview in Debian's
Chromium; first paint is the page's own `overview-painted` mark (the data drawn), from
the navigation's start:

- first run (`--first-run`): a fresh home, /overview opened as soon as the server
  answers (its board read and search index build run meanwhile);
- cold: no overview cache (the server's board read and search index build are left to
  finish first), so the overview's first build: the usage index and the summaries, in a
  child process;
- cold, usage index warm: `huddle usage` ran before (only the summaries are built);
- warm: the same page opened again;
- warm after a restart: a new server on the same home, its first ask;
- the API alone, warm (median of `--rounds`), and `huddle overview --json`, cold and warm.

The machine is shared: figures are wall times, single runs for the cold ones.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))


def env_for(home: Path, hh: Path) -> dict[str, str]:
    none = str(hh / "none")
    env = {**os.environ, "HOME": str(hh / "home"), "HUDDLE_HOME": str(hh), "HUDDLE_SOURCES": "claude,codex"}
    env.update(
        CLAUDE_CONFIG_DIR=str(home / "claude"), CODEX_HOME=str(home / "codex") if (home / "codex").exists() else none
    )
    (hh / "home").mkdir(parents=True, exist_ok=True)
    return env


class Server:
    def __init__(self, env: dict[str, str]):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        self.p = subprocess.Popen(
            [sys.executable, "-m", "huddle", "serve", "--no-open", "--port", str(self.port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def info(self) -> dict | None:
        import httpx

        try:
            return httpx.get(self.url + "api/info", timeout=2).json()
        except Exception:
            return None

    def ready(self, indexed: bool = True) -> float:
        """Seconds until it answers and its first read of the board is done (and, when
        `indexed`, its search index is level: a first build is minutes of a core's time)."""
        t0 = time.perf_counter()
        while True:
            i = self.info()
            if i is not None and not i.get("reading") and not (indexed and i.get("indexing")):
                return time.perf_counter() - t0
            time.sleep(0.2)

    def stop(self) -> None:
        self.p.terminate()
        self.p.wait(30)


def paint(browser, url: str) -> float:
    """Milliseconds from the navigation's start to the overview's data drawn."""
    pg = browser.new_page(viewport={"width": 1440, "height": 900})
    try:
        pg.goto(url + "overview?days=0")
        pg.wait_for_selector("body[data-ready]", timeout=600_000)
        return pg.evaluate("performance.getEntriesByName('overview-painted')[0].startTime")
    finally:
        pg.close()


def api_ms(url: str, rounds: int) -> float:
    import httpx

    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        r = httpx.get(url + "api/overview", params={"tz": "UTC"}, timeout=600)
        r.raise_for_status()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def cli_s(env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "huddle", "overview", "--json"], env=env, check=True, capture_output=True)
    return time.perf_counter() - t0


def corpus(a) -> Path:
    if a.home:
        return Path(a.home)
    if a.synthetic_gb:
        from claude_corpus import write_claude_corpus

        out = HERE / "corpus" / f"overview-synthetic-{a.synthetic_gb:g}"
        if not (out / "done").exists():
            write_claude_corpus(str(out / "claude"), target_bytes=int(a.synthetic_gb * (1 << 30)))
            (out / "done").write_text("ok")
        return out
    from real_corpus import ensure

    return Path(ensure(a.copies, "claude,codex", None))


def size_of(home: Path) -> int:
    return sum(p.stat().st_size for p in home.rglob("*") if p.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", default=None)
    ap.add_argument("--copies", type=int, default=23)
    ap.add_argument("--synthetic-gb", type=float, default=0.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--first-run", action="store_true", help="also: a fresh home, the overview opened at once")
    a = ap.parse_args()
    home = corpus(a)
    from playwright.sync_api import sync_playwright

    out: dict = {"home": str(home), "bytes": size_of(home)}
    base = Path(tempfile.mkdtemp(prefix="huddle-overview-bench-"))
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox"])
            if a.first_run:  # a fresh home, the overview opened at once (the board and search built meanwhile)
                srv = Server(env_for(home, base / "first"))
                try:
                    srv.ready(indexed=False)
                    out["first_run_paint_ms"] = round(paint(browser, srv.url))
                finally:
                    srv.stop()
            # cold: no overview cache (the board read and the search index built first)
            hh = base / "cold"
            env = env_for(home, hh)
            srv = Server(env)
            try:
                out["server_ready_s"] = round(srv.ready(), 2)
                out["cold_paint_ms"] = round(paint(browser, srv.url))
                out["warm_paint_ms"] = round(paint(browser, srv.url))
                out["warm_api_ms"] = round(api_ms(srv.url, a.rounds))
            finally:
                srv.stop()
            srv = Server(env)
            try:
                srv.ready()
                out["restart_paint_ms"] = round(paint(browser, srv.url))
            finally:
                srv.stop()
            # cold summaries, the usage index warm (huddle usage ran before)
            hh = base / "usage-warm"
            env = env_for(home, hh)
            # the board's cache and the search index as the cold run left them; not the overview's nor usage's
            shutil.copytree(
                base / "cold" / "cache", hh / "cache", ignore=shutil.ignore_patterns("overview.db*", "usage.*")
            )
            subprocess.run(
                [sys.executable, "-m", "huddle", "usage", "--json"], env=env, check=True, capture_output=True
            )
            srv = Server(env)
            try:
                srv.ready()
                out["cold_usage_warm_paint_ms"] = round(paint(browser, srv.url))
            finally:
                srv.stop()
            browser.close()
        env = env_for(home, base / "cli")
        out["cli_cold_s"] = round(cli_s(env), 2)
        out["cli_warm_s"] = round(statistics.median(cli_s(env) for _ in range(a.rounds)), 2)
        print(json.dumps(out, indent=2))
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
