"""Full-parse throughput and memory of the Claude source, beside plain decoders.

    python bench/bench_parse.py [CORPUS_DIR]      (builds bench/corpus/claude if missing)

Prints MB/s end to end into events (huddle), and for context the same bytes through
json.loads and a bare msgspec decode, each in a fresh process so peak RSS is its own.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import Measure, decode_lines, huddle_reading, read_all, run_child, warm  # noqa: E402

DEFAULT = HERE / "corpus" / "claude"


def corpus_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.glob("projects/**/*.jsonl"))


def child(mode: str, root: Path) -> None:
    files = sorted(str(p) for p in root.glob("projects/**/*.jsonl"))
    from huddle.sources.claude.records import decode_record  # imports are not parsing: outside the timing

    h = huddle_reading("claude", root) if mode == "huddle" else None
    with Measure(mode) as m:
        if mode == "huddle":
            m.items = read_all(h)
        elif mode == "msgspec-typed":
            for f in files:
                with open(f, "rb") as fh:
                    for line in fh:
                        try:  # (a real history holds lines no decoder takes: counted, as the parser keeps them)
                            decode_record(line)
                        except ValueError:
                            pass
                        m.items += 1
        else:
            m.items = decode_lines(files, mode)


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2], Path(sys.argv[3]))
        return
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    if not root.exists():
        sys.path.insert(0, str(HERE))
        from claude_corpus import write_claude_corpus

        print(f"building corpus in {root} ...", flush=True)
        write_claude_corpus(str(root))
    size = corpus_bytes(root)
    sessions = len(list(root.glob("projects/*/*.jsonl")))
    biggest = max(p.stat().st_size for p in root.glob("projects/**/*.jsonl"))
    print(f"corpus: {size / 1e6:.0f} MB, {sessions} sessions, largest file {biggest / 1e6:.0f} MB")
    warm(root.glob("projects/**/*.jsonl"))
    results = {}
    for mode in ("huddle", "msgspec-typed", "msgspec", "json"):
        r = run_child(__file__, mode, root)
        results[mode] = r
        print(
            f"{mode:14s} {size / 1e6 / r['seconds']:8.0f} MB/s  {r['seconds']:6.2f} s  peak RSS {r['rss_mb']:6.0f} MB  ({r['items']} {'events' if mode == 'huddle' else 'lines'})"
        )
    h = results["huddle"]["seconds"]
    print(
        f"ratios: huddle end-to-end is {results['json']['seconds'] / h:.1f}x json.loads, "
        f"{results['msgspec']['seconds'] / h:.1f}x untyped msgspec decode"
    )


if __name__ == "__main__":
    main()
