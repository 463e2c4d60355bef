"""Legacy Vibe sessions (all 2.x; opt-in in 2.26): `<prefix>_<date>_<time>_<id8>/`
with `messages.jsonl` + `meta.json`, each sub-agent a folder of the same shape in
`agents/`.

Messages carry no times. They are written after each agent step, and meta.json's
`end_time` moves with every save, so the messages a read finds new are spread
between the last time given and the current `end_time` (the first read starts at
`start_time`); those events say `estimated=True`. There is no per-call usage
either: the totals in meta.json `stats` give one usage event per agent (plus one
for each growth of a live session), which says so in its detail.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec
from msgspec import Raw

from huddle.io.reader import RESET, LineReader
from huddle.io.safefile import forget, read_small, remember, stamp
from huddle.model import events as ev
from huddle.model.doing import input_summary
from huddle.model.events import Event, Usage, cap, one_line
from huddle.model.session import Session
from huddle.model.times import parse_time
from huddle.model.tools import SHELL_TOOLS, SPAWN_TOOLS
from huddle.sources.base import drain

from . import tools as vt
from .records import Part


class Rewritten(Exception):
    """messages.jsonl was rewritten (rewind, compaction): the session is read again."""


class Function(msgspec.Struct):
    name: str = ""
    arguments: str | None = None


class ToolCall(msgspec.Struct):
    id: str = ""
    function: Function | None = None


class ToolResult(msgspec.Struct):
    output: Raw = Raw(b"null")
    cancelled: bool | None = None


class ManualShell(msgspec.Struct):
    operation_id: str | None = None
    command: str | None = None
    exit_code: int | None = None
    output_text: str | None = None


class Message(msgspec.Struct):
    role: str = ""
    content: str | list[Part] | None = None
    injected: bool | None = None
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    name: str | None = None
    tool_call_id: str | None = None
    tool_result: ToolResult | None = None
    message_id: str | None = None
    manual_shell: ManualShell | None = None
    context_boundary: str | None = None


class Stats(msgspec.Struct):
    session_prompt_tokens: int | None = 0
    session_completion_tokens: int | None = 0
    session_cached_tokens: int | None = 0
    session_cost: float | None = None


class ModelConfig(msgspec.Struct):
    name: str | None = None


class Config(msgspec.Struct):
    active_model: str | None = None
    models: dict[str, ModelConfig] | list[Any] | None = None


class ChildSession(msgspec.Struct):
    session_id: str = ""
    tool_call_id: str | None = None
    agent: str | None = None
    relative_path: str | None = None


class Environment(msgspec.Struct):
    working_directory: str | None = None


class Profile(msgspec.Struct):
    name: str | None = None


class Meta(msgspec.Struct):
    session_id: str = ""
    parent_session_id: str | None = None
    start_time: str | None = None
    end_time: str | None = None
    title: str | None = None
    title_source: str | None = None
    environment: Environment | None = None
    child_sessions: list[ChildSession] | None = None
    stats: Stats | None = None
    config: Config | None = None
    agent_profile: Profile | None = None


_decode_message = msgspec.json.Decoder(Message).decode
_decode_meta = msgspec.json.Decoder(Meta).decode


def read_meta(path: str) -> Meta | None:
    """meta.json is replaced whole (temp + rename): a read sees old or new, or nothing."""
    try:
        data = read_small(path)
    except OSError as exc:
        remember(path, exc)  # a FIFO, mode 000, a symlink out: a note until it reads
        return None
    forget(path)
    try:
        return _decode_meta(data)
    except (msgspec.MsgspecError, RecursionError):
        return None  # half-written (replaced whole, so rarely): next round


def model_of(meta: Meta) -> str:
    cfg = meta.config
    if cfg is None or not cfg.active_model:
        return ""
    m = cfg.models.get(cfg.active_model) if isinstance(cfg.models, dict) else None
    return (m.name if m is not None and m.name else None) or cfg.active_model


def spread(a: float | None, b: float | None, n: int, first: bool) -> list[float | None]:
    """n times from a to b, evenly; `first` puts the first one at a itself."""
    if a is None:
        return [b] * n
    if b is None or b < a:
        b = a
    if first:
        return [a + (b - a) * k / (n - 1) for k in range(n)] if n > 1 else [a]
    return [a + (b - a) * (k + 1) / n for k in range(n)]


class LegacyAgent:
    """One legacy folder (the lead's or a sub-agent's) -> events for one agent."""

    def __init__(self, session: Session, folder: str, agent: str, is_child: bool):
        self.session = session
        self.folder = folder
        self.agent = agent
        self.is_child = is_child
        self.path = os.path.join(folder, "messages.jsonl")
        self.meta_path = os.path.join(folder, "meta.json")
        self.reader = LineReader(self.path)
        self.meta: Meta | None = None
        self.meta_mtime: tuple[int, ...] | None = None
        self.last_t: float | None = None
        self.untimed = False  # messages were read before any start time was known
        self.calls: dict[str, str] = {}  # tool call id -> tool name
        self.orders: dict[str, Event] = {}  # task call id -> its ORDER
        self.reports: dict[str, Event] = {}  # task call id -> its REPORT
        self.prompts = 0
        self.first_order = ""
        self.usage = Usage()
        self.cost: float | None = None
        self.title = ""
        self.out: list[Event] = []

    def read_meta(self) -> bool:
        mtime = stamp(self.meta_path)
        if mtime is None or mtime == self.meta_mtime:
            return False
        meta = read_meta(self.meta_path)
        if meta is None:
            return False  # being replaced: next round
        self.meta, self.meta_mtime = meta, mtime
        return True

    def refresh(self) -> None:
        seen = self.meta_mtime
        try:
            self._refresh()
        except BaseException:
            self.meta_mtime = seen  # a meta read but not applied (the messages failed): again next round
            raise

    def _refresh(self) -> None:
        meta_changed = self.read_meta()
        if self.reader.check() == RESET:
            raise Rewritten(self.path)
        msgs: list[tuple[Message, int, int]] = []

        def collect(off: int, line: bytes) -> None:
            try:
                msgs.append((_decode_message(line), off, len(line)))
            except msgspec.ValidationError as exc:  # a DecodeError too: caught first
                self.session.problem(self.path, off, f"message of unexpected shape ({exc})")
            except msgspec.DecodeError as exc:
                self.session.problem(self.path, off, f"not JSON ({exc})")

        drain(self.reader, self.session, collect)
        meta = self.meta
        start = parse_time(meta.start_time) if meta else None
        end = parse_time(meta.end_time) if meta else None
        if meta_changed and start is not None and self.untimed:
            raise Rewritten(self.meta_path)  # messages spread with no start time: a start now, so read again
        if msgs:
            self._messages(msgs, start, end)
        if meta is not None and meta_changed:
            self._meta(meta, end)

    def _messages(self, msgs: list[tuple[Message, int, int]], start: float | None, end: float | None) -> None:
        """New messages, their times spread between the last known and the session's end
        (each that is not what the code expects costs its line)."""
        first = self.last_t is None
        times = spread(start if first else self.last_t, end, len(msgs), first)
        for (m, off, n), t in zip(msgs, times):
            mark = len(self.out)
            try:
                self._message(m, off, n, t)
            except Exception as exc:
                del self.out[mark:]
                self.session.problem(self.path, off, f"message of unexpected shape ({type(exc).__name__}: {exc})")
        self.last_t = times[-1]
        if self.last_t is not None:
            self.session.time_estimated = True
        else:
            self.untimed = True

    def emit(self, kind: str, off: int, n: int, t: float | None, **kw: Any) -> Event:
        e = Event(kind=kind, agent=self.agent, t=t, estimated=t is not None, file=self.path, offset=off, length=n, **kw)
        self.out.append(e)
        return e

    def _meta(self, meta: Meta, end: float | None) -> None:
        s = self.session
        if meta.environment is not None and meta.environment.working_directory and not s.cwd:
            s.cwd = meta.environment.working_directory
        if meta.title and meta.title != self.title and not self.is_child:
            self.title = meta.title
            self.emit(ev.TITLE, -1, 0, end, text=meta.title, detail="" if meta.title_source == "manual" else "ai")
        st = meta.stats
        if st is None:
            return
        self.cost = st.session_cost
        cached = st.session_cached_tokens or 0
        total = Usage(
            input=max(0, (st.session_prompt_tokens or 0) - cached),
            output=st.session_completion_tokens or 0,
            cache_read=cached,
        )
        grow = Usage(
            input=total.input - self.usage.input,
            output=total.output - self.usage.output,
            cache_read=total.cache_read - self.usage.cache_read,
        )
        if min(grow.input, grow.output, grow.cache_read) < 0:
            raise Rewritten(self.meta_path)  # totals went down: a rewind; count again from scratch
        if grow.total:
            self.usage = total
            e = self.emit(
                ev.USAGE,
                -1,
                0,
                end or self.last_t,
                id=f"stats-{self.agent}",
                name=model_of(meta),
                usage=grow,
                detail="totals from meta.json stats: legacy sessions keep no per-call usage",
            )
            e.file = self.meta_path

    def _message(self, m: Message, off: int, n: int, t: float | None) -> None:
        text = vt.content_text(m.content)
        if m.role == "user":
            self._user(m, text, off, n, t)
        elif m.role == "assistant":
            if m.reasoning_content:
                body, cut = cap(m.reasoning_content)
                self.emit(ev.THINK, off, n, t, text=body, truncated=cut)
            if text:
                body, cut = cap(text)
                self.emit(ev.SAY, off, n, t, text=body, truncated=cut, id=m.message_id or "")
            for tc in m.tool_calls or ():
                self._call(tc, off, n, t)
            if not m.tool_calls:
                self.emit(ev.TURN_END, off, n, t, id=m.message_id or "")  # the model stopped: turn over
        elif m.role == "tool":
            self._result(m, text, off, n, t)

    def _user(self, m: Message, text: str, off: int, n: int, t: float | None) -> None:
        body, cut = cap(text)
        ms = m.manual_shell
        if ms is not None:
            cid = ms.operation_id or m.message_id or ""
            self.emit(ev.TOOL_CALL, off, n, t, id=cid, name="shell", detail=one_line(ms.command or "", 160))
            rc = ms.exit_code
            self.emit(
                ev.TOOL_RESULT,
                off,
                n,
                t,
                id=cid,
                name="shell",
                ok=rc == 0,
                size=len(ms.output_text or ""),
                detail=f"exit {rc}" if rc is not None else "",
            )
        elif m.context_boundary == "compaction":
            self.emit(ev.COMPACTION, off, n, t, text="Conversation compacted")
            self.emit(ev.CONTEXT, off, n, t, name="compact_summary", text=body, truncated=cut)
        elif m.injected:
            self.emit(ev.CONTEXT, off, n, t, name="injected", text=body, truncated=cut)
        elif self.is_child:
            self.prompts += 1
            if self.prompts == 1:
                self.first_order = body  # the lead's `task` call carries it
            else:
                self.emit(ev.ORDER, off, n, t, text=body, truncated=cut, target=self.agent)
        else:
            self.emit(ev.PROMPT, off, n, t, text=body, truncated=cut)

    def _call(self, tc: ToolCall, off: int, n: int, t: float | None) -> None:
        fn = tc.function or Function()
        self.calls[tc.id] = fn.name
        args = vt.decode(fn.arguments, 200_000) if fn.arguments else None
        if fn.name in SPAWN_TOOLS:
            args = args if isinstance(args, dict) else {}
            body, cut = cap(str(args.get("task") or ""))
            kind = str(args.get("agent") or "")
            self.orders[tc.id] = self.emit(
                ev.ORDER, off, n, t, id=tc.id, name=kind, detail=kind, text=body, truncated=cut
            )
            return
        self.emit(ev.TOOL_CALL, off, n, t, id=tc.id, name=fn.name, detail=input_summary(args))

    def _result(self, m: Message, text: str, off: int, n: int, t: float | None) -> None:
        cid = m.tool_call_id or ""
        name = self.calls.get(cid) or m.name or ""
        tr = m.tool_result
        ok = tr is not None and not tr.cancelled and not text.startswith(("<tool_error>", "<user_cancellation>"))
        out = vt.decode(tr.output) if tr is not None and (name in SHELL_TOOLS or name in SPAWN_TOOLS) else None
        detail = ""
        if name in SHELL_TOOLS:
            rc = vt.exit_code(out) if out is not None else vt.legacy_exit_code(text)
            if rc is not None:
                detail, ok = f"exit {rc}", ok and rc == 0
        if not ok and not detail:
            detail = "denied" if text.startswith("<user_cancellation>") else "error"
        self.emit(ev.TOOL_RESULT, off, n, t, id=cid, name=name, ok=ok, size=len(text), detail=detail)
        if name in SPAWN_TOOLS:
            answer = out.get("response") if isinstance(out, dict) else None
            body, cut = cap(str(answer) if answer else text)
            self.reports[cid] = self.emit(ev.REPORT, off, n, t, id=cid, text=body, truncated=cut, ok=ok)
