"""Claude Code transcript lines -> events.

Typed decoding of only the fields huddle needs: msgspec skips the rest (request
blobs, tool outputs, file snapshots) without building Python objects for them.
One permissive struct per level, `type: str`, never a tagged union: Claude Code
adds block and record types every release.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Protocol

import msgspec
from msgspec import Raw

from huddle.model.doing import input_summary as summarize
from huddle.model.events import Usage


class ResponseBlock(msgspec.Struct):  # what a usage-only read looks at: an Agent call names its agent
    type: str = ""
    id: str | None = None
    name: str | None = None
    input: Raw = Raw(b"null")


class Block(ResponseBlock):
    text: str | None = None
    thinking: str | None = None
    tool_use_id: str | None = None
    content: Raw = Raw(b"null")
    is_error: bool | None = None


# A token count: a negative one decodes as a bad line (counted, described), never a negative cost.
Count = Annotated[int, msgspec.Meta(ge=0)]


class CacheCreation(msgspec.Struct):
    ephemeral_1h_input_tokens: Count | None = 0


class ClaudeUsage(msgspec.Struct):  # (in Claude Code's order: each key found at the first try)
    input_tokens: Count | None = 0
    cache_creation_input_tokens: Count | None = 0
    cache_read_input_tokens: Count | None = 0
    output_tokens: Count | None = 0
    cache_creation: CacheCreation | None = None  # 5m / 1h split of the cache writes


class ResponseMessage(msgspec.Struct):
    id: str | None = None
    role: str | None = None
    model: str | None = None
    content: str | Sequence[ResponseBlock] | None = None
    usage: ClaudeUsage | None = None


class Message(ResponseMessage):
    content: str | list[Block] | None = None
    stop_reason: str | None = None


class Attachment(msgspec.Struct):
    type: str = ""


class Origin(msgspec.Struct):
    kind: str | None = None


class Response(msgspec.Struct):
    """A usage-only read's response: a quarter of Record's fields (msgspec scans them for each of
    its ~20 unknown keys); the rest unchecked (a numeric `isMeta` counts here, not in a full read)."""

    isSidechain: bool | None = None  # (in the order Claude Code writes them: each key found at the first try)
    message: ResponseMessage | None = None
    type: str = ""
    timestamp: str | None = None
    cwd: str | None = None
    sessionId: str | None = None
    requestSessionId: str | None = None


class Record(Response):
    message: Message | None = None
    uuid: str | None = None
    parentUuid: str | None = None
    subtype: str | None = None
    agentId: str | None = None
    isMeta: bool | None = None
    isCompactSummary: bool | None = None
    isAbortedMidStream: bool | None = None
    toolUseResult: Raw = Raw(b"null")
    origin: Origin | None = None
    customTitle: str | None = None
    aiTitle: str | None = None
    title: str | None = None
    lastPrompt: str | None = None
    leafUuid: str | None = None
    attachment: Attachment | None = None
    content: Raw = Raw(b"null")
    compactMetadata: Raw = Raw(b"null")
    error: Raw = Raw(b"null")
    pendingBackgroundAgentCount: int | None = None
    permissionMode: str | None = None


class AgentResult(msgspec.Struct):
    """The structured `toolUseResult` of an Agent call."""

    status: str | None = None
    agentId: str | None = None
    agentType: str | None = None
    isAsync: bool | None = None
    content: list[Block] | None = None
    handbackReport: str | None = None


class BashResult(msgspec.Struct):
    backgroundTaskId: str | None = None


decode_record = msgspec.json.Decoder(Record).decode
decode_response = msgspec.json.Decoder(Response).decode
_decode_agent_result = msgspec.json.Decoder(AgentResult).decode
decode_bash_result = msgspec.json.Decoder(BashResult).decode
_decode_blocks = msgspec.json.Decoder(str | list[Block] | None).decode
_decode_any = msgspec.json.Decoder().decode

# Metadata records huddle never needs; recognised from their first bytes, not decoded.
SKIP_PREFIXES = (
    b'{"type":"api-request',
    b'{"type":"file-history',
    b'{"type":"queue-operation',
    b'{"type":"atis-latch',
    b'{"type":"tools-used',
)
SKIP_TYPES = frozenset(
    {
        "api-request",
        "api-request-blob",
        "api-request-shape",
        "file-history-snapshot",
        "file-history-delta",
        "queue-operation",
        "atis-latch",
        "tools-used",
        "mode",
        "progress",
        "agent-name",
        "agent-color",
        "agent-setting",
    }
)
# Claude Code 2.0.x starts three sub-agents per process with this order and no Agent call,
# to warm the prompt cache: their tokens are spent, but nobody asked for them.
WARMUP = "Warmup"
# Attachments that are per-request bookkeeping (the environment, date, tool and skill
# listings re-sent every turn), not context a person would want to see. They are a
# third of a transcript's bytes: recognised from their first bytes, never decoded.
QUIET_ATTACHMENTS = frozenset(
    {
        "prompt_snapshot",
        "total_tokens_reminder",
        "deferred_tools_record",
        "deferred_tools_delta",
        "environment",
        "model",
        "session_context",
        "date",
        "remote_session_change",
        "agent_listing_delta",
        "skill_listing",
        "auto_mode",
    }
)
ATTACHMENT_KEY = b'"attachment":{"type":"'

INTERRUPT = re.compile(r"^\[Request interrupted by user[^\]]*\]")
_TAG = lambda name: re.compile(rf"<{name}>(.*?)</{name}>", re.S)  # noqa: E731
TASK_ID_TAG = _TAG("task-id")
TOOL_USE_ID_TAG = _TAG("tool-use-id")
STATUS_TAG = _TAG("status")
RESULT_TAG = _TAG("result")
SUMMARY_TAG = _TAG("summary")
COMMAND_NAME = _TAG("command-name")
_HANDBACK_MARK = "The report follows:\n"
_TRAILER = re.compile(r"\n(agentId: [0-9a-z]+ \(|<usage>)")


def usage_of(u: ClaudeUsage) -> Usage:
    cache_write = u.cache_creation_input_tokens or 0
    one_hour = (u.cache_creation.ephemeral_1h_input_tokens or 0) if u.cache_creation else 0
    if one_hour > cache_write:  # (not builtins.min: a call through a tuple of arguments)
        one_hour = cache_write
    return Usage(
        input=u.input_tokens or 0,
        output=u.output_tokens or 0,
        cache_read=u.cache_read_input_tokens or 0,
        cache_write=cache_write,
        cache_write_1h=one_hour,  # 1-hour writes cost 2x input, 5-minute 1.25x
    )


def text_of(raw: Raw) -> str:
    """The text of a tool_result `content` (a string or a list of blocks)."""
    try:
        val = _decode_blocks(raw)
    except msgspec.MsgspecError:
        return ""
    if val is None:
        return ""
    if isinstance(val, str):
        return val
    return "\n".join(b.text for b in val if b.type == "text" and b.text)


def strip_handback(text: str) -> str:
    """The report inside an Agent tool_result: drop the harness frame around it."""
    i = text.find(_HANDBACK_MARK)
    if i >= 0:
        text = text[i + len(_HANDBACK_MARK) :]
        m = _TRAILER.search(text)
        if m:
            text = text[: m.start()]
        lines = text.split("\n")
        text = "\n".join(line[2:] if line.startswith("  ") else line for line in lines)
    return text.strip()


def input_summary(name: str, raw: Raw) -> str:
    """A short, telling summary of a tool's input (huddle.model.doing.input_summary)."""
    if len(raw) > 200_000:  # a huge Write: do not build it just to summarise it
        return f"{name} ({len(raw)} bytes of input)"
    try:
        val = _decode_any(raw)
    except msgspec.MsgspecError:
        return ""
    return summarize(val)


