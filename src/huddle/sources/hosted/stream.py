"""A hosted run's log entries -> huddle events.

The log (`D/events.jsonl`, written by `huddle host`) holds what went to the agent
(`stdin`: the prompts), what it printed (`stdout`: for Claude Code the lines of
`--output-format stream-json --verbose`, kept as they were) and the host's own
entries (`started`, `stopping`, `exited`...). Stream lines are decoded by `lines`
(reusing the transcript's message structs) and their usage counted by `ledger`, the
same reader and the same rule as `huddle run`'s live line: once per message, and
sub-agents' totals, which arrive unsplit, as input (`detail="unsplit"`).
"""

from __future__ import annotations

import shlex
from typing import Any

import msgspec
from msgspec import Raw

from huddle.model import events as ev
from huddle.model import times
from huddle.model.events import Event, Usage, cap, one_line
from huddle.model.session import Session
from huddle.model.tools import SPAWN_TOOLS
from huddle.sources.claude.records import (
    Block,
    Message,
    agent_input,
    input_summary,
    str_of,
    strip_handback,
    text_of,
    usage_of,
)

from .asked import Asked
from .ledger import StreamLedger
from .lines import (
    Entry,
    Line,
    StreamEvent,
    argv_prompt,
    claude_usage,
    compact_detail,
    decode_any,
    decode_line,
    given,
    task_usage,
    user_text,
)
from .rpc import RpcMapper


