"""GitHub Copilot CLI's `events.jsonl` records, decoded permissively.

Every line is an envelope `{type, data, id, timestamp, parentId, agentId?}`; `data` is
kept raw and decoded by its type only when the reader needs it (a `system.message`, the
whole system prompt repeated every turn, is never decoded). Fields are typed loosely:
a number where a string was expected costs that line; a null or a float where a count
was expected costs nothing. Big values (tool arguments, results) stay raw or loose.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec
from msgspec import Raw

Number = int | float | None


class Envelope(msgspec.Struct, gc=False):
    type: str = ""
    data: Raw = Raw()
    timestamp: str | None = None
    agentId: str | None = None  # a sub-agent's own events (absent for the lead's)


class Context(msgspec.Struct):
    cwd: str | None = None


class Start(msgspec.Struct):
    sessionId: str | None = None
    version: Any = None  # the event log's format (1)
    copilotVersion: str | None = None
    startTime: str | None = None
    selectedModel: str | None = None
    context: Context | None = None


class UserMessage(msgspec.Struct):
    content: str | None = None
    source: str | None = None
    isAutopilotContinuation: bool | None = None


class ToolRequest(msgspec.Struct):
    toolCallId: str | None = None
    name: str | None = None
    arguments: Any = None


class AssistantMessage(msgspec.Struct):
    messageId: str | None = None
    content: str | None = None
    toolRequests: list[ToolRequest] | None = None
    reasoningText: str | None = None
    model: str | None = None
    apiCallId: str | None = None
    requestId: str | None = None
    outputTokens: Number = None  # before `session.usage_record` (1.0.x): the response's output
    parentToolCallId: str | None = None


class Reasoning(msgspec.Struct):
    content: str | None = None


class Turn(msgspec.Struct):
    turnId: Any = None
    parentToolCallId: str | None = None


class Accounting(msgspec.Struct):
    sourceSessionId: str | None = None
    usageId: str | None = None


class UsageData(msgspec.Struct):
    model: str | None = None
    inputTokens: Number = 0  # includes the cached part
    outputTokens: Number = 0  # includes reasoning
    cacheReadTokens: Number = 0
    cacheWriteTokens: Number = 0
    apiCallId: str | None = None
    parentToolCallId: str | None = None
    accounting: Accounting | None = None


class UsageRecord(msgspec.Struct):
    usage: UsageData | None = None


class ToolStart(msgspec.Struct):
    toolCallId: str | None = None
    toolName: str | None = None
    arguments: Any = None
    parentToolCallId: str | None = None


class Failure(msgspec.Struct):
    message: str | None = None
    code: str | None = None


class Shell(msgspec.Struct):
    exitCode: Number = None


class ToolComplete(msgspec.Struct):
    toolCallId: str | None = None
    success: bool | None = None
    result: Any = None  # {content, detailedContent}
    error: Any = None  # {message, code}, or a string
    shellExecution: Shell | None = None


class PermissionRequested(msgspec.Struct):
    requestId: str | None = None
    permissionRequest: Any = None
    promptRequest: Any = None


class PermissionCompleted(msgspec.Struct):
    requestId: str | None = None
    toolCallId: str | None = None
    result: Any = None


class Subagent(msgspec.Struct):
    toolCallId: str | None = None
    agentName: str | None = None
    agentDisplayName: str | None = None
    agentDescription: str | None = None
    model: str | None = None
    executionMode: str | None = None
    error: str | None = None  # subagent.failed


class MetricUsage(msgspec.Struct):
    inputTokens: Number = 0
    outputTokens: Number = 0
    cacheReadTokens: Number = 0
    cacheWriteTokens: Number = 0


class ModelMetric(msgspec.Struct):
    usage: MetricUsage | None = None


class AgentMetric(msgspec.Struct):
    modelMetrics: dict[str, ModelMetric] | None = None


class Shutdown(msgspec.Struct):
    shutdownType: str | None = None
    errorReason: str | None = None
    modelMetrics: dict[str, ModelMetric] | None = None
    agentMetrics: dict[str, AgentMetric] | None = None


class Said(msgspec.Struct):
    """`session.error`, `session.info`, `session.warning`, `system.notification`,
    `session.task_complete`, `abort`, `session.compaction_complete`, `session.model_change`:
    a few words."""

    message: str | None = None
    errorType: str | None = None
    statusCode: Number = None
    content: str | None = None
    summary: str | None = None
    summaryContent: str | None = None
    success: bool | None = None
    reason: Any = None
    error: str | None = None
    newModel: str | None = None


_envelope = msgspec.json.Decoder(Envelope)
_decoders: dict[type, msgspec.json.Decoder[Any]] = {}


def envelope(line: bytes) -> Envelope:
    return _envelope.decode(line)


def data(raw: Raw, cls: type) -> Any:
    """The `data` of one record as `cls` (a record with no data decodes as all defaults)."""
    d = _decoders.get(cls)
    if d is None:
        d = _decoders[cls] = msgspec.json.Decoder(cls)
    return d.decode(raw) if len(raw) else cls()


def count(v: Number) -> int:
    """A token count as an int: a null is 0, a whole float its int; a negative or odd one
    is kept as it is, for the session to say it is no count (Usage.problem)."""
    if v is None:
        return 0
    if isinstance(v, float):
        return int(v) if math.isfinite(v) and v == int(v) else -1
    return v


def text_of(v: Any, depth: int = 0) -> str:
    """The text of a loose value (a result's `content`: a string, or parts with `text`)."""
    if isinstance(v, str):
        return v
    if depth > 4:
        return ""
    if isinstance(v, dict):
        for key in ("content", "text", "message"):
            if key in v:
                return text_of(v[key], depth + 1)
        return ""
    if isinstance(v, list):
        return "\n".join(t for t in (text_of(x, depth + 1) for x in v) if t)
    return ""


def field(v: Any, *keys: str) -> str:
    """The first of `keys` that `v` (a dict) holds as a non-empty string."""
    if isinstance(v, dict):
        for k in keys:
            got = v.get(k)
            if isinstance(got, str) and got:
                return got
    return ""
