"""Small helpers shared by the tests."""

from __future__ import annotations

import time
from pathlib import Path

from huddle.core import Huddle
from huddle.sources import Settings

NOWHERE = "/nonexistent-huddle-test"


def claude_huddle(config_dir: Path | str, huddle_home: Path | str = NOWHERE) -> Huddle:
    """A Huddle reading only one Claude config dir."""
    s = Settings(folders={"claude": str(config_dir), "codex": NOWHERE, "vibe": NOWHERE}, huddle_home=str(huddle_home))
    h = Huddle(s, sources=["claude"])
    h.refresh()
    return h


def grow_in_pieces(config: Path, steps) -> Huddle:
    """Empty every session file of a copied config dir, then write each back in the
    pieces `steps` says ((file index, fraction of what is left, refresh after?)),
    refreshing one Huddle along the way; the rest last. Returns that Huddle, refreshed."""
    files = sorted(config.glob("projects/**/*.jsonl"))
    contents = {f: f.read_bytes() for f in files}
    for f in files:
        f.write_bytes(b"")
    h = claude_huddle(config)
    pos = dict.fromkeys(files, 0)
    for i, frac, refresh in steps:
        f = files[i % len(files)]
        end = pos[f] + int((len(contents[f]) - pos[f]) * frac)
        with open(f, "ab") as out:
            out.write(contents[f][pos[f] : end])
        pos[f] = end
        if refresh:
            h.refresh()
    for f in files:
        with open(f, "ab") as out:
            out.write(contents[f][pos[f] :])
    h.refresh()
    return h


def wait_for(fn, what: object = None, deadline: float = 120.0):
    """Poll `fn()` until it gives something true (returned), failing after `deadline`
    seconds: a deadline to wait on, never a timed assertion."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        got = fn()
        if got:
            return got
        time.sleep(0.02)
    raise AssertionError(f"not within {deadline}s: {what or fn}")
