"""One Copilot CLI `events.jsonl` -> events, the lead's and its sub-agents' alike.

Sub-agents run inline: a `task` call of an agent starts one (`subagent.started` names
the call and the sub-agent's `agentId`); every record of the sub-agent carries that
`agentId` at the top level (older ones `data.parentToolCallId`, the call). A sub-agent
is keyed by the call that started it.

A user message opens an interaction; each model call in it is `assistant.turn_start`,
the response (`assistant.message`, its tool requests), the tools run, then
`assistant.turn_end`. A call that ends with tool requests leaves the turn open for
the next call: only a response without requests (or none at all) ends the turn.

A `permission.requested` waits for the human until its `permission.completed`.
"""

from __future__ import annotations

from typing import Any

from huddle.model import events as ev
from huddle.model import times
from huddle.model.doing import input_summary
from huddle.model.events import Event, cap, one_line
from huddle.model.session import Session
from huddle.model.tools import SPAWN_TOOLS

from . import records as rec
from .usage import Responses

SHELL_WORDS = ("fullCommandText", "command")
ASK_WORDS = ("fileName", "path", "url", "toolName", "serverName", "intention", "kind")
CONTEXT_KEEP = 600
# lifecycle marks, for liveness as of a past time
STARTED, RESUMED, SHUT = "start", "resume", "shutdown"


class Agents:
    """Who is who in one session: sub-agents by their `agentId`, calls by who made them."""

    def __init__(self) -> None:
        self.sub_of_aid: dict[str, str] = {}  # agentId -> sub-agent id (its task call)
        self.aid_of: dict[str, str] = {}  # sub-agent id -> its agentId
        self.caller: dict[str, str] = {}  # call id -> the agent that made it
        self.tool: dict[str, str] = {}  # call id -> its tool's name
        self.orders: dict[str, Event] = {}  # task call id -> its ORDER
        self.prompted: set[str] = set()  # sub-agents whose first prompt came (the order carried it)
        self.done: set[str] = set()  # sub-agents that completed or failed
        self.mode: dict[str, str] = {}  # sub-agent -> its executionMode (sync / background)


