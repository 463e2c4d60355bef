"""Codex liveness and per-agent states, for the attention states (the live() contract).

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
from typing import TYPE_CHECKING

from huddle.io import procs
from huddle.io.proctable import Proc, ProcTable
from huddle.model import events as ev
from huddle.model.activity import activity_at
from huddle.model.attention import ENDED, NEEDS_YOU, WAITING, WORKING, YOUR_TURN, urgency
from huddle.model.tools import QUESTION_TOOLS, SHELL_TOOLS, WAIT_TOOLS

if TYPE_CHECKING:
    from .source import ThreadFile

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
    def from_capture(cls, capture: dict, codex_home: str) -> SystemView:
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


# -- per-thread states ---------------------------------------------------------------------


def live_signals(handle, at: float | None) -> dict:
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
    agents: dict[str, dict] = {}
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
            alive = {"held": True, "absent": False, "stale": False}.get(status)
            pid = holder
        act = acts.get(tid)
        if act is None:
            continue
        st = thread_state(tf, act, status, holder, view, now, at, ", ".join(running.get(tid, ())))
        if st is not None:
            agents[tid] = st
    if handle.root not in handle.threads:  # the lead's rollout is missing: its children say
        held = [v for v in locks.values() if v is not None]
        alive = True if "held" in held else (False if held else None)
    out: dict = {"alive": alive, "agents": agents, "locks": locks}
    if pid:
        out["pid"] = pid
    return out


def thread_state(
    tf, act, status: str | None, holder: int | None, view: SystemView, now: float, at: float | None, children: str = ""
) -> dict | None:
    p = tf.parser
    if status in ("absent", "stale"):
        return _st(ENDED, act.last_t)
    turn_open = act.turn_open
    if p is not None and p.markers:  # task_started seen: the markers know the turn opened before any event
        turn_open = act.turn_open or (p.turn_open and (at is None or (p.turn_t or 0) <= at))
    best = None
    for c in act.open_calls.values():
        st = call_state(c, p.calls.get(c.id) if p is not None else None, holder, view, now, status, children)
        if st is not None and (best is None or urgency(st["state"]) < urgency(best["state"])):
            best = st
    if best is not None:
        return best
    if status is None:
        return None  # liveness unknown: the generic rules decide
    if turn_open:
        return _st(WORKING, act.turn_t or act.last_t)
    if tf.info.id != tf.lead:
        return None  # a sub-agent between tasks: finished or idle, the generic rules tell
    if view.procs is not None and holder and not _tui_attached(view.procs, holder, tf):
        # Loaded in the app-server daemon with no TUI on it: the person has left.
        return _st(ENDED, act.last_t, "no TUI attached; the thread stays loaded in the app-server")
    return _st(YOUR_TURN, act.last_t)


def call_state(
    c: ev.Event,
    call: tuple[str, dict] | None,
    holder: int | None,
    view: SystemView,
    now: float,
    status: str | None,
    children: str = "",
) -> dict | None:
    name, args = call if call is not None else (c.name, {})
    if name in QUESTION_TOOLS:
        return _st(NEEDS_YOU, c.t, c.detail or "a question")
    if status is None:
        return None
    if c.kind == ev.ORDER:
        return _st(WORKING, c.t)  # spawning; the child's own state shows what it does
    if name in WAIT_TOOLS:
        return _st(WAITING, c.t, children or c.detail or "sub-agents")
    if name == "apply_patch":
        if c.t is not None and now - c.t > PATCH_WAIT:
            return _st(NEEDS_YOU, c.t, f"approve file change: {c.detail}" if c.detail else "approve a file change")
        return _st(WORKING, c.t)
    if name in SHELL_TOOLS:
        cmd = str(args.get("cmd") or c.detail or "")
        if view.procs is not None and holder:
            if any(cmd and cmd in p.argv for p in view.below(holder)):
                return _st(WORKING, c.t)
            return _st(NEEDS_YOU, c.t, f"approve command: {cmd}")
        if args.get("sandbox_permissions") == "require_escalated" or args.get("justification"):
            return _st(NEEDS_YOU, c.t, str(args.get("justification") or f"approve command: {cmd}"))
        return _st(WORKING, c.t)
    return _st(WORKING, c.t)


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


def _st(state: str, since: float | None, waiting_for: str | None = None) -> dict:
    return {"state": state, "waiting_for": waiting_for, "since": since}
