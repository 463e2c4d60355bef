"""Print a captured stream line by line with pauses, like the agent that wrote it.

    replay_stream.py CAPTURE [--pause S] [--split] [--wait-stdin] [--stop-at N]
                     [--hold stdin|signal] [--ignore-term]

--split writes each line in several pieces (chunks split anywhere, even inside a
UTF-8 character). --wait-stdin waits for one line on stdin (a prompt) first.
--stop-at N stops after N lines. --hold stdin then waits for stdin to close (how
a stop begins), --hold signal waits for a signal whatever happens to stdin.
On SIGINT or SIGTERM it does what
`claude -p` does when stopped mid-answer: prints an interrupt and an
`error_during_execution` result with terminal_reason "aborted_streaming", then
exits (130 / 143). --ignore-term makes it ignore SIGTERM (to test the kill).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import time


def out(data: bytes, split: bool, rng: random.Random) -> None:
    if not split or len(data) < 2:
        os.write(1, data)
        return
    cuts = sorted(rng.sample(range(1, len(data)), min(3, len(data) - 1)))
    for a, b in zip([0, *cuts], [*cuts, len(data)]):
        os.write(1, data[a:b])
        time.sleep(0.0005)


def aborted(session_id: str, code: int):
    def handler(signum, frame):
        for rec in (
            {
                "type": "user",
                "message": {"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user]"}]},
                "parent_tool_use_id": None,
                "session_id": session_id,
            },
            {
                "type": "result",
                "subtype": "error_during_execution",
                "is_error": True,
                "terminal_reason": "aborted_streaming",
                "usage": {"input_tokens": 0, "output_tokens": 0},
                "session_id": session_id,
                "errors": [],
            },
        ):
            os.write(1, json.dumps(rec).encode() + b"\n")
        os._exit(code)

    return handler


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("capture")
    p.add_argument("--pause", type=float, default=0.0)
    p.add_argument("--split", action="store_true")
    p.add_argument("--stop-at", type=int, default=None)
    p.add_argument("--wait-stdin", action="store_true")
    p.add_argument("--hold", choices=("stdin", "signal"), default=None)
    p.add_argument("--ignore-term", action="store_true")
    a = p.parse_args()
    with open(a.capture, "rb") as f:
        lines = f.read().splitlines(keepends=True)
    sid = ""
    for line in lines[:5]:
        try:
            sid = json.loads(line).get("session_id") or sid
        except ValueError:
            pass
    signal.signal(signal.SIGINT, aborted(sid, 130))
    signal.signal(signal.SIGTERM, signal.SIG_IGN if a.ignore_term else aborted(sid, 143))
    rng = random.Random(len(lines))
    if a.wait_stdin:
        sys.stdin.readline()
    for i, line in enumerate(lines):
        if a.stop_at is not None and i >= a.stop_at:
            break
        out(line, a.split, rng)
        if a.pause:
            time.sleep(a.pause)
    if a.hold == "stdin":
        sys.stdin.read()  # until stdin closes (or a signal)
    elif a.hold == "signal":
        while True:
            signal.pause()


if __name__ == "__main__":
    main()
