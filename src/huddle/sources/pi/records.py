"""Pi session records (`<sessions>/--<cwd>--/<time>_<id>.jsonl`), decoded permissively.

Line 1 is the header (`type: "session"`, `version`, `id`, `timestamp`, `cwd`, and
`parentSession` in a fork); every other line is an entry with `type`, `id` (8 hex),
`parentId` and an ISO `timestamp` (version 1 files have no ids: a plain sequence).
A `message` entry holds one message by `role` (`user`, `assistant`, `toolResult`,
`system` in 1.6.0, `bashExecution`, `custom`). Fields are typed loosely: a null or a
float where a count was expected counts as what it can mean; a value of a wrong type
costs its line. Message content (a string or a list of parts) and a tool's `details`
stay raw until they are needed.
"""

from __future__ import annotations

import msgspec
from msgspec import Raw

from huddle.model.events import Usage
from huddle.model.times import millis
from huddle.sources.values import count as count
from huddle.sources.values import loose as loose
from huddle.sources.values import when as when

Number = int | float | None


class Tokens(msgspec.Struct):
    """Pi's `usage`: `input` is net of the cached part, `output` includes reasoning
    (`reasoning`, 1.6.0, is a part of it), `cost` is priced from models.json."""

    input: Number = 0
    output: Number = 0
    cacheRead: Number = 0
    cacheWrite: Number = 0


class Message(msgspec.Struct):
    role: str | None = None
    content: Raw = Raw()
    timestamp: Number = None  # unix milliseconds
    # assistant
    model: str | None = None
    provider: str | None = None
    usage: Tokens | None = None
    stopReason: str | None = None
    errorMessage: str | None = None
    responseId: str | None = None
    # toolResult
    toolCallId: str | None = None
    toolName: str | None = None
    isError: bool | None = None
    details: Raw = Raw()
    # bashExecution (a `!command` the human ran)
    command: str | None = None
    output: str | None = None
    # custom (an extension's message), branchSummary / compactionSummary
    customType: str | None = None
    summary: str | None = None


class Entry(msgspec.Struct):
    type: str | None = None
    id: str | None = None
    parentId: str | None = None
    timestamp: str | None = None
    # the header
    version: Number = None
    cwd: str | None = None
    parentSession: str | None = None
    branchedFrom: str | None = None  # (version 1's name for it)
    # message
    message: Message | None = None
    # model_change
    provider: str | None = None
    modelId: str | None = None
    # session_info (a name), label
    name: str | None = None
    # branch_summary, compaction
    fromId: str | None = None
    summary: str | None = None
    firstKeptEntryId: str | None = None
    usage: Tokens | None = None
    # context_edit
    targetId: str | None = None
    replacement: Raw = Raw()
    # custom_message
    customType: str | None = None
    content: Raw = Raw()
    # usage (a call Pi made on its own, such as cache warming)
    model: str | None = None


class Part(msgspec.Struct):
    """One part of a message's content; a tool call's arguments stay raw."""

    type: str | None = None
    text: str | None = None
    thinking: str | None = None
    id: str | None = None
    name: str | None = None
    arguments: Raw = Raw()


class SubResult(msgspec.Struct):
    """One task's run in the example `subagent` extension's `details.results`."""

    agent: str | None = None
    task: str | None = None
    status: str | None = None
    exitCode: Number = None
    messages: list[Message] | None = None
    stopReason: str | None = None
    errorMessage: str | None = None
    stderr: str | None = None


class SubDetails(msgspec.Struct):
    mode: str | None = None
    results: list[SubResult] | None = None


decode_entry = msgspec.json.Decoder(Entry).decode
decode_details = msgspec.json.Decoder(SubDetails).decode
_decode_parts = msgspec.json.Decoder(str | list[Part] | None).decode

KNOWN = frozenset(
    {
        "session",
        "message",
        "model_change",
        "thinking_level_change",
        "session_info",
        "label",
        "branch_summary",
        "compaction",
        "context_edit",
        "custom",
        "custom_message",
        "usage",
    }
)
VERSION = 3  # the newest session format huddle knows (Pi 0.x to 1.6.0)


def usage_of(t: Tokens) -> Usage:
    return Usage(
        input=count(t.input), output=count(t.output), cache_read=count(t.cacheRead), cache_write=count(t.cacheWrite)
    )


def spent(t: Tokens | None) -> bool:
    """Whether a usage holds any count (a failed request leaves all zeros)."""
    return t is not None and bool(count(t.input) or count(t.output) or count(t.cacheRead) or count(t.cacheWrite))


def when_ms(v: Number) -> float | None:
    return millis(v)


def parts(raw: Raw) -> list[Part] | None:
    """Content as parts (a plain string is one text part); None when it is not content."""
    if not raw:
        return []
    try:
        val = _decode_parts(raw)
    except msgspec.DecodeError:
        return None
    if isinstance(val, str):
        return [Part(type="text", text=val)] if val else []
    return val or []


def texts(ps: list[Part]) -> str:
    return "\n".join(p.text for p in ps if p.type == "text" and p.text)


def thinking(ps: list[Part]) -> str:
    return "\n".join(p.thinking for p in ps if p.type == "thinking" and p.thinking)


def has_image(ps: list[Part]) -> bool:
    return any(p.type == "image" for p in ps)


def size_of(raw: Raw) -> int:
    """A tool result's size in bytes: its text parts (the raw JSON when they cannot be read)."""
    ps = parts(raw)
    if ps is None:
        return len(raw)
    return sum(len(p.text.encode()) for p in ps if p.text)
