"""One OpenCode session's `message` and `part` rows -> events for one agent.

Rows are updated in place (a tool part goes running -> completed, a text part grows
while it streams), so each row remembers what it already gave: a tool part gives its
`tool_call` once it has its input (status running) and its `tool_result` once it
settles; a text or reasoning part gives its text once it is complete (`time.end`, or
its message completed); an assistant message gives its usage, error and turn end once
it completed. Feeding a row again (an overlapping read) adds nothing.

Events point at their row through `Records`: each (row, facet) that gives events gets the
next number of its session, so `offset` grows as events do, like a line's in a file (what
incremental readers of events, such as the search index, rely on); `length` is 1.
`OpenCodeHandle.read_record` reads the row back.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import msgspec

from huddle.model import events as ev
from huddle.model.doing import input_summary
from huddle.model.events import Event, cap
from huddle.model.session import Session
from huddle.model.tools import SPAWN_TOOLS

from . import records as rec
from .db import ROW_MAX

CUT = b',"huddle_cut":1}'  # how a row past ROW_MAX ends, cut by SQLite (handle.data_sql)

TASK_TOOL = "task"  # what its results are named
CONTEXT_KEEP = 600
NOT_A_TURN_END = frozenset({"tool-calls", "tool_calls", ""})

CALL, RESULT, TEXT, DONE = 1, 2, 4, 8


class Links:
    """What spans the sessions of one tree: the task calls and the children they made."""

    def __init__(self) -> None:
        self.orders: dict[str, Event] = {}  # task call id -> its ORDER
        self.call_of: dict[str, str] = {}  # child session id -> the task call that made it
        self.prompts: dict[str, str] = {}  # child session id -> its first prompt


class Records:
    """The rows a session's events came from, numbered in the order they first gave one:
    a row is (its rowid times two, plus one for the `message` table; 1 for what went in,
    2 for a result)."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, int]] = []
        self.keys: dict[tuple[int, int], int] = {}
        self.token = os.urandom(8).hex()  # names this numbering (kept with the handle in the cache)

    def key(self, row: int, facet: int) -> int:
        k = self.keys.get((row, facet))
        if k is None:
            k = self.keys[(row, facet)] = len(self.rows)
            self.rows.append((row, facet))
        return k


class MsgState:
    __slots__ = ("completed", "copied", "created", "error", "finish", "given", "model", "offset", "role", "tokens")

    def __init__(self, role: str, created: float | None, copied: bool = False):
        self.role = role
        self.created = created
        self.copied = copied  # created before its session was: a fork's copy of another session's message
        self.completed: float | None = None
        self.finish = ""
        self.error: rec.MsgError | None = None
        self.tokens: rec.Tokens | None = None
        self.model = ""
        self.given = 0
        self.offset = -1


class Running:
    """A tool part still running: what the live states need to tell a wait from work."""

    __slots__ = ("command", "detail", "has_metadata", "message", "since", "tool")

    def __init__(self, tool: str, detail: str, command: str, has_metadata: bool, since: float | None, message: str):
        self.tool, self.detail, self.command = tool, detail, command
        self.has_metadata, self.since, self.message = has_metadata, since, message


