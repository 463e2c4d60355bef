"""One Gemini CLI chat file (the lead's or a sub-agent's) -> events for one agent.

What the file says, and what it leaves out:
- A model response that called tools is written twice under one message id: right
  after the response (text, thoughts, tokens; no `toolCalls`), then again once its tools
  ran (`toolCalls` with their results). The first sighting gives the text and the usage,
  the second the calls and their results; nothing is given twice.
- A resume appends a new header and `$set messages` with the rebuilt history (no token
  counts): messages already read are skipped, so usage comes from the original records.
  A message only such a list holds (an older session carried over) is read from it.
- There is no end-of-turn record. A response with text and no tool calls ends the turn
  once the next record shows no tool calls followed it; until then it is `answered`
  in `marks` (what the live states read), since the file cannot tell yet.
- A sub-agent runs in its own file. Its lead writes the `invoke_agent` call only when the
  sub-agent is done, so while it runs the lead's order is taken from the sub-agent's
  own first prompt (`Links`), and the call, when it comes, answers that order. Orders,
  their results and reports are keyed by the sub-agent's id either way.
"""

from __future__ import annotations

from typing import Any

import msgspec

from huddle.model import events as ev
from huddle.model import times
from huddle.model.doing import input_summary
from huddle.model.events import Event, Usage, cap, one_line
from huddle.model.session import Session
from huddle.model.tools import HANDBACK_TOOLS, SHELL_TOOLS, SPAWN_TOOLS

from . import records as rec

AGENT_TOOL = "invoke_agent"  # what its results are named
CONTEXT_KEEP = 600  # harness text kept per context event; the rest is read back from the file

# marks: what the lead's last model response left open, for the live states
OPEN = "open"  # the model's turn: a prompt or tool results went in
TOOLS = "tools"  # a response without text: its tool calls are not written until they ran
ANSWERED = "answered"  # a response with text and no tool calls (so far)


class Links:
    """What spans the files of one session: which sub-agent each order went to."""

    def __init__(self) -> None:
        self.orders: dict[str, Event] = {}  # sub-agent id -> the lead's ORDER
        self.kinds: dict[str, str] = {}  # sub-agent id -> its agent name (from the call)
        self.prompts: dict[str, str] = {}  # sub-agent id -> its first prompt
        self.counted: set[str] = set()  # message ids whose usage one of the session's files gave


