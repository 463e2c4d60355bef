"""Full-read throughput and memory of the Vibe source, and what a live refresh costs.

    python bench/bench_vibe.py [VIBE_HOME]      (builds bench/corpus/vibe, ~100 MB, if missing)

Prints, each in a fresh process so peak RSS is its own:
  huddle   a full read into events (scan, every store's current generation, its
           chunks and journal segment, the previous generation's segment for usage,
           legacy folders, sub-agent stores, trees linked)
  msgspec  for context, an untyped decode of every JSON file and journal line on disk
Then, in one process after a full read: an idle refresh, a refresh after one turn's
journal lines were appended to the biggest store (reads only those bytes), and a
refresh after that store published a new generation.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import Measure, huddle_reading, read_all, run_child  # noqa: E402

DEFAULT = HERE / "corpus" / "vibe"


def files(root: Path) -> list[Path]:
    return sorted(
        p for p in (root / "logs" / "session").rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl", "")
    )


def huddle_for(root: Path):
    return huddle_reading("vibe", root)


def child(mode: str, root: Path) -> None:
    import msgspec

    h = huddle_for(root) if mode == "huddle" else None
    dec = msgspec.json.Decoder()
    with Measure(mode) as m:
        if mode == "huddle":
            m.items = read_all(h)
        else:  # every JSON file whole and every journal line: what a naive reader would decode
            for f in files(root):
                with open(f, "rb") as fh:
                    if f.suffix == ".jsonl":
                        for line in fh:
                            dec.decode(line)
                            m.items += 1
                    else:
                        dec.decode(fh.read())
                        m.items += 1


def live(root: Path) -> None:
    """Refresh costs on a copy of the biggest unified store, after a full read."""
    sys.path.insert(0, str(HERE))
    from vibe_corpus import StoreWriter, Template, dir_size

    work = HERE / "corpus" / "vibe-live"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(root, work)
    h = huddle_for(work)
    h.refresh()
    unified = work / "logs" / "session" / "unified"
    big = max((p for p in unified.iterdir() if not p.name.startswith(("child-", "."))), key=dir_size)
    handle = h.handle(f"vibe:{big.name}")
    reader = handle.stores[big.name][0]
    t = time.perf_counter()
    h.refresh()
    idle = time.perf_counter() - t
    # one more turn on the biggest store, written the way Vibe writes it
    cur = json.loads((big / "CURRENT").read_text())
    w = StoreWriter.__new__(StoreWriter)
    w.tpl = Template("3.0.3" if cur["store_format_minor"] == 10 else "2.26.1")
    w.rnd, w.sid, w.cwd, w.dir = random.Random(1), big.name, "/home/dev/work/proj-live", big
    with open(big / f"journal/{cur['snapshot_sequence'] + 1:016d}.jsonl") as journal:
        w.clock, w.seq = int(time.time() * 1000), cur["snapshot_sequence"] + sum(1 for _ in journal)
    w.entries, w.envelope, w.actions = {}, {}, []
    w.generations = [(cur["generation"], f"journal/{cur['snapshot_sequence'] + 1:016d}.jsonl")]
    w.segment = big / w.generations[0][1]
    size0 = w.segment.stat().st_size
    w.turn(3, first=False)
    appended = w.segment.stat().st_size - size0
    t = time.perf_counter()
    handle.refresh()
    grown = time.perf_counter() - t
    loads = reader.loads
    w.publish()
    t = time.perf_counter()
    handle.refresh()
    published = time.perf_counter() - t
    print(
        f"live     idle refresh of all {len(h.handles)} sessions {idle * 1e3:.1f} ms; "
        f"the biggest store ({dir_size(big) / 1e6:.1f} MB, {len(handle.session.events)} events):\n"
        f"         one turn appended ({appended / 1e3:.0f} kB of journal): its refresh {grown * 1e3:.1f} ms, "
        f"generations loaded so far {loads}\n"
        f"         then a new generation published: its refresh {published * 1e3:.1f} ms "
        f"(new chunks and documents only), generations loaded {reader.loads}"
    )
    shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2], Path(sys.argv[3]))
        return
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    if not root.exists():
        sys.path.insert(0, str(HERE))
        from vibe_corpus import write_vibe_corpus

        print(f"building corpus in {root} ...", flush=True)
        print(write_vibe_corpus(str(root), n_sessions=300, target_bytes=100 << 20))
    fs = files(root)
    size = sum(p.stat().st_size for p in fs)
    stores = len([p for p in (root / "logs" / "session" / "unified").iterdir() if not p.name.startswith(".")])
    print(
        f"corpus: {size / 1e6:.0f} MB in {len(fs)} files, {stores} unified stores "
        f"(incl. sub-agents), {len(list((root / 'logs' / 'session').glob('session_*')))} legacy sessions"
    )
    for p in fs:  # warm the page cache: measure parsing, not the disk
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass
    results = {}
    for mode in ("huddle", "msgspec"):
        r = results[mode] = run_child(__file__, mode, root)
        what = "events" if mode == "huddle" else "documents and lines"
        print(
            f"{mode:8s} {size / 1e6 / r['seconds']:8.0f} MB/s  {r['seconds']:6.2f} s  peak RSS {r['rss_mb']:6.0f} MB  "
            f"({r['items']} {what})"
        )
    print(
        f"ratio: huddle end-to-end is {results['msgspec']['seconds'] / results['huddle']['seconds']:.2f}x "
        "an untyped msgspec decode of every file (which reads everything, old generations included)"
    )
    live(root)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
