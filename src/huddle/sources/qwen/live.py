"""Qwen Code liveness, for the attention states (the live() contract: generic signals
only; the attention rules decide the state).

What there is: a TUI keeps `sessions/<pid>.json` (pid, `procStart` "<boot id>:<start
ticks>", `pidNs`, sessionId) while it runs and deletes it at /quit; a crash leaves it
with a dead pid. A one-shot run (`qwen "prompt"`, `-p`) keeps none: its process is found
in the process table by the session its argv names (`--session-id`, `--resume`, `-r`),
else by its folder (the project's newest session). The TUI's `<id>.runtime.json` stays
after it exits and only says the session was a TUI's.

What there is not: any record of an approval question (the chat file is byte-identical
while a tool call waits for approval and while it runs), and any record of a streaming
answer (a finished answer is written through a queue that can land seconds late). So a
pending tool call with nothing running below the CLI, in a run that can ask, is taken
for an approval prompt, and says so in `guess`; the model's open turn says in `guess`
that it may already be over.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

import msgspec

from huddle.io import procs, safefile
from huddle.io.proctable import Proc, ProcTable
from huddle.model import events as ev
from huddle.model.activity import Activity, activity_at
from huddle.model.signals import BUSY, WAITING, Live, Pending

if TYPE_CHECKING:
    from .source import QwenHandle

_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
NO_ASKING = ("--yolo", "-y", "--approval-mode=yolo")
START_SLACK = 2.0  # seconds: a process below the CLI started this long before a call is not that call's

GUESS_APPROVAL = (
    "Qwen Code writes nothing while it asks for approval: a tool call pending with nothing running "
    "below the CLI is taken for an approval prompt"
)
GUESS_NO_TABLE = "without the process table a pending tool call reads as working: it may be waiting for approval"
GUESS_ANSWER = (
    "nothing marks a streaming answer, and Qwen Code writes a finished one through a queue that can "
    "lag seconds: working may already be your turn"
)
GUESS_QUIT = "no registry entry for a session its TUI ran: taken as ended (the TUI removes it at /quit)"


class Entry(msgspec.Struct):
    pid: int | None = None
    procStart: str | int | None = None
    pidNs: int | str | None = None
    sessionId: str | None = None
    cwd: str | None = None
    kind: str | None = None
    startedAt: int | float | None = None


_decode_entry = msgspec.json.Decoder(Entry).decode


class Registry:
    """`sessions/<pid>.json`, one per running TUI, by session id."""

    def __init__(self, folder: str):
        self.folder = folder
        self.names: list[str] = []
        self.entries: dict[str, Entry] = {}
        self._stamps: dict[str, tuple[int, ...]] = {}
        self.by_session: dict[str, Entry] = {}
        self.moved: set[str] = set()

    def refresh(self) -> None:
        try:
            names = sorted(n for n in os.listdir(self.folder) if n.endswith(".json")) if self.folder else []
            safefile.forget(self.folder)
        except FileNotFoundError:
            names = []
        except OSError as exc:
            safefile.remember(self.folder, exc)
            names = []
        self.names = names
        for n in set(self.entries) - set(names):
            del self.entries[n]
            self._stamps.pop(n, None)
        for n in names:
            path = os.path.join(self.folder, n)
            st = safefile.stamp(path)
            if st is None or self._stamps.get(n) == st:
                continue
            entry = _read(path)
            if entry is None:
                self.entries.pop(n, None)  # half-written or not an entry: the next round
                self._stamps.pop(n, None)
                continue
            self._stamps[n] = st
            self.entries[n] = entry
        by = {e.sessionId: e for e in self.entries.values() if e.sessionId}
        old = self.by_session
        self.moved = {sid for sid in old.keys() | by.keys() if old.get(sid) != by.get(sid)}
        self.by_session = by


def _read(path: str) -> Entry | None:
    for _ in range(2):
        try:
            return _decode_entry(safefile.read_small(path))
        except OSError as exc:
            safefile.remember(path, exc)
            return None
        except (msgspec.DecodeError, RecursionError):
            continue
    return None


def entry_alive(e: Entry) -> bool | None:
    start = e.procStart.rsplit(":", 1)[-1] if isinstance(e.procStart, str) else e.procStart
    domain = f"pid:[{e.pidNs}]" if e.pidNs else None
    return procs.alive(e.pid, start, domain)


# -- the process table --------------------------------------------------------------


def is_qwen(p: Proc) -> bool:
    return any(os.path.basename(a) == "qwen" or "/@qwen-code/qwen-code/" in a for a in p.argv[:3])


def named_session(argv: list[str]) -> str | None:
    """The session a qwen command line names (`--session-id X`, `--resume X`, `-r X`)."""
    for i, a in enumerate(argv):
        for flag in ("--session-id", "--resume", "-r"):
            if a == flag and i + 1 < len(argv):
                v = argv[i + 1]
            elif a.startswith(flag + "="):
                v = a.split("=", 1)[1]
            else:
                continue
            return v if _UUID.match(v) else None
    return None


def qwen_processes(view: ProcTable) -> list[Proc]:
    return [p for p in view if is_qwen(p)]


def find_process(
    view: ProcTable, sid: str, cwd: str, latest: str | None, qwens: list[Proc] | None = None
) -> Proc | None:
    """The innermost qwen process running this session (the CLI relaunches itself once).
    `qwens`: the view's qwen processes, when the caller has them already."""
    mine = []
    for p in qwen_processes(view) if qwens is None else qwens:
        named = named_session(p.argv)
        if named == sid or (named is None and cwd and p.cwd == cwd and latest == sid):
            mine.append(p)
    if not mine:
        return None
    inner = [p for p in mine if not any(is_qwen(c) for c in view.below(p.pid))]
    return (inner or mine)[0]


