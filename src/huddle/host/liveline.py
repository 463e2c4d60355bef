"""The live line: what a `claude -p --output-format stream-json --verbose` run is
doing right now, in one terminal line, with its token totals.

Fed whole lines (a `LineSplitter` reassembles chunks split anywhere), it never reads
a file or a clock. Works with or without `--include-partial-messages`. The lines are
decoded by the hosted source's reader (`huddle.sources.hosted.lines`) and their
tokens counted by its ledger (once per message, sub-agents' unsplit totals apart):
what the live line says is what the hosted session will count.
"""

from __future__ import annotations

import re

import msgspec

from huddle.model.doing import fit, said, tool_phrase
from huddle.model.events import Usage
from huddle.sources.claude.records import Block, ClaudeUsage, Message, str_of, usage_of
from huddle.sources.hosted.ledger import StreamLedger
from huddle.sources.hosted.lines import Line, claude_usage, decode_any, decode_line, given, task_usage

PLAIN_KEEP = 200  # non-JSON lines kept (the last ones), to explain a failure
_PARTIAL = re.compile(rb'"type"\s*:\s*"content_block_delta"')


def is_partial(line: bytes) -> bool:
    """A streamed partial (`content_block_delta`), matched as text: the trace is
    written before a line is understood."""
    return _PARTIAL.search(line) is not None


class LineSplitter:
    """Chunks split anywhere -> whole lines (bytes, without the newline)."""

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        data = self._buf + chunk
        lines = data.split(b"\n")
        self._buf = lines.pop()
        return [ln[:-1] if ln.endswith(b"\r") else ln for ln in lines]

    def close(self) -> list[bytes]:
        """The last line, if the stream ended without a newline."""
        rest, self._buf = self._buf, b""
        return [rest.rstrip(b"\r")] if rest.strip() else []


def _input(raw: msgspec.Raw) -> dict[str, object]:
    try:
        val = decode_any(raw)
    except msgspec.MsgspecError:
        return {}
    return val if isinstance(val, dict) else {}


