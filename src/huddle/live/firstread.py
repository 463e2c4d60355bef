"""A long-lived process's first read without a cache, run in a child process.

What a read leaves in a Python heap (freed objects among kept ones, unpickled worker
results) is not given back to the system: a server that read the bench's 2 GB home
itself held ~240 MB RSS for good, where one starting from the cache holds ~50 MB. The
child (io.apart) fills the cache as `huddle status` does (its own forked workers: it
has one thread) and exits; the server then starts from that cache, as on any later start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from huddle.io.apart import run_apart


def read_apart(core: Any, stopping: Callable[[], bool]) -> str | None:
    """Fill `core`'s empty cache in a child, then load it (every session asleep, its row
    as the child built it). Returns None when done, else one line saying why not (the
    caller reads in-process instead)."""
    if core.cache is None or not core.settings.huddle_home:
        return "no cache to fill"
    names = [s.name for s in core.sources]  # (the cache's key: the child's must be the same)
    note = run_apart(__name__, "fill_cache", (core.settings, names, getattr(core, "idle_after", None)), stopping)
    if note is not None:
        return note
    with core.lock:
        core.cache.store.close()  # opened again: what it read at the start (its meta) is the child's now
        core.keeper.dormant = core.cache.load_dormant(core.sources)
    return None


def fill_cache(argument: tuple[Any, list[str], float | None], say: Callable[[str], None]) -> None:
    """The child: a cold read into the cache, with the board rows it shows."""
    from huddle.core import FirstRead, Huddle, Keeper
    from huddle.views.board import board_json, leave_board

    settings, names, idle_after = argument
    h: Any = Huddle(settings, sources=names, keep=Keeper())
    if idle_after is not None:
        h.idle_after = idle_after  # (the rows' key: built alike, they stand on the server)
    h.refresh(FirstRead())
    built: dict = {}
    leave_board(h, board_json(h, built=built), built)
    if h.cache is not None:
        h.cache.store.close()
