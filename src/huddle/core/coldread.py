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
JOBS_PER_WORKER = 4  # (coldread.jobs_for)

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
        h = _work.get(k)
        if h is None:
            continue  # (a fresh worker's scan did not find it: the parent reads it)
        refresh_one(h)
        try:
            out[k] = pickle.dumps(h, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:
            out[k] = None  # the parent reads this one itself
    return pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)


def _scan_fresh(settings: Any, names: list[str]) -> None:
    """A spawned worker's start: the sources made again from the settings and scanned
    once (what a fresh scan does not find is left to the parent)."""
    from huddle.sources import all_sources, guarded

    _work.clear()
    for src in all_sources(settings, names):
        _work.update(guarded(f"{src.name} scan", src.scan, {}) or {})


def jobs_for(sizes: dict[str, int], workers: int) -> list[list[str]]:
    """The sessions cut into jobs of about equal bytes, biggest first, several per
    worker: each worker takes the next job when it is done with one, so a worker that
    drew costlier bytes (a Codex rollout costs about twice a Claude transcript's) is not
    the one everyone waits for at the end. A session larger than a job is a job alone."""
    total = sum(sizes.values())
    target = max(1, total // (workers * JOBS_PER_WORKER))
    jobs: list[list[str]] = []
    open_job: list[str] = []
    held = 0
    for k in sorted(sizes, key=lambda k: (-sizes[k], k)):
        open_job.append(k)
        held += sizes[k]
        if held >= target:
            jobs.append(open_job)
            open_job, held = [], 0
    if open_job:
        jobs.append(open_job)
    return jobs


def read_in_parallel(handles: dict[str, Handle], sources: Iterable[Source], spawn: Any = None) -> set[str]:
    """Refresh the given (new, unread) handles in forked workers when it pays; the
    handles in `handles` are replaced by what the workers read. Returns the keys done.
    `spawn`: the Settings, for a process with threads: workers started fresh (no fork),
    each scanning the sources once."""
    workers = min(os.cpu_count() or 1, 8)
    if workers < 2 or not hasattr(os, "fork") or len(handles) < 2:
        return set()
    sizes = {k: _size(h) for k, h in handles.items()}
    if sum(sizes.values()) < MIN_BYTES:
        return set()
    jobs = jobs_for(sizes, workers)
    import multiprocessing
    import pickle  # (here: a board with nothing new to read never loads it)

    sources = list(sources)
    by_name = {s.name: s for s in sources}
    done: set[str] = set()
    _work.clear()
    _work.update(handles)
    try:
        if spawn is not None:
            names = [s.name for s in sources if any(k.startswith(s.name + ":") for k in handles)]
            pool = multiprocessing.get_context("spawn").Pool(workers, _scan_fresh, (spawn, names))
        else:
            pool = multiprocessing.get_context("fork").Pool(workers)
        with pool:
            # each job's handles are taken in as it comes back, while the workers read on
            for blob in pool.imap_unordered(_read, jobs):
                for k, hb in pickle.loads(blob).items():
                    if hb is None:
                        continue
                    h = pickle.loads(hb)
                    h.source = by_name.get(h.session.source)
                    handles[k] = h
                    _pickled[h] = (h.session.version, hb)
                    done.add(k)
    except (OSError, RuntimeError, pickle.PickleError, EOFError):
        return done  # (a worker lost: the parent reads what did not come back)
    finally:
        _work.clear()
    return done
