"""Gemini CLI chat records (`tmp/<project>/chats/session-*.jsonl`), decoded permissively.

One line is a header (`sessionId`, `startTime`, `kind`), a `{"$set": {...}}` update or a
message (`user` / `gemini` / `info` / `error` / `warning`). Fields are typed loosely:
a number where a string was expected costs that line, a null or a float where a count
was expected costs nothing (it counts as 0). Message content is a string or a list of
parts (`text`, `functionCall`, `functionResponse`, ...), decoded per message.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
from msgspec import Raw

from huddle.sources.values import count as count
from huddle.sources.values import loose as loose
from huddle.sources.values import when as when

Number = int | float | None


class Tokens(msgspec.Struct):
    input: Number = 0  # promptTokenCount: includes the cached part
    output: Number = 0
    cached: Number = 0
    thoughts: Number = 0
    tool: Number = 0  # toolUsePromptTokenCount: more input


class ToolCall(msgspec.Struct):
    id: str | None = None
    name: str | None = None
    args: Raw = Raw()
    result: Raw = Raw()
    status: str | None = None
    timestamp: str | None = None
    agentId: str | None = None  # invoke_agent: the sub-agent's session id


class Record(msgspec.Struct):
    # a message
    type: str | None = None
    id: str | None = None
    timestamp: str | None = None
    content: Raw = Raw()
    thoughts: Raw = Raw()
    tokens: Tokens | None = None
    model: str | None = None
    toolCalls: list[ToolCall] | None = None
    # a header
    sessionId: str | None = None
    startTime: str | None = None
    kind: str | None = None
    # an update
    set: Raw = msgspec.field(default=Raw(), name="$set")


class FunctionCall(msgspec.Struct):
    id: str | None = None
    name: str | None = None
    args: Raw = Raw()


class FunctionResponse(msgspec.Struct):
    id: str | None = None
    name: str | None = None
    response: Raw = Raw()


class Part(msgspec.Struct):
    """One part of a message's content; big values (tool outputs, arguments) stay raw."""

    text: str | None = None
    thought: bool | None = None
    functionCall: FunctionCall | None = None
    functionResponse: FunctionResponse | None = None
    inlineData: Raw = Raw()
    fileData: Raw = Raw()


class Thought(msgspec.Struct):
    subject: str | None = None
    description: str | None = None


class Update(msgspec.Struct):
    messages: list[Raw] | None = None
    summary: str | None = None


class Legacy(msgspec.Struct):
    """An older CLI's whole-session document (`chats/session-*.json`, rewritten in place)."""

    sessionId: str | None = None
    startTime: str | None = None
    lastUpdated: Any = None  # (any type: only compared when it is a time's text)
    messages: list[Raw] | None = None
    summary: str | None = None
    kind: str | None = None


decode_record = msgspec.json.Decoder(Record).decode
_decode_content = msgspec.json.Decoder(str | list[Part] | None).decode
_decode_thoughts = msgspec.json.Decoder(list[Thought] | None).decode
decode_update = msgspec.json.Decoder(Update).decode
decode_legacy = msgspec.json.Decoder(Legacy).decode
_decode_any = msgspec.json.Decoder().decode

# Most lines of a chat file are `{"$set":{"lastUpdated":...}}`: skipped without decoding.
LAST_UPDATED = b'{"$set":{"lastUpdated":'
_EXIT_CODE = re.compile(r"\nExit Code: (-?\d+)")
_EXIT_CODE_JSON = re.compile(rb"\\nExit Code: (-?\d+)")
_RESULT = re.compile(r"\nResult:\n(.*)\Z", re.S)
_TERMINATION = re.compile(r"Termination Reason: (\w+)")


def parts(raw: Raw) -> list[Part] | None:
    """A message's content as parts (a plain string is one text part); None when it is not
    content at all (that message's content is lost, said in one line)."""
    if not raw:
        return []
    try:
        val = _decode_content(raw)
    except msgspec.DecodeError:
        return None
    if isinstance(val, str):
        return [Part(text=val)] if val else []
    return val or []


def texts(ps: list[Part], thought: bool = False) -> str:
    return "\n".join(p.text for p in ps if p.text and bool(p.thought) == thought)


def thought_text(raw: Raw) -> str:
    """`thoughts: [{subject, description}]` as one text."""
    if not raw:
        return ""
    try:
        val = _decode_thoughts(raw)
    except msgspec.DecodeError:
        return ""
    out = []
    for t in val or ():
        subj, desc = t.subject or "", t.description or ""
        out.append(f"{subj}: {desc}" if subj and desc else subj or desc)
    return "\n".join(x for x in out if x)


def response_text(val: Any) -> str:
    """The text of a functionResponse's `response` ({output} or {error})."""
    if isinstance(val, dict):
        for key in ("output", "error", "content"):
            v = val.get(key)
            if isinstance(v, str):
                return v
        return msgspec.json.encode(val).decode()
    return val if isinstance(val, str) else ""


def shell_failed(output: str | Raw) -> bool:
    """run_shell_command reports a failing command as a success with `Exit Code: N` (in its
    text, or in the raw JSON that holds it, where the newline is written `\\n`)."""
    if isinstance(output, str):
        m = _EXIT_CODE.search(output)
        return m is not None and m.group(1) != "0"
    b = _EXIT_CODE_JSON.search(memoryview(output).tobytes())
    return b is not None and b.group(1) != b"0"


def subagent_report(output: str) -> tuple[str, bool]:
    """invoke_agent's result "Subagent 'x' finished.\\nTermination Reason: GOAL\\nResult:\\n{...}":
    the sub-agent's answer, and whether it reached its goal."""
    m = _TERMINATION.search(output)
    ok = m is None or m.group(1) == "GOAL"
    r = _RESULT.search(output)
    if r is None:
        return output.strip(), ok
    body = r.group(1).strip()
    val = loose(body.encode())
    if isinstance(val, dict) and isinstance(val.get("response"), str):
        return val["response"], ok
    return body, ok
