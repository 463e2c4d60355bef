"""Codex CLI rollout lines: typed decoding of only the fields huddle needs.

A rollout line is an envelope `{"timestamp","ordinal"?,"type","payload"}`. The
envelope is decoded first with the payload left raw; the payload is then decoded
with the one struct for its `type`. Big strings (tool outputs, patch bodies, base
instructions, world_state snapshots) are either never declared, so msgspec skips
them, or kept `Raw` and looked at through their first bytes only.

One permissive struct per level with `type: str`, never a tagged union: every Codex
release adds record, item and field types.
"""

from __future__ import annotations

import os
import re
from datetime import datetime
from typing import Any

import msgspec
from msgspec import Raw

from huddle.io.safefile import open_regular
from huddle.model import times

# -- session_meta ----------------------------------------------------------------------


class ThreadSpawn(msgspec.Struct, gc=False):
    parent_thread_id: str | None = None
    depth: int | None = None
    agent_path: str | None = None
    agent_nickname: str | None = None
    agent_role: str | None = None


class SubagentSource(msgspec.Struct, gc=False):
    thread_spawn: ThreadSpawn | None = None
    other: str | None = None


class MetaSource(msgspec.Struct, gc=False):
    subagent: SubagentSource | str | None = None


class Meta(msgspec.Struct, gc=False):
    """The `session_meta` payload (first line of every rollout; ~22 kB, mostly skipped)."""

    id: str = ""
    session_id: str | None = None
    parent_thread_id: str | None = None
    forked_from_id: str | None = None
    forked_from_ordinal_exclusive: int | None = None
    subagent_history_start_ordinal: int | None = None
    timestamp: str | None = None
    cwd: str | None = None
    originator: str | None = None
    cli_version: str | None = None
    source: Raw = Raw()  # "exec" | "cli" | "vscode" | {"subagent": ...}: varies by version
    thread_source: str | None = None
    agent_nickname: str | None = None
    agent_path: str | None = None
    agent_role: str | None = None
    multi_agent_version: str | None = None


class MetaLine(msgspec.Struct, gc=False):
    type: str = ""
    timestamp: str | None = None
    ordinal: int | None = None
    payload: Meta | None = None


class LegacyHead(msgspec.Struct, gc=False):
    """The first line of a rollout from before session_meta (codex-rs, May-Sep 2025):
    `{"id","timestamp","instructions"?,"git"?}`, the items after it written bare
    (codex-rs/core/src/rollout.rs of then: `SessionMeta` then each `ResponseItem` and
    `{"record_type":"state"}` lines; no event, no time per line, no token count)."""

    id: str = ""
    timestamp: str | None = None


_decode_meta_line = msgspec.json.Decoder(MetaLine).decode
_decode_legacy_head = msgspec.json.Decoder(LegacyHead).decode
_decode_source = msgspec.json.Decoder(str | MetaSource | None).decode


class ThreadInfo:
    """What a thread is, from its own session_meta: enough to place it in a tree."""

    __slots__ = (
        "agent_path",
        "cli_version",
        "cwd",
        "fork_ordinal",
        "forked_from",
        "guardian",
        "history_start",
        "id",
        "legacy",
        "nickname",
        "note",
        "originator",
        "parent",
        "role",
        "root_hint",
        "source",
        "started",
    )

    def __init__(self, m: Meta):
        self.id = m.id
        self.root_hint = m.session_id or ""
        self.forked_from = m.forked_from_id or ""
        self.fork_ordinal = m.forked_from_ordinal_exclusive
        self.history_start = m.subagent_history_start_ordinal
        self.started = m.timestamp or ""
        self.cwd = m.cwd or ""
        self.cli_version = m.cli_version or ""
        self.originator = m.originator or ""
        self.nickname = m.agent_nickname or ""
        self.agent_path = m.agent_path or ""
        self.role = m.agent_role or ""
        self.guardian = m.thread_source == "guardian_review"
        self.note = ""  # what was odd about its first line
        self.legacy = False  # written before session_meta: bare items, no times, no counts
        self.source = ""
        parent = m.parent_thread_id or ""
        try:
            src = _decode_source(m.source) if len(m.source) else None
        except msgspec.MsgspecError:
            src = None
        if isinstance(src, str):
            self.source = src
        elif isinstance(src, MetaSource):
            sub = src.subagent
            self.source = "subagent"
            if isinstance(sub, SubagentSource):
                if sub.other == "guardian":
                    self.guardian = True
                spawn = sub.thread_spawn
                if spawn is not None:
                    parent = parent or (spawn.parent_thread_id or "")
                    self.nickname = self.nickname or (spawn.agent_nickname or "")
                    self.agent_path = self.agent_path or (spawn.agent_path or "")
                    self.role = self.role or (spawn.agent_role or "")
        self.parent = parent if parent != self.id else ""


