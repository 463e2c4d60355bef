"""Full-parse throughput and memory of the Claude source, beside plain decoders.

    python bench/bench_parse.py [CORPUS_DIR]      (builds bench/corpus/claude if missing)

Prints MB/s end to end into events (huddle), and for context the same bytes through
json.loads and a bare msgspec decode, each in a fresh process so peak RSS is its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT = HERE / "corpus" / "claude"


def corpus_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.glob("projects/**/*.jsonl"))


def run_child(mode: str, root: Path) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", mode, str(root)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def child(mode: str, root: Path) -> None:
    import resource

    sys.path.insert(0, str(HERE.parent / "src"))
    files = sorted(str(p) for p in root.glob("projects/**/*.jsonl"))
    import msgspec  # noqa: F401  imports are not parsing: keep them out of the timing

    from huddle.core import Huddle
    from huddle.sources import Settings
    from huddle.sources.claude_records import decode_record

    t0 = time.perf_counter()
    n = 0
    if mode == "huddle":
        h = Huddle(Settings(claude_dir=str(root), codex_home="/nonexistent", vibe_home="/nonexistent", huddle_home="/nonexistent"), sources=["claude"])
        h.refresh()
        n = sum(len(s.events) for s in h.sessions())
    elif mode == "json":
        for f in files:
            with open(f, "rb") as fh:
                for line in fh:
                    json.loads(line)
                    n += 1
    elif mode == "msgspec":
        dec = msgspec.json.Decoder()
        for f in files:
            with open(f, "rb") as fh:
                for line in fh:
                    dec.decode(line)
                    n += 1
    elif mode == "msgspec-typed":
        for f in files:
            with open(f, "rb") as fh:
                for line in fh:
                    decode_record(line)
                    n += 1
    dt = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"mode": mode, "seconds": dt, "items": n, "rss_mb": rss}))


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2], Path(sys.argv[3]))
        return
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    if not root.exists():
        sys.path.insert(0, str(HERE))
        from claude_corpus import write_claude_corpus

        print(f"building corpus in {root} ...", flush=True)
        write_claude_corpus(str(root))
    size = corpus_bytes(root)
    sessions = len(list(root.glob("projects/*/*.jsonl")))
    biggest = max(p.stat().st_size for p in root.glob("projects/**/*.jsonl"))
    print(f"corpus: {size / 1e6:.0f} MB, {sessions} sessions, largest file {biggest / 1e6:.0f} MB")
    for p in root.glob("projects/**/*.jsonl"):  # warm the page cache: measure parsing, not the disk
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass
    results = {}
    for mode in ("huddle", "msgspec-typed", "msgspec", "json"):
        r = run_child(mode, root)
        results[mode] = r
        print(f"{mode:14s} {size / 1e6 / r['seconds']:8.0f} MB/s  {r['seconds']:6.2f} s  peak RSS {r['rss_mb']:6.0f} MB  ({r['items']} {'events' if mode == 'huddle' else 'lines'})")
    h = results["huddle"]["seconds"]
    print(f"ratios: huddle end-to-end is {results['json']['seconds'] / h:.1f}x json.loads, "
          f"{results['msgspec']['seconds'] / h:.1f}x untyped msgspec decode")


if __name__ == "__main__":
    main()
