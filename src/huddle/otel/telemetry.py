"""The agents' own telemetry, as huddle keeps it: one file of plain lines per session.

Claude Code (`CLAUDE_CODE_ENABLE_TELEMETRY=1`) logs `claude_code.*` events: each model
response (`api_request`: model, tokens, cost, `request_id`), the prompts, tool
decisions and results, the responses' texts (redacted unless the user allows them).
Codex (`[otel]` in its config) logs `codex.*` events: the completed responses' token
counts (`sse_event` of kind `response.completed`), prompts, tool decisions and results.
Each becomes one line of `$HUDDLE_HOME/telemetry/<agent>/<session id>.jsonl`, which the
telemetry source reads as a session (sources/telemetry). Metrics (Claude Code's
cumulative `token.usage` per model) are kept too: they count a session whose logs were
not sent.

An exporter retries a batch it is not sure was taken: a record seen before (its event
sequence and time, or its whole content; a response by its request id) is not written
again. What one record says costs that record only.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .otlp import Record

FOLDER = "telemetry"
TEXT_MAX = 4000  # characters of a prompt kept (the rest is not needed for a title or a turn)
_SAFE = re.compile(r"[^A-Za-z0-9._-]")
REDACTED = frozenset({"<REDACTED>", "[REDACTED]", ""})


def folder(huddle_home: str) -> str:
    return os.path.join(huddle_home, FOLDER)


def agent_of(r: Record) -> str | None:
    """Which agent sent a record: claude, codex, or None (not an agent huddle reads)."""
    name = r.get("event.name")
    body = r.body if isinstance(r.body, str) else ""
    service = r.resource.get("service.name")
    if body.startswith("claude_code.") or r.scope.startswith("com.anthropic.claude_code") or service == "claude-code":
        return "claude"
    if (isinstance(name, str) and name.startswith("codex.")) or (isinstance(service, str) and "codex" in service):
        return "codex"
    if r.metric.startswith("claude_code."):
        return "claude"
    return None


def session_of(r: Record, agent: str) -> str | None:
    sid = r.get("session.id") if agent == "claude" else r.get("conversation.id", "session.id", "thread.id")
    if not isinstance(sid, str) or not sid.strip():
        return None
    sid = sid.strip()
    safe = _SAFE.sub("_", sid)[:120]
    if safe != sid:  # a name a file can have, still the same session's every time
        safe = f"{safe[:80]}-{hashlib.blake2b(sid.encode(), digest_size=6).hexdigest()}"
    return safe


def _n(v: Any) -> int:
    """A token count as the record says it (a string or a number), 0 when it says none."""
    if isinstance(v, bool):
        return 0
    if isinstance(v, int):
        return v if 0 <= v <= 10**12 else 0
    if isinstance(v, float) and v == v and 0 <= v <= 1e12:
        return int(v)
    if isinstance(v, str) and v.strip().isdigit() and len(v.strip()) <= 13:
        return int(v.strip())
    return 0


def _s(v: Any, cap: int = 200) -> str:
    return v[:cap] if isinstance(v, str) else ""


def _ok(v: Any) -> bool:
    return v is True or (isinstance(v, str) and v.strip().lower() in ("true", "1", "yes"))


def line_of(r: Record, agent: str) -> dict[str, Any] | None:
    """The line a log record becomes, or None when it says nothing huddle shows."""
    name = r.get("event.name")
    name = name if isinstance(name, str) else (r.body if isinstance(r.body, str) else "")
    for prefix in ("claude_code.", "codex."):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    said = _AGENTS_EVENTS.get((agent, name)) or _EVENTS.get(name)
    fields = said(r) if said is not None else None
    if fields is None:
        return None
    out: dict[str, Any] = {"t": r.t}
    sub = r.get("agent.id", "agent_id")
    if isinstance(sub, str) and sub:
        out["agent"] = sub[:120]
    out.update(fields)
    version = r.resource.get("service.version", r.get("app.version"))
    if isinstance(version, str):
        out["v"] = version[:40]
    host = r.resource.get("host.name")
    if isinstance(host, str) and host:
        out["host"] = host[:80]
    return out


def _claude_usage(r: Record) -> dict[str, Any]:
    out = {
        "k": "usage",
        "model": _s(r.get("model")),
        "input": _n(r.get("input_tokens")),
        "output": _n(r.get("output_tokens")),
        "cache_read": _n(r.get("cache_read_tokens")),
        "cache_write": _n(r.get("cache_creation_tokens")),
        "cache_write_1h": _n(r.get("cache_creation_1h_tokens")),
        "rid": _s(r.get("request_id")),
        "src": _s(r.get("query_source")),
    }
    usd = r.get("cost_usd")
    if isinstance(usd, (int, float)) and not isinstance(usd, bool) and usd == usd:
        out["usd"] = float(usd)
    return out


def _codex_usage(r: Record) -> dict[str, Any] | None:
    """A completed response's counts (any other server-sent event says none)."""
    if r.get("event.kind") != "response.completed" or r.get("input_token_count") is None:
        return None
    inp, cached = _n(r.get("input_token_count")), _n(r.get("cached_token_count"))
    return {
        "k": "usage",
        "model": _s(r.get("model", "slug")),
        "input": max(inp - cached, 0),  # (OpenAI's input counts the cached part; huddle's is net of it)
        "output": _n(r.get("output_token_count")),
        "cache_read": min(cached, inp) if inp else cached,
        "cache_write": 0,
        "cache_write_1h": 0,
        "rid": "",
        "src": "",
    }