class LiveLine:
    def __init__(self) -> None:
        self.activity = ""  # at most 56 characters
        self.tool_calls = 0
        self.subagents = 0
        self.pid: int | None = None  # the agent's, set by whoever started it
        self.result: str | None = None  # the final text of the last turn
        self.error: str | None = None
        self.plain: list[str] = []  # non-JSON lines, in order (the last PLAIN_KEEP)
        self.plain_count = 0
        self.session_id = ""
        self.model = ""
        self.cwd = ""
        self.results = 0  # turns finished (`result` lines)
        self.state = "starting"  # working, done, stopped, failed
        self.lines = 0
        self.ledger = StreamLedger()
        self._counted = Usage()  # what the ledger made final
        self._tools: set[str] = set()
        self._tasks: set[str] = set()  # sub-agents seen
        self._texts: dict[int, str] = {}  # block index -> text streamed so far

    # -- totals --------------------------------------------------------------------

    def _count(self, u: Usage | None) -> None:
        if u is not None:
            self._counted.add(u)

    def _sum(self) -> Usage:
        total = Usage()
        total.add(self._counted)
        total.add(self.ledger.in_flight())
        return total

    @property
    def unsplit(self) -> int:
        """Sub-agent tokens that arrived as one number (counted in `up`)."""
        return sum(self.ledger.tasks.values())

    @property
    def up(self) -> int:
        """Everything sent to the model: input, cache reads and cache writes."""
        t = self._sum()
        return t.input + t.cache_read + t.cache_write + self.unsplit

    @property
    def down(self) -> int:
        """Generated, thinking included."""
        return self._sum().output

    # -- feeding -------------------------------------------------------------------

    def feed(self, line: bytes | str) -> None:
        """One whole line of the agent's stdout."""
        data = line.encode("utf-8", "surrogateescape") if isinstance(line, str) else bytes(line)
        data = data.rstrip(b"\r\n")
        if not data.strip():
            return
        self.lines += 1
        try:
            d = decode_line(data)
        except msgspec.MsgspecError:  # not JSON, or not a stream line
            self.feed_plain(data.decode("utf-8", "replace"))
            return
        self.feed_line(d)

    def feed_plain(self, text: str) -> None:
        """A line that is not JSON (claude prints some failures, a 401, as prose),
        or a line of stderr: kept in order to explain a failure."""
        self.plain_count += 1
        self.plain.append(text)
        if len(self.plain) > PLAIN_KEEP:
            del self.plain[0]

    def feed_line(self, d: Line) -> None:
        t = d.type
        if t == "stream_event":
            self._stream_event(d)
        elif t == "assistant":
            self._assistant(d)
        elif t == "user":
            self._user(d)
        elif t == "system":
            self._system(d)
        elif t == "result" or (not t and d.result is not None and given(d.usage)):
            self._result(d)

    def _stream_event(self, d: Line) -> None:
        self.ledger.partials = True
        e = d.event
        if e is None or d.parent_tool_use_id:
            return
        et = e.type
        if et == "message_start":
            m = e.message
            if m is not None and m.usage is not None:
                self.ledger.started(m.id or d.api_message_id or "", usage_of(m.usage))
            self._texts.clear()
            self._working()
        elif et == "message_delta":
            if e.usage is not None:
                self._count(self.ledger.delta(d.api_message_id or "", usage_of(e.usage)))
        elif et == "content_block_start" and e.content_block is not None:
            self._block_start(e.content_block)
        elif et == "content_block_delta":
            delta = e.delta
            if delta is not None and delta.type == "text_delta" and delta.text is not None:
                idx = e.index or 0
                self._texts[idx] = self._texts.get(idx, "") + delta.text
                self._say(self._texts[idx])

    def _block_start(self, b: Block) -> None:
        """A content block begins streaming: thinking, or a tool call."""
        if b.type == "thinking":
            self.activity = "thinking"
        elif b.type in ("tool_use", "server_tool_use"):
            self._tool(b.id, b.name, b.input)

    def _assistant(self, d: Line) -> None:
        m = d.message
        if not isinstance(m, Message):
            return
        self._working()
        if not d.parent_tool_use_id and m.model != "<synthetic>" and m.usage is not None:
            self.ledger.assistant(m.id or "", usage_of(m.usage))
        if isinstance(m.content, str):
            self._text(m.content, m.model, d)
            return
        for b in m.content or ():
            if b.type == "text" and b.text is not None:
                self._text(b.text, m.model, d)
            elif b.type == "thinking":
                self.activity = "thinking"
            elif b.type in ("tool_use", "server_tool_use"):
                self._tool(b.id, b.name, b.input)

    def _text(self, text: str, model: str | None, d: Line) -> None:
        if model == "<synthetic>" or given(d.error):
            self.error = fit(text, 300)  # an API error said as a message
        self._say(text)

    def _user(self, d: Line) -> None:
        m = d.message
        if isinstance(m, Message) and isinstance(m.content, list):
            for b in m.content:
                if b.type == "text" and (b.text or "").startswith("[Request interrupted"):
                    self.activity = "interrupted"

    def _system(self, d: Line) -> None:
        st = d.subtype
        if st == "init":
            self.session_id = d.session_id or self.session_id
            self.model = d.model or self.model
            self.cwd = d.cwd or self.cwd
            self._working()
            if not self.activity or self.activity in ("done", "starting"):
                self.activity = "starting"
        elif st == "status":
            if d.status == "compacting":
                self.activity = "compacting the conversation"
            elif d.status == "requesting" and not self.activity:
                self.activity = "waiting for the model"
        elif st == "api_retry":
            why = str_of(d.error) or "error"
            code = f" {d.error_status}" if d.error_status else ""
            attempt = d.attempt if d.attempt is not None else "?"
            self.activity = fit(f"retrying after {why}{code} (attempt {attempt})")
        elif st == "compact_boundary":
            self.activity = "compacted the conversation"
        elif st == "task_started":
            tid = d.task_id or d.tool_use_id or ""
            if tid not in self._tasks:
                self._tasks.add(tid)
                self.subagents += 1
        elif st in ("task_progress", "task_notification"):
            tid = d.task_id or d.tool_use_id or ""
            u = _task_usage(d)
            if tid and u is not None:
                self.ledger.task(tid, u)
        elif st == "permission_denied":
            self.activity = fit(f"denied: {d.tool_name or 'a tool'}")

    def _result(self, d: Line) -> None:
        self.results += 1
        u = _claude_usage(d)
        self._count(self.ledger.result(usage_of(u) if u is not None else None))
        if d.result is not None:
            self.result = d.result
        reason = d.terminal_reason or ""
        if d.is_error:
            if reason.startswith("aborted"):
                self.state, self.activity = "stopped", "stopped"
                self.error = f"interrupted ({reason})"
            else:
                self.state, self.activity = "failed", "failed"
                what = self.result or "; ".join(d.errors or ()) or (d.subtype or "error")
                self.error = fit(what, 300)
        else:
            self.state, self.activity = "done", "done"

    # -- helpers -------------------------------------------------------------------

    def _working(self) -> None:
        if self.state in ("starting", "done"):
            self.state = "working"

    def _say(self, text: str) -> None:
        s = said(text)
        if s:
            self.activity = fit(s)

    def _tool(self, tid: str | None, name: str | None, inp: msgspec.Raw) -> None:
        if tid and tid not in self._tools:
            self._tools.add(tid)
            self.tool_calls += 1
        self.activity = tool_phrase(name or "", _input(inp))

    # -- reading -------------------------------------------------------------------

    def explanation(self) -> str:
        """Why the run failed, in the words the stream used: its error, or else the
        plain lines it printed."""
        if self.error:
            return self.error
        return "\n".join(self.plain[-10:])

    def summary(self) -> dict:
        return {
            "activity": self.activity,
            "state": self.state,
            "up": self.up,
            "down": self.down,
            "unsplit": self.unsplit,
            "tool_calls": self.tool_calls,
            "subagents": self.subagents,
            "pid": self.pid,
            "session_id": self.session_id,
            "model": self.model,
            "result": self.result,
            "error": self.error,
            "plain": list(self.plain),
        }

    def render(self, width: int = 100) -> str:
        """The one line: what it does, the work done, the tokens, the pid."""
        parts = [self.activity or self.state]
        parts.append(f"{self.tool_calls} tool call{'s' if self.tool_calls != 1 else ''}")
        if self.subagents:
            parts.append(f"{self.subagents} sub-agent{'s' if self.subagents != 1 else ''}")
        parts.append(f"↑{short(self.up)} ↓{short(self.down)}")
        if self.pid:
            parts.append(f"pid {self.pid}")
        return fit(" · ".join(parts), width)


def short(n: int) -> str:
    """12,345 -> 12.3k: a spinner line has no room for every digit."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k".replace(".0k", "k")
    return f"{n / 1_000_000:.1f}M".replace(".0M", "M")


def _task_usage(d: Line) -> int | None:
    try:
        u = task_usage(d.usage) if given(d.usage) else None
    except msgspec.MsgspecError:
        return None
    return u.total_tokens if u is not None and u.total_tokens else None


def _claude_usage(d: Line) -> ClaudeUsage | None:
    try:
        return claude_usage(d.usage) if given(d.usage) else None
    except msgspec.MsgspecError:
        return None