def read_meta(path: str, limit: int = 1 << 20) -> tuple[ThreadInfo | None, str]:
    """The session_meta of a rollout, from its first line only. Returns (info, "") or
    (None, why). "" for why means: not complete yet, look again later."""
    try:
        with open_regular(path) as f:
            head = f.read(64 * 1024)
            while b"\n" not in head and len(head) < limit:
                more = f.read(256 * 1024)
                if not more:
                    break
                head += more
    except OSError as exc:
        return None, f"cannot read: {exc.strerror or exc}"
    nl = head.find(b"\n")
    if nl < 0:
        return None, "" if len(head) < limit else "first line longer than 1 MB"
    try:
        line: MetaLine | None = _decode_meta_line(head[:nl])
        why = ""
    except msgspec.MsgspecError as exc:
        line, why = None, f"first line is not a session_meta ({exc})"
    except RecursionError:
        line, why = None, "first line is not a session_meta (nested too deep)"
    if line is not None and line.type == "session_meta" and line.payload is not None and line.payload.id:
        return ThreadInfo(line.payload), ""
    if line is not None and not line.type and line.payload is None:
        try:
            old = _decode_legacy_head(head[:nl])
        except (msgspec.MsgspecError, RecursionError):
            old = None
        if old is not None and old.id:
            info = ThreadInfo(Meta(id=old.id, timestamp=old.timestamp))
            info.legacy = True
            return info, ""
    # No session_meta (a trimmed file, a tool's fixture, a bad first line): still a thread,
    # named by its file; the lines say what they can.
    meta = line.payload if line is not None and line.type == "session_meta" and line.payload is not None else Meta()
    meta.id = id_from_name(path)
    info = ThreadInfo(meta)
    if line is None:
        info.note = f"{why}: named by its file"
    elif line.type == "session_meta":
        info.note = "its session_meta has no id: named by its file"
    else:
        info.note = f"first line is a {line.type or 'record without type'}, not a session_meta: named by its file"
    return info, ""


_UUID_TAIL = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def id_from_name(path: str) -> str:
    """A thread id from a rollout's name when its records give none: the uuid that ends
    a real rollout's name, else the name made safe for a URL (`huddle show` takes it)."""
    name = os.path.basename(path)
    if name.endswith(".jsonl"):
        name = name[: -len(".jsonl")]
    m = _UUID_TAIL.search(name)
    if m:
        return m.group(0)
    safe = re.sub(r"[^A-Za-z0-9._:-]", "-", name).lstrip("-._:")
    return safe[:200] or "rollout"


# -- every other line --------------------------------------------------------------------


class Part(msgspec.Struct, gc=False):
    type: str = ""
    text: str | None = None
    encrypted_content: str | None = None


class Tokens(msgspec.Struct, gc=False):
    input_tokens: int | None = 0
    cached_input_tokens: int | None = 0
    cache_write_input_tokens: int | None = 0
    output_tokens: int | None = 0
    reasoning_output_tokens: int | None = 0
    total_tokens: int | None = 0


class TokenInfo(msgspec.Struct, gc=False):
    total_token_usage: Tokens | None = None
    last_token_usage: Tokens | None = None


class Change(msgspec.Struct, gc=False):
    type: str = ""
    move_path: str | None = None


class Receiver(msgspec.Struct, gc=False):
    thread_id: str | None = None
    agent_nickname: str | None = None


class Item(msgspec.Struct, gc=False):
    """`item_completed.item` (0.160+): one finished UI item."""

    type: str = ""
    id: str | None = None
    content: list[Part] | None = None
    status: str | None = None
    exit_code: int | None = None
    command: list[str] | str | None = None
    changes: dict[str, Change] | None = None
    server: str | None = None
    tool: str | None = None
    result: Raw = Raw()
    error: Raw = Raw()
    receiver_thread_ids: list[str] | None = None
    receiver_agents: list[Receiver] | None = None
    agents_states: Raw = Raw()
    kind: str | None = None
    agent_thread_id: str | None = None
    agent_path: str | None = None


class Attribution(msgspec.Struct, gc=False):
    parent_turn_id: str | None = None
    turn_trigger: str | None = None


class Payload(msgspec.Struct, gc=False):
    """The payload of any line but the first: response_item, event_msg, turn_context,
    token_usage_record, compacted. One struct for all of them, so a line costs one
    decode; the fields that share a name across kinds share a type (checked on every
    sample version), and what no kind needs is never declared, so never built."""

    type: str = ""
    # response_item
    role: str | None = None
    id: str | None = None
    content: list[Part] | str | None = None
    summary: list[Part] | str | None = None  # reasoning parts; a string in turn_context
    name: str | None = None
    namespace: str | None = None
    arguments: Raw = Raw()  # a JSON string for function_call, an object for tool_search_call
    input: Raw = Raw()  # custom_tool_call: possibly a whole patch
    call_id: str | None = None
    output: Raw = Raw()  # a string or a list of parts; possibly megabytes
    status: str | None = None
    action: Raw = Raw()
    author: str | None = None
    recipient: str | None = None
    # event_msg
    message: str | None = None  # also compacted
    images: Raw = Raw()
    turn_id: str | None = None
    turn_attribution: Attribution | None = None
    last_agent_message: str | None = None
    reason: str | None = None
    info: TokenInfo | None = None
    item: Item | None = None
    exit_code: int | None = None
    success: bool | None = None
    changes: dict[str, Change] | None = None
    result: Raw = Raw()
    event_id: str | None = None
    agent_thread_id: str | None = None
    agent_path: str | None = None
    kind: str | None = None
    thread_name: str | None = None
    # token_usage_record
    response_id: str | None = None
    usage: Tokens | None = None
    # turn_context
    model: str | None = None


