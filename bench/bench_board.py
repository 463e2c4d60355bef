"""The board and the status line on 1,000 sessions, beside `ccusage statusline`.

    python bench/bench_board.py [CORPUS_DIR] [--ccusage PATH] [--runs 15]

Measures (wall time, medians):
  board  cold, no cache         `huddle status --json`, new process, empty HUDDLE_HOME
  board  cold, cache            the same again (new process, cache present)
  board  warm, nothing changed  refresh + board in a long-lived process (server, --watch)
  statusline, 5 sessions changed before each run, and ccusage statusline side by side
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
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT = HERE / "corpus" / "claude"
PY = sys.executable


def timed(cmd: list[str], env: dict, stdin: str | None = None) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, env=env, input=stdin, capture_output=True, text=True, check=True)
    return time.perf_counter() - t


def append_to(files: list[Path]) -> None:
    line = json.dumps({"type": "last-prompt", "lastPrompt": "bench", "sessionId": "bench"}) + "\n"
    for f in files:
        with open(f, "a") as out:
            out.write(line)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus", nargs="?", default=str(DEFAULT))
    ap.add_argument("--ccusage", default="/tmp/ccusage/node_modules/.bin/ccusage")
    ap.add_argument("--runs", type=int, default=15)
    a = ap.parse_args()
    src = Path(a.corpus)
    if not src.exists():
        sys.path.insert(0, str(HERE))
        from claude_corpus import write_claude_corpus

        write_claude_corpus(str(src))
    work = Path(tempfile.mkdtemp(prefix="huddle-bench-"))
    corpus = work / "claude"
    shutil.copytree(src, corpus)  # the bench appends to files: never to the shared corpus
    home = work / "huddle-home"
    env = {
        **os.environ,
        "CLAUDE_CONFIG_DIR": str(corpus),
        "CODEX_HOME": str(work / "no-codex"),
        "VIBE_HOME": str(work / "no-vibe"),
        "HUDDLE_HOME": str(home),
        "HOME": str(work),
    }
    sessions = sorted(corpus.glob("projects/*/*.jsonl"))
    size = sum(p.stat().st_size for p in corpus.glob("projects/**/*.jsonl"))
    print(f"corpus: {len(sessions)} sessions, {size / 1e6:.0f} MB")

    status = [PY, "-m", "huddle", "status", "--json"]
    cold = timed(status, env)
    cached = statistics.median(timed(status, env) for _ in range(5))
    print(f"board  cold, no cache        {cold * 1000:8.0f} ms")
    print(f"board  cold, cache present   {cached * 1000:8.0f} ms   (target < 1000 ms)")

    code = (
        "import time, statistics, json\n"
        "from huddle.core import Huddle, Keeper, WholeMode\nfrom huddle.views.board import board_json\n"
        "h = Huddle(keep=Keeper(WholeMode())); h.refresh(); board_json(h)\n"
        "ts = []\n"
        "for _ in range(30):\n"
        "    t = time.perf_counter(); h.refresh(); board_json(h); ts.append(time.perf_counter() - t)\n"
        "print(json.dumps(statistics.median(ts)))\n"
    )
    warm = json.loads(subprocess.run([PY, "-c", code], env=env, capture_output=True, text=True, check=True).stdout)
    print(f"board  warm, nothing changed {warm * 1000:8.1f} ms   (target < 20 ms)")

    stdin = json.dumps(
        {
            "session_id": sessions[0].stem,
            "transcript_path": str(sessions[0]),
            "cwd": "/home/dev/work",
            "model": {"id": "claude-opus-5-5", "display_name": "Opus"},
            "workspace": {"current_dir": "/home/dev/work", "project_dir": "/home/dev/work"},
            "cost": {"total_cost_usd": 1.0},
            "context_window": {
                "context_window_size": 200000,
                "used_percentage": 12,
                "total_input_tokens": 24000,
                "total_output_tokens": 1000,
            },
        }
    )
    ours, theirs = [], []
    has_cc = os.path.exists(a.ccusage)
    for i in range(a.runs):
        append_to(sessions[10 + 5 * i : 15 + 5 * i])
        ours.append(timed([PY, "-m", "huddle", "statusline"], env, stdin))
        time.sleep(0.3)  # let the background refresher finish, as between two messages
        if has_cc:
            append_to(sessions[10 + 5 * i : 15 + 5 * i])
            theirs.append(timed([a.ccusage, "statusline", "--offline"], env, stdin))
    om = statistics.median(ours)
    print(f"statusline huddle (5 changed) {om * 1000:7.0f} ms median   (target < 60 ms)")
    if theirs:
        tm = statistics.median(theirs)
        print(f"statusline ccusage            {tm * 1000:7.0f} ms median")
        print(f"ratio: huddle takes {om / tm:.2f}x ccusage's time   (target < 0.33)")
    else:
        print(f"ccusage not found at {a.ccusage}: npm install ccusage@20.0.24 into /tmp/ccusage")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
