"""Copilot CLI's live signals, for the attention states (the `Handle.live()` contract).

What the CLI writes while a session is open:
- `session-state/<id>/inuse.<pid>.lock` (with `inuse.<pid>.hold`): there only while a
  process (TUI or `-p`) has the session open, removed when it exits. A crash leaves it:
  the pid must still be alive, and must not have started after the lock was made (a
  reused pid);
- `open-sessions-state.json`: `{<id>: {working: bool, refreshedAt}}` for each session
  open in a TUI (`{}` after `/exit`): `working` is the CLI's own word for busy or idle,
  `refreshedAt` when it last said it;
- in the file: a `permission.requested` without its `permission.completed` is an
  approval that waits (the reader's WAITING event), `session.shutdown` an exit.

No state is decided here: the attention rules read these signals with the events.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from huddle.io import procs, safefile
from huddle.model.signals import BUSY, IDLE, WAITING, Live, Pending
from huddle.model.times import parse_time

if TYPE_CHECKING:
    from .source import CopilotHandle

OPEN_SESSIONS = "open-sessions-state.json"
LOCK_PREFIX, LOCK_SUFFIX = "inuse.", ".lock"
STARTED_SLACK = 2.0  # seconds: a process that started this long after its lock is another one


def lock_pid(name: str) -> int | None:
    """The pid an `inuse.<pid>.lock` names, or None for any other file."""
    if not (name.startswith(LOCK_PREFIX) and name.endswith(LOCK_SUFFIX)):
        return None
    digits = name[len(LOCK_PREFIX) : -len(LOCK_SUFFIX)]
    return int(digits) if digits.isdigit() and 0 < len(digits) < 10 else None


class OpenSessions:
    """`open-sessions-state.json`, read again when its stamp moves."""

    def __init__(self, path: str):
        self.path = path
        self.stamp: tuple[int, int, int, int] | None = None
        self.entries: dict[str, tuple[bool | None, float | None]] = {}  # session id -> (working, refreshedAt)

    def refresh(self) -> set[str]:
        """Read it again if it moved; the session ids whose entry changed."""
        if not self.path:
            return set()
        st = safefile.stamp(self.path)
        if st == self.stamp:
            return set()
        doc = safefile.read_json(self.path) if st is not None else {}
        if doc is None:
            return set()  # half-written, or not JSON: the next look
        self.stamp = st
        now: dict[str, tuple[bool | None, float | None]] = {}
        for sid, e in doc.items() if isinstance(doc, dict) else ():
            if isinstance(sid, str) and isinstance(e, dict):
                working = e.get("working")
                now[sid] = (working if isinstance(working, bool) else None, parse_time(e.get("refreshedAt")))
        moved = {k for k in now.keys() | self.entries.keys() if now.get(k) != self.entries.get(k)}
        self.entries = now
        return moved


def holder(h: CopilotHandle) -> tuple[bool | None, int | None]:
    """(alive, pid): the process holding the session open, from its locks."""
    view = h.source.system.recorded  # a test's own processes, never the machine's
    unknown = False
    for pid, made in sorted(h.locks.items()):
        if view is not None:
            if view.get(pid) is not None:
                return True, pid
            continue
        alive = procs.alive(pid)
        if alive is None:
            unknown = True
            continue
        if alive:
            started = procs.started_at(pid)
            if started is None or made is None or started <= made + STARTED_SLACK:
                return True, pid
    return (None if unknown else False), None


def live_signals(h: CopilotHandle, at: float | None) -> Live:
    p = h.parser
    if at is not None:
        return Live(alive=p.alive_at(at))  # a past moment: the file's exits alone (the locks are today's)
    alive, pid = holder(h)
    if not alive:
        return Live(alive=alive, pid=pid)
    working, since = h.source.open.entries.get(h.sid, (None, None))
    status = "" if working is None else (BUSY if working else IDLE)  # the TUI's own word
    waiting = p.waiting_for()
    background = tuple(a.id for a in h.session.agents.values() if a.background and not a.finished)
    return Live(
        alive=alive,
        pid=pid,
        status=status,
        status_since=since if status else None,
        # (its words stand beside any status: a TUI's word "waiting" is not one it writes)
        pending=Pending(words=waiting) if waiting and status == WAITING else None,
        background=background,
        facts={"waiting_for": waiting} if waiting else {},
    )


def lock_stamps(folder: str, names: list[str]) -> dict[int, float | None]:
    """The pids of a session folder's `inuse.<pid>.lock` files, with when each was made."""
    out: dict[int, float | None] = {}
    for n in names:
        pid = lock_pid(n)
        if pid is None:
            continue
        try:
            out[pid] = os.stat(os.path.join(folder, n)).st_mtime
        except OSError:
            out[pid] = None
    return out
