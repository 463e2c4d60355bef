"""One Codex rollout (one thread) -> events for one agent.

Both event generations are read: 0.160+ writes UI items (`item_completed` with CommandExecution,
FileChange, ...), 0.144 and older write legacy events (`user_message`, `patch_apply_end`, ...); every
version writes the model-visible `response_item`s. Each fact is taken from one record only: prompts
from the UI events, text/reasoning/calls from the response items, a call's result from the first
record that settles it (a UI item with its exit code, else the output text). What spans the threads of one session (who spawned whom, what was reported) is `Links`; tool results are results.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from huddle.model import events as ev
from huddle.model import times
from huddle.model.events import Event, Usage, cap, one_line
from huddle.model.session import Session
from huddle.model.tools import SPAWN_TOOLS

from . import records as rec
from . import text as txt
from .fork import ForkCopy
from .legacy import LegacyLines
from .results import Links, Results, mcp_ok
from .text import harness_tag, mail_parts
from .ui_items import UiItems
from .usage import Ledger

CONTEXT_KEEP = 600  # harness text kept per context event; the rest is read back from the file
KEPT_ARGS = ("cmd", "command", "sandbox_permissions", "justification", "session_id", "targets", "ids", "questions")
_decode_line = rec.decode_line
_SKIP_RECORDS, _SKIP_EVENTS = rec.SKIP_RECORDS, rec.SKIP_EVENTS


class ThreadParser(ForkCopy, LegacyLines, UiItems):
    legacy = False  # (a class default: a parser from an older cache has none)

    def __init__(
        self, session: Session, links: Links, info: rec.ThreadInfo, path: str, is_lead: bool, usage: bool = False
    ) -> None:
        self.session = session
        self.usage_only = usage  # `huddle usage`: lines no count, title or time needs pass undecoded
        self.links = links
        self.info = info
        self.legacy = getattr(info, "legacy", False)  # before session_meta (legacy.py)
        self.agent = info.id
        self.path = path
        self.is_lead = is_lead
        self.out: list[Event] = []
        self.last_t: float | None = None
        self._ts: datetime | str | None = None  # the current line's timestamp (text when odd)
        self._ts_for: datetime | str | None = None  # the timestamp last_t was worked out from
        self.model = ""
        self.lines = 0
        self.seen_meta = False
        self.copying = False  # inside a copy of the parent's history (forked sub-agent)
        self.copy_turn_open = False
        self.copied_lines = 0
        self.markers = False  # task_started / task_complete seen: turns need no inferring
        self.turn_open = False
        self.turn_t: float | None = None
        self.resp_call = False  # the model response being written made a tool call
        self.resp_say = False  # ... or said something
        self.legacy_turn_open = False
        self.first_order_done = False
        self.folded_from_item: str | None = None
        self.compacted_at = -100
        self.results = Results(self.emit, links, info)
        self.calls = self.results.calls  # open calls (the live states read them); results settle them
        self.ledger = Ledger()
        self.out_seen = False  # an event made: skipping after it keeps the session's start
        self.skip = None  # what the reader passes over (`_judge`)

    # -- helpers -----------------------------------------------------------------------

    def emit(
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
    ) -> Event:
        # (the fields named, not a **kw: a dict made and spread costs 420 ns an event)
        e = Event(
            kind=kind,
            agent=self.agent,
            t=self.now,
            file=self.path,
            offset=off,
            length=n,
            id=id,
            name=name,
            text=text,
            detail=detail,
            truncated=truncated,
            ok=ok,
            size=size,
            target=target,
            copied=copied,
        )
        return self._added(e)

    def _added(self, e: Event) -> Event:
        """`emit`'s end. A count and a prompt (most of a usage-only read's events) are made
        where they are read, with only their own fields, and added here."""
        self.out.append(e)
        if not self.out_seen:
            self._first_out()
        return e

    def _first_out(self) -> None:
        self.out_seen = True
        self._judge()

    # The events most lines make, as `emit` makes them without its keywords (a third of its cost),
    # and added as `_added` adds them, without its call.
    def tool_call(self, off: int, n: int, cid: str, name: str, detail: str) -> None:
        agent, t, path = self.agent, self.now, self.path
        e = Event(
            kind=ev.TOOL_CALL, agent=agent, t=t, file=path, offset=off, length=n, id=cid, name=name, detail=detail
        )
        self.out.append(e)
        if not self.out_seen:
            self._first_out()

    def text_event(self, kind: str, off: int, n: int, id: str, name: str, text: str, cut: bool) -> None:
        agent, t, path = self.agent, self.now, self.path
        e = Event(
            kind=kind, agent=agent, t=t, file=path, offset=off, length=n, id=id, name=name, text=text, truncated=cut
        )
        self.out.append(e)
        if not self.out_seen:
            self._first_out()

    def _usage(self, off: int, n: int, mid: str, u: Usage) -> None:
        agent, t, path, model = self.agent, self.now, self.path, self.model
        self.out.append(
            Event(kind=ev.USAGE, agent=agent, t=t, file=path, offset=off, length=n, id=mid, name=model, usage=u)
        )
        if not self.out_seen:
            self._first_out()

    def _turn_end(self, off: int, n: int, **kw: Any) -> None:
        # a usage-only read past its first event passes over turn markers: no turn ends then
        if not (self.usage_only and self.out_seen):
            self.emit(ev.TURN_END, off, n, **kw)

    @property
    def now(self) -> float | None:
        """The current line's time, worked out once per line that needs it."""
        if self._ts_for is not self._ts:
            self._ts_for = self._ts
            ts = self._ts
            t: float | None
            if isinstance(ts, datetime) and ts.tzinfo is not None and 1970 < ts.year < 2199:
                t = ts.timestamp()  # (the common case: times.of_datetime without its call)
            else:
                t = rec.unix(ts)
            if t is not None:
                self.last_t = t
        return self.last_t

    # -- lines -------------------------------------------------------------------------

    def feed_kept(self, off: int, line: bytes) -> None:  # a line `skip` kept (a legacy file's: feed_legacy)
        try:
            ln: rec.Line | rec.LooseLine = _decode_line(line)
        except msgspec.ValidationError as exc:  # (a subclass of DecodeError: first)
            try:
                ln = rec.decode_loose_line(line)  # an odd timestamp: keep the line, parse it slowly
            except msgspec.ValidationError:
                self._odd(line, off, exc)
                return
        except msgspec.DecodeError as exc:
            self.session.problem(self.path, off, f"not JSON ({exc})")
            return
        p = ln.payload
        t = ln.type
        if p is None or t in _SKIP_RECORDS or (t == "event_msg" and p.type in _SKIP_EVENTS):
            return
        self.lines += 1
        ts = ln.timestamp
        if isinstance(ts, datetime) and 1970 < ts.year < 2199:  # (the common case, without a call)
            self._ts = ts
        elif times.out_of_range(ts):  # a time past 2200: noted, the last good time kept
            self.session.note(self.path, off, times.odd(ts))
        elif ts:
            self._ts = ts
        n = len(line)
        mark = len(self.out)
        try:  # (the dispatch here, not in a method of its own: a call less for every line)
            if t == "session_meta":
                self._meta(p)
            elif (self.copying or self.info.history_start is not None) and self._copied(t, ln.ordinal, p):
                self._copied_line(off, n, t, p)
            elif t == "response_item":
                self._item(p, off, n)
            elif t == "event_msg":
                if p.type != "token_count":
                    self._event(p, off, n)
                elif p.info is not None:  # (the most frequent line, read here: a call less)
                    info = p.info
                    u = self.ledger.totals(info.total_token_usage, info.last_token_usage)
                    if u is not None:
                        self._usage(off, n, "", u)
                    if self.ledger.moved:
                        self._response_done(off, n)
            elif t == "token_usage_record":
                u = self.ledger.record(p.usage)
                if u is not None:
                    self._usage(off, n, p.response_id or "", u)
            elif t == "turn_context":
                self.model = p.model or self.model
            elif t == "compacted":
                self._compaction(off, n, one_line(p.message or "", 300))
        except Exception as exc:  # a line that decoded but holds what the code did not expect
            del self.out[mark:]  # it costs its own line, never the session
            self.session.problem(self.path, off, f"unexpected {t or 'line'}: {type(exc).__name__}: {exc}")

    def _odd(self, line: bytes, off: int, exc: Exception) -> None:
        t = rec.odd_kind(line)  # a kind huddle reads (a problem), or one it does not know (nothing)
        if t is not None:
            self.session.problem(self.path, off, f"unexpected {t or 'record'} shape ({exc})")

    # -- response items (what the model saw and did) ---------------------------------

    def _item(self, it: rec.Payload, off: int, n: int) -> None:
        ty = it.type
        if ty == "message":
            self._message(it, off, n)
        elif ty == "reasoning":
            summ = it.summary
            # a list of parts; some writers give one plain string (turn_context's shape); raw reasoning without one
            text = summ if isinstance(summ, str) else "\n\n".join([p.text for p in summ or () if p.text])
            text = text or rec.parts_text(it.content, ("reasoning_text",))
            if text:
                s, cut = cap(text)
                self.text_event(ev.THINK, off, n, it.id or "", "", s, cut)
        elif ty == "function_call":
            self._function_call(it, off, n)
        elif ty == "custom_tool_call":
            self.resp_call = True
            name = it.name or ""
            body = rec.raw_str(it.input)
            if name == "apply_patch":
                files = txt.patch_files(body)
                self.calls[it.call_id or ""] = (name, {"files": files})
                detail = one_line(", ".join(files), 160)
            else:
                self.calls[it.call_id or ""] = (name, {})
                detail = one_line(body, 160)
            self.tool_call(off, n, it.call_id or "", name, detail)
        elif ty in ("function_call_output", "custom_tool_call_output"):
            self.results.output(it, off, n)
        elif ty == "local_shell_call":
            self.resp_call = True
            action = rec.raw_json(it.action)
            cmd = txt.command_text(action.get("command")) if isinstance(action, dict) else ""
            cid = it.call_id or it.id or ""
            self.calls[cid] = ("local_shell", {"cmd": cmd})
            self.emit(ev.TOOL_CALL, off, n, id=cid, name="local_shell", detail=one_line(cmd, 160))
        elif ty == "web_search_call":
            action = rec.raw_json(it.action)
            query = action.get("query") if isinstance(action, dict) else ""
            cid = it.id or ""
            self.emit(ev.TOOL_CALL, off, n, id=cid, name="web_search", detail=one_line(str(query or ""), 160))
            if it.status in ("completed", "failed"):
                self.emit(ev.TOOL_RESULT, off, n, id=cid, name="web_search", ok=it.status == "completed")
        elif ty == "tool_search_call":
            self.resp_call = True
            args = rec.raw_json(it.arguments)
            query = args.get("query", "") if isinstance(args, dict) else ""
            self.emit(ev.TOOL_CALL, off, n, id=it.call_id or "", name="tool_search", detail=one_line(str(query), 160))
        elif ty == "tool_search_output":
            self.emit(ev.TOOL_RESULT, off, n, id=it.call_id or "", name="tool_search", ok=True)
        elif ty == "agent_message":
            self._agent_mail(it, off, n)

    def _message(self, it: rec.Payload, off: int, n: int) -> None:
        role = it.role or ""
        if role == "assistant":
            text = rec.parts_text(it.content)
            if text:
                self.resp_say = True
                s, cut = cap(text)
                self.text_event(ev.SAY, off, n, it.id or "", "", s, cut)
            return
        text = rec.parts_text(it.content)
        if role == "user":
            tag = harness_tag(text)
            if tag:
                self._context(tag, text, off, n)
            elif not self.is_lead and not self.first_order_done:
                # A sub-agent's first task can arrive only as a model-visible message
                # (0.169 guardian reviews); the UI event, when it follows, is the same.
                self.first_order_done = True
                self.folded_from_item = text
                self.links.first_orders.setdefault(self.agent, text)
            return  # a real prompt: its user_message / UserMessage event tells it
        if text:
            self._context(role or "message", text, off, n)

    def _context(self, name: str, text: str, off: int, n: int) -> None:
        self.text_event(ev.CONTEXT, off, n, "", name, text[:CONTEXT_KEEP], len(text) > CONTEXT_KEEP)

    def _function_call(self, it: rec.Payload, off: int, n: int) -> None:
        self.resp_call = True
        name = it.name or ""
        ns = it.namespace or ""
        cid = it.call_id or it.id or ""
        args = rec.arguments(it.arguments)
        if name in SPAWN_TOOLS:
            message = str(args.get("message") or args.get("prompt") or "")
            text, cut = cap(message)
            e = self.emit(
                ev.ORDER,
                off,
                n,
                id=cid,
                name=str(args.get("agent_type") or args.get("role") or "sub-agent"),
                detail=one_line(str(args.get("task_name") or message), 120),
                text=text,
                truncated=cut,
            )
            self.links.orders[cid] = e
            self.calls[cid] = (name, {"task_name": args.get("task_name")})
            return
        tool = f"{ns}__{name}" if ns.startswith("mcp__") else name
        kept = {k: args[k] for k in KEPT_ARGS if k in args} if args else {}
        self.calls[cid] = (name, kept)
        self.tool_call(off, n, cid, tool, txt.call_summary(name, args))

    def _agent_mail(self, it: rec.Payload, off: int, n: int) -> None:
        """Inter-agent mail (0.144+): a task for a child, a child's final answer."""
        parts = it.content if isinstance(it.content, list) else []
        text = "".join([p.text or p.encrypted_content or "" for p in parts])
        kind, payload = mail_parts(text)
        if kind == "FINAL_ANSWER":
            self.results.report_path(it.author or "", payload, off, n, via="final_answer")
        elif kind == "NEW_TASK" and not self.is_lead and it.recipient == self.info.agent_path:
            self.order(payload, off, n)
        else:
            self._context("agent_message", text, off, n)

    # -- UI / legacy events -------------------------------------------------------------

    def _event(self, e: rec.Payload, off: int, n: int) -> None:
        ty = e.type  # (a token count, the most frequent line, is read in feed_kept)
        if ty == "item_completed":
            if e.item is not None:
                self._ui_item(e.item, off, n)
        elif ty == "user_message":
            text = e.message or ""
            if not text and len(e.images) > 2:
                text = "[image]"
            self.order(text, off, n)
        elif ty == "task_started":
            self.markers = True
            self.turn_open = True
            self.turn_t = self.now
        elif ty in ("task_complete", "turn_aborted"):
            self.markers = True
            self.turn_open = False
            if ty == "task_complete":
                if e.last_agent_message:
                    self.links.answers[self.agent] = e.last_agent_message
                self._turn_end(off, n, id=e.turn_id or "")
            else:
                self._turn_end(off, n, id=e.turn_id or "", detail="aborted", text=e.reason or "")
        elif ty == "patch_apply_end":
            self.results.file_change(e.call_id or "", e.success is not False, e.changes, off, n)
        elif ty == "mcp_tool_call_end":
            self.results.mcp_result(e.call_id or "", mcp_ok(e.result), "", off, n)
        elif ty == "exec_command_end":
            self.results.command_result(e.call_id or "", e.exit_code, None, off, n)
        elif ty == "sub_agent_activity":
            self.links.activity(e.kind, e.event_id or "", e.agent_thread_id or "", e.agent_path or "")
        elif ty == "context_compacted":
            self._compaction(off, n, "")
        elif ty in ("error", "stream_error"):
            self.emit(ev.ERROR, off, n, name=ty, text=one_line(e.message or ty, 300))
        elif ty == "thread_name_updated" and e.thread_name and self.is_lead:
            self.emit(ev.TITLE, off, n, text=e.thread_name)

    def _compaction(self, off: int, n: int, text: str) -> None:
        # One compaction shows as `compacted` plus an item or event a few lines apart.
        if self.lines - self.compacted_at <= 8:
            return
        self.compacted_at = self.lines
        self.emit(ev.COMPACTION, off, n, text="Conversation compacted", detail=text)

    def _response_done(self, off: int, n: int) -> None:
        """A model response was accounted for (its totals moved). 0.96 writes no turn
        markers: a response that said something and called no tool ends the turn."""
        if not self.markers and self.legacy_turn_open and self.resp_say and not self.resp_call:
            self.legacy_turn_open = False
            self._turn_end(off, n, detail="inferred")
        self.resp_call = self.resp_say = False

    # -- prompts and orders -------------------------------------------------------------

    def order(self, text: str, off: int, n: int) -> None:
        """A task for this agent: the human's prompt for the lead, an order for a child."""
        if not self.markers:
            if self.legacy_turn_open:
                self._turn_end(off, n, detail="inferred")
            self.legacy_turn_open = True
        s, cut = cap(text)
        if self.is_lead:
            agent, t, path = self.agent, self.now, self.path
            self._added(Event(kind=ev.PROMPT, agent=agent, t=t, file=path, offset=off, length=n, text=s, truncated=cut))
            return
        if self.folded_from_item is not None:
            same = text == self.folded_from_item
            self.folded_from_item = None
            if same:
                return
        if not self.first_order_done:
            self.first_order_done = True
            self.links.first_orders.setdefault(self.agent, s)
            return  # the lead's ORDER carries this text already
        self.emit(ev.ORDER, off, n, text=s, truncated=cut, target=self.agent)
