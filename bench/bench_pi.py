"""Full-read throughput and memory of the Pi source, and what a refresh costs on a home of
1,000 sessions.

    python bench/bench_pi.py [PI_AGENT_DIR]   (builds bench/corpus/pi, ~1,000 sessions, if missing)

The home is the samples (tests/fixtures/samples/pi, 1.6.0 and 0.73.1) cloned with fresh
session ids, entry ids and response ids, spread over 20 project folders. Prints, each in
a fresh process so peak RSS is its own:
  huddle   a full read into events (scan, every file)
  msgspec  for context, an untyped decode of every line on disk
  json     the same with json.loads
Then, in one process after a full read: a refresh with nothing changed, and one after a
turn was appended to the biggest session (reads only those bytes).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import Measure, decode_lines, huddle_reading, read_all, run_child, warm  # noqa: E402

DEFAULT = HERE / "corpus" / "pi"
SAMPLES = HERE.parent / "tests" / "fixtures" / "samples" / "pi"
SESSIONS = 1000
_HEX8 = re.compile(rb'"(id|parentId|targetId|fromId|firstKeptEntryId)":"([0-9a-f]{8})"')


def files(root: Path) -> list[Path]:
    return sorted((root / "sessions").rglob("*.jsonl"))


def build(root: Path, n: int = SESSIONS) -> str:
    """`n` sessions cloned from the samples' session files, every id fresh."""
    originals = sorted(p for p in SAMPLES.glob("*/home/.pi/agent/sessions/*/*.jsonl"))
    total = 0
    for i in range(n):
        src = originals[i % len(originals)]
        data = src.read_bytes()
        old = json.loads(data.split(b"\n", 1)[0])["id"]
        new = str(uuid.uuid4())
        salt = f"{i:08x}".encode()
        data = data.replace(old.encode(), new.encode())
        data = _HEX8.sub(lambda m, salt=salt: b'"' + m.group(1) + b'":"' + _fresh(salt, m.group(2)) + b'"', data)
        data = re.sub(rb"chatcmpl-(\d+)", lambda m, salt=salt: b"chatcmpl-" + salt + m.group(1), data)
        project = root / "sessions" / f"--home-dev-work-proj{i % 20}--"
        project.mkdir(parents=True, exist_ok=True)
        stamp = src.name.split("_", 1)[0]
        (project / f"{stamp}_{new}.jsonl").write_bytes(data)
        total += len(data)
    return f"{n} sessions, {total / 1e6:.1f} MB"


def _fresh(salt: bytes, eid: bytes) -> bytes:
    return hashlib.sha1(salt + eid).hexdigest()[:8].encode()


def child(mode: str, root: Path) -> None:
    with Measure(mode) as m:
        m.items = read_all(huddle_reading("pi", root)) if mode == "huddle" else decode_lines(files(root), mode)


def live(root: Path) -> None:
    h = huddle_reading("pi", root)
    h.refresh()
    big = max(files(root), key=lambda p: p.stat().st_size)
    rounds = []
    for _ in range(5):
        t, c = time.perf_counter(), time.process_time()
        h.refresh()
        rounds.append((time.perf_counter() - t, time.process_time() - c))
    idle, idle_cpu = min(rounds)
    last = json.loads(big.read_bytes().splitlines()[-1])
    ts = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    usage = {"input": 20, "output": 3, "cacheRead": 19000, "cacheWrite": 0, "totalTokens": 19023}
    turn = [
        {
            "type": "message",
            "id": "beefcafe",
            "parentId": last["id"],
            "timestamp": ts,
            "message": {"role": "user", "content": [{"type": "text", "text": "one more thing"}], "timestamp": 1},
        },
        {
            "type": "message",
            "id": "beefcaff",
            "parentId": "beefcafe",
            "timestamp": ts,
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "Done."}],
                "model": "fake-model",
                "usage": usage,
                "stopReason": "stop",
                "responseId": "chatcmpl-bench",
                "timestamp": 2,
            },
        },
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
        f"({idle_cpu * 1e3:.1f} ms CPU, best of 5); one turn ({len(data)} bytes) appended to the biggest "
        f"file ({size0 / 1e6:.2f} MB): {grown * 1e3:.1f} ms ({grown_cpu * 1e3:.1f} ms CPU)"
    )


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2], Path(sys.argv[3]))
        return
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    if not root.exists():
        print(f"building corpus in {root} ...", flush=True)
        print(build(root))
    fs = files(root)
    size = sum(p.stat().st_size for p in fs)
    print(f"corpus: {size / 1e6:.1f} MB in {len(fs)} session files")
    warm(fs)
    results = {}
    for _ in range(2):  # interleaved and repeated: the machine is shared
        for mode in ("huddle", "msgspec", "json"):
            r = run_child(__file__, mode, root)
            if mode not in results or r["cpu"] < results[mode]["cpu"]:
                results[mode] = r
    for mode, r in results.items():
        what = "events" if mode == "huddle" else "lines"
        print(
            f"{mode:8s} {size / 1e6 / r['cpu']:6.1f} MB/s of CPU ({size / 1e6 / r['seconds']:5.1f} wall)  "
            f"{len(fs) / r['cpu']:6.0f} sessions/s  {r['cpu']:6.2f} s  peak RSS {r['rss_mb']:5.0f} MB  "
            f"({r['items']} {what}; best of 2)"
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