class ChatParser:
    def __init__(self, session: Session, links: Links, agent: str, parent: str | None, path: str):
        self.session = session
        self.links = links
        self.agent = agent
        self.parent = parent  # None for the lead
        self.path = path
        self.out: list[Event] = []
        self.seen: dict[str, int] = {}  # message id -> what it gave (bits below)
        self.calls: set[str] = set()  # tool call ids given
        self.results: set[str] = set()  # tool call ids whose result was given
        self.pending_end: tuple[str, float | None, int, int] | None = None  # message id, t, offset, length
        self.marks: list[tuple[float | None, str]] = []
        self.headers = 0
        self.prompted = False  # a sub-agent's first prompt (its order) was read
        self.finished = False  # a sub-agent called complete_task
        self.context_given = False
        self.model = ""
        self._ts: str | None = None
        self._ts_val: float | None = None
        self.last_t: float | None = None
        self.started: float | None = None

    _SAY, _THINK, _USAGE, _TOOLS = 1, 2, 4, 8

    # -- helpers -----------------------------------------------------------------------

    def emit(self, kind: str, t: float | None, off: int, n: int, agent: str | None = None, **kw: Any) -> Event:
        if t is None:
            t = self.last_t
        else:
            self.last_t = t
        e = Event(kind=kind, agent=agent or self.agent, t=t, file=self.path, offset=off, length=n, **kw)
        self.out.append(e)
        return e

    def mark(self, t: float | None, what: str) -> None:
        if self.parent is None:
            self.marks.append((t if t is not None else self.last_t, what))

    def flush_end(self) -> None:
        """The record after an answer is not its tool calls: the turn ended there."""
        if self.pending_end is not None:
            mid, t, off, n = self.pending_end
            self.pending_end = None
            self.emit(ev.TURN_END, t, off, n, id=mid)

    # -- lines -------------------------------------------------------------------------

    def feed(self, off: int, line: bytes) -> None:
        if line.startswith(rec.LAST_UPDATED):
            return
        try:
            r = rec.decode_record(line)
        except msgspec.ValidationError as exc:  # (a subclass of DecodeError: first)
            self.session.problem(self.path, off, f"unexpected record ({exc})")
            return
        except msgspec.DecodeError as exc:
            self.session.problem(self.path, off, f"not JSON ({exc})")
            return
        n = len(line)
        if r.set:
            self._update(r.set, off, n)
        elif r.type is not None:
            self.message(r, off, n)
        elif r.sessionId is not None:
            self._header(r, off, n)

    def _header(self, r: rec.Record, off: int, n: int) -> None:
        self.flush_end()
        self.headers += 1
        t = rec.when(r.startTime)
        if t is None and times.out_of_range(r.startTime):  # year 9999: kept out of the times, and said
            self.session.note(self.path, off, times.odd(r.startTime))
        if self.started is None:
            self.started = t
        if self.headers > 1:  # --resume appends to the same file
            self.emit(ev.CONTEXT, t, off, n, name="resume", text="resumed")
            self.mark(t, ANSWERED)

    def _update(self, raw: msgspec.Raw, off: int, n: int) -> None:
        try:
            u = rec.decode_update(raw)
        except msgspec.DecodeError as exc:
            self.session.problem(self.path, off, f"unexpected $set ({exc})")
            return
        if u.messages:
            for m in u.messages:
                try:
                    r = rec.decode_record(m)
                except msgspec.DecodeError:
                    continue  # one odd message of a rebuilt history costs itself
                if r.id and r.id not in self.seen and not (r.id.endswith("_response") and r.type == "user"):
                    self.message(r, off, n, copied_list=True)
        if u.summary:
            self.flush_end()
            if self.parent is None:
                self.emit(ev.TITLE, None, off, n, text=one_line(u.summary, 200), detail="ai")
            elif self.agent not in self.session.agents or self.session.agents[self.agent].report is None:
                self.finished = True  # a sub-agent's summary is its answer

    def when(self, ts: str | None) -> float | None:
        """A record's time (the two writes of a response share theirs: parsed once)."""
        if ts != self._ts:
            self._ts, self._ts_val = ts, rec.when(ts)
        return self._ts_val

    def content(self, r: rec.Record, off: int) -> list[rec.Part]:
        ps = rec.parts(r.content)
        if ps is None:
            self.session.problem(self.path, off, f"message {r.id}: content of an unexpected shape")
            return []
        return ps

    def message(self, r: rec.Record, off: int, n: int, copied_list: bool = False) -> None:
        t = self.when(r.timestamp)
        if t is None and times.out_of_range(r.timestamp):  # year 9999: kept out of the times, and said
            self.session.note(self.path, off, times.odd(r.timestamp))
        mid = r.id or ""
        kind = r.type
        if kind == "gemini":
            self._response(r, mid, t, off, n)
            return
        self.flush_end()
        if kind == "user":
            self._user(r, mid, t, off, n, copied_list)
        elif kind in ("error", "warning", "info"):
            text = rec.texts(self.content(r, off))
            if text:
                k = ev.ERROR if kind == "error" else ev.CONTEXT
                self.emit(k, t, off, n, id=mid, name=kind, text=cap(text)[0])
        if mid:
            self.seen.setdefault(mid, 0)

    # -- the human's (or the lead's) side -------------------------------------------

    def _context(self, text: str, mid: str, t: float | None, off: int, n: int) -> None:
        """The session context Gemini CLI sends as the first user turn: said once."""
        if not self.context_given:
            self.context_given = True
            self.emit(ev.CONTEXT, t, off, n, id=mid, name="session_context", text=text[:CONTEXT_KEEP])

    def _user(self, r: rec.Record, mid: str, t: float | None, off: int, n: int, copied_list: bool) -> None:
        if mid in self.seen:
            return
        ps = self.content(r, off)
        text = rec.texts(ps)
        if text.startswith("<session_context>"):
            self._context(text, mid, t, off, n)
            return
        for p in ps:
            if p.functionResponse is not None:
                self._function_response(p.functionResponse, t, off, n)
        if any(p.inlineData or p.fileData for p in ps):
            text = (text + "\n[attachment]").strip()
        if not text:
            if ps:
                self.mark(t, OPEN)
            return
        self.mark(t, OPEN)
        body, cut = cap(text)
        if self.parent is None:
            self.emit(ev.PROMPT, t, off, n, id=mid, text=body, truncated=cut)
        elif not self.prompted:
            self.prompted = True
            self._first_order(body, cut, t, off, n)
        else:  # the CLI's own nudges to a sub-agent ("You have stopped calling tools...")
            self.emit(ev.CONTEXT, t, off, n, id=mid, name="harness", text=body[:CONTEXT_KEEP])

    def _first_order(self, text: str, cut: bool, t: float | None, off: int, n: int) -> None:
        L = self.links
        L.prompts[self.agent] = text
        a = self.session.agents.get(self.agent)
        if a is not None and not a.order:
            a.order = text
        if self.agent in L.orders or self.parent is None:
            return  # the lead's call, read already, carries the order
        # The lead writes its call when the sub-agent is done: until then, this is the order.
        L.orders[self.agent] = self.emit(
            ev.ORDER,
            t,
            off,
            n,
            agent=self.parent,
            id=self.agent,
            name=L.kinds.get(self.agent, "sub-agent"),
            detail=one_line(text, 100),
            text=text,
            truncated=cut,
            target=self.agent,
        )

    def _function_response(self, fr: rec.FunctionResponse, t: float | None, off: int, n: int) -> None:
        """A result written only in a user record (its call's second write is missing)."""
        cid = fr.id
        if not cid or cid in self.results:
            return
        name = fr.name or ""
        if cid not in self.calls:
            self.calls.add(cid)
            self.emit(ev.TOOL_CALL, t, off, n, id=cid, name=name)
        self.results.add(cid)
        resp = rec.loose(fr.response)
        out = rec.response_text(resp)
        ok = not (isinstance(resp, dict) and "error" in resp) and not (name in SHELL_TOOLS and rec.shell_failed(out))
        self.emit(ev.TOOL_RESULT, t, off, n, id=cid, ok=ok, size=len(out.encode()))

    # -- the model's side ----------------------------------------------------------------

    def _response(self, r: rec.Record, mid: str, t: float | None, off: int, n: int) -> None:
        if self.pending_end is not None and self.pending_end[0] != mid:
            self.flush_end()
        given = self.seen.get(mid, 0)
        first = mid not in self.seen
        if r.model:
            self.model = r.model
        if not first and r.toolCalls and given & self._USAGE:
            # the second write of a response that called tools: only its calls are new
            given |= self._TOOLS
            self.pending_end = None
            for tc in r.toolCalls:
                self._tool_call(tc, t, off, n)
            self.mark(t, OPEN)
            self.seen[mid] = given
            return
        ps = self.content(r, off)
        text = rec.texts(ps)
        if not given & self._THINK:
            thought = rec.thought_text(r.thoughts) or rec.texts(ps, thought=True)
            if thought:
                given |= self._THINK
                body, cut = cap(thought)
                self.emit(ev.THINK, t, off, n, id=mid, text=body, truncated=cut)
        if text and not given & self._SAY:
            given |= self._SAY
            body, cut = cap(text)
            self.emit(ev.SAY, t, off, n, id=mid, text=body, truncated=cut)
        if r.tokens is not None and not given & self._USAGE and not (mid and mid in self.links.counted):
            given |= self._USAGE
            if mid:  # (once per session: one chat's copy in another of its files counts once)
                self.links.counted.add(mid)
            tk = r.tokens
            cached = rec.count(tk.cached)
            u = Usage(
                input=max(rec.count(tk.input) - cached, 0) + rec.count(tk.tool),
                output=rec.count(tk.output) + rec.count(tk.thoughts),
                cache_read=cached,
            )
            self.emit(ev.USAGE, t, off, n, id=mid, name=r.model or self.model, usage=u)
        calls = [p.functionCall for p in ps if p.functionCall is not None]
        if r.toolCalls:
            given |= self._TOOLS
            self.pending_end = None
            for tc in r.toolCalls:
                self._tool_call(tc, t, off, n)
            self.mark(t, OPEN)
        elif calls:  # a rebuilt history's functionCall parts (no results here)
            given |= self._TOOLS
            for fc in calls:
                cid = fc.id
                if cid and cid not in self.calls:
                    self.calls.add(cid)
                    name = fc.name or ""
                    detail = input_summary(rec.loose(fc.args))
                    self.emit(ev.TOOL_CALL, t, off, n, id=cid, name=name, detail=detail)
        elif first:
            if text:
                self.pending_end = (mid, t, off, n)
                self.mark(t, ANSWERED)
            else:
                self.mark(t, TOOLS)
        self.seen[mid] = given

    def _tool_call(self, tc: rec.ToolCall, t: float | None, off: int, n: int) -> None:
        cid = tc.id or ""
        name = tc.name or ""
        done_t = rec.when(tc.timestamp) or t
        args = rec.loose(tc.args)
        status = tc.status or ""
        ok = status == "success"
        if name in SPAWN_TOOLS:
            out = _result_text(rec.loose(tc.result))
            self._agent_call(tc, cid, args, out, ok, t, done_t, off, n)
            return
        handback = name in HANDBACK_TOOLS and self.parent is not None
        if handback:
            self.finished = True
        if cid and cid in self.calls and cid in self.results:
            return
        if not cid or cid not in self.calls:
            if cid:
                self.calls.add(cid)
            self.emit(ev.TOOL_CALL, t, off, n, id=cid, name=name, detail=input_summary(args))
        if status in ("success", "error", "cancelled"):
            if cid:
                self.results.add(cid)
            if name in SHELL_TOOLS and rec.shell_failed(tc.result):
                ok = False
            self.emit(ev.TOOL_RESULT, done_t, off, n, id=cid, ok=ok, size=len(tc.result))
        if handback:
            self.emit(ev.TURN_END, done_t, off, n, id=cid)

    def _agent_call(
        self,
        tc: rec.ToolCall,
        cid: str,
        args: Any,
        out: str,
        ok: bool,
        t: float | None,
        done_t: float | None,
        off: int,
        n: int,
    ) -> None:
        """The lead's invoke_agent: an order to a sub-agent, and what it reported."""
        L = self.links
        child = tc.agentId or ""
        args = args if isinstance(args, dict) else {}
        kind = args.get("agent_name") if isinstance(args.get("agent_name"), str) else "sub-agent"
        prompt = args.get("prompt") if isinstance(args.get("prompt"), str) else ""
        if child:
            L.kinds[child] = kind
        order = L.orders.get(child) if child else None
        if order is None:
            if cid in self.calls:
                return
            body, cut = cap(prompt)
            # keyed by the sub-agent's id, as the order taken from its own file is: the same
            # events whichever file was read first
            order = self.emit(
                ev.ORDER,
                t,
                off,
                n,
                id=child or cid,
                name=kind,
                detail=one_line(prompt, 100),
                text=body,
                truncated=cut,
                target=child,
            )
            if child:
                L.orders[child] = order
        else:
            order.name = kind
        oid = order.id
        if oid in self.results:
            return
        self.calls.add(cid)
        self.calls.add(oid)
        self.results.add(oid)
        self.results.add(cid)
        report, reached = rec.subagent_report(out)
        self.emit(ev.TOOL_RESULT, done_t, off, n, id=oid, name=AGENT_TOOL, ok=ok and reached, size=len(tc.result))
        body, cut = cap(report)
        self.emit(ev.REPORT, done_t, off, n, id=oid, text=body, truncated=cut, ok=ok and reached, target=child)


def _result_text(result: Any) -> str:
    """The output text of a toolCall's `result: [{functionResponse: {response}}]`."""
    if isinstance(result, list):
        for p in result:
            fr = p.get("functionResponse") if isinstance(p, dict) else None
            if isinstance(fr, dict):
                return rec.response_text(fr.get("response"))
    return rec.response_text(result) if result is not None else ""
