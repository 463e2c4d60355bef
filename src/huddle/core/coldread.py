"""First reads of many sessions, shared between processes.

A cold `huddle status` or `huddle usage` reads every byte once; the sessions are
independent, so on a machine with several cores each forked worker reads its share
and sends back the handles in their cache form (derived state and usage events, not
the whole timeline, which the views read again when they need it). Only for
one-shot commands: a process with threads (the server) never forks; it starts its
workers fresh instead (`spawn`), each scanning the sources itself for the sessions it
is given, as `Huddle.read_whole` does.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Iterable
from typing import Any

from huddle.sources import Handle, Source

from .reading import refresh_one

MIN_BYTES = 64 << 20  # below this, starting workers costs more than it saves

_work: dict[str, Handle] = {}  # what the forked workers inherit
# A handle as a worker pickled it, and its session's version then: the cache stores that
# pickle as it is while nothing moved (a handle is not unpickled only to be pickled again).
_pickled: weakref.WeakKeyDictionary[Handle, tuple[int, bytes]] = weakref.WeakKeyDictionary()


def pickled(h: Handle) -> bytes | None:
    """The pickle a worker made of this handle, if its session has not moved since."""
    got = _pickled.pop(h, None)
    return got[1] if got is not None and got[0] == h.session.version else None


def _size(h: Handle) -> int:
    total = 0
    for f in h.files() or []:
        try:
            total += os.stat(f).st_size
        except OSError:
            pass
    return total


def _read(keys: list[str]) -> bytes:
    import pickle

    out: dict[str, bytes | None] = {}
    for k in keys:
        h = _work[k]
        refresh_one(h)
        try:
            out[k] = pickle.dumps(h, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:
            out[k] = None  # the parent reads this one itself
    return pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)


def _read_fresh(job: tuple[Any, list[str], list[str]]) -> bytes:
    """A spawned worker: the sources made again from the settings, scanned, and the keys
    given read (what a fresh scan does not find is left to the parent)."""
    from huddle.sources import all_sources, guarded

    settings, names, keys = job
    found: dict[str, Handle] = {}
    for src in all_sources(settings, names):
        if any(k.startswith(src.name + ":") for k in keys):
            found.update(guarded(f"{src.name} scan", src.scan, {}) or {})
    _work.clear()
    _work.update((k, found[k]) for k in keys if k in found)
    return _read(list(_work))


def read_in_parallel(handles: dict[str, Handle], sources: Iterable[Source], spawn: Any = None) -> set[str]:
    """Refresh the given (new, unread) handles in forked workers when it pays; the
    handles in `handles` are replaced by what the workers read. Returns the keys done.
    `spawn`: the Settings, for a process with threads: workers started fresh (no fork)."""
    workers = min(os.cpu_count() or 1, 8)
    if workers < 2 or not hasattr(os, "fork") or len(handles) < 2:
        return set()
    sizes = {k: _size(h) for k, h in handles.items()}
    if sum(sizes.values()) < MIN_BYTES:
        return set()
    groups: list[list[str]] = [[] for _ in range(workers)]
    loads = [0] * workers
    for k in sorted(sizes, key=sizes.__getitem__, reverse=True):  # biggest first, to the lightest worker
        i = loads.index(min(loads))
        groups[i].append(k)
        loads[i] += sizes[k]
    import multiprocessing
    import pickle  # (here: a board with nothing new to read never loads it)

    sources = list(sources)
    names = [s.name for s in sources]
    _work.clear()
    _work.update(handles)
    try:
        if spawn is not None:
            with multiprocessing.get_context("spawn").Pool(workers) as pool:
                results = pool.map(_read_fresh, [(spawn, names, g) for g in groups if g])
        else:
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                results = pool.map(_read, [g for g in groups if g])
    except (OSError, RuntimeError, pickle.PickleError, EOFError):
        return set()
    finally:
        _work.clear()
    by_name = {s.name: s for s in sources}
    done = set()
    for blob in results:
        for k, hb in pickle.loads(blob).items():
            if hb is None:
                continue
            h = pickle.loads(hb)
            h.source = by_name.get(h.session.source)
            handles[k] = h
            _pickled[h] = (h.session.version, hb)
            done.add(k)
    return done
