"""Full-read throughput and memory of the Gemini CLI source, and what a live refresh costs.

    python bench/bench_gemini.py [GEMINI_HOME_PARENT]   (builds bench/corpus/gemini, ~100 MB, if missing)

Prints, each in a fresh process so peak RSS is its own:
  huddle   a full read into events (scan, every lead and sub-agent file, trees linked)
  msgspec  for context, an untyped decode of every line on disk
  json     the same with json.loads (what a plain Python reader does)
Then, in one process after a full read: a refresh with nothing changed, and a refresh
after one turn was appended to the biggest session (reads only those bytes).
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import Measure, decode_lines, read_all, run_child, warm  # noqa: E402

DEFAULT = HERE / "corpus" / "gemini"


def files(root: Path) -> list[Path]:
    return sorted((root / ".gemini" / "tmp").rglob("*.jsonl"))


def huddle_for(root: Path):
    from huddle.core import Huddle
    from huddle.sources import Settings

    return Huddle(Settings(folders={"gemini": str(root / ".gemini")}, huddle_home="/nonexistent"), sources=["gemini"])


def child(mode: str, root: Path) -> None:
    with Measure(mode) as m:
        m.items = read_all(huddle_for(root)) if mode == "huddle" else decode_lines(files(root), mode)


def live(root: Path) -> None:
    h = huddle_for(root)
    h.refresh()
    big = max(files(root), key=lambda p: p.stat().st_size)
    t, c = time.perf_counter(), time.process_time()
    h.refresh()
    idle, idle_cpu = time.perf_counter() - t, time.process_time() - c
    ts = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    turn = [
        {"id": str(uuid.uuid4()), "timestamp": ts, "type": "user", "content": [{"text": "one more thing"}]},
        {"$set": {"lastUpdated": ts}},
        {
            "id": str(uuid.uuid4()),
            "timestamp": ts,
            "type": "gemini",
            "content": "Done.",
            "thoughts": [],
            "tokens": {"input": 20000, "output": 3, "cached": 19000, "thoughts": 0, "tool": 0, "total": 20003},
            "model": "gemini-2.5-flash",
        },
        {"$set": {"lastUpdated": ts}},
    ]
    data = "".join(json.dumps(x) + "\n" for x in turn).encode()
    size0 = big.stat().st_size
    with open(big, "ab") as f:
        f.write(data)
    t, c = time.perf_counter(), time.process_time()
    h.refresh()
    grown, grown_cpu = time.perf_counter() - t, time.process_time() - c
    with open(big, "r+b") as f:
        f.truncate(size0)
    print(
        f"live     refresh with nothing changed, {len(h.handles)} sessions: {idle * 1e3:.1f} ms "
        f"({idle_cpu * 1e3:.1f} ms CPU); one turn ({len(data)} bytes) appended to the biggest file "
        f"({size0 / 1e6:.1f} MB): {grown * 1e3:.1f} ms ({grown_cpu * 1e3:.1f} ms CPU)"
    )


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2], Path(sys.argv[3]))
        return
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    if not root.exists():
        from gemini_corpus import write_gemini_corpus

        print(f"building corpus in {root} ...", flush=True)
        print(write_gemini_corpus(str(root)))
    fs = files(root)
    size = sum(p.stat().st_size for p in fs)
    print(f"corpus: {size / 1e6:.0f} MB in {len(fs)} chat files")
    warm(fs)
    results = {}
    for _ in range(2):  # interleaved and repeated: the machine is shared
        for mode in ("huddle", "msgspec", "json"):
            r = run_child(__file__, mode, root)
            # per second of CPU: on a shared machine wall time mostly measures the neighbours
            if mode not in results or r["cpu"] < results[mode]["cpu"]:
                results[mode] = r
    for mode, r in results.items():
        what = "events" if mode == "huddle" else "lines"
        print(
            f"{mode:8s} {size / 1e6 / r['cpu']:6.0f} MB/s of CPU ({size / 1e6 / r['seconds']:4.0f} wall)  "
            f"{r['cpu']:6.2f} s  peak RSS {r['rss_mb']:6.0f} MB  ({r['items']} {what}; best of 2)"
        )
    h = results["huddle"]["cpu"]
    print(
        f"ratio: huddle end-to-end is {results['msgspec']['cpu'] / h:.2f}x "
        f"an untyped msgspec decode of every line, {results['json']['cpu'] / h:.2f}x json.loads"
    )
    live(root)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
