"""Whole timelines: a session the cache held without its timeline read again from its
files (for a page, one kept while pages show it; for exporters, one at a time and not
kept), and what was read in the cache's form left unread again. Functions of the core
(Huddle delegates)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from huddle.model.ledger import mark_as
from huddle.model.session import Session
from huddle.sources import guarded

from .cache import Dormant
from .reading import cache_form, refresh_one

if TYPE_CHECKING:
    from .huddle import Huddle

# Timelines read whole for pages and kept though no page follows them now: going back to
# a page just left costs nothing. Past these, a timeline is let go (`let_go`).
KEEP_WHOLE = 8


def put_to_sleep(core: Huddle) -> int:
    """Leave unread again (lazy) every session held as the cache keeps it (not read
    whole for a page) that would sleep if read from the cache now: its row is saved
    and settled, and nothing it was read from moved. Returns how many."""
    n = 0
    with core.lock:
        if not core.lazy or core.cache is None:
            return 0
        for key, h in list(core.handles.items()):
            head = core.cache.heads.get(key)
            if h.session.complete or head is None or core.cache.versions.get(key) != h.session.version:
                continue
            d = Dormant(key, h.session.version, head, raw=core.cache.raw.get(key))
            if core._sleeps(d):
                del core.handles[key]
                core.dormant[key] = d
                n += 1
    return n


def complete(core: Huddle, key: str) -> Session | None:
    """The session with its whole timeline: one loaded from the cache keeps only its
    usage events, so it is read again from its files the first time a view needs it."""
    with core.lock:
        h = core.handle(key)
        if h is None:
            return None
        core.whole_at[h.key] = time.monotonic()  # (what `let_go` keeps: the last read)
        if h.session.complete:
            return h.session
        src = next((s for s in core.sources if s.name == h.session.source), None)
        nh = guarded("rescan", src.fresh, h) if src is not None else None
        if src is not None and nh is not None:
            refresh_one(nh)
            guarded(f"{src.name} adopt", nh.adopt, h)  # (what was decided across sessions, as held)
            mark_as(nh.session, h.session)  # counted once across sessions, as held (a core of it alone too)
            core.handles[h.key] = nh
            core.ledger.sync({k: x.session for k, x in core.handles.items()})
            for fn in core.on_complete:
                fn(h.key, nh.session)
            return nh.session
        return h.session


def let_go(core: Huddle, followed: set[str], keep: int = KEEP_WHOLE) -> int:
    """A lazy core's sessions held whole that no page follows (`followed`: their ids),
    but for the `keep` asked for last, back in the cache's form (cache_form): their
    timelines are let go, their reading and rows go on as a start from the cache leaves
    them, and a page that opens one reads it whole again. So a server open all day holds
    its board and the pages open now, not every session anyone looked at (1,000 pages
    opened one after another held 308 MB). Returns how many."""
    with core.lock:
        if not core.lazy:
            return 0  # (a core that holds every timeline by choice: `serve --no-cache`)
        for gone in [k for k in core.whole_at if k not in core.handles]:
            del core.whole_at[gone]
        spare = [k for k, h in core.handles.items() if h.session.complete and h.session.id not in followed]
        spare.sort(key=lambda k: core.whole_at.get(k, 0.0), reverse=True)
        n = 0
        for key in spare[keep:]:
            h = core.handles[key]
            small = cache_form(h)
            if small is h:
                continue  # (one that cannot be pickled stays as it is)
            core.handles[key] = small
            core.whole_at.pop(key, None)
            n += 1
        if n:  # (the ledger holds each session by identity: the new ones are indexed again)
            core.ledger.sync({k: x.session for k, x in core.handles.items()})
        return n


def read_whole(core: Huddle, keys: Iterable[str]) -> Iterator[Session]:
    """Each of these sessions with its whole timeline, one at a time and not kept:
    for exporters that walk a whole history in the memory of one session. A session
    already complete is given as it is; the others are read again from their files."""
    wanted: dict[str, list[str]] = {}
    for key in keys:
        h = core.handle(key)
        if h is not None:
            wanted.setdefault(h.session.source, []).append(h.key)
    for src in core.sources:
        names = wanted.get(src.name)
        if not names:
            continue
        for key in names:
            h = core.handles.get(key)
            if h is not None and h.session.complete:
                yield h.session
                continue
            nh = guarded(f"{src.name} rescan", src.fresh, h) if h is not None else None
            if nh is not None:
                refresh_one(nh)
                if h is not None:
                    guarded(f"{src.name} adopt", nh.adopt, h)
                    mark_as(nh.session, h.session)  # counted once across sessions, as held
                yield nh.session