class SessionParser:
    born: float | None = None  # when its session was created
    copied = 0  # messages copied from another session (a fork's history)
    _copying = False  # the message being fed is such a copy: its events are marked copied

    def __init__(
        self,
        session: Session,
        links: Links,
        agent: str,
        parent: str | None,
        path: str,
        records: Records | None = None,
        born: int | None = None,
    ):
        self.session = session
        self.links = links
        self.records = records if records is not None else Records()
        self.agent = agent
        self.parent = parent
        self.path = path
        self.out: list[Event] = []
        self.msgs: dict[str, MsgState] = {}
        self.parts: dict[str, int] = {}  # part id -> what it gave (bits)
        self.flux: dict[
            str, tuple[str, str, str, int, float | None]
        ] = {}  # unsettled text: id -> msg, kind, text, off, t
        self.running: dict[str, Running] = {}  # call id -> its running tool
        self.prompted = False
        self.last_assistant: str = ""  # the newest assistant message id
        self.last_t: float | None = None
        self.model = ""
        self.born = rec.ms(born)

    def emit(self, kind: str, t: float | None, off: int, n: int = 1, agent: str | None = None, **kw: Any) -> Event:
        if t is None:
            t = self.last_t
        elif self.last_t is None or t > self.last_t:
            self.last_t = t
        key = self.records.key(off, n)
        e = Event(
            kind=kind, agent=agent or self.agent, t=t, file=self.path, offset=key, length=1, copied=self._copying, **kw
        )
        self.out.append(e)
        return e

    # -- rows --------------------------------------------------------------------------

    def decoded(self, decode: Callable[[bytes | str], Any], data: bytes | str | None, rowid: int, what: str) -> Any:
        """One row's data decoded, or None with the row's problem said: a row costs itself
        only. Text that is not UTF-8 (a cut emoji) is read with replacement characters; a
        row past ROW_MAX comes without its heavy fields (handle.data_sql), and says so."""
        if data is None:
            self.session.problem(self.path, rowid, f"{what}: past {ROW_MAX >> 20} MB and no JSON: skipped")
            return None
        if isinstance(data, bytes) and data.endswith(CUT):
            self.session.note(self.path, rowid, f"{what}: past {ROW_MAX >> 20} MB, read without its text and output")
        try:
            return decode(data)
        except msgspec.DecodeError as exc:
            if isinstance(data, bytes) and "UTF-8" in str(exc):
                try:
                    got = decode(data.decode("utf-8", "replace").encode())
                except (msgspec.DecodeError, RecursionError):
                    pass
                else:
                    self.session.note(self.path, rowid, f"{what}: not UTF-8, read with replacement characters")
                    return got
            self.session.problem(self.path, rowid, f"{what}: unexpected data ({exc})")
        except RecursionError:
            self.session.problem(self.path, rowid, f"{what}: nested too deep")
        return None

    def feed(self, msg_rows: list[tuple[Any, ...]], part_rows: list[tuple[Any, ...]]) -> None:
        """message rows (rowid, id, time_created, time_updated, data) in creation order; part
        rows (rowid, id, message_id, time_created, time_updated, data)."""
        touched: dict[str, None] = {}
        for rowid, mid, tc, _tu, data in msg_rows:
            m = self.decoded(rec.decode_message, data, rowid, f"message {mid}")
            if m is None:
                continue
            st = self.msgs.get(mid)
            times = m.time or rec.Times()
            if st is None:
                created = rec.ms(times.created) or rec.ms(tc)
                # A fork copies its source's messages with new ids and their own times: each
                # response stays counted in the session it came from (the rows' columns compared)
                made = rec.ms(tc) or created
                copied = made is not None and self.born is not None and made < self.born
                st = self.msgs[mid] = MsgState(m.role or "", created, copied)
                self.copied += copied
            st.offset = rowid * 2 + 1
            st.completed = rec.ms(times.completed)
            st.finish = m.finish or ""
            st.error = m.error
            st.tokens = m.tokens
            st.model = m.modelID or st.model
            if st.role == "assistant" and (not self.last_assistant or mid > self.last_assistant):
                self.last_assistant = mid
            touched[mid] = None
        by_msg: dict[str, list[tuple[Any, ...]]] = {}
        for row in part_rows:
            by_msg.setdefault(row[2], []).append(row)
        order = list(dict.fromkeys([*touched, *sorted(by_msg)]))
        order.sort(key=lambda mid: (self.msgs[mid].created or 0, mid) if mid in self.msgs else (0, mid))
        for mid in order:
            st = self.msgs.get(mid)
            if st is None:
                st = self.msgs[mid] = MsgState("assistant", None)  # parts whose message row was not read
            self._copying = getattr(st, "copied", False)  # (a state cached before copies were told)
            try:
                for row in by_msg.get(mid, ()):
                    n = len(self.out)
                    try:
                        self._part(st, mid, row)
                    except Exception as exc:  # an odd value past the decoder: this row only
                        del self.out[n:]
                        self.session.problem(self.path, row[0], f"part {row[1]}: {type(exc).__name__}: {exc}"[:300])
                self._settle(st, mid)
            finally:
                self._copying = False

    def _part(self, st: MsgState, mid: str, row: tuple[Any, ...]) -> None:
        rowid, pid, _mid, tc, tu, data = row
        p = self.decoded(rec.decode_part, data, rowid, f"part {pid}")
        if p is None:
            return
        off = rowid * 2
        given = self.parts.get(pid, 0)
        kind = p.type or ""
        t0, t1 = rec.ms(tc), rec.ms(tu)
        if kind == "tool":
            given = self._tool(p, pid, mid, off, given, t0, t1)
        elif given & TEXT:
            return
        elif kind in ("text", "reasoning"):
            if p.ignored:
                return
            text = p.text or ""
            times = p.time or rec.Times()
            if st.role == "user":
                given |= TEXT
                self._user_text(text, bool(p.synthetic), st.created or t0, off)
            elif text and (times.end is not None or st.completed is not None):
                given |= TEXT
                self.flux.pop(pid, None)
                body, cut = cap(text)
                k = ev.SAY if kind == "text" else ev.THINK
                self.emit(k, rec.ms(times.end) or t1, off, text=body, truncated=cut, id=mid)
            elif text:
                self.flux[pid] = (mid, kind, text, off, rec.ms(times.start) or t0)
        elif kind == "file":
            given |= TEXT
            self.emit(ev.CONTEXT, st.created or t0, off, name="file", text=p.filename or p.mime or "a file")
        elif kind == "compaction":
            given |= TEXT
            self.emit(ev.COMPACTION, t0, off, text="Conversation compacted")
        elif kind == "retry":
            given |= TEXT
            err = rec.loose(p.error)
            self.emit(
                ev.ERROR, t0, off, name="retry", text=cap(f"retrying (attempt {rec.count(p.attempt)}): " + _err(err))[0]
            )
        elif kind in ("agent", "subtask"):
            given |= TEXT
            self.emit(ev.CONTEXT, t0, off, name=kind, text=cap(p.text or kind)[0])
        self.parts[pid] = given

    def _user_text(self, text: str, synthetic: bool, t: float | None, off: int) -> None:
        body, cut = cap(text)
        if synthetic:
            self.emit(ev.CONTEXT, t, off, name="synthetic", text=body[:CONTEXT_KEEP])
        elif self.parent is None:
            self.emit(ev.PROMPT, t, off, text=body, truncated=cut)
        elif not self.prompted:
            self.prompted = True  # a sub-agent's first prompt: its lead's order carries it
            self.links.prompts[self.agent] = body
            if self.last_t is None:
                self.last_t = t
        else:
            self.emit(ev.ORDER, t, off, text=body, truncated=cut, target=self.agent)

    def _tool(self, p: rec.Part, pid: str, mid: str, off: int, given: int, t0: float | None, t1: float | None) -> int:
        s = p.state
        if s is None or s.status not in ("running", "completed", "error"):
            return given  # pending: its input is still streaming in
        call = p.callID or pid
        tool = p.tool or ""
        args = rec.loose(s.input)
        times = s.time or rec.Times()
        start = rec.ms(times.start) or t0
        detail = input_summary(args)
        meta = rec.loose(s.metadata) if s.metadata else None
        if tool in SPAWN_TOOLS:
            return self._task(s, call, args, meta, off, given, start, rec.ms(times.end) or t1)
        if not given & CALL:
            given |= CALL
            self.emit(ev.TOOL_CALL, start, off, id=call, name=tool, detail=detail)
        if s.status == "running":
            has_meta = bool(s.metadata) and bytes(s.metadata) != b"null"
            got = args.get("command") if isinstance(args, dict) else None
            cmd = got if isinstance(got, str) else ""
            self.running[call] = Running(tool, detail, cmd, has_meta, start, mid)
            return given
        self.running.pop(call, None)
        if not given & RESULT:
            given |= RESULT
            out = rec.text_of(rec.loose(s.output if s.status == "completed" else s.error))
            exit_code = meta.get("exit") if isinstance(meta, dict) else None
            ok = s.status == "completed" and exit_code in (None, 0)
            self.emit(ev.TOOL_RESULT, rec.ms(times.end) or t1, off, 2, id=call, ok=ok, size=len(out.encode()))
        return given

    def _task(
        self,
        s: rec.ToolState,
        call: str,
        args: Any,
        meta: Any,
        off: int,
        given: int,
        start: float | None,
        end: float | None,
    ) -> int:
        """The task tool: an order to a child session, and its report."""
        L = self.links
        args = args if isinstance(args, dict) else {}
        child = meta.get("sessionId") if isinstance(meta, dict) and isinstance(meta.get("sessionId"), str) else ""
        order = L.orders.get(call)
        if order is None:
            kind = args.get("subagent_type") if isinstance(args.get("subagent_type"), str) else "sub-agent"
            desc = args.get("description") if isinstance(args.get("description"), str) else ""
            body, cut = cap(args.get("prompt") if isinstance(args.get("prompt"), str) else "")
            order = L.orders[call] = self.emit(
                ev.ORDER, start, off, id=call, name=kind, detail=desc, text=body, truncated=cut, target=child
            )
            given |= CALL
        elif child and not order.target:
            order.target = child
        if child:
            L.call_of[child] = call
        if s.status != "running" and not given & RESULT:
            given |= RESULT
            out = rec.text_of(rec.loose(s.output if s.status == "completed" else s.error))
            ok = s.status == "completed"
            self.emit(ev.TOOL_RESULT, end, off, 2, id=call, name=TASK_TOOL, ok=ok, size=len(out.encode()))
            body, cut = cap(rec.task_report(out))
            self.emit(ev.REPORT, end, off, 2, id=call, text=body, truncated=cut, ok=ok, target=order.target)
        return given

    def _leftover_text(self, mid: str, t: float) -> None:
        """The text and thinking parts of a message still streaming when it completed."""
        for pid, (m, kind, text, off, _t) in list(self.flux.items()):
            if m == mid:
                del self.flux[pid]
                self.parts[pid] = self.parts.get(pid, 0) | TEXT
                body, cut = cap(text)
                self.emit(ev.SAY if kind == "text" else ev.THINK, t, off, text=body, truncated=cut, id=mid)

    def _settle(self, st: MsgState, mid: str) -> None:
        """An assistant message that completed: its leftover text, usage, error, turn end."""
        if st.role != "assistant" or st.completed is None or st.given & DONE:
            return
        st.given |= DONE
        t = st.completed
        self._leftover_text(mid, t)
        u = rec.usage_of(st.tokens)
        if st.model:
            self.model = st.model
        if u is not None:
            self.emit(ev.USAGE, t, st.offset, id=mid, name=st.model or self.model, usage=u)
        aborted = st.error is not None and (st.error.name or "") == "MessageAbortedError"
        if aborted:
            self.emit(ev.INTERRUPT, t, st.offset, id=mid, text="interrupted")
        elif st.error is not None:
            self.emit(ev.ERROR, t, st.offset, id=mid, name="api_error", text=cap(rec.error_text(st.error))[0])
        if not aborted and (st.error is not None or st.finish not in NOT_A_TURN_END):
            self.emit(ev.TURN_END, t, st.offset, id=mid)
        for call, r in list(self.running.items()):
            if r.message == mid:  # its message finished without settling it
                del self.running[call]

    # -- what the live states read --------------------------------------------------------

    def in_progress(self) -> bool:
        """The newest assistant message has not completed."""
        st = self.msgs.get(self.last_assistant)
        return st is not None and st.completed is None and st.error is None


def _err(val: Any) -> str:
    if isinstance(val, dict):
        for key in ("message", "name"):
            v = val.get(key)
            if isinstance(v, str):
                return v
        data = val.get("data")
        said = data.get("message") if isinstance(data, dict) else None
        if isinstance(said, str):
            return said
    return rec.text_of(val)[:200] if val is not None else "an error"
