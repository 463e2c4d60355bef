"""Search: index build speed and size, query latency, the cost of a `huddle search`.

On the 1 GB Claude bench corpus (bench/claude_corpus.py; built on first use):
- the first build: the core reads every session, the index takes their events
  (MB/s of transcript), and the index's size against the transcripts';
- the same with tool inputs and outputs left out (`--kind tool` has nothing then),
  in a child process, for the size the default scope alone costs;
- query latency for a rare word, a common word and a phrase, newest first and by
  rank: the index query alone and the whole answer (snippets read back);
- a second `huddle search` when nothing moved (the command's own overhead).

Timings are the median of repeated, interleaved runs (the machine is shared).

    python bench/bench_search.py [CORPUS_DIR] [--rounds 15] [--no-tool-build]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

from common import warm  # noqa: E402

DEFAULT = HERE / "corpus" / "claude"


def corpus(root: Path) -> tuple[list[Path], int]:
    if not root.exists():
        from claude_corpus import write_claude_corpus

        print(f"building corpus in {root} ...", flush=True)
        write_claude_corpus(str(root))
    files = list(root.glob("projects/**/*.jsonl"))
    return files, sum(p.stat().st_size for p in files)


def settings_for(root: Path, home: str):
    from huddle.sources import Settings

    none = os.path.join(home, "none")
    return Settings(folders={"claude": str(root), "codex": none, "vibe": none}, huddle_home=home)


def build(root: Path, home: str, tool: bool = True) -> dict:
    """A first build from nothing: the core's read, then the index."""
    from huddle.core import Huddle
    from huddle.search import SearchIndex, text
    from huddle.search import index as index_mod

    if not tool:
        for k in [k for k, g in text.KIND_GROUP.items() if g == "tool"]:
            del text.KIND_GROUP[k]
        index_mod.COLUMN_OF = {k: text.COLUMNS.index(g) for k, g in text.KIND_GROUP.items()}
    cfg = settings_for(root, home)
    t0, c0 = time.perf_counter(), time.process_time()
    h = Huddle(cfg)
    h.refresh()
    t1, c1 = time.perf_counter(), time.process_time()
    index = SearchIndex(cfg.huddle_home, cfg.folders)
    res = index.update(h)
    t2, c2 = time.perf_counter(), time.process_time()
    db = index.store.open()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = os.path.getsize(index.store.path)
    return {
        "read_s": t1 - t0,
        "index_s": t2 - t1,
        "read_cpu": c1 - c0,
        "index_cpu": c2 - c1,
        "rows": res.rows,
        "bytes": size,
    }


def child(mode: str, root: str, home: str) -> None:
    print(json.dumps(build(Path(root), home, tool=(mode == "all"))))


def timed(fn, rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("root", nargs="?", default=str(DEFAULT))
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--no-tool-build", action="store_true", help="also build without tool pieces (slow)")
    a = ap.parse_args()
    root = Path(a.root)
    files, size = corpus(root)
    print(f"corpus: {size / 1e6:.0f} MB in {len(files)} files")
    warm(files)

    from huddle.search import attach
    from huddle.search.index import one_shot
    from huddle.search.query import parse
    from huddle.views.search import search

    home = tempfile.mkdtemp(prefix="huddle-bench-search-")
    r = json.loads(
        subprocess.run(
            [sys.executable, __file__, "--child", "all", str(root), home], capture_output=True, text=True, check=True
        ).stdout.splitlines()[-1]
    )
    print(
        f"first build: core read {r['read_s']:.1f} s (CPU {r['read_cpu']:.1f} s), index {r['index_s']:.1f} s "
        f"(CPU {r['index_cpu']:.1f} s) = {size / 1e6 / r['index_s']:.1f} MB/s of transcript "
        f"({size / 1e6 / r['index_cpu']:.1f} MB/s of CPU); "
        f"{r['rows']:,} rows; index {r['bytes'] / 1e6:.0f} MB = {100 * r['bytes'] / size:.1f}% of the transcripts"
    )
    if a.no_tool_build:
        home2 = tempfile.mkdtemp(prefix="huddle-bench-search-")
        r2 = json.loads(
            subprocess.run(
                [sys.executable, __file__, "--child", "talk", str(root), home2],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.splitlines()[-1]
        )
        print(
            f"without tool pieces: index {r2['index_s']:.1f} s (CPU {r2['index_cpu']:.1f} s) = "
            f"{size / 1e6 / r2['index_s']:.1f} MB/s; "
            f"{r2['rows']:,} rows; {r2['bytes'] / 1e6:.0f} MB = {100 * r2['bytes'] / size:.1f}%"
        )

    cfg = settings_for(root, home)
    t0 = time.perf_counter()
    h, index = one_shot(cfg)
    print(
        f"first `huddle search` on that index (reads every session once, finds all indexed): {time.perf_counter() - t0:.1f} s"
    )
    t0 = time.perf_counter()
    h, index = one_shot(cfg)
    print(f"`huddle search` when nothing moved: {time.perf_counter() - t0:.2f} s")
    attach(h, index)

    # a rare word: one that stands in a single tool output; common and phrase: the prose
    db = index.store.open()
    db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.v USING fts5vocab(main, 'fts', 'row')")
    rare = db.execute("SELECT term FROM temp.v WHERE doc = 1 AND length(term) > 6 LIMIT 1").fetchone()[0]
    queries = [
        ("rare (tool)", rare, {"kind": "tool"}),
        ("common", "agent", {}),
        ("phrase", '"fix the build"', {}),
        ("prefix", "upd*", {}),
    ]
    print(f"query latency, ms (median of {a.rounds}; index query alone / whole answer with snippets):")
    for name, q, kw in queries:
        for rank in (False, True):
            scope = tuple(kw["kind"].split(",")) if "kind" in kw else ("prompt", "say", "think")
            match = parse(q).fts(scope)
            raw = timed(lambda m=match, rk=rank: index.store.search(m, rank=rk, limit=21), a.rounds)
            whole = timed(lambda q=q, rk=rank, kw=kw: search(h, q, rank=rk, limit=20, **kw), a.rounds)
            n = len(search(h, q, rank=rank, limit=20, **kw)["results"])
            print(
                f"  {name:12} {q[:24]:26} {'rank  ' if rank else 'newest'}  {statistics.median(raw):8.2f} / "
                f"{statistics.median(whole):8.2f}   ({n} results)"
            )


if __name__ == "__main__":
    main()
