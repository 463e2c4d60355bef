"""What a hosted run's log is made of, decoded with msgspec: the log entries, the
lines of Claude Code's `--output-format stream-json` (reusing the transcript's
message structs), and small readers of their loose parts. The one reader of the
stream format: the hosted source and `huddle run`'s live line both decode with it."""

from __future__ import annotations

import os
from typing import Any

import msgspec
from msgspec import Raw

from huddle.sources.claude.records import Block, ClaudeUsage, Message


class Entry(msgspec.Struct):
    seq: int = 0
    t: float | None = None
    kind: str = ""
    json: Raw = Raw(b"null")
    text: str | None = None
    pid: int | None = None
    start: int | None = None
    host_pid: int | None = None
    host_start: int | None = None
    argv: list[str] | None = None
    cwd: str | None = None
    name: str | None = None
    status: int | None = None
    reason: str | None = None
    stopped: bool | None = None
    step: str | None = None
    protocol: str | None = None  # what huddle speaks with the agent (huddle.answer): claude, acp, codex
    request: int | None = None  # ask / answer / gone: the request (the ask's own seq)
    type: str | None = None  # an ask's type: permission, question, turn
    tool: str | None = None
    summary: str | None = None
    call: str | None = None
    choice: str | None = None
    by: str | None = None
    why: str | None = None
    message: str | None = None


class TaskUsage(msgspec.Struct):
    total_tokens: int | None = 0


class Delta(msgspec.Struct):
    type: str = ""
    text: str | None = None
    thinking: str | None = None


class StreamEvent(msgspec.Struct):
    type: str = ""
    index: int | None = None  # of the content block
    message: Message | None = None
    content_block: Block | None = None
    delta: Delta | None = None
    usage: ClaudeUsage | None = None


class Line(msgspec.Struct):
    """One stream-json line: every field huddle reads, of every line type."""

    type: str = ""
    subtype: str | None = None
    session_id: str | None = None
    parent_tool_use_id: str | None = None
    agent_id: str | None = None
    message: Message | str | None = None  # a message; a sentence on system lines (permission_denied)
    event: StreamEvent | None = None
    api_message_id: str | None = None
    cwd: str | None = None
    model: str | None = None
    title: str | None = None
    task_id: str | None = None
    tool_use_id: str | None = None
    parent_task_id: str | None = None
    description: str | None = None
    subagent_type: str | None = None
    is_backgrounded: bool | None = None
    prompt: str | None = None
    summary: str | None = None
    status: str | None = None
    usage: Raw = Raw(b"null")
    result: str | None = None
    is_error: bool | None = None
    terminal_reason: str | None = None
    errors: list[str] | None = None
    error: Raw = Raw(b"null")
    error_status: int | None = None
    attempt: int | None = None
    tool_name: str | None = None
    content: Raw = Raw(b"null")
    compact_metadata: Raw = Raw(b"null")
    isReplay: bool | None = None
    isSynthetic: bool | None = None


decode_line = msgspec.json.Decoder(Line).decode
task_usage = msgspec.json.Decoder(TaskUsage | None).decode
claude_usage = msgspec.json.Decoder(ClaudeUsage | None).decode
decode_any = msgspec.json.Decoder().decode

# Options of `claude` that take a value: what is left after them is the prompt.
_VALUE_OPTS = frozenset(
    [
        "--output-format",
        "--input-format",
        "--model",
        "--fallback-model",
        "--session-id",
        "-r",
        "--resume",
        "--permission-mode",
        "--allowedTools",
        "--allowed-tools",
        "--disallowedTools",
        "--disallowed-tools",
        "--tools",
        "--append-system-prompt",
        "--system-prompt",
        "--max-turns",
        "--agents",
        "--agent",
        "--settings",
        "--mcp-config",
        "--add-dir",
        "-n",
        "--name",
        "--setting-sources",
        "--max-budget-usd",
        "--betas",
        "--json-schema",
        "--plugin-dir",
        "--permission-prompt-tool",
    ]
)


def argv_prompt(argv: list[str]) -> str:
    """The prompt of a `claude -p PROMPT ...` command line, if it has one."""
    if not argv or os.path.basename(argv[0]) != "claude" or not ({"-p", "--print"} & set(argv)):
        return ""
    skip = False
    for a in argv[1:]:
        if skip:
            skip = False
        elif a.startswith("-"):
            skip = a in _VALUE_OPTS
        else:
            return a
    return ""


def given(raw: Raw) -> bool:
    return bytes(raw) != b"null"


def user_text(val: Any) -> str | None:
    """The text of a stream-json user message written to stdin, if it is one."""
    if not isinstance(val, dict) or val.get("type") != "user":
        return None
    m = val.get("message")
    c = m.get("content") if isinstance(m, dict) else None
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "\n".join(b["text"] for b in c if isinstance(b, dict) and isinstance(b.get("text"), str))
    return None


def compact_detail(raw: Raw) -> str:
    try:
        val = decode_any(raw)
    except msgspec.MsgspecError:
        return ""
    if not isinstance(val, dict):
        return ""
    parts = [str(val.get("trigger") or "")]
    if val.get("pre_tokens"):
        parts.append(f"{val['pre_tokens']} -> {val.get('post_tokens', '?')} tokens")
    return ", ".join(p for p in parts if p)
