"""Gemini CLI liveness and what the lead's process shows (the live() contract).

The CLI writes no pid file and no lock. Its chat file cannot tell three moments apart:
a response whose tool calls wait for your approval, the same calls running (the calls
are written only once they ran), and, after a final answer, an open TUI from one that
quit. The process table can: a `gemini` process for the session (by `--session-id` /
`--resume <id>` in its argv, else by its folder: the project's newest session) means
alive, none means ended; a process running below it means a tool runs; none while
tool calls are pending means an approval prompt, unless the run cannot ask (`-p`,
`--yolo`, `--approval-mode yolo|auto_edit`). Without process access (or for a past
time) the file alone decides: a pending tool call counts as working.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from huddle.io.proctable import Proc, ProcTable
from huddle.model import events as ev
from huddle.model.signals import NOTHING, TURN_OVER, AgentLive, Call, Live

from .parser import ANSWERED, TOOLS

if TYPE_CHECKING:
    from huddle.model.session import Session

    from .parser import ChatParser
    from .source import GeminiHandle

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_WRAPPED = re.compile(r"trap '[^\n]*' EXIT\n(.*)\n\)\n__code=", re.S)  # run_shell_command's wrapper script
NO_ASKING = ("-p", "--prompt", "--yolo", "-y")


def is_gemini(p: Proc) -> bool:
    for a in p.argv[:3]:
        base = os.path.basename(a)
        if base in ("gemini", "gemini.js") or "/@google/gemini-cli/" in a:
            return True
    return False


def named_session(argv: list[str]) -> str | None:
    """The session a gemini command line names (`--session-id X`, `--resume X`, `-r X`)."""
    for i, a in enumerate(argv):
        for flag in ("--session-id", "--resume", "-r"):
            if a == flag and i + 1 < len(argv):
                v = argv[i + 1]
                return v if _UUID.match(v) else None
            if a.startswith(flag + "="):
                v = a.split("=", 1)[1]
                return v if _UUID.match(v) else None
    return None


def find_process(view: ProcTable, sid: str, cwd: str, latest: str | None) -> Proc | None:
    """The innermost gemini process running this session (the CLI relaunches itself once)."""
    mine = []
    for p in view:
        if not is_gemini(p):
            continue
        named = named_session(p.argv)
        if named == sid or (named is None and cwd and p.cwd == cwd and latest == sid):
            mine.append(p)
    if not mine:
        return None
    inner = [p for p in mine if not any(is_gemini(c) for c in view.below(p.pid))]
    return (inner or mine)[0]


def can_ask(argv: list[str]) -> bool:
    if any(a in NO_ASKING for a in argv):
        return False
    for i, a in enumerate(argv):
        if a == "--approval-mode" and i + 1 < len(argv) and argv[i + 1] in ("yolo", "auto_edit"):
            return False
        if a in ("--approval-mode=yolo", "--approval-mode=auto_edit"):
            return False
    return True


def running_command(view: ProcTable, pid: int) -> str | None:
    """What runs below the CLI: the command inside its shell wrapper, else the deepest argv."""
    below = [p for p in view.below(pid) if not is_gemini(p)]
    if not below:
        return None
    for p in below:
        if len(p.argv) >= 3 and p.argv[1] == "-c":
            m = _WRAPPED.search(p.argv[2])
            if m:
                return m.group(1).strip()
    named = [p for p in below if p.argv]  # a zombie (a tool exited, not yet reaped) has no argv
    return " ".join(named[-1].argv) if named else "a tool"


def lead_mark(parser: ChatParser, at: float | None) -> tuple[float | None, str]:
    marks = parser.marks
    if at is None:
        return marks[-1] if marks else (None, "")
    for t, what in reversed(marks):
        if t is None or t <= at:
            return t, what
    return None, ""


def live_signals(handle: GeminiHandle, at: float | None) -> Live:
    s = handle.session
    cf = handle.lead_chat()
    if cf is None or cf.parser is None:
        return NOTHING
    since, mark = lead_mark(cf.parser, at)
    view = handle.source.system.view(at)
    proc = None
    if view is not None:
        proc = find_process(view, handle.lead, s.cwd, handle.source.latest(s.cwd))
        if proc is None:
            return Live(alive=False)
    lead: AgentLive | None = None
    if _waits_on_sub_agent(s, handle.lead):
        pass  # the transcript: waiting on the sub-agent, whose own state shows
    elif mark == ANSWERED:
        lead = AgentLive(turn=TURN_OVER, turn_since=since)
    elif mark == TOOLS and proc is not None and view is not None:
        # the response's calls are written once they ran: none in the file yet
        cmd = running_command(view, proc.pid)
        if cmd is not None:
            lead = AgentLive(calls=(Call(since=since, runs=True, doing=f"running {cmd}"),))
        elif can_ask(proc.argv):
            lead = AgentLive(calls=(Call(since=since, runs=False, words="approve a tool call"),))
    # (OPEN: the model's turn, which the transcript says)
    if proc is None:
        return Live(agents={handle.lead: lead} if lead is not None else {})
    return Live(alive=True, pid=proc.pid, agents={handle.lead: lead} if lead is not None else {})


def _waits_on_sub_agent(s: Session, lead: str) -> bool:
    a = s.agents.get(lead)
    return a is not None and any(c.kind == ev.ORDER for c in a.activity.open_calls.values())