# Context the harness puts at the start of a user's text: the IDE's open file and
# selection (VS Code), reminders, hook output. Never the human's words.
HARNESS_BLOCK = re.compile(
    r"\s*<(ide_opened_file|ide_selection|ide_diagnostics|system-reminder|user-prompt-submit-hook)>(.*?)</\1>\s*",
    re.S,
)


def harness_blocks(text: str) -> list[tuple[str, str, str]]:
    """The harness blocks leading `text`: (tag, inner text, the text after it), in order."""
    out: list[tuple[str, str, str]] = []
    while True:
        m = HARNESS_BLOCK.match(text)
        if m is None:
            return out
        text = text[m.end() :]
        out.append((m.group(1), m.group(2).strip(), text))


def first_match(rx: re.Pattern, text: str) -> str:
    m = rx.search(text)
    return m.group(1).strip() if m else ""


def agent_input(raw: Raw) -> dict:
    try:
        val = _decode_any(raw)
    except msgspec.MsgspecError:
        return {}
    return {k: v for k, v in val.items() if isinstance(v, str)} if isinstance(val, dict) else {}


def agent_result(raw: Raw) -> AgentResult | None:
    if len(raw) < 2 or memoryview(raw)[:1] != b"{":
        return None
    try:
        return _decode_agent_result(raw)
    except msgspec.MsgspecError:
        return None


