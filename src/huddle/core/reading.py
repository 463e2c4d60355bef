"""Reading one session, contained: the step the core and its forked workers share."""

from __future__ import annotations

from huddle.sources import Handle


def refresh_one(h: Handle) -> bool:
    """Read what one session appended; True if anything changed. Its failure is its own:
    the session is listed with an `error`, the others are untouched."""
    s = h.session
    before = s.error
    try:
        did = h.refresh()
    except Exception as exc:  # this session's failure is its own: listed with an error
        s.error = f"{s.source} session {s.id}: {type(exc).__name__}: {exc}"
        return s.error != before
    if did and before and s.error == before:
        s.error = None  # it reads again
    return bool(did) or s.error != before
