"""Reading one session, contained: the step the core and its forked workers share."""

from __future__ import annotations

import pickle
from collections.abc import Iterable
from typing import TYPE_CHECKING

from huddle.sources import Handle

if TYPE_CHECKING:
    from .huddle import Huddle


def refresh_one(h: Handle) -> bool:
    """Read what one session appended; True if anything changed. Its failure is its own:
    the session is listed with an `error`, the others are untouched. The error clears on
    the next read that works, whether or not the file changed (a permission restored,
    bad bytes cut away), and an error that comes or goes changes the row at once."""
    s = h.session
    before = s.error
    did = False
    try:
        did = h.refresh()
    except Exception as exc:  # this session's failure is its own: listed with an error
        s.error = h.failed = f"{s.source} session {s.id}: {_why(exc)}"
    else:
        if before and before == getattr(h, "failed", None):
            s.error = h.failed = None  # it reads again: the cause went
    if s.error != before:
        s.version += 1  # the row and the live board carry the error (or its end) at once
        return True
    return bool(did)


def _why(exc: Exception) -> str:
    """A failure in one line: an OSError names its file and reason, anything else its type."""
    if isinstance(exc, OSError) and exc.strerror:
        what = f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    else:
        what = f"{type(exc).__name__}: {exc}"
    return " ".join(what.split())


def cache_form(h: Handle) -> Handle:
    """The handle as the cache keeps it: its reading state and what was derived, of the
    timeline only the usage events (huddle.model.session.Session.__getstate__). One that
    cannot be pickled is given back as it is."""
    try:
        small = pickle.loads(pickle.dumps(h, protocol=pickle.HIGHEST_PROTOCOL))
    except Exception:
        return h
    small.source = getattr(h, "source", None)  # not pickled: the live source object goes on
    return small


def read_files(core: Huddle, paths: Iterable[str]) -> set[str] | None:
    """What these files appended, read in the sessions that read them (a watcher's
    notice names the files: the sessions a line went to, not the home's stat checks);
    the keys that changed, or None when a file is no known session's (a new session or
    sub-agent: only a scan finds where it goes, a whole refresh). Whatever else moved
    is the next whole refresh's: a notice missed costs a poll, as before."""
    from . import sleeping

    with core.lock:
        owners: dict[str, str] = {}
        for key, h in core.handles.items():
            for f in h.files():
                owners[f] = key
        for key, d in core.dormant.items():
            for f in d.head.get("files") or ():
                owners.setdefault(f[0], key)
        keys = set()
        for p in paths:
            owner = owners.get(p)
            if owner is None:
                return None
            keys.add(owner)
        if any(k in core.dormant for k in keys):
            core._wake(k for k in keys if k in core.dormant)
        if not keys <= core.handles.keys():
            return None  # (one did not unpickle: the scan reads it again)
        moved = {k for k in keys if refresh_one(core.handles[k])}
        changed = set(moved)
        found = dict(core.handles)
        changed |= sleeping.settle_moved(core, found, moved, {}, core.notes)
        core.handles = found
        changed |= core.ledger.sync({k: h.session for k, h in found.items()})
        if changed:
            core.generation += 1
        return changed
