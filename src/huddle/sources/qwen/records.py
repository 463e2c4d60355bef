"""Qwen Code chat records (`projects/<encoded cwd>/chats/<id>.jsonl`), decoded permissively.

Every line is one record of a Claude-Code-like chain (`uuid`, `parentUuid`, `type`:
user / assistant / tool_result / system, `subtype`) whose `message` is Gemini's
Content (`{role, parts: [{text, thought}, {functionCall}, {functionResponse}]}`).
Fields are typed loosely: the parts of a message, a tool's display and a system
payload stay raw and are decoded where they are used, so one odd value costs what
it held, never the record's usage.
"""

from __future__ import annotations

import re

import msgspec
from msgspec import Raw

from huddle.sources.values import count as count
from huddle.sources.values import loose as loose
from huddle.sources.values import when as when

Number = int | float | None


class Tokens(msgspec.Struct):
    """`usageMetadata`: prompt includes the cached part, candidates include the thoughts."""

    promptTokenCount: Number = 0
    candidatesTokenCount: Number = 0
    thoughtsTokenCount: Number = 0
    cachedContentTokenCount: Number = 0
    toolUsePromptTokenCount: Number = 0
    totalTokenCount: Number = 0


class CallResult(msgspec.Struct):
    """`toolCallResult`: the CLI's own account of a tool call (status, what it showed)."""

    callId: str | None = None
    status: str | None = None
    resultDisplay: Raw = Raw()


class Fork(msgspec.Struct):
    sessionId: str | None = None


class Record(msgspec.Struct):
    type: str | None = None
    subtype: str | None = None
    uuid: str | None = None
    parentUuid: str | None = None
    sessionId: str | None = None
    timestamp: str | None = None
    cwd: str | None = None
    model: str | None = None
    message: Raw = Raw()
    usageMetadata: Tokens | None = None
    toolCallResult: CallResult | None = None
    systemPayload: Raw = Raw()
    agentId: str | None = None
    agentName: str | None = None
    isSidechain: bool | None = None
    forkedFrom: Fork | None = None  # /branch copies every record and names the original session


class FunctionCall(msgspec.Struct):
    id: str | None = None
    name: str | None = None
    args: Raw = Raw()


class FunctionResponse(msgspec.Struct):
    id: str | None = None
    name: str | None = None
    response: Raw = Raw()


class Part(msgspec.Struct):
    text: str | None = None
    thought: bool | None = None
    functionCall: FunctionCall | None = None
    functionResponse: FunctionResponse | None = None
    inlineData: Raw = Raw()
    fileData: Raw = Raw()


class Message(msgspec.Struct):
    role: str | None = None
    parts: list[Part] | None = None


class Display(msgspec.Struct):
    """A tool result's `resultDisplay` when it is an object (the agent tool's)."""

    type: str | None = None
    status: str | None = None
    executionMode: str | None = None
    result: str | None = None
    subagentName: str | None = None
    taskDescription: str | None = None


class Payload(msgspec.Struct):
    """The `systemPayload` fields read, whatever the subtype."""

    customTitle: str | None = None
    titleSource: str | None = None
    uiEvent: Raw = Raw()
    rawCommand: str | None = None
    phase: str | None = None
    displayText: str | None = None
    state: str | None = None  # turn_result: completed / cancelled / error
    error: Raw = Raw()
    truncatedCount: Number = None


class UiEvent(msgspec.Struct):
    name: str | None = msgspec.field(default=None, name="event.name")
    error: Raw = Raw()
    error_type: str | None = None
    status_code: Number | str = None
    model: str | None = None


decode_record = msgspec.json.Decoder(Record).decode
decode_message = msgspec.json.Decoder(Message).decode
decode_display = msgspec.json.Decoder(Display | str | None).decode
decode_payload = msgspec.json.Decoder(Payload).decode
decode_ui_event = msgspec.json.Decoder(UiEvent).decode

_EXIT_CODE = re.compile(r"\nExit Code: (-?\d+)")
_TAG = {name: re.compile(rf"<{name}>(.*?)</{name}>", re.S) for name in ("task-id", "tool-use-id", "status", "result")}


def response_text(val: object) -> str:
    """The text of a functionResponse's `response` ({output} or {error})."""
    if isinstance(val, dict):
        for key in ("output", "error", "content"):
            v = val.get(key)
            if isinstance(v, str):
                return v
            m = v.get("message") if isinstance(v, dict) else None
            if isinstance(m, str):
                return m
        return msgspec.json.encode(val).decode()
    return val if isinstance(val, str) else ""


def failed_response(val: object) -> bool:
    return isinstance(val, dict) and val.get("error") not in (None, "")


def shell_failed(output: str) -> bool:
    """run_shell_command says a failing command succeeded, with `Exit Code: N` in its output."""
    m = _EXIT_CODE.search(output)
    return m is not None and m.group(1) != "0"


def tag(name: str, text: str) -> str:
    m = _TAG[name].search(text)
    return m.group(1).strip() if m else ""


def error_words(raw: Raw) -> str:
    """An error as the CLI recorded it: a string, or an object with a message."""
    val = loose(raw)
    if isinstance(val, str):
        return val
    if isinstance(val, dict):
        for key in ("message", "error", "type"):
            v = val.get(key)
            if isinstance(v, str):
                return v
    return ""
