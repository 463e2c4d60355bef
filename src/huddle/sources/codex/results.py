"""Codex tool results and sub-agent reports, for the thread parser.

A call's result can be told by two records: a UI item (0.160+ CommandExecution with
its exit code, FileChange, McpToolCall; 0.144 patch_apply_end, mcp_tool_call_end)
and the model-visible output (`function_call_output`, whose text carries
`Process exited with code N` on every version). The first to arrive settles the
result; the other is then ignored. Outputs are read through their first bytes only.
"""

from __future__ import annotations

from typing import Any, Protocol

import msgspec

from huddle.model import events as ev
from huddle.model.events import Event, cap, one_line
from huddle.model.tools import SHELL_TOOLS, SPAWN_TOOLS, WAIT_TOOLS

from . import records as rec
from . import text as txt

OUTPUT_HEAD = 600  # bytes of a tool output looked at: the exit code line is in its first lines
_FAILED = ("failed", "error", "unavailable", "rejected(", "denied", "not allowed", "timed out")


def looks_failed(text: str) -> bool:
    head = text.lstrip()[:200]
    nl = head.find("\n")  # (its first line: a find, where a split made a list)
    first = (head if nl < 0 else head[:nl]).lower()
    # (a loop of C searches: 0.25 µs, where a search of their alternation took 0.71, any() 0.43)
    for word in _FAILED:  # noqa: SIM110
        if word in first:
            return True
    return False


class Links:
    """What spans the threads of one session while they are read: who spawned whom,
    what each sub-agent reported. Links come from the records, never file names."""

    def __init__(self) -> None:
        self.orders: dict[str, Event] = {}  # spawn call id -> its ORDER
        self.child_of_call: dict[str, str] = {}  # spawn call id -> child thread id
        self.nickname: dict[str, str] = {}  # child thread id -> nickname the spawn result gave
        self.child_by_path: dict[str, str] = {}  # agent path (/root/x) -> child thread id
        self.reported: set[tuple[str, str]] = set()  # (child or path, text) already reported
        self.unresolved: list[Event] = []  # REPORTs whose child is known only by path (detail)
        self.finished: set[str] = set()  # children Codex says completed
        self.answers: dict[str, str] = {}  # thread -> its last final answer (task_complete)
        self.first_orders: dict[str, str] = {}  # child -> the task it was given first

    def call_of(self, child: str) -> str:
        for call, c in self.child_of_call.items():
            if c == child:
                return call
        return ""

    def link(self, call: str, child: str, path: str = "") -> None:
        if call and child:
            self.child_of_call.setdefault(call, child)
        if path and child:
            self.child_by_path.setdefault(path, child)

    def activity(self, kind: str | None, call: str, child: str, path: str) -> None:
        """A lead's word on a child (sub_agent_activity, SubAgentActivity): started, completed."""
        if kind == "started":
            self.link(call, child, path)
        elif kind == "completed" and child:
            self.finished.add(child)
            if path:
                self.child_by_path.setdefault(path, child)


class Emit(Protocol):
    """The thread parser's event writer: an event of `kind` told by the line at `off` (`n` bytes)."""

    def __call__(
        self,
        kind: str,
        off: int,
        n: int,
        *,
        id: str = "",
        name: str = "",
        text: str = "",
        detail: str = "",
        truncated: bool = False,
        ok: bool | None = None,
        size: int = 0,
        target: str = "",
        copied: bool = False,
    ) -> Event: ...


