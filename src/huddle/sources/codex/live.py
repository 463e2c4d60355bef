"""Codex liveness and what each thread's lock and processes show (the live() contract).

Liveness: `$CODEX_HOME/thread-writer-locks/<thread>.lock` is created when a process
loads a thread, held with an exclusive flock while it stays loaded, and deleted on a
clean unload. Absent: no process has the thread (ended). Present and held (per
/proc/locks, matched by inode): loaded by a live process. Present, not held: the
process died (ended, whatever the rollout says). huddle never takes the lock, not
even briefly: Codex refuses to load a thread that "already has an active writer".
No lock folder at all (older CLIs) means liveness is unknown.

What the rollout cannot tell, the process tree can: a running command is a
`bash -c <cmd>` process below the lock holder; an open `exec_command` without one
waits for an approval. Without process access, the call's own hints decide
(`sandbox_permissions: require_escalated` / a `justification`): a strong hint, but an
approval required by an execpolicy rule carries none, and an approved escalated
command that runs long looks the same; that ambiguity is documented, not hidden.
A TUI thread whose TUI quit stays loaded in the app-server daemon: with process
access, a finished turn with no TUI attached is "ended", not "your turn".
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING, Any

from huddle.io import procs
from huddle.io.proctable import Proc, ProcTable
from huddle.model import events as ev
from huddle.model.activity import activity_at
from huddle.model.signals import TURN_OPEN, TURN_OVER, AgentLive, Call, Live
from huddle.model.tools import QUESTION_TOOLS, SHELL_TOOLS, WAIT_TOOLS

if TYPE_CHECKING:
    from huddle.model.activity import Activity

    from .source import CodexHandle, ThreadFile

PATCH_WAIT = 1.0  # apply_patch applies in milliseconds; open longer than this, it waits for approval


class SystemView:
    """Locks and processes at one moment. `holders` maps a lock file's path to the pid
    holding it (None: held, pid unknown); `procs` is None when processes are unknown."""

    def __init__(self, holders: dict[str, int | None] | None, procs: ProcTable | None, files_only: bool = False):
        self.holders = holders  # None: cannot tell which locks are held
        self.procs = procs
        self.files_only = files_only

    def lock(self, path: str) -> tuple[str | None, int | None]:
        """("held", pid) / ("stale", None) / ("absent", None) / (None, None) when unknown."""
        if not os.path.exists(path):
            return ("absent", None) if os.path.isdir(os.path.dirname(path)) else (None, None)
        if self.files_only:
            return "held", None  # a snapshot: trust the files as they are
        if self.holders is None:
            return None, None
        if path in self.holders:
            return "held", self.holders[path]
        try:
            st = os.stat(path)
        except OSError:
            return "absent", None
        pid = self.holders.get(f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}:{st.st_ino}", 0)
        return ("held", pid) if pid != 0 else ("stale", None)

    def below(self, pid: int | None) -> list[Proc]:
        """Every process under `pid` (not itself)."""
        if self.procs is None or pid is None:
            return []
        return self.procs.below(pid)

    # -- where views come from -----------------------------------------------------------

    @classmethod
    def current(cls) -> SystemView:
        return cls(procs.held_flocks(), ProcTable.current())

    @classmethod
    def from_capture(cls, capture: dict[str, Any], codex_home: str) -> SystemView:
        """A recorded moment (a live-state sample's capture.json: /proc/locks and the
        process table as they were)."""
        holders = {
            os.path.join(codex_home, lk["path"]): lk.get("pid")
            for lk in capture.get("held_locks", ())
            if lk.get("kind") == "FLOCK" and not lk.get("waiting")
        }
        table = ProcTable(
            Proc(p["pid"], p.get("ppid") or 0, list(p.get("argv") or ()), p.get("cwd") or "")
            for p in capture.get("processes", ())
        )
        return cls(holders, table)


class SystemCache:
    """The source's view of locks and processes: read at most once a second; a recorded
    view (tests, replays) when one is set; the files alone when evaluating a past time."""

    def __init__(self) -> None:
        self.recorded: SystemView | None = None
        self._view: SystemView | None = None
        self._at = 0.0

    def forget(self) -> None:
        """Read locks and processes afresh at the next look."""
        self._view = None

    def view(self, at: float | None) -> SystemView:
        if self.recorded is not None:
            return self.recorded
        if at is not None:
            return SystemView(None, None, files_only=True)
        now = time.monotonic()
        if self._view is None or now - self._at > 1.0:
            self._view, self._at = SystemView.current(), now
        return self._view


def load_capture(path: str, codex_home: str) -> SystemView:
    with open(path, "rb") as f:
        return SystemView.from_capture(json.load(f), codex_home)


# -- per-thread signals ----------------------------------------------------------------


def live_signals(handle: CodexHandle, at: float | None) -> Live:
    """The live() answer for one Codex session (see the module doc)."""
    s = handle.session
    view = handle.source.system.view(at)
    # A past time replays the timeline; a session loaded from huddle's cache keeps only its
    # usage events, so there the activity as last read is the better answer.
    if at is not None and getattr(s, "complete", True):
        acts = activity_at(s, at)
    else:
        acts = {a.id: a.activity for a in s.agents.values()}
    now = at if at is not None else time.time()
    locks_dir = os.path.join(handle.source.home, "thread-writer-locks")
    agents: dict[str, AgentLive] = {}
    locks: dict[str, str | None] = {}
    alive: bool | None = None
    pid = None
    running: dict[str, list[str]] = {}  # agent -> its sub-agents not yet done (what a wait waits on)
    for a in s.agents.values():
        if a.parent and not a.finished and a.report is None and not a.quiet:
            running.setdefault(a.parent, []).append(a.description or a.name)
    for tid, tf in handle.threads.items():
        status, holder = view.lock(os.path.join(locks_dir, f"{tid}.lock"))
        locks[tid] = status
        if tid == handle.root:
            alive = {"held": True, "absent": False, "stale": False}.get(status or "")
            pid = holder
        act = acts.get(tid)
        if act is None or status is None:
            continue  # liveness unknown: the transcript tells
        agents[tid] = thread_signals(tf, act, status, holder, view, now, at, ", ".join(running.get(tid, ())))
    if handle.root not in handle.threads:  # the lead's rollout is missing: its children say
        held = [v for v in locks.values() if v is not None]
        alive = True if "held" in held else (False if held else None)
    return Live(alive=alive, pid=pid or None, agents=agents, facts={"locks": locks})


def thread_signals(
    tf: ThreadFile,
    act: Activity,
    status: str,
    holder: int | None,
    view: SystemView,
    now: float,
    at: float | None,
    children: str = "",
) -> AgentLive:
    """What a thread's lock, markers and processes say of it (a thread lock absent or
    left by a dead process: the thread has ended)."""
    if status in ("absent", "stale"):
        return AgentLive(alive=False)
    p = tf.parser
    calls = tuple(
        call_signals(c, p.calls.get(c.id) if p is not None else None, holder, view, children)
        for c in act.open_calls.values()
    )
    turn = ""
    if act.turn_open or (p is not None and p.markers and p.turn_open and (at is None or (p.turn_t or 0) <= at)):
        turn = TURN_OPEN  # task_started seen: the markers know the turn opened before any event
    elif tf.info.id == tf.lead:
        turn = TURN_OVER
    if (
        not calls
        and turn == TURN_OVER
        and view.procs is not None
        and holder
        and not _tui_attached(view.procs, holder, tf)
    ):
        # Loaded in the app-server daemon with no TUI on it: the person has left.
        return AgentLive(alive=False, gone="no TUI attached; the thread stays loaded in the app-server")
    return AgentLive(turn=turn, turn_since=(act.turn_t or act.last_t) if turn == TURN_OPEN else act.last_t, calls=calls)


def call_signals(
    c: ev.Event, call: tuple[str, dict[str, Any]] | None, holder: int | None, view: SystemView, children: str
) -> Call:
    """One open call as the process tree shows it."""
    name, args = call if call is not None else (c.name, {})
    if name in QUESTION_TOOLS:
        return Call(id=c.id or "", tool=name, since=c.t, question=True, words=c.detail)
    if c.kind == ev.ORDER:
        return Call(id=c.id or "", tool=name, since=c.t, runs=True)  # spawning; the child's own state shows
    if name in WAIT_TOOLS:
        return Call(id=c.id or "", tool=name, since=c.t, waits_on=children or c.detail)
    if name == "apply_patch":  # applies in milliseconds: open longer, it waits for approval
        words = f"approve file change: {c.detail}" if c.detail else "approve a file change"
        return Call(id=c.id or "", tool=name, since=c.t, asks_after=PATCH_WAIT, words=words)
    if name in SHELL_TOOLS:
        cmd = str(args.get("cmd") or c.detail or "")
        if view.procs is not None and holder:
            runs = any(cmd and cmd in p.argv for p in view.below(holder))
            return Call(id=c.id or "", tool=name, since=c.t, runs=runs, words=f"approve command: {cmd}")
        if args.get("sandbox_permissions") == "require_escalated" or args.get("justification"):
            words = str(args.get("justification") or f"approve command: {cmd}")
            return Call(id=c.id or "", tool=name, since=c.t, runs=False, words=words, guess=NO_PROCESSES)
    return Call(id=c.id or "", tool=name, since=c.t, runs=None)


NO_PROCESSES = "no process table: a command that asks for escalation is taken to wait for approval"


def _tui_attached(procs: ProcTable, holder: int, tf: ThreadFile) -> bool:
    """Is a person's front end on this thread? `codex exec` holds its own threads; the
    app-server daemon holds threads for TUIs, which are `codex` with no subcommand (in
    the thread's folder) or `codex resume <thread>`."""
    daemon = procs.get(holder)
    if daemon is None or "app-server" not in daemon.argv:
        return True
    for p in procs:
        if not p.argv or not os.path.basename(p.argv[0]).startswith("codex") or "app-server" in p.argv:
            continue
        rest = [a for a in p.argv[1:] if not a.startswith("-")]
        if rest[:1] == ["resume"] and tf.info.id in rest:
            return True
        if not rest and p.cwd and p.cwd == tf.info.cwd:
            return True
    return False
