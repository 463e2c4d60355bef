"""Claude Code transcript lines -> events.

Typed decoding of only the fields huddle needs: msgspec skips the rest (request
blobs, tool outputs, file snapshots) without building Python objects for them.
One permissive struct per level, `type: str`, never a tagged union: Claude Code
adds block and record types every release.

Each struct is `gc=False`: a decoded record is a tree of strings and numbers, never a
cycle, so the cycle collector need not track it (tracked, a full parse's million decoded
structs set off collections that cost ~5% of its decoding).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any

import msgspec
from msgspec import Raw

from huddle.model.doing import input_summary as summarize
from huddle.model.events import Usage


class ResponseBlock(msgspec.Struct, gc=False):  # what a usage-only read looks at: an Agent call names its agent
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


class CacheCreation(msgspec.Struct, gc=False):
    ephemeral_1h_input_tokens: Count | None = 0


class ClaudeUsage(msgspec.Struct, gc=False):  # (in Claude Code's order: each key found at the first try)
    input_tokens: Count | None = 0
    cache_creation_input_tokens: Count | None = 0
    cache_read_input_tokens: Count | None = 0
    output_tokens: Count | None = 0
    cache_creation: CacheCreation | None = None  # 5m / 1h split of the cache writes


class ResponseMessage(msgspec.Struct, gc=False):
    id: str | None = None
    role: str | None = None
    model: str | None = None
    content: str | Sequence[ResponseBlock] | None = None
    usage: ClaudeUsage | None = None


class Message(ResponseMessage):
    content: str | list[Block] | None = None
    stop_reason: str | None = None


class Attachment(msgspec.Struct, gc=False):
    type: str = ""


class Origin(msgspec.Struct, gc=False):
    kind: str | None = None


class Response(msgspec.Struct, gc=False):
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


class AgentResult(msgspec.Struct, gc=False):
    """The structured `toolUseResult` of an Agent call."""

    status: str | None = None
    agentId: str | None = None
    agentType: str | None = None
    isAsync: bool | None = None
    content: list[Block] | None = None
    handbackReport: str | None = None


class BashResult(msgspec.Struct, gc=False):
    backgroundTaskId: str | None = None


decode_record = msgspec.json.Decoder(Record).decode


class MirroredRecord(msgspec.Struct, gc=False):  # a sub-agent's record, as its caller's file mirrors it
    type: str = ""
    timestamp: str | None = None
    message: ResponseMessage | None = None


class AgentProgress(msgspec.Struct, gc=False):
    type: str = ""
    agentId: str | None = None
    message: MirroredRecord | None = None


class Progress(msgspec.Struct, gc=False):
    """A `progress` record of type agent_progress (Claude Code 2.1.x): a record of a
    running sub-agent, copied into its caller's file as the sub-agent writes it. The sub-
    agent's own file may be gone (a history that kept the main files only): its responses
    are then known from here alone."""

    data: AgentProgress | None = None
    parentToolUseID: str | None = None
    sessionId: str | None = None
    requestSessionId: str | None = None


decode_progress = msgspec.json.Decoder(Progress).decode
AGENT_PROGRESS = b'"agent_progress"'
decode_response = msgspec.json.Decoder(Response).decode
_decode_agent_result = msgspec.json.Decoder(AgentResult).decode
_decode_bash_result = msgspec.json.Decoder(BashResult).decode
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


def _TAG(name: str) -> re.Pattern[str]:
    return re.compile(rf"<{name}>(.*?)</{name}>", re.S)


TASK_ID_TAG = _TAG("task-id")
TOOL_USE_ID_TAG = _TAG("tool-use-id")
STATUS_TAG = _TAG("status")
RESULT_TAG = _TAG("result")
SUMMARY_TAG = _TAG("summary")
COMMAND_NAME = _TAG("command-name")
COMMAND_ARGS = _TAG("command-args")


def typed_command(text: str) -> str | None:
    """A slash command as the person typed it (`/rename My session`), from the tags Claude
    Code wraps it in; None when `text` holds none."""
    m = COMMAND_NAME.search(text)
    if m is None:
        return None
    args = COMMAND_ARGS.search(text)
    return " ".join(p for p in (m.group(1).strip(), args.group(1).strip() if args else "") if p)


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


def first_match(rx: re.Pattern[str], text: str) -> str:
    m = rx.search(text)
    return m.group(1).strip() if m else ""


def agent_input(raw: Raw) -> dict[str, Any]:
    try:
        val = _decode_any(raw)
    except msgspec.MsgspecError:
        return {}
    return {k: v for k, v in val.items() if isinstance(v, str)} if isinstance(val, dict) else {}


def background_task(raw: Raw) -> str:
    """The task a tool's small result says it sent to the background (a shell), or "".
    Only an object names one: a string or a null result is never decoded to know it
    (the decoder's error for it cost more than the rest of the result's reading)."""
    if len(raw) >= 4096 or memoryview(raw)[0] != ord("{"):
        return ""
    try:
        return _decode_bash_result(raw).backgroundTaskId or ""
    except msgspec.MsgspecError:
        return ""


def agent_result(raw: Raw) -> AgentResult | None:
    if len(raw) < 2 or memoryview(raw)[0] != ord("{"):
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


def only_summaries(path: str, head: int = 64 * 1024) -> bool:
    """Whether a file's first lines (`head` bytes) are all summary records: a file
    Claude Code wrote to title other sessions, no conversation of its own."""
    from huddle.io.safefile import open_regular

    try:
        with open_regular(path) as f:
            data = f.read(head)
    except OSError:
        return False
    cut = len(data) == head and not data.endswith(b"\n")
    lines = data.splitlines()[:-1] if cut else data.splitlines()  # (a line cut by the head: not judged)
    whole = [line for line in lines if line.strip()]
    return bool(whole) and all(line.lstrip().startswith(b'{"type":"summary"') for line in whole)
