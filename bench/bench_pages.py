"""A server's memory as session pages are opened one after another, largest first.

    python bench/bench_pages.py [--home 1000:1.1] [--pages 1000]

Builds (once) the bench_side home of that many Claude sessions and GB, starts `huddle
serve` on it with an empty huddle home (a first start: its first read runs in a child),
waits for `"reading": false`, then opens each page as the page does (`/api/sessions/ID`
and its `/events`) and prints the server's RSS as it goes, once more after the watcher's
let-go has had its time, and after the 40 largest are opened again. What a page no longer
shows is let go (core.keeper.Keeper.let_go): the RSS stops growing with the pages opened.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_side import PY, Bench, build, free_port


def get(url: str):
    with urllib.request.urlopen(url, timeout=120) as r:
        return json.loads(r.read())


def rss_mb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) // 1024 for line in f if line.startswith("VmRSS"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", default="1000:1.1", help="sessions:Claude GB")
    ap.add_argument("--pages", type=int, default=1000)
    a = ap.parse_args()
    n, gb = a.home.split(":")
    claude, codex = build(int(n), float(gb), 0, 0)
    b = Bench(claude, codex, Path(tempfile.mkdtemp(prefix="huddle-pages-")))
    port = free_port()
    base = f"http://127.0.0.1:{port}/api/"
    cmd = [PY, "-m", "huddle", "serve", "--port", str(port), "--no-open", "--no-notify"]
    p = subprocess.Popen(cmd, env=b.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 600
        while True:
            try:
                if not get(base + "info").get("reading", True):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("the server did not finish its first read in 10 minutes")
            time.sleep(0.2)
        size = {f.stem: f.stat().st_size for f in claude.glob("projects/*/*.jsonl")}
        rows = get(base + "sessions")["sessions"]
        ids = sorted((r["id"] for r in rows), key=lambda i: -size.get(i, 0))[: a.pages]
        print(f"{len(rows)} sessions, {sum(size.values()) / 1e9:.2f} GB: RSS after the first read {rss_mb(p.pid)} MB")
        marks = {1, 5, 20, 40, 80, 160, 320, 640, 1000, len(ids)}
        t0 = time.perf_counter()
        for i, sid in enumerate(ids, 1):
            get(base + f"sessions/{sid}")
            get(base + f"sessions/{sid}/events")
            if i in marks:
                print(f"  {i:>5} pages opened: RSS {rss_mb(p.pid)} MB  ({time.perf_counter() - t0:.0f} s)", flush=True)
        time.sleep(8)  # (the watcher lets go every 5 s after a page read one)
        print(f"  8 s later:          RSS {rss_mb(p.pid)} MB")
        for sid in ids[:40]:
            get(base + f"sessions/{sid}/events")
        print(f"  the 40 largest again: RSS {rss_mb(p.pid)} MB")
    finally:
        p.terminate()
        p.wait()
        b.restore()


if __name__ == "__main__":
    main()
