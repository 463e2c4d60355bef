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

from huddle.model.times import parse_time

from . import records as rec

PROCESS_STATUS = {"running": "busy", "pending": "waiting", "idle": "idle"}  # Cline's word -> attention.PROCESS
ENDED = frozenset({"completed", "failed", "cancelled", "aborted", "error"})


def live_signals(handle, at: float | None) -> dict:
    r: rec.Record | None = handle.record
    out: dict = {}
    if r is None:
        return out
    status = (r.status or "").lower()
    if status in ENDED:
        out["alive"] = False
        ended = parse_time(r.ended_at) if r.ended_at else None
        if ended is not None:
            out["ended_at"] = ended
        return out
    pid = rec.count(r.pid)
    view = handle.source.system.view(at)
    if view is None:
        out["guess"] = "no process table: a status Cline did not make final is taken as it stands"
    else:
        p = view.get(pid) if pid else None
        if p is None or not any("cline" in os.path.basename(a) for a in p.argv[:2]):
            out["alive"] = False  # the process that wrote it is gone (Cline would mark it failed)
            return out
        out["alive"], out["pid"] = True, pid
        if r.interactive:
            out["guess"] = (
                "the recorded pid is Cline's hub daemon, which outlives the TUI: a TUI killed outright is not seen"
            )
    if at is not None and handle.session.updated_at is not None and at < handle.session.updated_at:
        return out  # a past moment: the timeline replays it; the record holds only its last status
    word = PROCESS_STATUS.get(status)
    if word is not None:
        out["status"] = word
    if word == "waiting":
        out["waiting_for"] = "tool approval"
    return out
