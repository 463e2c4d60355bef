"""The live line: what a `claude -p --output-format stream-json --verbose` run is
doing right now, in one terminal line, with its token totals.

Pure and stdlib-only: fed whole lines (a `LineSplitter` reassembles chunks split
anywhere), it never reads a file or a clock. Works with or without
`--include-partial-messages`.

Counting tokens once per message: the stream's `assistant` lines (one per content
block) repeat the message_start usage with `stop_reason: null`; the final usage
of a message comes with its `message_delta` (partial messages on) or, summed per
turn, with the `result` (partial messages off). Sub-agents' messages never get a
final usage on stdout; their totals arrive unsplit (`usage.total_tokens` of
task_progress / task_notification) and are counted as up, and said apart.
"""

from __future__ import annotations

import json
import re

from .phrases import fit, said, tool_phrase

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


def _usage(u) -> list[int]:
    """[input, cache_read, cache_write, output] of an API usage object."""
    if not isinstance(u, dict):
        return [0, 0, 0, 0]
    return [
        _int(u.get("input_tokens")),
        _int(u.get("cache_read_input_tokens")),
        _int(u.get("cache_creation_input_tokens")),
        _int(u.get("output_tokens")),
    ]


_USAGE_KEYS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens")


def _int(v) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0


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
        self._committed = [0, 0, 0, 0]  # turns settled by a `result` (partial messages off)
        self._messages: dict[str, list[int]] = {}  # with partial messages: per message
        self._provisional: dict[str, list[int]] = {}  # without: since the last result
        self._partials = False  # stream_event lines seen
        self._tools: set[str] = set()
        self._tasks: dict[str, int] = {}  # sub-agent id -> unsplit total tokens
        self._texts: dict[int, str] = {}  # block index -> text streamed so far

    # -- totals --------------------------------------------------------------------

    def _sum(self) -> list[int]:
        total = list(self._committed)
        for u in (*self._messages.values(), *self._provisional.values()):
            for i in range(4):
                total[i] += u[i]
        return total

    @property
    def unsplit(self) -> int:
        """Sub-agent tokens that arrived as one number (counted in `up`)."""
        return sum(self._tasks.values())

    @property
    def up(self) -> int:
        """Everything sent to the model: input, cache reads and cache writes."""
        t = self._sum()
        return t[0] + t[1] + t[2] + self.unsplit

    @property
    def down(self) -> int:
        """Generated, thinking included."""
        return self._sum()[3]

    # -- feeding -------------------------------------------------------------------

    def feed(self, line: bytes | str) -> None:
        """One whole line of the agent's stdout."""
        text = line.decode("utf-8", "replace") if isinstance(line, (bytes, bytearray)) else line
        text = text.rstrip("\r\n")
        if not text.strip():
            return
        self.lines += 1
        try:
            d = json.loads(text)
        except ValueError:
            d = None
        if not isinstance(d, dict):
            self.feed_plain(text)
            return
        self.feed_json(d)

    def feed_plain(self, text: str) -> None:
        """A line that is not JSON (claude prints some failures, a 401, as prose),
        or a line of stderr: kept in order to explain a failure."""
        self.plain_count += 1
        self.plain.append(text)
        if len(self.plain) > PLAIN_KEEP:
            del self.plain[0]

    def feed_json(self, d: dict) -> None:
        t = d.get("type")
        if t == "stream_event":
            self._stream_event(d)
        elif t == "assistant":
            self._assistant(d)
        elif t == "user":
            self._user(d)
        elif t == "system":
            self._system(d)
        elif t == "result" or (t is None and "result" in d and "usage" in d):
            self._result(d)

    def _stream_event(self, d: dict) -> None:
        self._partials = True
        e = d.get("event")
        if not isinstance(e, dict) or d.get("parent_tool_use_id"):
            return
        et = e.get("type")
        if et == "message_start":
            m = got if isinstance(got := e.get("message"), dict) else {}
            mid = m.get("id") or d.get("api_message_id") or ""
            if mid:
                self._messages[mid] = _usage(m.get("usage"))
            self._texts.clear()
            self._working()
        elif et == "message_delta":
            mid = d.get("api_message_id") or ""
            u = e.get("usage")
            if mid and isinstance(u, dict):
                cur = self._messages.setdefault(mid, [0, 0, 0, 0])
                for i, key in enumerate(_USAGE_KEYS):
                    if key in u:
                        cur[i] = _int(u[key])
        elif et == "content_block_start":
            b = got if isinstance(got := e.get("content_block"), dict) else {}
            bt = b.get("type")
            if bt == "thinking":
                self.activity = "thinking"
            elif bt in ("tool_use", "server_tool_use"):
                self._tool(b)
        elif et == "content_block_delta":
            delta = got if isinstance(got := e.get("delta"), dict) else {}
            if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
                idx = got if isinstance(got := e.get("index"), int) else 0
                self._texts[idx] = self._texts.get(idx, "") + delta["text"]
                self._say(self._texts[idx])

    def _assistant(self, d: dict) -> None:
        m = d.get("message")
        if not isinstance(m, dict):
            return
        self._working()
        sub = bool(d.get("parent_tool_use_id"))
        mid = m.get("id") or ""
        if not sub and mid and m.get("model") != "<synthetic>" and mid not in self._messages:
            if self._partials:
                self._messages[mid] = _usage(m.get("usage"))
            else:
                self._provisional.setdefault(mid, _usage(m.get("usage")))
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for b in blocks if isinstance(blocks, list) else ():
            if not isinstance(b, dict):
                continue
            bt = b.get("type")
            if bt == "text" and isinstance(b.get("text"), str):
                if m.get("model") == "<synthetic>" or d.get("error"):
                    self.error = fit(b["text"], 300)  # an API error said as a message
                self._say(b["text"])
            elif bt == "thinking":
                self.activity = "thinking"
            elif bt in ("tool_use", "server_tool_use"):
                self._tool(b)

    def _user(self, d: dict) -> None:
        m = d.get("message")
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list):
            for b in content:
                if (
                    isinstance(b, dict)
                    and b.get("type") == "text"
                    and str(b.get("text", "")).startswith("[Request interrupted")
                ):
                    self.activity = "interrupted"

    def _system(self, d: dict) -> None:
        st = d.get("subtype")
        if st == "init":
            self.session_id = str(d.get("session_id") or self.session_id)
            self.model = str(d.get("model") or self.model)
            self.cwd = str(d.get("cwd") or self.cwd)
            self._working()
            if not self.activity or self.activity in ("done", "starting"):
                self.activity = "starting"
        elif st == "status":
            if d.get("status") == "compacting":
                self.activity = "compacting the conversation"
            elif d.get("status") == "requesting" and not self.activity:
                self.activity = "waiting for the model"
        elif st == "api_retry":
            why = d.get("error") or "error"
            code = f" {d['error_status']}" if d.get("error_status") else ""
            self.activity = fit(f"retrying after {why}{code} (attempt {d.get('attempt', '?')})")
        elif st == "compact_boundary":
            self.activity = "compacted the conversation"
        elif st == "task_started":
            tid = str(d.get("task_id") or d.get("tool_use_id") or "")
            if tid not in self._tasks:
                self._tasks[tid] = 0
                self.subagents += 1
        elif st in ("task_progress", "task_notification"):
            tid = str(d.get("task_id") or d.get("tool_use_id") or "")
            u = d.get("usage")
            if tid and isinstance(u, dict):
                self._tasks[tid] = max(self._tasks.get(tid, 0), _int(u.get("total_tokens")))
        elif st == "permission_denied":
            self.activity = fit(f"denied: {d.get('tool_name') or 'a tool'}")

    def _result(self, d: dict) -> None:
        self.results += 1
        r = _usage(d.get("usage"))
        if not self._partials:
            if self._provisional and not any(r):
                r = [sum(u[i] for u in self._provisional.values()) for i in range(4)]
            for i in range(4):
                self._committed[i] += r[i]
            self._provisional.clear()
        if isinstance(d.get("result"), str):
            self.result = d["result"]
        reason = str(d.get("terminal_reason") or "")
        if d.get("is_error"):
            if reason.startswith("aborted"):
                self.state, self.activity = "stopped", "stopped"
                self.error = f"interrupted ({reason})"
            else:
                self.state, self.activity = "failed", "failed"
                errors = got if isinstance(got := d.get("errors"), list) else []
                what = self.result or "; ".join(str(e) for e in errors) or str(d.get("subtype") or "error")
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

    def _tool(self, b: dict) -> None:
        tid = b.get("id")
        if isinstance(tid, str) and tid and tid not in self._tools:
            self._tools.add(tid)
            self.tool_calls += 1
        self.activity = tool_phrase(str(b.get("name") or ""), b.get("input"))

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
