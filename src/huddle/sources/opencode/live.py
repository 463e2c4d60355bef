"""OpenCode liveness and per-agent states, for the attention states (the live() contract).

What the database tells: an assistant message without `time.completed` is a response
in progress; a `tool` part `running` without `metadata` has not started (it waits for
your permission: bash sets `metadata.output` the moment it starts; a fragile sign, so
the process table decides where it can); a finished turn looks the same whether the
TUI is still open or has exited.

What the machine tells: `$XDG_STATE_HOME/opencode/locks/*.lock/meta.json` names the pid
of the OpenCode process that took it (the folder stays after it exits, so the pid must
still be an OpenCode process); the process table gives every `opencode` process, the
session it works on (`--session <id>`, else the newest session of its folder) and the
commands running below it. A session no live process works on has ended; one that an
`opencode serve` / `web` daemon may hold cannot be told (left unknown).
"""

from __future__ import annotations

import json
import os

from huddle.io import safefile
from huddle.io.proctable import Proc, ProcTable
from huddle.model.attention import NEEDS_YOU, WORKING, urgency
from huddle.model.tools import QUESTION_TOOLS, SHELL_TOOLS, SPAWN_TOOLS

START_WAIT = 1.0  # a non-shell tool still unstarted after this long waits for permission
DAEMONS = frozenset({"serve", "web", "acp"})


OPENCODE = ("opencode", ".opencode")  # the names its processes run under (a fork renames them)


def is_opencode(p: Proc, names: tuple[str, ...] = OPENCODE) -> bool:
    if not p.argv:
        return False
    if os.path.basename(p.argv[0]) in names:
        return True
    return len(p.argv) > 1 and os.path.basename(p.argv[1]) in names


def _args(p: Proc, names: tuple[str, ...] = OPENCODE) -> list[str]:
    a = p.argv
    return a[2:] if len(a) > 1 and os.path.basename(a[1]) in names else a[1:]


def named_session(p: Proc, names: tuple[str, ...] = OPENCODE) -> str | None:
    args = _args(p, names)
    for i, a in enumerate(args):
        if a in ("-s", "--session") and i + 1 < len(args):
            return args[i + 1]
        if a.startswith("--session="):
            return a.split("=", 1)[1]
    return None


def lock_pids(state_dir: str) -> list[int]:
    """The pids the lock folders name (OpenCode's own, read-only)."""
    locks = os.path.join(state_dir, "locks") if state_dir else ""
    out = []
    try:
        names = os.listdir(locks)
    except OSError:
        return []
    for n in names:
        try:
            with safefile.open_regular(os.path.join(locks, n, "meta.json")) as f:  # never a FIFO's wait
                meta = json.loads(f.read(4096))
        except (OSError, ValueError, RecursionError):
            continue
        pid = meta.get("pid") if isinstance(meta, dict) else None
        if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0:
            out.append(pid)
    return out


class Processes:
    """The OpenCode processes at one moment and the sessions they work on."""

    def __init__(self, view: ProcTable, lock_pids: list[int], newest: dict[str, str], names=OPENCODE):
        self.view = view
        self.names = names
        self.by_session: dict[str, Proc] = {}
        self.daemon = False
        procs = [p for p in view if is_opencode(p, names)]
        seen = {p.pid for p in procs}
        for pid in lock_pids:  # a lock holder under another name (a wrapper, a renamed binary)
            p = view.get(pid)
            if p is not None and p.pid not in seen and any(names[0] in a for a in p.argv[:2]):
                procs.append(p)
        # the innermost: a wrapper script starts the real binary below it
        procs = [p for p in procs if not any(is_opencode(c, names) for c in view.below(p.pid))] or procs
        for p in procs:
            args = _args(p, names)
            if args[:1] and args[0] in DAEMONS:
                self.daemon = True
                continue
            sid = named_session(p, names)
            if sid is None:
                folder = next((a for a in args if a.startswith("/") and os.path.isdir(a)), "") or p.cwd
                sid = newest.get(folder)
            if sid:
                self.by_session.setdefault(sid, p)

    def commands_below(self, p: Proc) -> list[str]:
        return [" ".join(c.argv) for c in self.view.below(p.pid) if not is_opencode(c, self.names)]


def session_process(handle, at: float | None) -> tuple[Processes | None, Proc | None]:
    """The CLI's processes at `at` (None: no process table for that moment) and the one
    working on this session, if any."""
    src = handle.source
    view = src.system.view(at)
    if view is None:
        return None, None
    procs = Processes(view, lock_pids(src.state_dir), src.newest, src.binaries)
    return procs, procs.by_session.get(handle.root)


def live_signals(handle, at: float | None) -> dict:
    out: dict = {}
    procs, proc = session_process(handle, at)
    if procs is not None:
        if proc is not None:
            out["alive"] = True
            out["pid"] = proc.pid
        elif not procs.daemon:
            out["alive"] = False
            return out
    if at is not None and handle.session.updated_at is not None and at < handle.session.updated_at:
        return out  # a past moment: the timeline replays it; the rows hold only their last state
    commands = procs.commands_below(proc) if procs is not None and proc is not None else None
    agents: dict[str, dict] = {}
    now = at if at is not None else _now()
    for m in handle.members.values():
        p = m.parser
        if p is None or not p.in_progress():
            continue
        best = None
        for r in p.running.values():
            st = _running_state(r, commands, now)
            if st is not None and (best is None or urgency(st["state"]) < urgency(best["state"])):
                best = st
        if best is not None:
            agents[m.sid] = best
    if agents:
        out["agents"] = agents
    return out


def _running_state(r, commands: list[str] | None, now: float) -> dict | None:
    if r.tool in SPAWN_TOOLS:
        return None  # an open order: the generic rules say waiting, the child says what it does
    if r.tool in QUESTION_TOOLS:
        return _st(NEEDS_YOU, r.since, r.detail or "a question")
    if r.tool in SHELL_TOOLS:
        cmd = r.command or r.detail
        if commands is not None and cmd and any(cmd in c for c in commands):
            return _st(WORKING, r.since, doing=f"running {cmd}")  # its process runs: approved
        if not r.has_metadata:
            return _st(NEEDS_YOU, r.since, f"approve bash: {cmd}")
        return _st(WORKING, r.since, doing=f"running {cmd}")
    if not r.has_metadata and r.since is not None and now - r.since > START_WAIT:
        return _st(NEEDS_YOU, r.since, f"approve {r.tool}: {r.detail}" if r.detail else f"approve {r.tool}")
    return _st(WORKING, r.since)


def _st(state: str, since: float | None, waiting_for: str | None = None, doing: str = "") -> dict:
    d: dict = {"state": state, "since": since, "waiting_for": waiting_for}
    if doing:
        d["doing"] = doing
    return d


def _now() -> float:
    import time

    return time.time()
