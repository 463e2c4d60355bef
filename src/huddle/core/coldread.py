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
from collections.abc import Callable, Iterable
from typing import Any, cast

from huddle.sources import Handle, Source

from .reading import refresh_one

MIN_BYTES = 64 << 20  # below this, starting workers costs more than it saves
SMALLEST_JOB = 16  # the last jobs are a worker's 1/16 (jobs_for)

_work: dict[str, Handle] = {}  # what the forked workers inherit
_pack: list[Any] = []  # [row_of, head_of] while workers pack (see Packed)
# A handle as a worker pickled it, and its session's version then: the cache stores that
# pickle as it is while nothing moved (a handle is not unpickled only to be pickled again).
_pickled: weakref.WeakKeyDictionary[Handle, tuple[int, bytes]] = weakref.WeakKeyDictionary()


class FirstRead:
    """How a refresh reads the sessions it reads from their start. `workers`: many at
    once in forked worker processes when it pays (they come back without their whole
    timeline, as from the cache); `spawn`: workers started fresh, for a process with
    threads (the server). `keep_timelines=False`: a session read from its start is kept
    as the cache keeps it (a page that opens it reads it again), so a first read of a
    large history holds one timeline at a time. `progress(done, total)` hears each
    session read. `pack(handle) -> (row, brief)` (a keeper's cache still empty, forked
    workers): a session no other has a say in is left unread, as if cached, with the
    row its worker made (core.cache.leave_packed)."""

    __slots__ = ("keep_timelines", "pack", "progress", "spawn", "workers")

    def __init__(
        self,
        workers: bool = True,
        spawn: bool = False,
        keep_timelines: bool = True,
        progress: Callable[[int, int], None] | None = None,
        pack: Callable[[Handle], Any] | None = None,
    ) -> None:
        self.workers = workers
        self.spawn = spawn
        self.keep_timelines = keep_timelines
        self.progress = progress
        self.pack = pack


def pickled(h: Handle) -> bytes | None:
    """The pickle a worker made of this handle, if its session has not moved since."""
    got = _pickled.pop(h, None)
    return got[1] if got is not None and got[0] == h.session.version else None


class Packed:
    """A session a forked worker read and left packed: its pickle, and what lets the
    parent leave it unread, as a cached session the cache holds sleeps (core.cache.Dormant):
    the row the worker made of it, its head, its version; the response ids the ledger
    would index and the folder a title may come from (Handle.entangled), to tell whether
    another session has a say in that row (`sleepers`)."""

    __slots__ = ("blob", "folder", "head", "ids", "tangled", "version")

    def __init__(self, h: Handle, blob: bytes, head: dict[str, Any]) -> None:
        from huddle.model import events as ev

        s = h.session
        self.blob = blob
        self.version = s.version
        self.head = head
        # as the ledger indexes them (huddle.model.ledger.Ledger._index)
        self.ids = [e.id for e in s.events if e.kind == ev.USAGE and e.id and not e.copied]
        self.tangled = h.entangled()  # (what the ledger marks is known from `ids`)
        files = h.files()
        self.folder = os.path.dirname(files[0]) if files else ""


def sleepers(packed: dict[str, Packed]) -> set[str]:
    """The packed sessions whose rows no other session has a say in: none of their
    response ids is in another session of their source, and no session of their folder
    takes a title from across it. (Only when every session of the read is packed: the
    ids of one read here are not known.)"""
    owner: dict[tuple[str, str], str] = {}
    shared: set[str] = set()
    tangled = {p.folder for p in packed.values() if p.tangled}
    for k, p in packed.items():
        src = k.split(":", 1)[0]
        for rid in p.ids:
            first = owner.setdefault((src, rid), k)
            if first != k:
                shared.update((first, k))
    return {k for k, p in packed.items() if k not in shared and p.folder not in tangled and not p.tangled}


