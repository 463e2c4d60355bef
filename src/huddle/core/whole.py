"""Whole timelines: a session held without its timeline (the cache keeps a session's
usage events, not its whole timeline) read again from its files, for a page (kept
while pages show it: core.keeper.let_go lets it go after) or for exporters (one at a
time, not kept). Functions of the core (Huddle delegates)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from huddle.model.ledger import mark_as
from huddle.model.session import Session
from huddle.sources import guarded

from .reading import refresh_one

if TYPE_CHECKING:
    from .huddle import Huddle


def complete(core: Huddle, key: str) -> Session | None:
    """The session with its whole timeline: one loaded from the cache keeps only its
    usage events, so it is read again from its files the first time a view needs it."""
    with core.lock:
        h = core.handle(key)
        if h is None:
            return None
        if core.keeper is not None:
            core.keeper.whole_at[h.key] = time.monotonic()  # (what `let_go` keeps: the last read)
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