def report_of(res: AgentResult | None, content: Raw) -> str:
    if res is not None:
        if res.handbackReport:
            return res.handbackReport
        if res.content:
            texts = [b.text for b in res.content if b.type == "text" and b.text]
            texts = [t for t in texts if not t.lstrip().startswith("<tools-used-before-summary>")]
            if texts:
                return texts[-1].strip()
    return strip_handback(text_of(content))


def order_text(r: Record) -> str:
    """The text of a sidechain's first record (its order)."""
    m = r.message
    if m is None:
        return ""
    if isinstance(m.content, str):
        return m.content.strip()
    if m.content:
        return "\n".join(b.text for b in m.content if b.type == "text" and b.text).strip()
    return ""


def compact_detail(raw: Raw) -> str:
    try:
        val = _decode_any(raw)
    except msgspec.MsgspecError:
        return ""
    if not isinstance(val, dict):
        return ""
    parts = [str(val.get("trigger") or "")]
    if val.get("preTokens"):
        parts.append(f"{val['preTokens']} -> {val.get('postTokens', '?')} tokens")
    return ", ".join(p for p in parts if p)


def error_text(raw: Raw) -> str:
    try:
        val = _decode_any(raw)
    except msgspec.MsgspecError:
        return "API error"
    if isinstance(val, dict):
        return str(val.get("formatted") or val.get("message") or "API error")[:300]
    return "API error"


def str_of(raw: Raw) -> str:
    try:
        val = _decode_any(raw)
    except msgspec.MsgspecError:
        return ""
    return val if isinstance(val, str) else ""


def summary_text(line: bytes) -> str:
    try:
        val = _decode_any(line)
    except msgspec.MsgspecError:
        return ""
    s = val.get("summary") if isinstance(val, dict) else None
    return s if isinstance(s, str) else ""


# What `huddle usage` needs: model responses (usage) and what names a session and its
# agents (prompts, titles, the Agent calls and their results, inline sub-agents' records).
# User records say early on (within their first bytes) whether they hold a prompt or
# tool results, the bulk of a transcript's bytes: those are passed over without scanning
# them, but for the result of an Agent call (it names the agent started). Any other
# record is kept if it is a response.
_TITLE_PREFIXES = (b'{"type":"custom-title"', b'{"type":"ai-title"', b'{"type":"summary"', b'{"type":"last-prompt"')
_USER_CONTENT = b'user","content":'  # after a message's '"role":"'
_AFTER_USER_CONTENT = len(_USER_CONTENT)
_PROMPT_CONTENT = (b'"', b'[{"type":"text"', b'[{"type":"image"')
_CALL_ID = b'"tool_use_id":"'
_AFTER_CALL_ID = len(_CALL_ID)


