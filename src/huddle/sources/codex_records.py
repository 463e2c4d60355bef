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

import re

import msgspec
from msgspec import Raw

from ..events import one_line


class Envelope(msgspec.Struct):
    type: str = ""
    timestamp: str | None = None
    ordinal: int | None = None
    payload: Raw = Raw()


# -- session_meta ----------------------------------------------------------------------


class ThreadSpawn(msgspec.Struct):
    parent_thread_id: str | None = None
    depth: int | None = None
    agent_path: str | None = None
    agent_nickname: str | None = None
    agent_role: str | None = None


class SubagentSource(msgspec.Struct):
    thread_spawn: ThreadSpawn | None = None
    other: str | None = None


class MetaSource(msgspec.Struct):
    subagent: SubagentSource | str | None = None


class Meta(msgspec.Struct):
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


class MetaLine(msgspec.Struct):
    type: str = ""
    timestamp: str | None = None
    ordinal: int | None = None
    payload: Meta | None = None


_decode_meta_line = msgspec.json.Decoder(MetaLine).decode
_decode_meta = msgspec.json.Decoder(Meta).decode
_decode_source = msgspec.json.Decoder(str | MetaSource | None).decode


class ThreadInfo:
    """What a thread is, from its own session_meta: enough to place it in a tree."""

    __slots__ = ("id", "parent", "root_hint", "forked_from", "fork_ordinal", "history_start", "started",
                 "cwd", "cli_version", "originator", "source", "guardian", "nickname", "agent_path", "role")

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
        with open(path, "rb") as f:
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
        line = _decode_meta_line(head[:nl])
    except msgspec.MsgspecError as exc:
        return None, f"first line is not a session_meta ({exc})"
    if line.type != "session_meta" or line.payload is None or not line.payload.id:
        return None, f"first line is a {line.type or 'record without type'}, not a session_meta"
    return ThreadInfo(line.payload), ""


# -- response_item -----------------------------------------------------------------------


class Part(msgspec.Struct):
    type: str = ""
    text: str | None = None
    encrypted_content: str | None = None


class ResponseItem(msgspec.Struct):
    type: str = ""
    role: str | None = None
    id: str | None = None
    content: list[Part] | str | None = None
    summary: list[Part] | None = None
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


# -- event_msg -----------------------------------------------------------------------------


class Tokens(msgspec.Struct):
    input_tokens: int | None = 0
    cached_input_tokens: int | None = 0
    cache_write_input_tokens: int | None = 0
    output_tokens: int | None = 0
    reasoning_output_tokens: int | None = 0
    total_tokens: int | None = 0


class TokenInfo(msgspec.Struct):
    total_token_usage: Tokens | None = None
    last_token_usage: Tokens | None = None


class Change(msgspec.Struct):
    type: str = ""
    move_path: str | None = None


class Receiver(msgspec.Struct):
    thread_id: str | None = None
    agent_nickname: str | None = None


class Item(msgspec.Struct):
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
    prompt: str | None = None
    kind: str | None = None
    agent_thread_id: str | None = None
    agent_path: str | None = None


class Attribution(msgspec.Struct):
    parent_turn_id: str | None = None
    turn_trigger: str | None = None


class EventMsg(msgspec.Struct):
    type: str = ""
    message: str | None = None
    images: Raw = Raw()
    turn_id: str | None = None
    turn_attribution: Attribution | None = None
    last_agent_message: str | None = None
    reason: str | None = None
    info: TokenInfo | None = None
    item: Item | None = None
    call_id: str | None = None
    exit_code: int | None = None
    success: bool | None = None
    changes: dict[str, Change] | None = None
    result: Raw = Raw()
    event_id: str | None = None
    agent_thread_id: str | None = None
    agent_path: str | None = None
    kind: str | None = None
    thread_name: str | None = None


class TokenRecord(msgspec.Struct):
    response_id: str | None = None
    turn_id: str | None = None
    usage: Tokens | None = None


class TurnContext(msgspec.Struct):
    model: str | None = None
    cwd: str | None = None
    approval_policy: Raw = Raw()


class Compacted(msgspec.Struct):
    message: str | None = None


decode_envelope = msgspec.json.Decoder(Envelope).decode
decode_item = msgspec.json.Decoder(ResponseItem).decode
decode_event = msgspec.json.Decoder(EventMsg).decode
decode_tokens = msgspec.json.Decoder(TokenRecord).decode
decode_context = msgspec.json.Decoder(TurnContext).decode
decode_compacted = msgspec.json.Decoder(Compacted).decode
decode_meta = _decode_meta
decode_any = msgspec.json.Decoder().decode
_decode_str = msgspec.json.Decoder(str).decode

