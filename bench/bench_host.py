"""How fast the host logs and how fast a reader catches up. Prints figures; asserts nothing.

    .venv/bin/python bench/bench_host.py [--lines N]

- log append: EventLog.append of real stream lines, in this process (entries/s)
- hosted: an agent printing N real stream lines as fast as it can, through a real
  host, from its start to its `exited` entry (entries/s, MB/s)
- catch-up: attaching from seq 1 to a log of N entries, through the host (agent
  still running) and from the file alone (entries/s)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from huddle.host.client import attach, call, running  # noqa: E402
from huddle.host.log import EventLog, as_json  # noqa: E402

SAMPLE = ROOT / "tests" / "fixtures" / "samples" / "claude-stream" / "01-basic-tools" / "basic.jsonl"
AGENT = (
    "import sys\n"
    "lines = open(sys.argv[1], 'rb').read().splitlines(keepends=True)\n"
    "n = int(sys.argv[2])\n"
    "out = sys.stdout.buffer\n"
    "for i in range(n): out.write(lines[i % len(lines)])\n"
    "out.flush()\n"
    "if len(sys.argv) > 3: sys.stdin.read()\n"
)


def host(d: str, n: int, hold: bool) -> subprocess.Popen:
    cmd = [
        sys.executable,
        "-m",
        "huddle",
        "host",
        "--dir",
        d,
        "--grace",
        "0.2",
        "--",
        sys.executable,
        "-c",
        AGENT,
        str(SAMPLE),
        str(n),
        *(["hold"] if hold else []),
    ]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not running(d) and p.poll() is None:
        time.sleep(0.005)
    return p


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:,.0f} entries/s ({seconds:.2f} s for {n:,})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=100_000)
    n = ap.parse_args().lines
    lines = SAMPLE.read_bytes().splitlines()
    with tempfile.TemporaryDirectory() as tmp:
        log = EventLog(os.path.join(tmp, "append.jsonl"))
        log.open()
        t = time.perf_counter()
        for i in range(n):
            log.append("stdout", raw=as_json(lines[i % len(lines)]))
        log.sync()
        print(f"log append (validate + write, no fsync per entry): {rate(n, time.perf_counter() - t)}")
        log.close()

        d = os.path.join(tmp, "hosted")
        t = time.perf_counter()
        p = host(d, n, hold=False)
        p.wait()
        took = time.perf_counter() - t
        size = os.path.getsize(os.path.join(d, "events.jsonl"))
        print(f"hosted agent to exited (incl. start-up): {rate(n, took)}, {size / took / 1e6:.1f} MB/s of log")

        d2 = os.path.join(tmp, "live")
        p = host(d2, n, hold=True)
        while os.path.getsize(os.path.join(d2, "events.jsonl")) < size * 0.99:
            time.sleep(0.01)
        time.sleep(0.2)
        last = call(d2, {"op": "status"})["last_seq"]
        t = time.perf_counter()
        got = 0
        for line in attach(d2, 1, tick=0.5):
            if line is None:
                break
            got += 1
            if got >= last:
                break
        print(f"attach catch-up through a running host: {rate(got, time.perf_counter() - t)}")
        call(d2, {"op": "stop", "now": True})
        p.wait()

        t = time.perf_counter()
        got = sum(1 for line in attach(d, 1) if line is not None)
        print(f"attach catch-up from the file (no host): {rate(got, time.perf_counter() - t)}")


if __name__ == "__main__":
    main()