class HasCalls(Protocol):
    agent_calls: dict[str, str]  # Agent call id -> the agent calling (state.SessionState)


class UsageFilter:
    """What the usage-only filter of one file has learnt from the lines read before."""

    __slots__ = ("prompted", "shared", "sidechains", "whole")

    def __init__(self, shared: HasCalls | None = None) -> None:
        self.shared = shared  # the session's Agent calls: their results are kept
        self.whole = shared is not None  # read whole for now (its first records: a full read's start)
        self.sidechains = False  # inline sub-agents seen (1.0.x): their records are all kept
        self.prompted = False  # a prompt read: the session's title no longer falls back on last-prompt

    def __getstate__(self) -> tuple:
        return (self.shared, self.sidechains, self.whole, self.prompted)

    def __setstate__(self, state: tuple) -> None:
        self.shared, self.sidechains, self.whole, self.prompted = state

    def skip(self, buf: bytes, i: int, end: int) -> bool:
        """Whether a usage-only read passes over the line buf[i:end] (read in place, as
        LineReader.lines's `skip`): metadata records, tool results, anything but a
        response, a prompt or a title. (A bound method: Python 3.11 calls it inline,
        where a functools.partial costs a C call and a new frame per line.)"""
        if end - i > 2 and buf[i + 2] == 116:  # `{"t`: a record that opens with its type (a byte, not a search)
            if buf.startswith(SKIP_PREFIXES, i):
                return True
            if self.whole:
                return False
            if buf.startswith(b'{"type":"last-prompt"', i):
                return self.prompted
        elif self.whole:
            return False
        head = i + 768 if i + 768 < end else end
        if self.sidechains and buf.find(b'"isSidechain":true', i, head) >= 0:
            return False  # each links the next to its sub-agent
        r = buf.find(b'"role":"', i, head)  # a message's, early in a response or a user record
        if r >= 0:
            r += 8
            c = buf[r] if r < end else 0  # the role's first letter
            if c == 97:
                return False  # a response (`assistant`: the API's one role with an a)
            if c == 117 and buf.startswith(_USER_CONTENT, r, end):
                j = r + _AFTER_USER_CONTENT
                if buf.startswith(_PROMPT_CONTENT, j, end):
                    return False  # a prompt
                calls = self.shared.agent_calls if self.shared is not None else None
                if calls:  # tool results: kept only for an Agent call (its result names the agent)
                    k = buf.find(_CALL_ID, j, head)
                    if k >= 0:
                        k += _AFTER_CALL_ID
                        q = buf.find(b'"', k, head)
                        return q >= 0 and buf[k:q].decode("utf-8", "replace") not in calls  # (an id cut: kept)
                return True
        elif buf.find(ATTACHMENT_KEY, i, i + 300 if i + 300 < end else end) >= 0:
            return True  # context sent with a request (a third of a transcript's bytes): never counted
        return not (
            buf.startswith(_TITLE_PREFIXES, i)
            or buf.find(b'"role":"assistant"', i, end) >= 0  # a response with a long head (or typeless)
            or buf.find(b'"type":"assistant"', i, end) >= 0
        )


ALONE = UsageFilter()  # a line judged alone


def usage_skips(buf: bytes, i: int, end: int) -> bool:
    """`UsageFilter.skip` of a line alone (no Agent call, no sidechain known before it)."""
    return ALONE.skip(buf, i, end)


def compact(line: bytes) -> bool:
    """Whether a line is in Claude Code's own hand, compact JSON (`{"key":value`): the
    usage-only filter reads a file in another (`{"key": value`) whole."""
    k = line.find(b'"', 2, 64)
    return line.startswith(b'{"') and k > 0 and line.startswith(b'":', k) and not line.startswith(b'": ', k)


def meta_skips(buf: bytes, i: int, end: int) -> bool:
    """Whether a full read passes over the line buf[i:end]: metadata records only."""
    return buf.startswith(SKIP_PREFIXES, i)


def wanted_for_usage(line: bytes) -> bool:
    return not usage_skips(line, 0, len(line))
