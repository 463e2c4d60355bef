"""OpenCode liveness and what its running tool parts show (the live() contract).

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
from typing import TYPE_CHECKING

from huddle.io import safefile
from huddle.io.proctable import Proc, ProcTable
from huddle.model.signals import AgentLive, Call, Live
from huddle.model.tools import QUESTION_TOOLS, SHELL_TOOLS, SPAWN_TOOLS

if TYPE_CHECKING:
    from .handle import OpenCodeHandle
    from .parser import Running

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

    def __init__(
        self, view: ProcTable, lock_pids: list[int], newest: dict[str, str], names: tuple[str, ...] = OPENCODE
    ) -> None:
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


def session_process(handle: OpenCodeHandle, at: float | None) -> tuple[Processes | None, Proc | None]:
    """The CLI's processes at `at` (None: no process table for that moment) and the one
    working on this session, if any."""
    src = handle.source
    view = src.system.view(at)
    if view is None:
        return None, None
    procs = Processes(view, lock_pids(src.state_dir), src.newest, src.binaries)
    return procs, procs.by_session.get(handle.root)


def live_signals(handle: OpenCodeHandle, at: float | None) -> Live:
    alive: bool | None = None
    pid = None
    procs, proc = session_process(handle, at)
    if procs is not None:
        if proc is not None:
            alive, pid = True, proc.pid
        elif not procs.daemon:
            return Live(alive=False)
    if at is not None and handle.session.updated_at is not None and at < handle.session.updated_at:
        return Live(alive=alive, pid=pid)  # a past moment: the timeline replays it; the rows hold only their last state
    commands = procs.commands_below(proc) if procs is not None and proc is not None else None
    agents: dict[str, AgentLive] = {}
    for m in handle.members.values():
        p = m.parser
        if p is None or not p.in_progress():
            continue
        calls = tuple(c for c in (_running(r, commands) for r in p.running.values()) if c is not None)
        if calls:
            agents[m.sid] = AgentLive(calls=calls)
    return Live(alive=alive, pid=pid, agents=agents)


def _running(r: Running, commands: list[str] | None) -> Call | None:
    """A running tool part as the database and the processes show it: a part not
    started (no `metadata` yet) waits for permission, a fragile sign the process table
    overrules for shell commands."""
    if r.tool in SPAWN_TOOLS:
        return None  # an open order: the transcript says waiting, the child says what it does
    if r.tool in QUESTION_TOOLS:
        return Call(tool=r.tool, since=r.since, question=True, words=r.detail)
    if r.tool in SHELL_TOOLS:
        cmd = r.command or r.detail
        seen = commands is not None and bool(cmd) and any(cmd in c for c in commands)  # its process runs
        runs = seen or r.has_metadata
        return Call(tool=r.tool, since=r.since, runs=runs, words=f"approve bash: {cmd}", doing=f"running {cmd}")
    words = f"approve {r.tool}: {r.detail}" if r.detail else f"approve {r.tool}"
    if r.has_metadata:
        return Call(tool=r.tool, since=r.since, runs=True)
    return Call(tool=r.tool, since=r.since, asks_after=START_WAIT, words=words)
