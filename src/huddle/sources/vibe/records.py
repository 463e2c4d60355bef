"""Mistral Vibe unified store: typed decoding of only the fields huddle needs.

One permissive struct per level, `type: str`, never a tagged union: msgspec skips
everything else (model inputs, tool catalogues, digests) without building objects.
Field names are Vibe's own (camelCase in the public projection, snake_case in the
journal and runtime state).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import msgspec
from msgspec import Raw

STORE_FORMAT = "mistral.vibe.unified-session-store/v1"
KNOWN_MINOR = 10  # 2.26.1 writes 8, 3.0.3 writes 10; readers must reject higher ones


class Current(msgspec.Struct):
    generation: str = ""
    snapshot_sequence: int = 0
    store_format: str = ""
    store_format_minor: int = 0
    session_id: str = ""


class DocRef(msgspec.Struct):
    path: str = ""
    chunks: list[str] | None = None


class Segment(msgspec.Struct):
    first_sequence: int = 0
    path: str = ""


class Manifest(msgspec.Struct):
    generation: str = ""
    snapshot_sequence: int = 0
    created_at: str | None = None
    execution_state: str | None = None
    projection_state: DocRef | None = None
    runtime_state: DocRef | None = None
    recovery_journal_segment: Segment | None = None


# -- the public projection -------------------------------------------------------------


class Part(msgspec.Struct):
    type: str = ""
    text: str | None = None


class Outcome(msgspec.Struct):
    type: str = ""
    cause: str | None = None


class EffectDetail(msgspec.Struct):
    kind: str | None = None
    toolName: str | None = None
    input: Raw = Raw(b"null")
    agentName: str | None = None
    childSessionId: str | None = None


class Problem(msgspec.Struct):
    code: str | None = None
    message: str | None = None


class EffectState(msgspec.Struct):
    status: str | dict[str, Any] | None = None
    output: Raw = Raw(b"null")
    outputText: str | None = None
    error: Problem | None = None
    decision: str | None = None


class Entry(msgspec.Struct):
    type: str = ""
    id: str = ""
    turnId: str | None = None
    createdAt: int | float | None = None
    updatedAt: int | float | None = None
    role: str | None = None
    source: str | None = None
    content: list[Part] | str | None = None
    text: str | None = None
    summary: Raw = Raw(b"null")
    outcome: Outcome | None = None
    title: str | None = None
    detail: EffectDetail | None = None
    state: EffectState | None = None
    kind: str | None = None
    message: str | None = None


class TokenUsage(msgspec.Struct):
    inputTokens: int | None = 0
    outputTokens: int | None = 0
    cachedInputTokens: int | None = 0


class Turn(msgspec.Struct):
    id: str = ""
    status: str | dict[str, Any] | None = None
    startedAt: int | float | None = None
    completedAt: int | float | None = None
    error: Problem | None = None
    stopReason: str | None = None
    reason: str | None = None


class SessionInfo(msgspec.Struct):
    id: str = ""
    title: str | None = None
    titleSource: str | None = None
    tokenUsage: TokenUsage | None = None
    parentSessionId: str | None = None
    createdAt: int | float | None = None
    updatedAt: int | float | None = None


class Envelope(msgspec.Struct):
    latestTurn: Turn | None = None
    session: SessionInfo | None = None


class History(msgspec.Struct):
    entries: list[Raw] = []


class Snapshot(msgspec.Struct):
    latestTurn: Turn | None = None
    session: SessionInfo | None = None
    history: History | None = None


class ProjectionDoc(msgspec.Struct):
    snapshot: Snapshot | None = None
    snapshot_sequence: int = 0


# -- runtime state (only the envelope file; its chunk holds capabilities huddle never needs)


class Routing(msgspec.Struct):
    createdAt: int | float | None = None
    title: str | None = None
    relatedEntryId: str | None = None
    turnId: str | None = None
    detail: Raw = Raw(b"null")


class Callback(msgspec.Struct):
    callback_id: str = ""
    kind: str = ""
    routing: Routing | None = None
    state: str | None = None
    result: Raw = Raw(b"null")


class Identity(msgspec.Struct):
    kind: str | None = None
    parent_session_id: str | None = None
    root_session_id: str | None = None


class ProvenanceSource(msgspec.Struct):
    backend: str | None = None
    session_id: str | None = None


class Provenance(msgspec.Struct):
    source: ProvenanceSource | None = None
    imported_at: str | None = None


class ChildState(msgspec.Struct):
    type: str = ""


class ChildRecord(msgspec.Struct):
    agent_name: str | None = None
    agent_type: str | None = None
    child_session_id: str | None = None
    spawn_action_id: str | None = None
    state: ChildState | None = None


class Subagents(msgspec.Struct):
    children: dict[str, ChildRecord] | None = None


class SessionMetadata(msgspec.Struct):
    cwd: str | None = None
    active_model: str | None = None
    agent_name: str | None = None
    completion_catalogue: str | None = None


class RuntimeDoc(msgspec.Struct):
    identity: Identity | None = None
    import_provenance: Provenance | None = None
    callbacks: list[Callback] | None = None
    subagents: Subagents | None = None
    session_metadata: SessionMetadata | None = None


class StoreMeta(msgspec.Struct):
    """meta.json of a root store (small): title and the model's real name."""

    title: str | None = None
    title_source: str | None = None
    config: dict[str, Any] | None = None


# -- the journal -----------------------------------------------------------------------


class Record(msgspec.Struct):
    type: str = ""
    sequence: int = -1
    payload: Raw = Raw(b"null")


class Op(msgspec.Struct):
    op: str = ""
    id: str | None = None
    entry: Entry | None = None
    entries: list[Entry] | None = None
    state: Envelope | None = None


class Delta(msgspec.Struct):
    delta: list[Op] = []


class CallUsage(msgspec.Struct):
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    cached_input_tokens: int | None = 0
    cache_write_tokens: int | None = 0


class Completion(msgspec.Struct):
    usage: CallUsage | None = None


class ActionOutcome(msgspec.Struct):
    type: str = ""
    result: Raw = Raw(b"null")


class ActionResult(msgspec.Struct):
    action_id: str = ""
    result: ActionOutcome | None = None


class Determinism(msgspec.Struct):
    time_unix_ms: int | float | None = None


class CoreInputBody(msgspec.Struct):
    determinism: Determinism | None = None


class CoreInput(msgspec.Struct):
    input: CoreInputBody | None = None


class CallbackResolved(msgspec.Struct):
    callback_id: str = ""
    state: str | None = None
    result: Raw = Raw(b"null")


T = TypeVar("T")


def decoder(t: type[T]) -> Callable[[bytes | str], T]:
    return msgspec.json.Decoder(t).decode


decode_current = decoder(Current)
decode_manifest = decoder(Manifest)
decode_projection = decoder(ProjectionDoc)
decode_runtime = decoder(RuntimeDoc)
decode_store_meta = decoder(StoreMeta)
decode_chunk = decoder(list[Raw])
decode_entry = decoder(Entry)
decode_record = decoder(Record)
decode_delta = decoder(Delta)
decode_action_result = decoder(ActionResult)
decode_completion = decoder(Completion)
decode_core_input = decoder(CoreInput)
decode_callback = decoder(Callback)
decode_callback_resolved = decoder(CallbackResolved)
decode_any = msgspec.json.Decoder().decode
