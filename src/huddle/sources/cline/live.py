"""Cline's live signals, generic ones only (the attention rules decide the state from them).

The session record's `status` is Cline's own word for the moment: `running` (a reply
streams or a tool runs; a question waits as `running` too, which the open ask_question call
says), `pending` (a tool call waits for your approval), `idle` (the turn is over, the TUI
open), then `completed` / `failed` / `cancelled` / `aborted`, with `ended_at`.

Liveness: a status not yet final is trusted while the recorded pid is a Cline process (Cline's
own reconciler marks a session whose pid is gone as failed). In a TUI session that pid is
the hub daemon's, which outlives the TUI: a TUI killed outright leaves its last status with
a live pid, which nothing on disk tells (said in `guess`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from huddle.model.signals import NOTHING, Live, Pending
from huddle.model.times import parse_time

from . import records as rec

if TYPE_CHECKING:
    from .handle import ClineHandle

PROCESS_STATUS = {"running": "busy", "pending": "waiting", "idle": "idle"}  # Cline's word -> attention.PROCESS
ENDED = frozenset({"completed", "failed", "cancelled", "aborted", "error"})


def live_signals(handle: ClineHandle, at: float | None) -> Live:
    r: rec.Record | None = handle.record
    if r is None:
        return NOTHING
    status = (r.status or "").lower()
    if status in ENDED:
        return Live(alive=False, ended_at=parse_time(r.ended_at) if r.ended_at else None)
    pid = rec.count(r.pid)
    view = handle.source.system.view(at)
    alive, known, guess = None, None, ""
    if view is None:
        guess = "no process table: a status Cline did not make final is taken as it stands"
    else:
        p = view.get(pid) if pid else None
        if p is None or not any("cline" in os.path.basename(a) for a in p.argv[:2]):
            return Live(alive=False)  # the process that wrote it is gone (Cline would mark it failed)
        alive, known = True, pid
        if r.interactive:
            guess = "the recorded pid is Cline's hub daemon, which outlives the TUI: a TUI killed outright is not seen"
    if at is not None and handle.session.updated_at is not None and at < handle.session.updated_at:
        return Live(alive=alive, pid=known, guess=guess)  # a past moment: the record holds only its last status
    word = PROCESS_STATUS.get(status, "")
    pending = Pending(words="tool approval") if word == "waiting" else None
    return Live(alive=alive, pid=known, status=word, pending=pending, guess=guess)
