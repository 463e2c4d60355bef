"""Redaction speed: MB/s of text through the built-in rules.

The text is every string of the sample transcripts and of /work/shared/external
(real agent traffic: code, shell output, prose), with the planted secrets of the
tests spread through it. Two ways: many strings at once (`Redactor.texts`, what an
export does) and one big text at a time (`Redactor.text`). Runs are interleaved
and repeated; the best and the median are printed, of wall time and of this process's
CPU time (the machine is shared: under load the CPU figure is the algorithm's).

    python bench/bench_redact.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import glob
import statistics
import sys
import time
from pathlib import Path

import msgspec

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE.parent / "tests"))

from huddle.redact.redactor import Redactor, strings_of  # noqa: E402
from planted import planted_texts  # noqa: E402

EXTERNAL = "/work/shared/external"


def strings() -> list[str]:
    out: list[str] = []
    files = glob.glob(str(HERE.parent / "tests/fixtures/samples/**/*.jsonl"), recursive=True)
    files += glob.glob(f"{EXTERNAL}/**/*.jsonl", recursive=True)
    for path in sorted(files):
        with open(path, "rb") as f:
            for line in f:
                try:
                    strings_of(msgspec.json.decode(line), out)
                except msgspec.DecodeError:
                    continue
    planted = planted_texts()
    step = max(1, len(out) // (len(planted) * 20))
    mixed: list[str] = []
    for i in range(0, len(out), step):
        mixed.append(planted[(i // step) % len(planted)])
        mixed.extend(out[i : i + step])
    return mixed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    texts = strings()
    size = sum(len(t.encode()) for t in texts) / 1e6
    big = [t for t in texts if len(t) >= 2000]
    big_size = sum(len(t.encode()) for t in big) / 1e6
    runs: dict[str, list[tuple[float, float]]] = {"many at once": [], "big texts one by one": []}
    found = 0
    for _ in range(a.rounds):
        r = Redactor()
        t0, c0 = time.perf_counter(), time.process_time()
        r.texts(texts)
        runs["many at once"].append((size / (time.perf_counter() - t0), size / (time.process_time() - c0)))
        found = r.replaced
        r = Redactor()
        t0, c0 = time.perf_counter(), time.process_time()
        for t in big:
            r.text(t)
        runs["big texts one by one"].append(
            (big_size / (time.perf_counter() - t0), big_size / (time.process_time() - c0))
        )
    print(f"text: {len(texts):,} strings, {size:.1f} MB ({len(big):,} of 2 KB or more: {big_size:.1f} MB)")
    planted = set(planted_texts())
    print(f"replaced: {found} (texts with a planted secret: {sum(1 for t in texts if t in planted)})")
    for name, v in runs.items():
        wall = [w for w, _ in v]
        cpu = [c for _, c in v]
        print(
            f"{name:22} wall: best {max(wall):6.1f} MB/s, median {statistics.median(wall):6.1f}   "
            f"CPU: best {max(cpu):6.1f} MB/s, median {statistics.median(cpu):6.1f}   ({a.rounds} rounds)"
        )


if __name__ == "__main__":
    main()