class EventsParser:
    def __init__(self, session: Session, lead: str, path: str):
        self.session = session
        self.lead = lead
        self.path = path
        self.out: list[Event] = []
        self.agents = Agents()
        self.responses = Responses()
        self.model = ""
        self.version: Any = None  # session.start's `version` (the log's format)
        self.cli = ""  # copilotVersion
        self.last_t: float | None = None
        self.tools_asked: dict[str, bool] = {}  # agent -> its last response asked for tools
        self.answered: dict[str, bool] = {}  # agent -> a response came in its open model call
        self.thought: dict[str, str] = {}  # agent -> its last reasoning text (said once)
        self.asks: dict[str, tuple[str, str]] = {}  # permission requestId -> (wait id, agent)
        self.pending: dict[str, Event] = {}  # wait id -> its open WAITING event
        self.marks: list[tuple[float | None, str]] = []  # (time, start / resume / shutdown)

    # -- emitting ----------------------------------------------------------------------

    def emit(self, kind: str, agent: str, t: float | None, off: int, n: int, **kw: Any) -> Event:
        e = Event(
            kind=kind, agent=agent, t=t if t is not None else self.last_t, file=self.path, offset=off, length=n, **kw
        )
        self.out.append(e)
        return e

    def _text(self, kind: str, agent: str, t: float | None, off: int, n: int, text: str, **kw: Any) -> None:
        body, cut = cap(text)
        self.emit(kind, agent, t, off, n, text=body, truncated=cut, **kw)

    # -- reading -----------------------------------------------------------------------

    def feed(self, off: int, line: bytes) -> None:
        r = rec.envelope(line)
        n = len(line)
        t = times.parse_time(r.timestamp)
        if t is None and r.timestamp is not None and times.out_of_range(r.timestamp):
            self.session.note(self.path, off, times.odd(r.timestamp))
        if t is not None:
            self.last_t = t
        kind = r.type
        handler = _HANDLERS.get(kind)
        if handler is None:
            return  # (system.message, hooks, model changes, what a newer CLI adds)
        handler(self, r, t, off, n)

    def who(self, r: rec.Envelope, call: str | None = None) -> str:
        """The agent a record belongs to: by its agentId, else the call it names, else the lead."""
        if r.agentId:
            sub = self.agents.sub_of_aid.get(r.agentId)
            if sub is not None:
                return sub
        if call and call in self.agents.orders:
            return call
        return self.lead

    # -- the lifecycle ------------------------------------------------------------------

    def _start(self, r: rec.Envelope, t: float | None, off: int, n: int) -> None:
        d: rec.Start = rec.data(r.data, rec.Start)
        self.version = d.version
        self.cli = d.copilotVersion or self.cli
        self.model = d.selectedModel or self.model
        cwd = d.context.cwd if d.context is not None else None
        if cwd and not self.session.cwd:
            self.session.cwd = cwd
        self.marks.append((t, STARTED))
        words = f"Copilot CLI {self.cli}" if self.cli else "Copilot CLI"
        self.emit(ev.CONTEXT, self.lead, t, off, n, name="session_start", text=words + (f" in {cwd}" if cwd else ""))

    def _resume(self, r: rec.Envelope, t: float | None, off: int, n: int) -> None:
        self.marks.append((t, RESUMED))
        self.emit(ev.CONTEXT, self.lead, t, off, n, name="resume", text="resumed")

    def _shutdown(self, r: rec.Envelope, t: float | None, off: int, n: int) -> None:
        d: rec.Shutdown = rec.data(r.data, rec.Shutdown)
        self.marks.append((t, SHUT))
        self.responses.shutdown(self, t, off, n, d)
        why = d.errorReason or d.shutdownType or "exited"
        self.emit(ev.CONTEXT, self.lead, t, off, n, name="shutdown", text=f"exited ({why})")
        for w in list(self.pending):  # a question left open when the process went is no question
            self._resolved(w, t, off, n, "exited")

    # -- the conversation ---------------------------------------------------------------

    def _user(self, r: rec.Envelope, t: float | None, off: int, n: int) -> None:
        d: rec.UserMessage = rec.data(r.data, rec.UserMessage)
        text = d.content or ""
        source = d.source or ""
        agent = self.who(r)
        if agent != self.lead or source.startswith("agent-"):
            if agent == self.lead:
                self._text(ev.CONTEXT, agent, t, off, n, text[:CONTEXT_KEEP], name="agent message")
            elif agent not in self.agents.prompted and agent in self.agents.orders:
                self.agents.prompted.add(agent)  # a sub-agent's first prompt: its lead's order carries it
            else:
                self._text(ev.ORDER, agent, t, off, n, text, target=agent)
        elif source in ("", "user") and not d.isAutopilotContinuation and not text.startswith("<system_notification>"):
            self._text(ev.PROMPT, agent, t, off, n, text)
        else:
            self.emit(ev.CONTEXT, agent, t, off, n, name=source or "notification", text=text[:CONTEXT_KEEP])
        self.tools_asked.pop(agent, None)

    def _turn_start(self, r: rec.Envelope, t: float | None, off: int, n: int) -> None:
        d: rec.Turn = rec.data(r.data, rec.Turn)
        agent = self.who(r, d.parentToolCallId)
        self.answered[agent] = False
        self.tools_asked[agent] = False

    def _turn_end(self, r: rec.Envelope, t: float | None, off: int, n: int) -> None:
        d: rec.Turn = rec.data(r.data, rec.Turn)
        agent = self.who(r, d.parentToolCallId)
        if not self.tools_asked.get(agent):
            self.emit(ev.TURN_END, agent, t, off, n)  # no tool asked for: the model is done
        self.answered.pop(agent, None)

    def _reasoning(self, r: rec.Envelope, t: float | None, off: int, n: int) -> None:
        d: rec.Reasoning = rec.data(r.data, rec.Reasoning)
        agent = self.who(r)
        if d.content and d.content != self.thought.get(agent):
            self.thought[agent] = d.content
            self._text(ev.THINK, agent, t, off, n, d.content)

    def _message(self, r: rec.Envelope, t: float | None, off: int, n: int) -> None:
        m: rec.AssistantMessage = rec.data(r.data, rec.AssistantMessage)
        agent = self.who(r, m.parentToolCallId)
        rid = m.apiCallId or m.messageId or ""
        if m.model:
            self.model = m.model
        if m.reasoningText and m.reasoningText != self.thought.get(agent):
            self.thought[agent] = m.reasoningText
            self._text(ev.THINK, agent, t, off, n, m.reasoningText, id=rid)
        if m.content:
            self._text(ev.SAY, agent, t, off, n, m.content, id=rid)
        asked = False
        for req in m.toolRequests or ():
            if req.toolCallId:
                asked = True
                self._call(agent, req.toolCallId, req.name or "", req.arguments, t, off, n)
        # (a response split in chunks asks for tools if any chunk does)
        more = self.answered.get(agent, False) and self.tools_asked.get(agent, False)
        self.tools_asked[agent] = asked or more
        self.answered[agent] = True
        self.responses.message(self, agent, t, off, n, m)

    def _usage(self, r: rec.Envelope, t: float | None, off: int, n: int) -> None:
        d: rec.UsageRecord = rec.data(r.data, rec.UsageRecord)
        if d.usage is not None:
            self.responses.record(self, self.who(r, d.usage.parentToolCallId), t, off, n, d.usage)

    # -- tools and sub-agents -------------------------------------------------------------

    def _call(self, agent: str, cid: str, name: str, args: Any, t: float | None, off: int, n: int) -> None:
        A = self.agents
        if cid in A.caller:
            return  # asked for once, started once: one call
        A.caller[cid] = agent
        A.tool[cid] = name
        if name in SPAWN_TOOLS:
            a = args if isinstance(args, dict) else {}
            kind = rec.field(a, "agent_type", "subagent_type") or "sub-agent"
            body, cut = cap(rec.field(a, "prompt"))
            desc = rec.field(a, "description")
            A.orders[cid] = self.emit(
                ev.ORDER, agent, t, off, n, id=cid, name=kind, detail=desc, text=body, truncated=cut, target=cid
            )
            s = self.session
            sub = s.agent(cid, parent=agent)
            sub.parent = agent
            sub.kind = sub.kind or kind
            sub.name = rec.field(a, "name") or sub.name
            sub.description = sub.description or rec.field(a, "description")
            sub.tool_use_id = cid
            sub.order = body
            s.version += 1
            return
        self.emit(ev.TOOL_CALL, agent, t, off, n, id=cid, name=name, detail=input_summary(args))

    def _tool_start(self, r: rec.Envelope, t: float | None, off: int, n: int) -> None:
        d: rec.ToolStart = rec.data(r.data, rec.ToolStart)
        if d.toolCallId:  # a call no response asked for (a user's, an older CLI's)
            self._call(self.who(r, d.parentToolCallId), d.toolCallId, d.toolName or "", d.arguments, t, off, n)

    def _tool_done(self, r: rec.Envelope, t: float | None, off: int, n: int) -> None:
        d: rec.ToolComplete = rec.data(r.data, rec.ToolComplete)
        cid = d.toolCallId or ""
        if not cid:
            return
        A = self.agents
        agent = A.caller.get(cid) or self.who(r)
        code = d.shellExecution.exitCode if d.shellExecution is not None else None
        ok = bool(d.success) and code in (None, 0)
        out = rec.text_of(d.result) if d.success else (rec.text_of(d.error) or rec.field(d.error, "message"))
        if cid in A.orders:
            background = A.mode.get(cid, "sync") not in ("sync", "") and cid not in A.done
            self.emit(ev.TOOL_RESULT, agent, t, off, n, id=cid, name="task", ok=ok, size=len(out.encode()),
                      detail="background" if background else "")  # fmt: skip
            if background:
                self.session.agents[cid].background = True
                return  # its report comes when it completes
            self._text(ev.REPORT, agent, t, off, n, out, id=cid, ok=ok, target=cid)
            self._finished(cid)
            return
        self.emit(ev.TOOL_RESULT, agent, t, off, n, id=cid, name=A.tool.get(cid, ""), ok=ok, size=len(out.encode()))

    def _sub_started(self, r: rec.Envelope, t: float | None, off: int, n: int) -> None:
        d: rec.Subagent = rec.data(r.data, rec.Subagent)
        cid = d.toolCallId or ""
        if not cid:
            return
        A = self.agents
        if cid not in A.orders:  # started by a call no response asked for
            self._call(
                self.who(r), cid, "task", {"agent_type": d.agentName, "description": d.agentDescription}, t, off, n
            )
        if r.agentId:
            A.sub_of_aid[r.agentId] = cid
            A.aid_of[cid] = r.agentId
        A.mode[cid] = d.executionMode or "sync"
        a = self.session.agents[cid]
        a.kind = d.agentName or a.kind
        a.name = d.agentDisplayName or a.name
        a.description = d.agentDescription or a.description
        a.model = d.model or a.model
        self.session.version += 1

    def _sub_done(self, r: rec.Envelope, t: float | None, off: int, n: int) -> None:
        d: rec.Subagent = rec.data(r.data, rec.Subagent)
        cid = d.toolCallId or ""
        if cid not in self.agents.orders:
            return
        self.agents.done.add(cid)
        a = self.session.agents[cid]
        if a.background and a.report is None:  # a background agent's report: now
            ok = r.type == "subagent.completed"
            self._text(ev.REPORT, self.agents.caller[cid], t, off, n, d.error or "", id=cid, ok=ok, target=cid)
        if d.error:
            self.emit(ev.ERROR, cid, t, off, n, name="subagent_failed", text=one_line(d.error, 300))
        self._finished(cid)

    def _finished(self, cid: str) -> None:
        a = self.session.agents.get(cid)
        if a is not None and not a.finished and (cid in self.agents.done or not a.background):
            a.finished = True
            self.session.version += 1

    # -- waiting for the human ----------------------------------------------------------

    def _ask(self, r: rec.Envelope, t: float | None, off: int, n: int) -> None:
        d: rec.PermissionRequested = rec.data(r.data, rec.PermissionRequested)
        req = d.permissionRequest if isinstance(d.permissionRequest, dict) else {}
        cid = rec.field(req, "toolCallId") or rec.field(d.promptRequest, "toolCallId")
        wid = cid or d.requestId or f"{off}"
        agent = self.agents.caller.get(cid) or self.who(r)
        tool = self.agents.tool.get(cid) or rec.field(req, "kind") or "permission"
        what = rec.field(req, *SHELL_WORDS) or rec.field(req, *ASK_WORDS) or rec.field(d.promptRequest, *SHELL_WORDS)
        detail = one_line(f"approve {tool}: {what}" if what else f"approve {tool}", 200)
        self.asks[d.requestId or wid] = (wid, agent)
        self.pending[wid] = self.emit(ev.WAITING, agent, t, off, n, id=wid, name=tool, detail=detail)

    def _answered(self, r: rec.Envelope, t: float | None, off: int, n: int) -> None:
        d: rec.PermissionCompleted = rec.data(r.data, rec.PermissionCompleted)
        wid, _ = self.asks.pop(d.requestId or "", (d.toolCallId or "", ""))
        how = rec.field(d.result, "kind") or "answered"
        self._resolved(wid, t, off, n, how)

    def _resolved(self, wid: str, t: float | None, off: int, n: int, how: str) -> None:
        w = self.pending.pop(wid, None)
        if w is not None:
            self.emit(ev.RESOLVED, w.agent, t, off, n, id=wid, name=w.name, detail=w.detail, text=how)

    # -- what else is said --------------------------------------------------------------

    def _said(self, r: rec.Envelope, t: float | None, off: int, n: int) -> None:
        d: rec.Said = rec.data(r.data, rec.Said)
        agent = self.who(r)
        k = r.type
        if k == "session.error":
            what = d.message or d.errorType or "an error"
            code = d.statusCode if isinstance(d.statusCode, int) else None
            self._text(
                ev.ERROR, agent, t, off, n, f"{what} (HTTP {code})" if code else what, name=d.errorType or "error"
            )
        elif k == "abort":
            self.emit(ev.INTERRUPT, agent, t, off, n, text=rec.text_of(d.reason) or "interrupted")
            for w in list(self.pending):  # (the interrupt closes its waits too)
                self.pending.pop(w, None)
        elif k == "session.model_change":
            self.model = d.newModel or self.model
        elif k == "session.compaction_complete":
            if d.success is not False:
                self._text(ev.COMPACTION, agent, t, off, n, d.summaryContent or "compacted")
            else:
                self.emit(
                    ev.ERROR, agent, t, off, n, name="compaction", text=one_line(d.error or "compaction failed", 300)
                )
        else:
            text = d.message or d.content or d.summary or ""
            self.emit(ev.CONTEXT, agent, t, off, n, name=k.rsplit(".", 1)[-1], text=text[:CONTEXT_KEEP])

    # -- what the live signals read -------------------------------------------------------

    def alive_at(self, at: float) -> bool | None:
        """As of a past time, from the file alone: after an exit, not alive; after a start
        or a resume, unknown (the process may have been killed without a word)."""
        last = None
        for t, what in self.marks:
            if t is not None and t > at:
                break
            last = what
        return False if last == SHUT else None

    def waiting_for(self) -> str | None:
        if not self.pending:
            return None
        return list(self.pending.values())[-1].detail


_HANDLERS = {
    "session.start": EventsParser._start,
    "session.resume": EventsParser._resume,
    "session.shutdown": EventsParser._shutdown,
    "user.message": EventsParser._user,
    "assistant.turn_start": EventsParser._turn_start,
    "assistant.turn_end": EventsParser._turn_end,
    "assistant.reasoning": EventsParser._reasoning,
    "assistant.message": EventsParser._message,
    "session.usage_record": EventsParser._usage,
    "tool.execution_start": EventsParser._tool_start,
    "tool.execution_complete": EventsParser._tool_done,
    "subagent.started": EventsParser._sub_started,
    "subagent.completed": EventsParser._sub_done,
    "subagent.failed": EventsParser._sub_done,
    "permission.requested": EventsParser._ask,
    "permission.completed": EventsParser._answered,
    "session.error": EventsParser._said,
    "session.warning": EventsParser._said,
    "session.info": EventsParser._said,
    "session.task_complete": EventsParser._said,
    "system.notification": EventsParser._said,
    "abort": EventsParser._said,
    "session.compaction_complete": EventsParser._said,
    "session.model_change": EventsParser._said,
}
