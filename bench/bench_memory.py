"""Does memory grow with the size of tool outputs? Two corpora with the same sessions,
turns and events, tool outputs x1 and x10 (capped at 6 MB a piece, as in the main
corpus), each parsed in a fresh process: events, peak RSS and time.

    python bench/bench_memory.py
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import claude_corpus as cc  # noqa: E402

SESSIONS, TURNS = 60, 30


def build(root: Path, mult: int) -> int:
    base = cc.tool_output_size
    cc.tool_output_size = lambda rnd: min(base(rnd) * mult, 6_000_000)
    try:
        rnd, total = random.Random(7), 0
        for i in range(SESSIONS):
            sid = str(uuid.UUID(int=rnd.getrandbits(128), version=4))
            proj = root / "projects" / f"-p{i % 5}"
            proj.mkdir(parents=True, exist_ok=True)
            w = cc.SessionWriter(rnd, sid, f"/p{i % 5}", 1796000000.0)
            for _ in range(TURNS):
                total += cc.append_jsonl(proj / f"{sid}.jsonl", w.turn())
        return total
    finally:
        cc.tool_output_size = base


def main() -> None:
    top = Path(tempfile.mkdtemp(prefix="huddle-mem-"))
    try:
        for mult in (1, 10):
            root = top / f"x{mult}"
            size = build(root, mult)
            out = subprocess.run(
                [sys.executable, str(HERE / "bench_parse.py"), "--child", "huddle", str(root)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            r = json.loads(out.strip().splitlines()[-1])
            print(
                f"tool outputs x{mult:<2} {size / 1e6:5.0f} MB  {r['items']} events  peak RSS {r['rss_mb']:4.0f} MB"
                f"  {r['seconds']:.2f} s"
            )
    finally:
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
