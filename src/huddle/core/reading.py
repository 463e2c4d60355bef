"""Reading one session, contained: the step the core and its forked workers share."""

from __future__ import annotations

import pickle
from typing import cast

from huddle.sources import Handle


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
    return cast(Handle, small)
