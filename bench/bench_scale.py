"""huddle alone at growing homes: the warm paths cost what changed, not the home's size.

    python bench/bench_scale.py [--homes 200:0.25:200:120,1000:1.1:1000:550,5000:1.1:0:0] [--runs 3]

Each home (sessions : Claude GB : Codex rollouts : Codex MB) is built once under
bench/corpus/ (as bench_side builds it: nothing moved in the last hour). Per home: a cold
`huddle status --json` and `huddle usage --json` fill the caches, then the medians of
`--runs` runs of a cached status, a status after one line appended to one session, warm
usage, usage after an append, and `huddle serve` to its first /api/sessions (RSS then),
each with its wall and CPU seconds. The appended session is cut back at the end.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_side import HUDDLE, Bench, build, free_port, serve_until_answer, timed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--homes", default="200:0.25:200:120,1000:1.1:1000:550,5000:1.1:0:0")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    huddle = HUDDLE
    table = []
    for spec in a.homes.split(","):
        n, gb, threads, mb = spec.split(":")
        claude, codex = build(int(n), float(gb), int(threads), int(mb))
        b = Bench(claude, codex, Path(tempfile.mkdtemp(prefix="huddle-scale-")))
        try:
            status, usage = [*huddle, "status", "--json"], [*huddle, "usage", "--json"]
            cold = [timed(status, b.env()), timed(usage, b.env())]
            rows: dict[str, list] = {"status cold": [cold[0]], "usage cold": [cold[1]]}
            for _ in range(a.runs):
                b.answered(status)  # nothing moved since the last status
                rows.setdefault("status cached", []).append(timed(status, b.env()))
                b.append()
                rows.setdefault("status after an append", []).append(timed(status, b.env()))
                b.answered(usage, "usage.bin")  # (the append is read: nothing moved since)
                rows.setdefault("usage warm", []).append(timed(usage, b.env()))
                b.append()
                rows.setdefault("usage after an append", []).append(timed(usage, b.env()))
            for _ in range(max(1, a.runs // 2 + 1)):
                port = free_port()
                base = f"http://127.0.0.1:{port}/api/"
                cmd = [*huddle, "serve", "--port", str(port), "--no-open", "--no-notify"]
                rows.setdefault("serve: first answer", []).append(
                    serve_until_answer(cmd, b.env(), base + "sessions", ready=base + "info")
                )
            table.append((spec, rows))
        finally:
            b.restore()
    med = statistics.median
    print(f"\n{'home (sessions:GB:rollouts:MB)':<32} {'measure':<24} {'wall':>8} {'cpu':>7}  RSS")
    for spec, rows in table:
        for name, runs in rows.items():
            rss = [r.rss_mb for r in runs if r.rss_mb is not None]
            print(
                f"{spec:<32} {name:<24} {med(r.wall for r in runs):>7.3f}s {med(r.cpu for r in runs):>6.2f}s"
                + (f"  {med(rss):.0f} MB" if rss else "")
            )


if __name__ == "__main__":
    main()
