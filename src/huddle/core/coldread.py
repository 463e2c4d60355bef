"""First reads of many sessions, shared between processes.

A cold `huddle status` or `huddle usage` reads every byte once; the sessions are
independent, so on a machine with several cores each forked worker reads its share
and sends back the handles in their cache form (derived state and usage events, not
the whole timeline, which the views read again when they need it). Only for
one-shot commands: the server, with its threads, never forks.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterable

from huddle.sources import Handle, Source

from .reading import refresh_one

MIN_BYTES = 64 << 20  # below this, starting workers costs more than it saves

_work: dict[str, Handle] = {}  # what the forked workers inherit


def _size(h: Handle) -> int:
    total = 0
    for f in h.files() or []:
        try:
            total += os.stat(f).st_size
        except OSError:
            pass
    return total


def _read(keys: list[str]) -> bytes:
    out: dict[str, bytes | None] = {}
    for k in keys:
        h = _work[k]
        refresh_one(h)
        try:
            out[k] = pickle.dumps(h, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:
            out[k] = None  # the parent reads this one itself
    return pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)


def read_in_parallel(handles: dict[str, Handle], sources: Iterable[Source]) -> set[str]:
    """Refresh the given (new, unread) handles in forked workers when it pays; the
    handles in `handles` are replaced by what the workers read. Returns the keys done."""
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

    _work.clear()
    _work.update(handles)
    try:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            results = pool.map(_read, [g for g in groups if g])
    except (OSError, RuntimeError, pickle.PickleError):
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
            done.add(k)
    return done