class Line(msgspec.Struct, gc=False):
    type: str = ""
    timestamp: datetime | None = None  # parsed in C; a line with an odd one takes LooseLine
    ordinal: int | None = None
    payload: Payload | None = None


class LooseLine(msgspec.Struct, gc=False):
    type: str = ""
    timestamp: str | None = None
    ordinal: int | None = None
    payload: Payload | None = None


class Envelope(msgspec.Struct, gc=False):
    type: str = ""


decode_line = msgspec.json.Decoder(Line).decode
decode_payload = msgspec.json.Decoder(Payload).decode  # a bare item (before session_meta)
decode_loose_line = msgspec.json.Decoder(LooseLine).decode
decode_envelope = msgspec.json.Decoder(Envelope).decode
decode_any = msgspec.json.Decoder().decode
_decode_str = msgspec.json.Decoder(str).decode

SKIP_EVENTS = frozenset({"thread_settings_applied", "agent_reasoning", "agent_message", "web_search_end"})
# Records no view needs: context snapshots (kilobytes each) and inter-agent delivery flags.
SKIP_RECORDS = frozenset({"world_state", "inter_agent_communication_metadata"})


KNOWN_TYPES = frozenset(
    {"session_meta", "response_item", "event_msg", "token_usage_record", "turn_context", "compacted"}
)


def odd_kind(line: bytes) -> str | None:
    """Of a line whose fields have unexpected types: its type when it is a kind huddle
    reads ("" when it says none), None when it is a kind huddle does not know."""
    try:
        t = decode_envelope(line).type
    except msgspec.MsgspecError:
        t = ""
    return t if t in KNOWN_TYPES or not t else None


def unix(ts: Any) -> float | None:
    """Unix seconds of a line's timestamp (a datetime, or the text of an odd one);
    None when it is no time between 1970 and 2200 (model/times)."""
    if isinstance(ts, datetime):
        return times.of_datetime(ts)
    return times.parse_time(ts) if isinstance(ts, str) else None


# -- small readers of raw values -------------------------------------------------------------


def parts_text(content: list[Part] | str | None, kinds: tuple[str, ...] = ("input_text", "output_text", "text")) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join([p.text for p in content if p.text and p.type in kinds])  # (a list: joined faster)


def raw_str(raw: Raw) -> str:
    """A raw JSON string value as text ("" if it is not a string)."""
    if not len(raw) or memoryview(raw)[0] != 34:  # (34: '"')
        return ""
    try:
        return _decode_str(raw)
    except msgspec.MsgspecError:
        return ""


def raw_json(raw: Raw) -> Any:
    if not len(raw):
        return None
    try:
        return decode_any(raw)
    except msgspec.MsgspecError:
        return None


_JSON_SPACE = " \t\n\r"
# What a JSON string's first byte is when its text may start with "{" after JSON spaces:
# the brace, a space, or an escape (\t, \u007b...); raw tabs and newlines are no JSON.
_MAY_OPEN = (123, 32, 92)  # "{", " ", "\\"


def arguments(raw: Raw) -> dict[str, Any]:
    """A function call's arguments: a JSON string holding a JSON object (or an object)."""
    head = memoryview(raw)[:2]
    if len(head) == 2 and head[0] == 34 and head[1] not in _MAY_OPEN:
        return {}  # a string whose text starts with neither a space nor "{": no object
    val = raw_json(raw)
    if isinstance(val, str):
        if not val.lstrip(_JSON_SPACE).startswith("{"):
            return {}  # no object (a redacted or odd string): said without a decoder's error
        try:
            val = decode_any(val)
        except msgspec.MsgspecError:
            return {}
    return val if isinstance(val, dict) else {}


def output_text(raw: Raw, limit: int = 0) -> str:
    """The text of a tool output (a string, or a list of text parts). With `limit`,
    only its start is built: outputs can be megabytes."""
    if not len(raw):
        return ""
    if limit and len(raw) > limit + 64 and memoryview(raw)[0] == ord('"'):
        head = bytes(memoryview(raw)[:limit])
        for cut in range(8):  # step back out of a cut escape or UTF-8 sequence
            try:
                return _decode_str(head[: len(head) - cut] + b'"')
            except msgspec.MsgspecError:
                continue
        return ""
    val = raw_json(raw)
    if isinstance(val, str):
        return val
    if isinstance(val, list):
        return "\n".join(p["text"] for p in val if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""