class Results:
    """Settles one thread's tool calls (results) and writes its sub-agents' reports.

    The thread parser opens calls in `calls`; a result settles one once (`done`)."""

    def __init__(self, emit: Emit, links: Links, info: rec.ThreadInfo) -> None:
        self.emit = emit
        self.links = links
        self.info = info
        self.calls: dict[str, tuple[str, dict[str, Any]]] = {}  # open call id -> (tool, arguments kept for states)
        self.done: set[str] = set()  # call ids whose result was already emitted
        self.exec_sessions: dict[str, str] = {}  # unified exec session id -> its exec_command call

    def _settle(self, cid: str) -> tuple[str, dict[str, Any]] | None:
        """Mark a call's result as emitted; return what the call was."""
        self.done.add(cid)
        return self.calls.pop(cid, None)

    def output(self, it: rec.Payload, off: int, n: int) -> None:
        cid = it.call_id or ""
        if cid in self.done:
            return
        call = self._settle(cid)
        name, args = call if call is not None else ("", {})
        text = rec.output_text(it.output, OUTPUT_HEAD)
        size = len(it.output)
        ok, detail, summary, aborted = True, "", "", False
        if name in SPAWN_TOOLS:
            val = _json_text(text)
            if isinstance(val, dict) and (val.get("agent_id") or val.get("task_name")):
                child = str(val.get("agent_id") or "")
                if child:
                    self.links.link(cid, child)
                    if val.get("nickname"):
                        self.links.nickname.setdefault(child, str(val["nickname"]))
                detail = "background"  # the sub-agent runs on; its report closes it
            else:
                ok = not looks_failed(text)
        elif name in WAIT_TOOLS:
            val = _json_text(text)
            if isinstance(val, dict):
                self.report_states(val.get("status"), off, n, via="wait")
                if val.get("timed_out"):
                    summary = "timed out"
        elif name in SHELL_TOOLS or name == "write_stdin":
            code = txt.exit_code_of(text)
            running = txt.running_session(text) if code is None else ""
            if code is not None:
                ok, summary = code == 0, f"exit {code}"
            elif running and name != "write_stdin":
                detail, summary = "background", f"running as session {running}"
                self.exec_sessions[running] = cid
            elif "aborted by user" in text and text.rstrip().rsplit("\n", 1)[-1].startswith(
                "aborted by user"
            ):  # "...after 0.7s" on 0.144
                ok, summary, aborted = False, "aborted by user", True
            elif not running:
                ok = not looks_failed(text)
                summary = "" if ok else one_line(text, 200)
            if name == "write_stdin" and code is not None:
                first = self.exec_sessions.pop(str(args.get("session_id")), "")
                if first:  # the long command it polled has finished
                    self.emit(
                        ev.TOOL_RESULT, off, n, id=first, name="exec_command", ok=ok, detail="notified", text=summary
                    )
        elif name == "apply_patch":
            code = txt.exit_code_of(text)
            ok = code == 0 if code is not None else not looks_failed(text)
            summary = "\n".join(args.get("files") or ()) if ok else one_line(text, 200)
        else:
            code = txt.exit_code_of(text) if name == "exec" else None  # code mode reports the inner exit code
            ok = code == 0 if code is not None else not looks_failed(text)
            summary = "" if ok else one_line(text, 200)
        self.emit(ev.TOOL_RESULT, off, n, id=cid, name=name, ok=ok, size=size, detail=detail, text=summary)
        if aborted:
            self.emit(ev.INTERRUPT, off, n, id=cid, text="aborted by user")

    def command_result(self, cid: str, code: int | None, item: rec.Item | None, off: int, n: int) -> None:
        """A finished command from a UI item (0.160+) or exec_command_end."""
        if not cid or cid in self.done:
            return
        status = item.status if item is not None else None
        if code is None and status not in ("failed", "declined"):
            return  # not settled here: the output text will tell
        if cid not in self.calls and item is not None:
            # A command run from inside another tool (code mode's JS `tools.exec_command`):
            # no call of its own in the history, so it gets one here.
            self.emit(
                ev.TOOL_CALL, off, n, id=cid, name="exec_command", detail=one_line(txt.command_text(item.command), 160)
            )
        self._settle(cid)
        ok = code == 0 if code is not None else False
        summary = f"exit {code}" if code is not None else (status or "")
        self.emit(ev.TOOL_RESULT, off, n, id=cid, name="exec_command", ok=ok, text=summary)

    def file_change(self, cid: str, ok: bool, changes: dict[str, rec.Change] | None, off: int, n: int) -> None:
        if not cid or cid in self.done:
            return
        self._settle(cid)
        files = txt.changes_list(changes, self.info.cwd)
        self.emit(ev.TOOL_RESULT, off, n, id=cid, name="apply_patch", ok=ok, text="\n".join(files), size=len(files))

    def mcp_result(self, cid: str, ok: bool, why: str, off: int, n: int, item: rec.Item | None = None) -> None:
        if not cid or cid in self.done:
            return
        tool = f"mcp__{item.server}__{item.tool}" if item is not None else "mcp"
        if cid not in self.calls and item is not None:
            self.emit(ev.TOOL_CALL, off, n, id=cid, name=tool)
        self._settle(cid)
        self.emit(ev.TOOL_RESULT, off, n, id=cid, name=tool, ok=ok, text=one_line(why, 200))

    # -- reports -----------------------------------------------------------------------

    def report_states(self, states: object, off: int, n: int, via: str) -> None:
        """`{child: {"completed": answer}}` from a wait result: one report per answer."""
        if not isinstance(states, dict):
            return
        for child, st in states.items():
            if isinstance(st, dict) and isinstance(st.get("completed"), str):
                self.links.finished.add(child)
                self.report(child, st["completed"], off, n, via)

    def report(self, child: str, text: str, off: int, n: int, via: str) -> None:
        key = (child, text)
        if key in self.links.reported:
            return
        self.links.reported.add(key)
        self.links.finished.add(child)
        s, cut = cap(text)
        self.emit(ev.REPORT, off, n, id=self.links.call_of(child), target=child, text=s, truncated=cut, name=via)

    def report_path(self, path: str, text: str, off: int, n: int, via: str) -> None:
        """A report from a child known by its path (`/root/count_files`)."""
        child = self.links.child_by_path.get(path, "")
        if child:
            self.report(child, text, off, n, via)
            return
        key = (path, text)
        if key in self.links.reported:
            return
        self.links.reported.add(key)
        s, cut = cap(text)
        e = self.emit(ev.REPORT, off, n, text=s, truncated=cut, name=via, detail=path)
        self.links.unresolved.append(e)


def _json_text(text: str) -> Any:
    if not text.startswith("{"):
        return None
    try:
        return rec.decode_any(text)
    except Exception:
        return None


def mcp_ok(raw: msgspec.Raw) -> bool:
    """An MCP result: `{"content", "isError"}` (0.160+) or `{"Ok": {...}}` / `{"Err": ...}`."""
    val = rec.raw_json(raw)
    if not isinstance(val, dict):
        return True
    if "Err" in val:
        return False
    inner = val.get("Ok", val)
    return not (isinstance(inner, dict) and inner.get("isError"))
