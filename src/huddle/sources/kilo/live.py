"""Kilo's live signals: OpenCode's (the same database and process model), with what Kilo adds.

What the database tells (as OpenCode's, `opencode/live.py`): a `tool` part `running` without
`metadata` has not started: bash sets `metadata.output` the moment it runs, so one without it
is a call that waits for your permission unless its command already runs below Kilo, and
another tool asks once it has had time to start (`Call.asks_after`: the attention rules decide
when). Kilo adds: an assistant message without `time.completed` is a response under way
(`busy`). A finished turn looks the same whether the TUI is open or has exited, and Kilo 7.7.7
writes no lock folder: only the process table tells "your turn" from "ended" (a `kilo serve`
daemon may hold any session: unknown), said in `guess`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from huddle.model.signals import BUSY, Live
from huddle.sources.opencode import live as opencode

if TYPE_CHECKING:
    from huddle.sources.opencode.handle import OpenCodeHandle

NO_TABLE = "no process table: your turn and ended look the same in the database"
DAEMON = "a kilo daemon runs and may hold this session: whether it is open is unknown"


def live_signals(handle: OpenCodeHandle, at: float | None) -> Live:
    live = opencode.live_signals(handle, at)
    if live.alive is False:
        return live
    guess = NO_TABLE if handle.source.system.view(at) is None else (DAEMON if live.alive is None else "")
    busy = None if at is not None and at < (handle.session.updated_at or 0) else _responding_since(handle)
    if busy is None:
        return msgspec.structs.replace(live, guess=guess)
    return msgspec.structs.replace(live, status=BUSY, status_since=busy, guess=guess)


def _responding_since(handle: OpenCodeHandle) -> float | None:
    """When the newest response under way began (None: none is)."""
    busy: float | None = None
    for m in handle.members.values():
        p = m.parser
        if p is None or not p.in_progress():
            continue
        st = p.msgs.get(p.last_assistant)
        t = st.created if st is not None else None
        busy = t if busy is None or (t is not None and t > busy) else busy
    return busy