def _prompt(r: Record) -> dict[str, Any]:
    text = r.get("prompt")
    return {"k": "prompt", "id": _s(r.get("prompt.id")), "text": None if text in REDACTED else _s(text, TEXT_MAX)}


# What each event of one agent's telemetry says, by (agent, event) ...
_AGENTS_EVENTS: dict[tuple[str, str], Callable[[Record], dict[str, Any] | None]] = {
    ("claude", "api_request"): _claude_usage,
    ("codex", "sse_event"): _codex_usage,
    ("claude", "assistant_response"): lambda r: {
        "k": "say",
        "rid": _s(r.get("request_id")),
        "src": _s(r.get("query_source")),
    },
}
# ... and of any agent's, by event.
_EVENTS: dict[str, Callable[[Record], dict[str, Any] | None]] = {
    "user_prompt": _prompt,
    "tool_decision": lambda r: {
        "k": "tool_call",
        "id": _s(r.get("tool_use_id", "call_id")),
        "name": _s(r.get("tool_name")),
        "decision": _s(r.get("decision")),
    },
    "tool_result": lambda r: {
        "k": "tool_result",
        "id": _s(r.get("tool_use_id", "call_id")),
        "name": _s(r.get("tool_name")),
        "ok": _ok(r.get("success")),
    },
    "api_error": lambda r: {"k": "error", "text": _s(r.get("error")) or "api_error"},
    "api_retries_exhausted": lambda r: {"k": "error", "text": _s(r.get("error")) or "api_retries_exhausted"},
    "compaction": lambda r: {"k": "compaction"},
    "conversation_starts": lambda r: {"k": "meta", "model": _s(r.get("model"))},
}


def metric_line(r: Record) -> dict[str, Any] | None:
    """Claude Code's cumulative token count per model and kind (`claude_code.token.usage`)."""
    if r.metric != "claude_code.token.usage" or r.value is None:
        return None
    kind = r.attrs.get("type")
    if kind not in ("input", "output", "cacheRead", "cacheCreation"):
        return None
    return {"t": r.t, "k": "metric", "model": _s(r.attrs.get("model")), "type": kind, "value": _n(r.value)}


def _key(r: Record, line: dict[str, Any]) -> str:
    """What tells a record sent again from a new one."""
    if line.get("k") == "usage" and line.get("rid"):
        return "rid:" + line["rid"]
    seq, stamp = r.get("event.sequence"), r.get("event.timestamp")
    if isinstance(seq, int) and isinstance(stamp, str):
        return f"seq:{r.get('event.name')}:{seq}:{stamp}"
    if line.get("k") == "metric":  # (a cumulative reading: the newest time of each series counts)
        return f"m:{line['model']}:{line['type']}:{line['t']}"
    raw = json.dumps([r.t, r.metric, r.body, r.attrs], sort_keys=True, default=str)
    return "h:" + hashlib.blake2b(raw.encode(), digest_size=12).hexdigest()


class Store:
    """The telemetry files, written one line per new record (thread-safe)."""

    KEEP = 256  # sessions whose seen keys stay in memory (others are read back when written again)

    def __init__(self, huddle_home: str) -> None:
        self.root = folder(huddle_home)
        self.lock = threading.Lock()
        self.seen: OrderedDict[str, set[str]] = OrderedDict()

    def path(self, agent: str, sid: str) -> str:
        return os.path.join(self.root, agent, f"{sid}.jsonl")

    def _seen(self, path: str) -> set[str]:
        got = self.seen.get(path)
        if got is None:
            got = set()
            try:
                with open(path, "rb") as f:
                    for raw in f:
                        try:
                            d = json.loads(raw)
                        except ValueError:
                            continue
                        if isinstance(d, dict) and isinstance(d.get("key"), str):
                            got.add(d["key"])
            except OSError:
                pass
            self.seen[path] = got
            while len(self.seen) > self.KEEP:
                self.seen.popitem(last=False)
        else:
            self.seen.move_to_end(path)
        return got

    def take(self, records: list[Record], kind: str) -> tuple[int, int]:
        """Write what these records say; returns (lines written, records passed over)."""
        by_file: dict[str, list[str]] = {}
        skipped = 0
        with self.lock:
            for r in records:
                try:
                    agent = agent_of(r)
                    sid = session_of(r, agent) if agent else None
                    line = (metric_line(r) if kind == "metrics" else line_of(r, agent)) if agent and sid else None
                except Exception:  # one odd record costs that record
                    line = None
                if line is None or agent is None or sid is None:
                    skipped += 1
                    continue
                path = self.path(agent, sid)
                key = _key(r, line)
                seen = self._seen(path)
                if key in seen:
                    continue
                seen.add(key)
                line["key"] = key
                by_file.setdefault(path, []).append(json.dumps(line, ensure_ascii=False, separators=(",", ":")))
            for path, lines in by_file.items():
                os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
                fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)  # (the user's alone)
                with os.fdopen(fd, "a", encoding="utf-8") as f:
                    f.write("".join(x + "\n" for x in lines))
        return sum(len(v) for v in by_file.values()), skipped
