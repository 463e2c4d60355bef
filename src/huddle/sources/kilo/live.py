"""Kilo's live signals, generic ones only (the attention rules decide the state from them).

What the database tells (as OpenCode's): an assistant message without `time.completed` is a
response under way (`busy`); a `tool` part `running` without `metadata` has not started: bash
sets `metadata.output` the moment it runs, so one without it waits for your permission
(`waiting`), unless its command already runs below Kilo. A finished turn looks the same
whether the TUI is open or has exited, and Kilo 7.7.7 writes no lock folder: only the process
table tells "your turn" from "ended" (a `kilo serve` daemon may hold any session: unknown).
"""

from __future__ import annotations

import time

from huddle.model.signals import BUSY, WAITING, Live, Pending
from huddle.model.tools import QUESTION_TOOLS, SHELL_TOOLS, SPAWN_TOOLS
from huddle.sources.opencode.live import START_WAIT, session_process

PROMPT = "permission prompt"


def live_signals(handle, at: float | None) -> Live:
    guess = ""
    alive, pid = None, None
    procs, proc = session_process(handle, at)
    if procs is None:
        guess = "no process table: your turn and ended look the same in the database"
    elif proc is not None:
        alive, pid = True, proc.pid
    elif procs.daemon:
        guess = "a kilo daemon runs and may hold this session: whether it is open is unknown"
    else:
        return Live(alive=False)
    if at is not None and handle.session.updated_at is not None and at < handle.session.updated_at:
        return Live(alive=alive, pid=pid, guess=guess)  # a past moment: the timeline replays it
    commands = procs.commands_below(proc) if procs is not None and proc is not None else None
    now = at if at is not None else time.time()
    busy: float | None = None
    pending = None
    for m in handle.members.values():
        p = m.parser
        if p is None or not p.in_progress():
            continue
        st = p.msgs.get(p.last_assistant)
        t = st.created if st is not None else None
        busy = t if busy is None or (t is not None and t > busy) else busy
        for r in p.running.values():
            if _unstarted(r, commands, now) and (pending is None or (r.since or 0) >= (pending.since or 0)):
                pending = r
    if pending is not None:
        if pending.tool not in SHELL_TOOLS:
            guess = f"{pending.tool} has not started after {START_WAIT:g} s: taken for a permission prompt"
        elif commands is None:
            guess = "bash has no output yet and no process table shows it running: taken for a permission prompt"
        prompt = Pending(words=PROMPT, since=pending.since)
        return Live(alive=alive, pid=pid, status=WAITING, status_since=pending.since, pending=prompt, guess=guess)
    if busy is not None:
        return Live(alive=alive, pid=pid, status=BUSY, status_since=busy, guess=guess)
    return Live(alive=alive, pid=pid, guess=guess)


def _unstarted(r, commands: list[str] | None, now: float) -> bool:
    """A running tool part that waits for your permission (a question or an order is the
    transcript's to say)."""
    if r.tool in SPAWN_TOOLS or r.tool in QUESTION_TOOLS or r.has_metadata:
        return False
    if r.tool in SHELL_TOOLS:
        cmd = r.command or r.detail
        return not (commands is not None and cmd and any(cmd in c for c in commands))
    return r.since is not None and now - r.since > START_WAIT
