"""OpenCode's `message.data` and `part.data` JSON, decoded permissively.

A message is `{"role": "user" | "assistant", "time": {created, completed?}, "tokens":
{input, output, reasoning, cache: {read, write}}, "modelID", "finish", "error"?, ...}`;
a part `{"type": "text" | "reasoning" | "tool" | "step-start" | "step-finish" | "patch"
| "file" | "compaction" | ..., ...}`. Stored input is net of cached input and output is
net of reasoning. A field of an unexpected type costs that row; an odd number (null, a
float, negative) counts as 0.
"""

from __future__ import annotations

import math
import re
from typing import Any

import msgspec
from msgspec import Raw

from huddle.model.events import Usage
from huddle.sources.values import count as count
from huddle.sources.values import loose as loose

Number = int | float | None


class Cache(msgspec.Struct):
    read: Number = 0
    write: Number = 0


class Tokens(msgspec.Struct):
    input: Number = 0
    output: Number = 0
    reasoning: Number = 0
    cache: Cache | None = None


class Times(msgspec.Struct):
    created: Number = None
    completed: Number = None
    start: Number = None
    end: Number = None


class MsgError(msgspec.Struct):
    name: str | None = None
    data: Raw = Raw()


class Message(msgspec.Struct):
    role: str | None = None
    time: Times | None = None
    tokens: Tokens | None = None
    modelID: str | None = None
    providerID: str | None = None
    finish: str | None = None
    error: MsgError | None = None
    agent: str | None = None
    summary: Raw = Raw()


class ToolState(msgspec.Struct):
    status: str | None = None
    input: Raw = Raw()
    output: Raw = Raw()
    error: Raw = Raw()
    metadata: Raw = Raw()
    title: str | None = None
    time: Times | None = None


class Part(msgspec.Struct):
    type: str | None = None
    text: str | None = None
    synthetic: bool | None = None
    ignored: bool | None = None
    time: Times | None = None
    tool: str | None = None
    callID: str | None = None
    state: ToolState | None = None
    filename: str | None = None
    mime: str | None = None
    attempt: Number = None
    error: Raw = Raw()


decode_message = msgspec.json.Decoder(Message).decode
decode_part = msgspec.json.Decoder(Part).decode
_decode_any = msgspec.json.Decoder().decode

_TASK_RESULT = re.compile(r"<task_result>\n?(.*?)\n?</task_result>", re.S)


def ms(v: Number) -> float | None:
    """OpenCode's times are unix milliseconds."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        return None
    return v / 1000.0


def usage_of(t: Tokens | None) -> Usage | None:
    """Huddle's meaning (output includes reasoning, as Codex counts it)."""
    if t is None:
        return None
    c = t.cache or Cache()
    u = Usage(
        input=count(t.input),
        output=count(t.output) + count(t.reasoning),
        cache_read=count(c.read),
        cache_write=count(c.write),
    )
    return u if u.total else None


def text_of(val: Any) -> str:
    if isinstance(val, str):
        return val
    if val is None:
        return ""
    return msgspec.json.encode(val).decode()


def error_text(err: MsgError | None) -> str:
    if err is None:
        return ""
    data = loose(err.data)
    msg = data.get("message") if isinstance(data, dict) else None
    name = err.name or "error"
    return f"{name}: {msg}" if isinstance(msg, str) and msg else name


def task_report(output: str) -> str:
    """The task tool's output `<task id=... state=...><task_result>...</task_result></task>`."""
    m = _TASK_RESULT.search(output)
    return m.group(1).strip() if m else output.strip()
