"""Full-parse throughput and memory of the Codex source, beside plain decoders.

    python bench/bench_codex.py [CODEX_HOME]      (builds bench/corpus/codex, ~200 MB, if missing)

Prints MB/s end to end into events (huddle: scan, session_meta of every rollout,
every line into events, trees linked), and for context the same bytes through
huddle's own typed decode alone (the ceiling: what a parse that did nothing but
decode would reach), a bare msgspec decode and json.loads, each in a fresh process
so peak RSS is its own.
Throughput is per second of CPU (best of three): on a shared machine wall time
mostly measures the neighbours.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import Measure, decode_lines, huddle_reading, read_all, run_child, warm  # noqa: E402

DEFAULT = HERE / "corpus" / "codex"


def rollouts(root: Path) -> list[Path]:
    return sorted(root.glob("sessions/*/*/*/rollout-*.jsonl"))


def typed_lines(paths) -> int:
    """Every line through the typed decode huddle's parser starts with (records.Line):
    the ceiling of a full parse. A line it rejects is counted, as the parser keeps it."""
    import msgspec

    from huddle.sources.codex.records import decode_line

    n = 0
    for p in paths:
        with open(p, "rb") as fh:
            for line in fh:
                try:
                    decode_line(line)
                except msgspec.DecodeError:
                    pass
                n += 1
    return n


def child(mode: str, root: Path) -> None:
    files = [str(p) for p in rollouts(root)]
    h = huddle_reading("codex", root) if mode == "huddle" else None
    if mode == "typed":
        import huddle.sources.codex.records  # noqa: F401  (imports are not decoding: outside the timing)
    with Measure(mode) as m:
        if mode == "huddle":
            m.items = read_all(h)
        elif mode == "typed":
            m.items = typed_lines(files)
        else:
            m.items = decode_lines(files, mode)


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2], Path(sys.argv[3]))
        return
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    if not root.exists():
        sys.path.insert(0, str(HERE))
        from codex_corpus import write_codex_corpus

        print(f"building corpus in {root} ...", flush=True)
        write_codex_corpus(str(root), n_threads=400, target_bytes=200 << 20)
    files = rollouts(root)
    size = sum(p.stat().st_size for p in files)
    print(
        f"corpus: {size / 1e6:.0f} MB, {len(files)} rollouts, largest {max(p.stat().st_size for p in files) / 1e6:.0f} MB"
    )
    warm(files)
    results = {}
    runs = 3  # best of three: the machine is shared, the best run is the least disturbed
    for mode in ("huddle", "typed", "msgspec", "json"):
        r = results[mode] = min((run_child(__file__, mode, root) for _ in range(runs)), key=lambda r: r["cpu"])
        what = "events" if mode == "huddle" else "lines"
        print(
            f"{mode:8s} {size / 1e6 / r['cpu']:6.0f} MB/s of CPU ({size / 1e6 / r['seconds']:4.0f} wall)  "
            f"{r['cpu']:5.2f} s  peak RSS {r['rss_mb']:4.0f} MB  ({r['items']} {what})"
        )
    h = results["huddle"]["cpu"]
    print(
        f"ratios: huddle end-to-end is {results['json']['cpu'] / h:.1f}x json.loads, "
        f"{results['msgspec']['cpu'] / h:.1f}x an untyped msgspec decode, "
        f"{results['typed']['cpu'] / h:.2f} of its own typed decode (the ceiling)"
    )


if __name__ == "__main__":
    main()