class Mapper:
    """Feeds one run's log to its Session. Picklable: the cache keeps it."""

    def __init__(self, session: Session, path: str):
        self.s = session
        self.path = path
        self.lead = session.id
        self.t: float | None = None
        self.off = 0
        self.n = 0
        self.host: dict[str, Any] = {}  # host_pid, host_start of the latest host
        self.run: dict[str, Any] = {}  # pid, start, argv, t of the latest `started`
        self.exited: dict[str, Any] | None = None  # status, reason, t of the latest `exited`
        self.agent_sessions: list[str] = []  # the agent's own session ids (stream `session_id`)
        self.model = ""
        self.partial: dict[str, Any] | None = None  # text being streamed now: agent, kind, text
        self.ledger = StreamLedger()  # usage, once per message
        self.callers: dict[str, str] = {}  # Agent call id -> the agent that made it
        self.orders: dict[str, Event] = {}  # Agent call id -> its ORDER
        self.subs: dict[str, str] = {}  # Agent call id -> sub-agent id
        self.background: set[str] = set()  # Agent call ids started in the background
        self.prompted: set[str] = set()  # sub-agents whose first prompt was seen
        self.plain: list[str] = []  # non-JSON stdout and stderr of this run, to explain a failure
        self.asked = Asked()  # what the agent asks a person, pending (huddle.answer)
        self.rpc: RpcMapper | None = None  # a JSON-RPC agent's lines (rpc.RpcMapper), when the host speaks one

    # -- helpers -------------------------------------------------------------------

    def emit(self, kind: str, agent: str | None = None, **kw: Any) -> Event:
        e = Event(kind=kind, agent=agent or self.lead, t=self.t, file=self.path, offset=self.off, length=self.n, **kw)
        self.s.add(e)
        return e

    def _usage(self, agent: str, mid: str, u: Usage, **kw: Any) -> None:
        if u.total:
            self.emit(ev.USAGE, agent, id=mid, name=self.model, usage=u, **kw)

    # -- entries -------------------------------------------------------------------

    def feed(self, off: int, raw: bytes) -> None:
        try:
            e = msgspec.json.decode(raw, type=Entry)
        except msgspec.MsgspecError as exc:
            self.s.problem(self.path, off, f"not a log entry ({exc})")
            return
        t = times.seconds(e.t)
        if t is None and e.t is not None:
            self.s.note(self.path, off, times.odd(e.t))
        e.t = t  # what follows (run, exit) sees the checked time only
        self.t, self.off, self.n = t, off, len(raw)
        k = e.kind
        if k == "stdout":
            self._stdout(e, off)
        elif k == "stdin":
            self._stdin(e.json)
        elif k == "stderr":
            self._plain(e.text or "", "stderr")
        elif k in ("host", "started", "exited"):
            self._lifecycle(e)
        elif k in ("stopping", "note"):
            self.emit(ev.CONTEXT, name=k, text=e.step or e.text or k)
        elif k in ("ask", "answer", "gone"):
            self.asked.feed(self, e, raw)

    def _stdout(self, e: Entry, off: int) -> None:
        """What the agent printed: plain text, a protocol's message, or stream-json."""
        if e.text is not None:
            self._plain(e.text, "stdout")
        elif self.rpc is not None:
            self._rpc_out(e.json)
        else:
            self._stream(e.json, off)

    def _lifecycle(self, e: Entry) -> None:
        """The host's own records: itself, the agent's process started, exited."""
        if e.kind == "host":
            self.host = {"host_pid": e.host_pid, "host_start": e.host_start}
        elif e.kind == "started":
            self._started(e)
        else:
            self._exited(e)

    def _plain(self, text: str, where: str) -> None:
        self.plain = (self.plain + [text])[-20:]
        self.emit(ev.CONTEXT, name=where, text=cap(text)[0])

    def _started(self, e: Entry) -> None:
        self.run = {"pid": e.pid, "start": e.start, "argv": e.argv or [], "t": e.t, "protocol": e.protocol}
        self.asked.clear(self)  # asks of an earlier agent process died with it
        if e.protocol in ("acp", "codex"):
            self.rpc = RpcMapper(e.protocol)
        else:
            self.rpc = None
        self.exited = None
        self.plain = []
        if e.cwd:
            self.s.cwd = e.cwd
        if e.name and not self.s.custom_title:
            self.s.custom_title = e.name
        argv = e.argv or []
        self.emit(ev.CONTEXT, name="started", text=shlex.join(argv))
        prompt = argv_prompt(argv)
        if prompt:
            text, cut = cap(prompt)
            self.emit(ev.PROMPT, text=text, truncated=cut)

    def _stdin(self, raw: Raw) -> None:
        try:
            val = decode_any(raw)
        except msgspec.MsgspecError:
            return
        if self.rpc is not None and self.rpc.stdin(self, val):
            return
        text = user_text(val)
        if text is not None:
            t, cut = cap(text)
            self.emit(ev.PROMPT, text=t, truncated=cut)
        else:
            self.emit(ev.CONTEXT, name="stdin", text=one_line(msgspec.json.encode(val).decode(), 300))

    def _exited(self, e: Entry) -> None:
        self.exited = {"status": e.status, "reason": e.reason or "", "stopped": bool(e.stopped), "t": e.t}
        self.partial = None
        self.asked.clear(self)
        if self.rpc is not None:
            self.rpc.flush(self)
        self._settle()
        for sub in list(self.ledger.tasks):  # sub-agents that never reported
            self._usage(sub, f"task:{sub}", Usage(input=self.ledger.task_done(sub)), detail="unsplit")
        lead = self.s.agents.get(self.lead)
        if lead is not None and lead.activity.turn_open:
            self.emit(ev.INTERRUPT, text=f"agent exited: {e.reason or 'ended'}")
        if e.status and not e.stopped and self.plain:
            self.emit(ev.ERROR, text=cap("\n".join(self.plain[-10:]))[0], name="exit")
        self.emit(ev.CONTEXT, name="session_end", text=e.reason or "exited")

    def _settle(self) -> None:
        """Usage never made final (no message_delta, no result): count what is known."""
        left, turn = self.ledger.settle()
        for mid, u in left:
            self._usage(self.lead, mid, u)
        if turn is not None:
            self._usage(self.lead, f"turn:{self.off}", turn)

    def _rpc_out(self, raw: Raw) -> None:
        try:
            val = decode_any(raw)
        except msgspec.MsgspecError:
            return
        if self.rpc is not None:
            self.rpc.stdout(self, val)

    # -- stream lines --------------------------------------------------------------

    def _stream(self, raw: Raw, off: int) -> None:
        try:
            d = decode_line(raw)
        except msgspec.MsgspecError as exc:
            self.s.problem(self.path, off, f"unexpected stream line ({exc})")
            return
        t = d.type
        if t == "stream_event":
            self._event(d)
        elif t == "assistant":
            self._assistant(d)
        elif t == "user":
            self._user(d)
        elif t == "system":
            self._system(d)
        elif t == "result":
            self._result(d)

    def _who(self, d: Line) -> str:
        if d.agent_id:
            return d.agent_id
        if d.parent_tool_use_id:
            return self.subs.get(d.parent_tool_use_id, self.lead)
        return self.lead

    def _event(self, d: Line) -> None:
        self.ledger.partials = True
        e = d.event
        if e is None or d.parent_tool_use_id:
            return
        if e.type == "message_start" and e.message is not None:
            if e.message.usage is not None:
                self.ledger.started(e.message.id or d.api_message_id or "", usage_of(e.message.usage))
            if e.message.model:
                self.model = e.message.model
        elif e.type.startswith("content_block_"):
            self._partial(e)
        elif e.type == "message_delta" and e.usage is not None:
            mid = d.api_message_id or ""
            u = self.ledger.delta(mid, usage_of(e.usage))
            if u is not None:
                self._usage(self.lead, mid, u)

    def _partial(self, e: StreamEvent) -> None:
        """The lead's text or thinking as it streams (what the live line shows)."""
        if e.type == "content_block_start" and e.content_block is not None:
            kind = {"text": ev.SAY, "thinking": ev.THINK}.get(e.content_block.type)
            self.partial = {"agent": self.lead, "kind": kind, "text": ""} if kind else None
        elif e.type == "content_block_delta" and e.delta is not None and self.partial is not None:
            piece = e.delta.text if e.delta.type == "text_delta" else e.delta.thinking
            if piece:
                self.partial["text"] = (self.partial["text"] + piece)[-ev.TEXT_KEEP :]
        elif e.type == "content_block_stop":
            self.partial = None

    def _assistant(self, d: Line) -> None:
        m = d.message
        if not isinstance(m, Message):
            return
        who = self._who(d)
        if m.model and m.model != "<synthetic>" and who == self.lead:
            self.model = m.model
        mid = m.id or ""
        if who == self.lead and m.model != "<synthetic>" and m.usage is not None:
            self.ledger.assistant(mid, usage_of(m.usage))
        blocks = m.content if isinstance(m.content, list) else []
        if isinstance(m.content, str) and m.content:
            self._text(who, ev.SAY, m.content, m.model, d)
        for b in blocks:
            if b.type == "text" and b.text:
                self._text(who, ev.SAY, b.text, m.model, d)
            elif b.type == "thinking" and b.thinking:
                self._text(who, ev.THINK, b.thinking, m.model, d)
            elif b.type in ("tool_use", "server_tool_use"):
                self._tool_use(who, b)

    def _text(self, who: str, kind: str, text: str, model: str | None, d: Line) -> None:
        if self.partial is not None and self.partial.get("kind") == kind:
            self.partial = None  # now whole
        t, cut = cap(text)
        if model == "<synthetic>" or given(d.error):
            self.emit(ev.ERROR, who, text=t, truncated=cut, name="api_error")
        else:
            self.emit(kind, who, text=t, truncated=cut)

    def _tool_use(self, who: str, b: Block) -> None:
        cid, name = b.id or "", b.name or ""
        if name in SPAWN_TOOLS:
            inp = agent_input(b.input)
            self.callers[cid] = who
            self.orders[cid] = self.emit(
                ev.ORDER,
                who,
                id=cid,
                name=inp.get("subagent_type") or "general-purpose",
                detail=inp.get("description") or "",
                text=cap(inp.get("prompt") or "")[0],
            )
            return
        self.emit(ev.TOOL_CALL, who, id=cid, name=name, detail=input_summary(name, b.input))

    def _user(self, d: Line) -> None:
        m = d.message
        if not isinstance(m, Message):
            return
        who = self._who(d)
        content = m.content
        blocks = [] if isinstance(content, str) else (content or [])
        texts = [content] if isinstance(content, str) else [b.text for b in blocks if b.type == "text" and b.text]
        for b in blocks:
            if b.type == "tool_result":
                self._tool_result(who, b)
        for text in texts:
            if text.startswith("[Request interrupted"):
                self.emit(ev.INTERRUPT, who, text=text)
            elif who != self.lead and who not in self.prompted:
                self.prompted.add(who)  # the sub-agent's order: its lead's ORDER carries it
                a = self.s.agent(who, parent=self.lead)
                a.order = a.order or cap(text)[0]
            elif d.isReplay or d.isSynthetic or text.lstrip().startswith("<"):
                self.emit(ev.CONTEXT, who, name="replay" if d.isReplay else "meta", text=cap(text)[0])
            elif who == self.lead:
                self.emit(ev.PROMPT, text=cap(text)[0])
            else:
                self.emit(ev.ORDER, who, text=cap(text)[0], target=who)

    def _tool_result(self, who: str, b: Block) -> None:
        cid = b.tool_use_id or ""
        size = len(b.content)
        if cid in self.callers:
            text = text_of(b.content)
            bg = cid in self.background or text.startswith("Async agent launched")
            self.emit(
                ev.TOOL_RESULT,
                who,
                id=cid,
                name="Agent",
                ok=not b.is_error,
                size=size,
                detail="background" if bg else "",
            )
            if b.is_error and cid not in self.subs:  # refused: no sub-agent will report
                self.emit(ev.REPORT, who, id=cid, text=cap(strip_handback(text))[0], ok=False)
            return
        self.emit(ev.TOOL_RESULT, who, id=cid, ok=not b.is_error, size=size)

    def _system(self, d: Line) -> None:
        st = d.subtype or ""
        if st == "init":
            self._init(d)
        elif st == "session_title_changed" and d.title:
            self.emit(ev.TITLE, text=d.title)
        elif st == "compact_boundary":
            self.emit(ev.COMPACTION, text="Conversation compacted", detail=compact_detail(d.compact_metadata))
        elif st == "task_started":
            self._task_started(d)
        elif st in ("task_progress", "task_notification") and d.task_id:
            self._task_news(d, d.task_id)
        elif st == "api_retry":
            why = str_of(d.error) or "error"
            self.emit(ev.CONTEXT, name="api_retry", text=f"retrying after {why} {d.error_status or ''}".strip())
        elif st in ("permission_denied", "informational"):
            self.emit(ev.CONTEXT, name=st, text=cap(str_of(d.content) or d.tool_name or st)[0])

    def _init(self, d: Line) -> None:
        """The agent's first word: its own session id, its folder, its model."""
        if d.session_id and d.session_id not in self.agent_sessions:
            self.agent_sessions.append(d.session_id)
        if d.cwd:
            self.s.cwd = d.cwd
        if d.model:
            self.model = d.model

    def _task_news(self, d: Line, task: str) -> None:
        """A sub-agent's progress (its tokens so far) or its end."""
        u = task_usage(d.usage) if given(d.usage) else None
        if u is not None and u.total_tokens:
            self.ledger.task(task, u.total_tokens)
        if d.subtype == "task_notification":
            self._task_done(d)

    def _task_started(self, d: Line) -> None:
        sub, call = d.task_id or "", d.tool_use_id or ""
        if not sub:
            return
        caller = self.subs.get(d.parent_task_id or "", None) or d.parent_task_id or self.callers.get(call) or self.lead
        a = self.s.agent(sub, parent=caller if caller in self.s.agents else self.lead)
        a.kind = d.subagent_type or a.kind
        a.description = d.description or a.description
        a.name = f"{a.kind}: {a.description}" if a.description else (a.kind or sub)
        a.tool_use_id = call or a.tool_use_id
        a.order = a.order or (d.prompt or "")
        a.background = bool(d.is_backgrounded)
        a.finished = False
        if call:
            self.subs[call] = sub
            if d.is_backgrounded:
                self.background.add(call)
            order = self.orders.get(call)
            if order is not None:
                order.target = sub
                a.order_seq = order.seq

    def _task_done(self, d: Line) -> None:
        sub, call = d.task_id or "", d.tool_use_id or ""
        caller = self.callers.get(call, self.lead)
        text, cut = cap(d.summary or "")
        self.emit(
            ev.REPORT,
            caller,
            id=call,
            target=sub,
            text=text,
            truncated=cut,
            ok=d.status in (None, "completed"),
            name="task-notification",
        )
        if sub in self.s.agents:
            self.s.agents[sub].finished = True
        self._usage(sub, f"task:{sub}", Usage(input=self.ledger.task_done(sub)), detail="unsplit")

    def _result(self, d: Line) -> None:
        u = claude_usage(d.usage) if given(d.usage) else None
        turn = self.ledger.result(usage_of(u) if u is not None else None)
        if turn is not None:
            self._usage(self.lead, f"result:{self.off}", turn)
        reason = d.terminal_reason or ""
        if d.is_error and reason.startswith("aborted"):
            lead = self.s.agents.get(self.lead)
            if lead is None or lead.activity.turn_open:
                self.emit(ev.INTERRUPT, text=f"interrupted ({reason})")
        elif d.is_error:
            why = d.result or "; ".join(d.errors or []) or d.subtype or "error"
            self.emit(ev.ERROR, text=cap(why)[0], name="result")
        self.emit(ev.TURN_END, text=cap(d.result or "")[0])
