"""What the parse benchmarks share: a fresh process per measured mode (so peak RSS is
that mode's own), the plain decoders huddle is compared with, a page-cache warm-up,
and a Huddle reading one source."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))


def run_child(script: str, mode: str, root: Path) -> dict:
    """Run `script --child MODE ROOT` and return the JSON result it prints last."""
    out = subprocess.run(
        [sys.executable, script, "--child", mode, str(root)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def warm(paths) -> None:
    """Read every file once: the benches measure parsing, not the disk."""
    for p in paths:
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass


def decode_lines(paths, mode: str) -> int:
    """The baselines: every line of every file through msgspec (untyped) or json.loads."""
    import msgspec

    decode = msgspec.json.Decoder().decode if mode == "msgspec" else json.loads
    n = 0
    for p in paths:
        with open(p, "rb") as fh:
            for line in fh:
                try:  # (msgspec.DecodeError is a ValueError, as json's is)
                    decode(line)
                except ValueError:
                    pass
                n += 1
    return n


def huddle_reading(source: str, root: Path):
    """A Huddle that reads only `source`, from `root`."""
    from huddle.core import Huddle
    from huddle.sources import Settings

    return Huddle(Settings(folders={source: str(root)}, huddle_home="/nonexistent"), sources=[source])


def read_all(h) -> int:
    """A full read; the number of events. A session that failed fails the bench."""
    h.refresh()
    bad = [s.error for s in h.sessions() if s.error]
    if bad:  # (a real history holds files no reader takes: said, the parse measured all the same)
        print(f"{len(bad)} sessions with errors, e.g. {bad[:2]}", file=sys.stderr)
    return sum(len(s.events) for s in h.sessions())


class Measure:
    """Wall and CPU time and peak RSS of what runs inside it, printed as the child's result."""

    def __init__(self, mode: str):
        self.mode = mode
        self.items = 0

    def __enter__(self) -> Measure:
        self.t0, self.c0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is not None:
            return
        import resource

        dt, cpu = time.perf_counter() - self.t0, time.process_time() - self.c0
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps({"mode": self.mode, "seconds": dt, "cpu": cpu, "items": self.items, "rss_mb": rss}))