def running_below(view: ProcTable, pid: int, since: float | None, recorded: bool) -> list[Proc]:
    """What runs below the CLI and started with the call (a long-lived helper, an MCP
    server, started before it, is not the call's)."""
    out = []
    for p in view.below(pid):
        if is_qwen(p) or not p.argv:  # (a zombie, a tool exited and not yet reaped, has no argv)
            continue
        if not recorded and since is not None:
            began = procs.started_at(p.pid)
            if began is not None and began < since - START_SLACK:
                continue
        out.append(p)
    return out


def can_ask(entry: Entry | None, argv: list[str]) -> bool:
    """Only a TUI asks (a one-shot run denies what needs approval), and not with --yolo."""
    if entry is None or any(a in NO_ASKING for a in argv):
        return False
    return not any(a == "--approval-mode" and argv[i + 1 : i + 2] == ["yolo"] for i, a in enumerate(argv))


# -- the signals --------------------------------------------------------------------


def pending_call(acts: dict[str, Activity]) -> ev.Event | None:
    """The newest tool call still waiting for its result, of any agent."""
    calls = [c for act in acts.values() for c in act.open_calls.values() if c.kind == ev.TOOL_CALL]
    return max(calls, key=lambda c: (c.t or 0.0, c.seq), default=None)


def live_signals(handle: QwenHandle, at: float | None) -> Live:
    s = handle.session
    src = handle.source
    entry = src.registry.by_session.get(handle.lead)
    view = src.system.view(at)
    alive, proc, pid, guess = _process(handle, entry, view, at)
    if alive is False:
        return Live(alive=False, pid=pid, guess=guess)
    acts = activity_at(s, at) if at is not None else {a.id: a.activity for a in s.agents.values()}
    status, pending, guess = _call_signals(handle, acts, entry, view, proc)
    background = handle.background_running() if alive else ()
    return Live(alive=alive, pid=pid, status=status, pending=pending, background=background, guess=guess)


def _process(
    handle: QwenHandle, entry: Entry | None, view: ProcTable | None, at: float | None
) -> tuple[bool | None, Proc | None, int | None, str]:
    """The session's process (alive, its Proc, its pid, a guess): its registry entry's,
    else one the process table shows working on it; a TUI's session with no entry left
    and no table to look in, taken as quit."""
    alive: bool | None = None
    proc: Proc | None = None
    pid: int | None = None
    if entry is not None and isinstance(entry.pid, int):
        alive, proc = _entry_process(entry, entry.pid, handle.source.system.recorded, view, at)
        if alive:
            pid = entry.pid
    if not alive and view is not None:
        s = handle.session
        found = find_process(view, handle.lead, s.cwd, handle.source.latest(s.cwd), handle.source.qwens(view))
        if found is not None:
            return True, found, found.pid, ""
        if alive is None:
            alive = False
    if alive is None and view is None and entry is None and handle.runtime:
        return False, None, pid, GUESS_QUIT
    return alive, proc, pid, ""


def _entry_process(
    entry: Entry, pid: int, recorded: ProcTable | None, view: ProcTable | None, at: float | None
) -> tuple[bool | None, Proc | None]:
    """Whether the pid a registry entry names runs (as of a past time, the entry is
    trusted as it stands), and its Proc where the table shows it."""
    if recorded is not None:
        proc = recorded.get(pid)
        return proc is not None, proc
    if at is not None:
        return True, None
    alive = entry_alive(entry)
    return alive, view.get(pid) if view is not None and alive else None


def _call_signals(
    handle: QwenHandle, acts: dict[str, Activity], entry: Entry | None, view: ProcTable | None, proc: Proc | None
) -> tuple[str, Pending | None, str]:
    """What the newest pending call and the processes say (status, a prompt, a guess):
    a process it started runs (busy); nothing runs and the CLI may ask (an approval,
    said as a guess); no call pending but the lead's turn open (a streaming answer)."""
    call = pending_call(acts)
    if call is None:
        lead = acts.get(handle.lead)
        if lead is not None and lead.turn_open and not any(c.kind == ev.ORDER for c in lead.open_calls.values()):
            return "", None, GUESS_ANSWER
        return "", None, ""
    if view is None or proc is None:
        return "", None, GUESS_NO_TABLE
    if running_below(view, proc.pid, call.t, handle.source.system.recorded is not None):
        return BUSY, None, ""  # a process the call started runs
    if can_ask(entry, proc.argv):
        return WAITING, Pending(words="permission"), GUESS_APPROVAL
    return "", None, ""