def take(blob: bytes, by_name: dict[str, Source]) -> Handle | None:
    """A worker's pickle of a handle, as a handle of the live sources (None if it does
    not load: the parent reads that session itself)."""
    import pickle

    try:
        h = pickle.loads(blob)
    except Exception:
        return None
    h.source = by_name.get(h.session.source)
    _pickled[h] = (h.session.version, blob)
    return cast(Handle, h)


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

    out: dict[str, bytes | Packed | None] = {}
    for k in keys:
        h = _work.get(k)
        if h is None:
            continue  # (a fresh worker's scan did not find it: the parent reads it)
        refresh_one(h)
        try:
            blob = pickle.dumps(h, protocol=pickle.HIGHEST_PROTOCOL)
            out[k] = Packed(h, blob, _pack[1](h, _pack[0](h))) if _pack else blob
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
    """The sessions cut into jobs, biggest sessions first, each job a share of what is
    left (guided scheduling): each worker takes the next job when it is done with one,
    and the last jobs are small, so the workers end close together whatever their
    bytes cost (a Codex rollout costs about twice a Claude transcript's per byte). A
    session larger than its job's share is a job alone."""
    total = sum(sizes.values())
    least = max(1, total // (workers * SMALLEST_JOB))
    left = total
    jobs: list[list[str]] = []
    open_job: list[str] = []
    held = 0
    for k in sorted(sizes, key=lambda k: (-sizes[k], k)):
        open_job.append(k)
        held += sizes[k]
        if held >= max(least, left // (2 * workers)):
            jobs.append(open_job)
            left -= held
            open_job, held = [], 0
    if open_job:
        jobs.append(open_job)
    return jobs


def hold_freed_memory() -> None:
    """glibc's malloc gives the free top of its heap back to the system once it passes
    twice its mmap threshold (128 kB at first; then the size of the largest mapped block
    freed, up to 32 MB), and faults it in again, zeroed, at the next allocations. A cold
    read allocates and frees megabytes all along (1 MB reads, long lines, events): one
    16 MB block freed first raises that threshold for the process and the workers forked
    after it, and takes half the read's page faults away (a few percent of its CPU).
    (`bytes(n)` is calloc'd: the block is mapped, never touched. Elsewhere, a no-op.)"""
    bytes(16 << 20)


def read_in_parallel(
    handles: dict[str, Handle],
    sources: Iterable[Source],
    spawn: Any = None,
    packed: dict[str, Packed] | None = None,
    pack: tuple[Callable[[Handle], Any], Callable[[Handle, Any], dict[str, Any]]] | None = None,
) -> set[str]:
    """Refresh the given (new, unread) handles in forked workers when it pays; the
    handles in `handles` are replaced by what the workers read. Returns the keys done.
    `spawn`: the Settings, for a process with threads: workers started fresh (no fork),
    each scanning the sources once. `packed` and `pack` (row_of, head_of), forked
    workers only: each session comes back as a Packed, its row made by `row_of(handle)`
    and its head by `head_of(handle, row)` in the worker, into `packed`, not unpickled
    (`take` unpickles one)."""
    workers = min(os.cpu_count() or 1, 8)
    if workers < 2 or not hasattr(os, "fork") or len(handles) < 2:
        return set()
    sizes = {k: _size(h) for k, h in handles.items()}
    if sum(sizes.values()) < MIN_BYTES:
        return set()
    jobs = jobs_for(sizes, workers)
    hold_freed_memory()
    import multiprocessing
    import pickle  # (here: a board with nothing new to read never loads it)

    sources = list(sources)
    by_name = {s.name: s for s in sources}
    done: set[str] = set()
    _work.clear()
    _work.update(handles)
    _pack[:] = list(pack) if pack is not None and packed is not None and spawn is None else []
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
                    if isinstance(hb, Packed) and packed is not None:
                        packed[k] = hb
                        done.add(k)
                        continue
                    h = take(hb, by_name) if isinstance(hb, bytes) else None
                    if h is not None:
                        handles[k] = h
                        done.add(k)
    except (OSError, RuntimeError, pickle.PickleError, EOFError):
        return done  # (a worker lost: the parent reads what did not come back)
    finally:
        _work.clear()
        _pack.clear()
    return done
