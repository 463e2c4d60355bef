"""Search while the server's indexing thread builds: what the store's lock costs.

Every use of the index's connection, and its close, holds one lock (a close under
another thread's statement crashed CPython's sqlite3), so a search asked during a
first build waits for the write transaction in flight (CHUNK events). This measures,
on the 1 GB Claude bench corpus (bench/claude_corpus.py):
- how long `store.search` takes while the thread builds, against the same query on
  the finished index (median, 90th percentile, max);
- how long `LiveIndexer.stop()` takes in the middle of the build (it stops between
  write transactions; before, it gave up its join after 5 s and left the thread on).

    python bench/bench_search_live.py [CORPUS_DIR] [--queries 200] [--gap 0.1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

from bench_search import DEFAULT, corpus, settings_for  # noqa: E402


def _times(index, match: str, n: int, gap: float = 0.0) -> list[float]:
    """`n` queries, `gap` seconds apart (spread over a build, not all at its start)."""
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        index.store.search(match, limit=20)
        out.append((time.perf_counter() - t0) * 1000)
        if gap:
            time.sleep(gap)
    return out


def _show(what: str, ms: list[float]) -> None:
    if not ms:
        print(f"{what}: no queries")
        return
    q = sorted(ms)
    p90 = q[min(len(q) - 1, int(len(q) * 0.9))]
    print(f"{what}: n={len(q)} median {statistics.median(q):.2f} ms, p90 {p90:.2f} ms, max {q[-1]:.2f} ms")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", nargs="?", default=str(DEFAULT))
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--gap", type=float, default=0.1, help="seconds between queries during the build")
    args = ap.parse_args()
    from huddle.core import Huddle
    from huddle.search import SearchIndex
    from huddle.search.live import LiveIndexer

    root = Path(args.root)
    _files, size = corpus(root)
    match = '"agent"'
    with tempfile.TemporaryDirectory() as home:
        cfg = settings_for(root, home)
        t0 = time.perf_counter()
        h = Huddle(cfg)
        h.refresh()
        print(f"corpus {size / 1e6:.0f} MB read in {time.perf_counter() - t0:.1f} s")

        # 1. queries during a first build, then stop it part way
        index = SearchIndex(home, cfg.folders)
        live = LiveIndexer(h, index)
        live.start()
        while not index.store.stats()["rows"]:
            time.sleep(0.05)  # the first transaction committed: the build is under way
        during = _times(index, match, args.queries, args.gap)
        building = index.building
        rows_then = index.store.stats()["rows"]
        t0 = time.perf_counter()
        live.stop()
        stop_ms = (time.perf_counter() - t0) * 1000
        alive = live._thread is not None and live._thread.is_alive()
        print(
            f"stop() {'mid-build' if building else 'after the build'}: {stop_ms:.0f} ms"
            f" (thread still alive: {alive}); {rows_then:,} rows by then"
        )
        _show("store.search during the build", during)

        # 2. the same query on a finished index, with an idle thread
        index2 = SearchIndex(home + "/done", cfg.folders)
        live2 = LiveIndexer(h, index2)
        live2.start()
        ok = live2.idle.wait(3600)
        print(f"full build finished: {ok}, {index2.store.stats()['rows']:,} rows")
        _show("store.search on the finished index", _times(index2, match, args.queries))
        stopping = threading.Thread(target=live2.stop)
        t0 = time.perf_counter()
        stopping.start()
        stopping.join()
        print(f"stop() when idle: {(time.perf_counter() - t0) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
