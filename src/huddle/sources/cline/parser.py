"""One Cline messages document -> events for one agent.

Cline rewrites the whole document on every update. Each version is read whole (the handle
reads it only when its stamp moved), and only the messages past those already read give
events: a version that no longer starts with the messages read (same ids, same bytes) was
rewritten, and the handle reads the session again from its start. Each message's events
point at its bytes in the document (`offset`, `length`), which appending leaves in place.

A user message carries what was typed (`<user_input mode=...>` wrapped; anything else in a
user message is the harness's, or a sub-agent's task) and tool results; an assistant
message is one model response: thinking, text, tool calls, and its usage. A response that
calls no tool ends the turn.
"""

from __future__ import annotations

import zlib
from typing import Any

import msgspec

from huddle.model import events as ev
from huddle.model import times
from huddle.model.events import Event, cap, one_line
from huddle.model.session import Session
from huddle.model.tools import SPAWN_TOOLS

from . import records as rec

CONTEXT_KEEP = 600


class Links:
    """What spans the documents of one session: spawn calls and the sub-agents they made
    (a sub-agent's file names no call: its task, the call's input, is the link)."""

    def __init__(self) -> None:
        self.orders: dict[str, Event] = {}  # spawn call id -> its ORDER
        self.reports: dict[str, Event] = {}  # spawn call id -> its REPORT
        self.by_task: dict[str, list[str]] = {}  # task text -> spawn call ids, in call order
        self.tasks: dict[str, str] = {}  # sub-agent id -> its task (its first user text)


class DocParser:
    def __init__(self, session: Session, links: Links, agent: str, parent: str | None, path: str) -> None:
        self.session = session
        self.links = links
        self.agent = agent
        self.parent = parent
        self.path = path
        self.out: list[Event] = []
        self.read: list[tuple[str, int]] = []  # per message read: its id and the crc of its bytes
        self.end = 0  # where the last message read ends in the document
        self.last_t: float | None = None
        self.model = ""
        self.shown: str | None = None  # the record's prompt, shown before the document held it
        self.noted = False  # an odd time of this document was said

    def feed(self, data: bytes) -> bool:
        """A version of the document. False when it does not start with what was read (the
        caller reads the session again); a message of an odd shape costs that message."""
        doc = rec.decode_doc(data)
        msgs = doc.messages
        if len(msgs) < len(self.read):
            return False
        for raw, (_mid, crc) in zip(msgs, self.read, strict=False):
            if zlib.crc32(raw) != crc:
                return False
        pos = self.end
        for raw in msgs[len(self.read) :]:
            body = bytes(raw)
            off = data.find(body, pos)
            off = off if off >= 0 else pos
            pos = off + len(body)
            mark = len(self.out)
            mid = ""
            try:
                m = rec.decode_message(body)
                mid = m.id or ""
                self._message(m, off, len(body))
            except (msgspec.DecodeError, RecursionError, ValueError, TypeError, AttributeError) as exc:
                del self.out[mark:]
                what = type(exc).__name__ if not isinstance(exc, msgspec.DecodeError) else str(exc)
                self.session.problem(self.path, off, f"a message that could not be read ({what[:200]})")
            self.read.append((mid, zlib.crc32(body)))
        self.end = pos
        return True

    def emit(self, kind: str, t: float | None, off: int, n: int, **kw: Any) -> Event:
        e = Event(kind=kind, agent=self.agent, t=t, file=self.path, offset=off, length=n, **kw)
        self.out.append(e)
        return e

    # -- messages ------------------------------------------------------------------------

    def _message(self, m: rec.Message, off: int, n: int) -> None:
        t = times.millis(m.ts)  # Cline's `ts` is unix milliseconds
        if t is None:
            odd = m.ts is not None and times.out_of_range(m.ts / 1000 if isinstance(m.ts, (int, float)) else m.ts)
            if odd and not self.noted:
                self.noted = True  # one line for a document's odd times, not one per message
                self.session.note(self.path, off, times.odd(m.ts))
            t = self.last_t
        elif self.last_t is None or t > self.last_t:
            self.last_t = t
        blocks = m.content if isinstance(m.content, list) else [rec.Block(type="text", text=m.content or "")]
        if m.role == "user":
            for b in blocks:
                if b.type == "text" and b.text:
                    self._user_text(b.text, t, off, n)
                elif b.type == "tool_result":
                    self._result(b, t, off, n)
        elif m.role == "assistant":
            self._response(m, blocks, t, off, n)

    def _user_text(self, text: str, t: float | None, off: int, n: int) -> None:
        typed = rec.typed(text)
        if self.parent is not None and self.agent not in self.links.tasks:
            self.links.tasks[self.agent] = text.strip()  # a sub-agent's task: its lead's order says it
            return
        if typed is None:
            self.emit(ev.CONTEXT, t, off, n, name="harness", text=text[:CONTEXT_KEEP])
            return
        if self.shown is not None and typed.strip() == self.shown.strip():
            self.shown = None  # already shown from the session record, before it was written here
            return
        body, cut = cap(typed)
        self.emit(ev.PROMPT, t, off, n, text=body, truncated=cut)

    def _result(self, b: rec.Block, t: float | None, off: int, n: int) -> None:
        call = b.tool_use_id or ""
        ok, text = rec.result_of(rec.loose(b.content))
        if b.is_error:
            ok = False
        order = self.links.orders.get(call)
        self.emit(ev.TOOL_RESULT, t, off, n, id=call, name=b.name or "", ok=ok, size=len(text.encode()))
        if order is not None or (b.name or "") in SPAWN_TOOLS:
            body, cut = cap(text.strip())
            target = order.target if order is not None else ""
            self.links.reports[call] = self.emit(
                ev.REPORT, t, off, n, id=call, text=body, truncated=cut, ok=ok, target=target
            )

    def _response(self, m: rec.Message, blocks: list[rec.Block], t: float | None, off: int, n: int) -> None:
        calls = 0
        for b in blocks:
            if b.type == "thinking" and b.thinking:
                body, cut = cap(b.thinking)
                self.emit(ev.THINK, t, off, n, text=body, truncated=cut, id=m.id)
            elif b.type == "text" and b.text:
                body, cut = cap(b.text)
                self.emit(ev.SAY, t, off, n, text=body, truncated=cut, id=m.id)
            elif b.type == "tool_use":
                calls += 1
                self._call(b, t, off, n)
        if m.modelInfo is not None and m.modelInfo.id:
            self.model = m.modelInfo.id
        u = rec.usage_of(m.metrics)
        if u is not None:
            self.emit(ev.USAGE, t, off, n, id=m.id, name=self.model, usage=u)
        if not calls:
            self.emit(ev.TURN_END, t, off, n, id=m.id)

    def _call(self, b: rec.Block, t: float | None, off: int, n: int) -> None:
        call = b.id or ""
        name = b.name or ""
        args = rec.loose(b.input)
        detail = rec.detail_of(name, args)
        if name not in SPAWN_TOOLS:
            self.emit(ev.TOOL_CALL, t, off, n, id=call, name=name, detail=detail)
            return
        task = args.get("task") if isinstance(args, dict) else None
        task = task if isinstance(task, str) else ""
        body, cut = cap(task)
        L = self.links
        L.orders[call] = self.emit(
            ev.ORDER, t, off, n, id=call, name="subagent", detail=one_line(task, 80), text=body, truncated=cut
        )
        L.by_task.setdefault(task.strip(), []).append(call)
