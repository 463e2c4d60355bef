"""Search latency by match kind on a big home: the words as typed, their stems, words of
scripts without spaces (Chinese), and the per-session rows every answer carries.

    python bench/bench_search_kinds.py [--home DIR] [--copies 23] [--rounds 9]

`--home DIR`: a home already built (`claude/`, `codex/` under it, as bench/real_corpus.py
writes them; the real-shaped corpus holds Chinese text); else bench/real_corpus.py builds
one. The index is built once from nothing (its time and size said), then each query is
timed as the index query alone (exact hits; stemmed hits besides them; hits per session)
and as the whole answer (`views.search.search`: snippets read back, the session rows), the
median of `--rounds` runs, newest first, 20 results.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

QUERIES = {
    "exact, a common word": "error",
    "exact, a rarer word": "refactor",
    "exact, a phrase": '"the test"',
    "exact, a prefix": "migrat*",
    "stem: tests (test, testing)": "tests",
    "stem: reinstal (reinstall)": "reinstal",
    "stem: running (run, runs)": "running",
    "CJK, two characters: 版本": "版本",
    "CJK, four characters, in tool output: 設定檔案": "tool:設定檔案",
}


def median_ms(fn, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(times), 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", default=None)
    ap.add_argument("--copies", type=int, default=23)
    ap.add_argument("--rounds", type=int, default=9)
    a = ap.parse_args()
    if a.home:
        home = Path(a.home)
    else:
        from real_corpus import ensure

        home = ensure(a.copies, "claude,codex", None)
    from huddle.search.index import one_shot
    from huddle.search.query import parse
    from huddle.search.text import DEFAULT_SCOPE
    from huddle.sources import Settings
    from huddle.views.search import search

    hh = Path(tempfile.mkdtemp(prefix="huddle-search-kinds-"))
    try:
        settings = Settings(folders={"claude": str(home / "claude"), "codex": str(home / "codex")}, huddle_home=str(hh))
        size = sum(p.stat().st_size for p in home.rglob("*.jsonl"))
        t0 = time.perf_counter()
        h, index = one_shot(settings)
        built = time.perf_counter() - t0
        st = index.store.stats()
        out: dict = {
            "home": str(home),
            "transcript_mb": round(size / 1e6),
            "first_build_s": round(built, 1),
            "index_mb": round(st["bytes"] / 1e6, 1),
            "rows": st["rows"],
            "queries": {},
        }
        store = index.store
        for what, q in QUERIES.items():
            match = parse(q).fts(DEFAULT_SCOPE)
            assert match is not None
            whole = search(h, q)
            out["queries"][what] = {
                "query": q,
                "exact_hits_ms": median_ms(lambda m=match: store.search(m, limit=21), a.rounds),
                "stem_hits_ms": median_ms(lambda m=match: store.search(m, limit=21, table="stem", besides=m), a.rounds),
                "per_session_ms": median_ms(lambda m=match: store.per_session(m), a.rounds),
                "answer_ms": median_ms(lambda q=q: search(h, q), a.rounds),
                "answer_exact_only_ms": median_ms(lambda q=q: search(h, q, exact=True), a.rounds),
                "results": len(whole["results"]),
                "stemmed": sum(r["match"] == "stem" for r in whole["results"]),
                "sessions": len(whole["sessions"]),
                "hits": sum(g["hits"] for g in whole["sessions"]),
            }
        print(json.dumps(out, indent=2, ensure_ascii=False))
    finally:
        shutil.rmtree(hh, ignore_errors=True)


if __name__ == "__main__":
    main()
