"""What the pages following a session are sent as it grows: its new events, in
messages of EVENTS_PER_MESSAGE, or a reset when it was rewritten (live.watcher)."""

from __future__ import annotations

from typing import Any

from huddle.views import api

EVENTS_PER_MESSAGE = 500


def new_events(pushed: dict[str, tuple[int, int]], key: str, handle: Any) -> list[tuple[str, dict, str | None]]:
    """The messages for a session's events since `pushed` (key -> (epoch, events sent)),
    which it brings up to date."""
    s = handle.session
    if not getattr(s, "complete", True):
        pushed.pop(key, None)  # from the cache, no page shows it yet (Watcher._completed)
        return []
    n = len(s.events)
    had = pushed.get(key)
    pushed[key] = (s.epoch, n)
    if had is None or had == (s.epoch, n):
        return []  # a session just found: pages load it through the API
    epoch, sent = had
    if epoch != s.epoch or sent > n:
        return [("reset", {"session": s.id, "key": key, "epoch": s.epoch, "why": "rewritten"}, s.id)]
    files = api.files_index(handle)
    out: list[tuple[str, dict, str | None]] = []
    for start in range(sent, n, EVENTS_PER_MESSAGE):
        chunk = api.timeline_json(s, files, start, min(n, start + EVENTS_PER_MESSAGE))
        out.append(("events", {"session": s.id, "key": key, "epoch": s.epoch, "events": chunk}, s.id))
    return out
