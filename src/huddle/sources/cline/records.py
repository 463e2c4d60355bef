"""Cline CLI's session files, decoded permissively.

`<id>.json` (the session record, rewritten in place): `{session_id, pid, started_at, ended_at?,
exit_code?, status, interactive, cwd, prompt, metadata: {title, ...}, ...}`.
`<id>.messages.json` and `agent_<agent id>.messages.json` (rewritten whole on every update):
`{version, updated_at, agent: "lead" | "subagent", sessionId, origin: {parentThreadId?,
subagent?}, messages: [...], system_prompt}`; a message `{id, role, content: [blocks], ts (ms),
modelInfo?: {id}, metrics?: {inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens}}`:
one assistant message per model response, its input tokens counting the cached part.

Messages stay raw in the document (`list[Raw]`), each decoded alone: a message of an
unexpected shape costs that message. An odd number (null, a float, negative) counts as 0.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
from msgspec import Raw

from huddle.model.doing import input_summary
from huddle.model.events import Usage, one_line
from huddle.sources.values import count as count
from huddle.sources.values import loose as loose

Number = int | float | None


class Meta(msgspec.Struct):
    title: str | None = None


class Record(msgspec.Struct):
    session_id: str | None = None
    pid: Number = None
    started_at: str | None = None
    ended_at: str | None = None
    exit_code: Number = None
    status: str | None = None
    interactive: bool | None = None
    cwd: str | None = None
    workspace_root: str | None = None
    prompt: str | None = None
    metadata: Meta | None = None


class Origin(msgspec.Struct):
    sessionId: str | None = None
    parentThreadId: str | None = None
    subagent: str | None = None


class Doc(msgspec.Struct):
    sessionId: str | None = None
    agent: str | None = None
    origin: Origin | None = None
    messages: list[Raw] = []


class Block(msgspec.Struct):
    type: str = ""
    text: str | None = None
    thinking: str | None = None
    id: str | None = None
    name: str | None = None
    input: Raw = Raw()
    tool_use_id: str | None = None
    content: Raw = Raw()
    is_error: bool | None = None


class ModelInfo(msgspec.Struct):
    id: str | None = None


class Metrics(msgspec.Struct):
    inputTokens: Number = 0
    outputTokens: Number = 0
    cacheReadTokens: Number = 0
    cacheWriteTokens: Number = 0


class Message(msgspec.Struct):
    id: str | None = None
    role: str | None = None
    content: list[Block] | str | None = None
    ts: Number = None
    modelInfo: ModelInfo | None = None
    metrics: Metrics | None = None


decode_record = msgspec.json.Decoder(Record).decode
decode_doc = msgspec.json.Decoder(Doc).decode
decode_message = msgspec.json.Decoder(Message).decode
_decode_any = msgspec.json.Decoder().decode

_USER_INPUT = re.compile(r"^\s*<user_input(?: [^>]*)?>(.*)</user_input>\s*$", re.S)


def usage_of(m: Metrics | None) -> Usage | None:
    """Huddle's meaning: input net of the cached part (Cline's `inputTokens` includes it);
    output already includes reasoning."""
    if m is None:
        return None
    cached = count(m.cacheReadTokens)
    u = Usage(
        input=max(count(m.inputTokens) - cached, 0),
        output=count(m.outputTokens),
        cache_read=cached,
        cache_write=count(m.cacheWriteTokens),
    )
    return u if u.total else None


def typed(text: str) -> str | None:
    """What the person typed, out of Cline's `<user_input mode="act">` wrapper (None: the
    text is not wrapped, so not typed: a task, a note the harness added)."""
    m = _USER_INPUT.match(text)
    return m.group(1) if m else None


def result_of(content: Any) -> tuple[bool, str]:
    """A tool result's outcome and text. Errors carry no flag: items `{query, result, error}`
    or `success: false`, or (editor, spawn_agent) the same as a JSON string."""
    if isinstance(content, str) and content[:1] == "{":
        try:
            content = _decode_any(content)
        except msgspec.DecodeError:
            return True, content
    items = content if isinstance(content, list) else [content]
    ok, texts = True, []
    for it in items:
        if isinstance(it, dict):
            if it.get("error") or it.get("success") is False:
                ok = False
            for key in ("result", "text", "error"):
                if isinstance(it.get(key), str) and it[key]:
                    texts.append(it[key])
                    break
        elif isinstance(it, str):
            texts.append(it)
    return ok, "\n".join(texts)


def detail_of(name: str, args: Any) -> str:
    """A call's input in a few words, under Cline's tool shapes (run_commands' list of
    commands, read_files' list of files)."""
    if isinstance(args, dict):
        cmds = args.get("commands")
        if isinstance(cmds, list) and cmds and all(isinstance(c, str) for c in cmds):
            return one_line("; ".join(cmds), 160)
        files = args.get("files")
        if isinstance(files, list) and files:
            paths = [f.get("path") if isinstance(f, dict) else f for f in files]
            return one_line(", ".join(p for p in paths if isinstance(p, str)), 160)
        for key in ("question", "task"):
            if isinstance(args.get(key), str) and args[key]:
                return one_line(args[key], 160)
    return input_summary(args)