# Records huddle never needs, recognised in the first bytes of the line: big context
# snapshots, per-resume settings, inter-agent delivery flags.
_SKIP = re.compile(rb'"type":"(?:world_state|inter_agent_communication_metadata|thread_settings_applied'
                   rb'|agent_reasoning|web_search_end|additional_tools)"')
SKIP_PREFIX = 160


def head(raw: Raw, n: int = 40) -> bytes:
    """The first bytes of a raw value (to recognise it without decoding it)."""
    return bytes(memoryview(raw)[:n])


def skippable(line: bytes) -> bool:
    return _SKIP.search(line, 0, SKIP_PREFIX) is not None


# -- small readers of raw values -------------------------------------------------------------


def parts_text(content: list[Part] | str | None, kinds: tuple[str, ...] = ("input_text", "output_text", "text")) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p.text for p in content if p.text and p.type in kinds)


def raw_str(raw: Raw) -> str:
    """A raw JSON string value as text ("" if it is not a string)."""
    if not len(raw) or memoryview(raw)[:1] != b'"':
        return ""
    try:
        return _decode_str(raw)
    except msgspec.MsgspecError:
        return ""


def raw_json(raw: Raw):
    if not len(raw):
        return None
    try:
        return decode_any(raw)
    except msgspec.MsgspecError:
        return None


def arguments(raw: Raw) -> dict:
    """A function call's arguments: a JSON string holding a JSON object (or an object)."""
    val = raw_json(raw)
    if isinstance(val, str):
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
    if limit and len(raw) > limit + 64 and memoryview(raw)[:1] == b'"':
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


_EXITED = re.compile(r"Process exited with code (-?\d+)")
_RUNNING = re.compile(r"Process running with session ID (\d+)")
_EXIT_CODE = re.compile(r"^Exit code: (-?\d+)", re.M)
_JSON_EXIT = re.compile(r'"exit_code"\s*:\s*(-?\d+)')


def exit_code_of(text: str) -> int | None:
    """The exit code in a shell tool's output head (`Process exited with code N`, the
    freeform tools' `Exit code: N`, or 0.96's JSON metadata)."""
    m = _EXITED.search(text) or _EXIT_CODE.search(text) or _JSON_EXIT.search(text)
    return int(m.group(1)) if m else None


def running_session(text: str) -> str:
    m = _RUNNING.search(text)
    return m.group(1) if m else ""


_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$", re.M)
_LETTER = {"Add": "A", "Update": "M", "Delete": "D", "add": "A", "update": "M", "delete": "D"}


def patch_files(patch: str) -> list[str]:
    """`A path`, `M path`, `D path` for each file an apply_patch body touches."""
    return [f"{_LETTER[m.group(1)]} {m.group(2).strip()}" for m in _PATCH_FILE.finditer(patch)]


def changes_list(changes: dict[str, Change] | None, cwd: str = "") -> list[str]:
    out = []
    for path, c in (changes or {}).items():
        shown = path[len(cwd) + 1 :] if cwd and path.startswith(cwd + "/") else path
        letter = _LETTER.get(c.type, "?")
        if c.move_path:
            shown = f"{shown} -> {c.move_path}"
        out.append(f"{letter} {shown}")
    return out


def command_text(cmd) -> str:
    """A command given as argv (`["bash", "-lc", "ls"]`) or a string, as one line."""
    if isinstance(cmd, str):
        return cmd
    if isinstance(cmd, list):
        parts = [str(c) for c in cmd]
        if len(parts) >= 3 and parts[-2] in ("-lc", "-c") and parts[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh"):
            return parts[-1]
        return " ".join(parts)
    return ""


def call_summary(name: str, args: dict) -> str:
    """A short, telling summary of a tool call's arguments."""
    for key in ("cmd", "command"):
        v = args.get(key)
        if v:
            return one_line(command_text(v), 160)
    if name == "write_stdin":
        chars = args.get("chars") or ""
        sid = args.get("session_id")
        return f"session {sid}: {one_line(chars, 60)}" if chars else f"poll session {sid}"
    qs = args.get("questions")
    if isinstance(qs, list) and qs and isinstance(qs[0], dict):
        return one_line(str(qs[0].get("question") or qs[0].get("header") or ""), 160)
    if name in ("wait_agent", "wait"):
        who = args.get("targets") or args.get("ids") or []
        return ", ".join(str(w) for w in who) if isinstance(who, list) else str(who)
    for key in ("task_name", "message", "target", "targets", "ids", "id", "query", "path", "url", "text"):
        v = args.get(key)
        if v:
            return one_line(v if isinstance(v, str) else msgspec.json.encode(v).decode(), 160)
    return one_line(msgspec.json.encode(args).decode(), 160) if args else ""
