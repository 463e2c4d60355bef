"""A Qwen Code sub-agent's identity and state: its `.meta.json` (rewritten in place as
the run goes: `status` running -> completed), else its file's first record.

The lead keys nothing by the meta's `agentId` (`<type>-<call id>`): its call and its
result name the call id (`toolUseId`), so that is the sub-agent's id here.
"""

from __future__ import annotations

import os

import msgspec

from huddle.io import safefile

HEAD_MAX = 1 << 16  # a first record longer than this names no agent: left for the meta


class Flags(msgspec.Struct):
    model: str | None = None


class SubMeta(msgspec.Struct):
    agentId: str | None = None
    agentType: str | None = None
    subagentName: str | None = None
    description: str | None = None
    parentSessionId: str | None = None
    toolUseId: str | None = None
    parentAgentId: str | None = None
    status: str | None = None
    isBackgrounded: bool | None = None
    model: str | None = None
    persistedCliFlags: Flags | None = None

    @property
    def model_name(self) -> str:
        return self.model or (self.persistedCliFlags.model if self.persistedCliFlags else None) or ""


class Head(msgspec.Struct):
    agentId: str | None = None
    agentName: str | None = None


_decode_meta = msgspec.json.Decoder(SubMeta).decode
_decode_head = msgspec.json.Decoder(Head).decode


def read_meta(path: str) -> SubMeta | None:
    """The meta as it stands (re-read once when caught half-written); None when it cannot be had."""
    for _ in range(2):
        try:
            return _decode_meta(safefile.read_small(path))
        except FileNotFoundError:
            return None
        except OSError as exc:
            safefile.remember(path, exc)  # a note until it reads
            return None
        except (msgspec.DecodeError, RecursionError):
            continue
    return None


def identity(path: str) -> tuple[str, str | None] | None:
    """A sub-agent file's id (the call that started it) and its parent's agentId (None:
    the lead), from its meta, else its first record; None while neither says."""
    meta = read_meta(path[: -len(".jsonl")] + ".meta.json")
    if meta is not None and meta.toolUseId:
        return meta.toolUseId, meta.parentAgentId or None
    try:
        with safefile.open_regular(path) as f:
            head = f.read(HEAD_MAX)
    except OSError as exc:
        safefile.remember(path, exc)
        return None
    nl = head.find(b"\n")
    if nl < 0:
        return None  # still being written
    try:
        h = _decode_head(head[:nl])
    except (msgspec.DecodeError, RecursionError):
        h = Head()
    agent_id = os.path.basename(path)[len("agent-") : -len(".jsonl")]
    kind = h.agentName or ""
    if h.agentId and kind and h.agentId.startswith(kind + "-"):
        return h.agentId[len(kind) + 1 :], None
    return agent_id, None
