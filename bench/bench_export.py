"""Export: time and file size for the bench corpus's 300 MB session, as `huddle export`
does it (the core finds the sessions through its cache, reads the one session whole,
reads its tool pieces back, trims, redacts, writes each format).

    python bench/bench_export.py [CORPUS_DIR] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

from bench_search import DEFAULT, corpus, settings_for  # noqa: E402
from common import warm  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", nargs="?", default=str(DEFAULT))
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    root = Path(a.root)
    files, size = corpus(root)
    big = max(files, key=lambda p: p.stat().st_size)
    family = [p for p in files if p.stem == big.stem or big.stem in p.parts]
    big_size = sum(p.stat().st_size for p in family)
    print(f"corpus: {size / 1e6:.0f} MB; the big session: {big_size / 1e6:.0f} MB in {len(family)} files")
    warm(family)

    from huddle.core import FirstRead, Huddle, Keeper, WholeMode
    from huddle.views.export import Options, export_data, render

    cfg = settings_for(root, tempfile.mkdtemp(prefix="huddle-bench-export-"))
    t0 = time.perf_counter()
    h = Huddle(cfg, keep=Keeper(WholeMode()))
    h.refresh(FirstRead())
    print(f"finding the sessions (first run, parallel cold read): {time.perf_counter() - t0:.1f} s")
    runs: dict[str, list[float]] = {"data": [], "html": [], "md": [], "json": []}
    sizes: dict[str, int] = {}
    data: dict = {}
    for _ in range(a.rounds):
        h.handles[f"claude:{big.stem}"].session.complete = False  # read whole again, as a new command would
        t0 = time.perf_counter()
        data, _ = export_data(h, big.stem, Options())
        runs["data"].append(time.perf_counter() - t0)
        for fmt in ("html", "md", "json"):
            t0 = time.perf_counter()
            blob = render(data, fmt)
            runs[fmt].append(time.perf_counter() - t0)
            sizes[fmt] = len(blob)
    print(
        f"events {len(data['events']):,}; {data['trimmed']['pieces']:,} heavy pieces trimmed "
        f"({data['trimmed']['characters_left_out'] / 1e6:.0f} M characters left out); "
        f"{data['redaction']['replaced']} secrets replaced"
    )
    d = statistics.median(runs["data"])
    print(f"read, trim and redact: {d:.1f} s ({big_size / 1e6 / d:.0f} MB/s of session) (median of {a.rounds})")
    for fmt in ("html", "md", "json"):
        t = statistics.median(runs[fmt])
        print(
            f"  {fmt:5} {t:6.1f} s to write, {sizes[fmt] / 1e6:7.1f} MB ({100 * sizes[fmt] / big_size:.1f}% of the session)"
        )


if __name__ == "__main__":
    main()
