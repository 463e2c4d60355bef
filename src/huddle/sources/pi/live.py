"""Pi's live signals (the live() contract): what the process table says beside the file.

Pi writes no lock, pid or state file, and names its process `pi` (`process.title`),
which overwrites its command line: a running Pi rarely says which session it works on.
So a session is alive while a `pi` process works on it: one whose command line still
names it (`--session <id or file>`), else one running in the session's folder, taken
for the newest session there (a guess, said so). Sub-agents of the example extension
run as `pi` processes below their lead's and are not sessions of their own.

What the file cannot tell, the processes can, in part: a tool call waiting in an
extension's dialog (Pi itself never asks: only an extension such as the example
`permission-gate` does) and the same call running look the same in the file; a shell
tool runs its command as a child of `pi`, so a pending shell call with nothing running
below `pi` is reported as a call that asks once its program had time to start
(`Call.asks_after`: the attention rules decide when it is a dialog). A failed request with no retry written after it ends
the turn: the process's status is then idle. Each of these is a guess, said in `guess`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from huddle.io.proctable import Proc, ProcTable
from huddle.model.signals import IDLE, AgentLive, Call, Live
from huddle.model.tools import SHELL_TOOLS

if TYPE_CHECKING:
    from .source import PiHandle, PiSource

NAMES = frozenset({"pi", "gsd"})  # Pi's process title, and its siblings'
CHILD_TOOLS = SHELL_TOOLS | {"grep", "find"}  # tools that run a program below pi (rg, fd)
ASKS_AFTER = 1.2  # seconds a shell call may take to start its program (the table is up to 1 s old)
HEADLESS = frozenset({"-p", "--print", "--no-session", "--mode"})
BY_FOLDER = "pi writes no lock or pid file and its command line names no session: the pi process in this folder is taken for its newest session"
DIALOG = "Pi writes nothing while an extension asks: a pending shell call with nothing running below pi is taken for its dialog"
FAILED = "a failed request with no retry written after it is taken for the end of the turn"


def is_pi(p: Proc) -> bool:
    return any(os.path.basename(a) in NAMES or "/pi-coding-agent/" in a for a in p.argv[:2])


def named(argv: list[str]) -> str | None:
    """The session a command line names (`--session X`, `--session-id X`), if it still shows one."""
    for i, a in enumerate(argv):
        for flag in ("--session", "--session-id"):
            if a == flag and i + 1 < len(argv):
                return argv[i + 1]
            if a.startswith(flag + "="):
                return a.split("=", 1)[1]
    return None


class Claims:
    """Which session each top-level pi process works on, at one moment. `sessions`: the
    last scan's (id, file, cwd), so a session not read this run (asleep) is matched too."""

    def __init__(self, view: ProcTable, sessions: list[tuple[str, str, str]]) -> None:
        self.view = view
        self.pid: dict[str, int] = {}  # session id -> pid
        self.guessed: set[str] = set()
        tops = [p for p in view if is_pi(p) and not any(is_pi(q) for q in _above(view, p))]
        by_cwd: dict[str, list[Proc]] = {}
        for p in sorted(tops, key=lambda p: p.pid):
            if any(a in ("--no-session",) for a in p.argv):
                continue
            name = named(p.argv)
            if name is not None:
                sid = _match(sessions, name)
                if sid is not None:
                    self.pid.setdefault(sid, p.pid)
                continue
            by_cwd.setdefault(p.cwd, []).append(p)
        for cwd, procs in by_cwd.items():
            here = [(sid, path) for sid, path, c in sessions if cwd and c == cwd and sid not in self.pid]
            here.sort(key=lambda s: (_mtime(s[1]), os.path.basename(s[1])), reverse=True)  # newest written first
            for p, (sid, _) in zip(procs, here, strict=False):
                self.pid[sid] = p.pid
                self.guessed.add(sid)


def _above(view: ProcTable, p: Proc) -> list[Proc]:
    out = []
    seen = {p.pid}
    cur = view.get(p.ppid)
    while cur is not None and cur.pid not in seen:
        seen.add(cur.pid)
        out.append(cur)
        cur = view.get(cur.ppid)
    return out


def _match(sessions: list[tuple[str, str, str]], name: str) -> str | None:
    """The session a `--session` argument names: a file, an id, or an id's prefix (as Pi)."""
    if "/" in name or name.endswith(".jsonl"):
        base = os.path.basename(name)
        return next((sid for sid, path, _ in sessions if os.path.basename(path) == base), None)
    return next((sid for sid, _, _ in sessions if sid == name), None) or next(
        (sid for sid, _, _ in sessions if sid.startswith(name)), None
    )


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


def runs_below(view: ProcTable, pid: int) -> list[Proc]:
    """What runs below a pi process that is not pi (a tool's program), zombies left out."""
    return [p for p in view.below(pid) if p.argv and not is_pi(p)]


def signals(handle: PiHandle, at: float | None) -> Live:
    src: PiSource = handle.source
    p = handle.parser
    guesses: list[str] = []
    view = src.system.view(at)
    alive, pid = None, None
    calls: tuple[Call, ...] = ()
    if view is not None:
        claims = src.claims(view)
        pid = claims.pid.get(handle.sid)
        alive = pid is not None
        if pid is None:
            return Live(alive=False)
        if handle.sid in claims.guessed:
            guesses.append(BY_FOLDER)
        proc = view.get(pid)
        headless = proc is not None and any(a in HEADLESS for a in proc.argv)
        if not headless and not runs_below(view, pid) and src.may_ask(handle.session.cwd):
            calls = _may_be_asking(handle)
    status, since = "", None
    failed = p.failed_at(at)
    if failed is not None and not calls:
        status, since = IDLE, failed
        guesses.append(FAILED)
    agents = {handle.session.lead_id: AgentLive(calls=calls)} if calls else {}
    return Live(alive=alive, pid=pid, status=status, status_since=since, agents=agents, guess="; ".join(guesses))


def _may_be_asking(handle: PiHandle) -> tuple[Call, ...]:
    """The lead's open calls of tools that run a program, with nothing running below pi:
    each waits in an extension's dialog once its program had time to start (the rules
    decide when: `asks_after`), newest first."""
    opened = handle.session.agents[handle.session.lead_id].activity.open_calls
    out = []
    for cid, (tool, t) in handle.parser.calls.items():
        if tool in CHILD_TOOLS and t is not None:
            e = opened.get(cid)
            words = f"approve: {tool}: {e.detail}" if e is not None and e.detail else f"approve: {tool}"
            out.append(Call(id=cid, tool=tool, since=t, asks_after=ASKS_AFTER, words=words, guess=DIALOG))
    return tuple(sorted(out, key=lambda c: -(c.since or 0)))
