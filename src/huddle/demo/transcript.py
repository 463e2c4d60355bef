"""The demo's files, written record by record as Claude Code writes them."""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime
from typing import Any

from huddle.io import procs

CWD = "/home/you/code/acme-shop"
MODEL = "claude-sonnet-4-5"


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def proc_start() -> str | None:
    """What Claude Code records as `procStart`: this process's start time, as text."""
    ticks = procs.start_time(os.getpid())
    return str(ticks) if ticks is not None else None


class Transcript:
    """One agent's .jsonl file, written record by record as Claude Code would."""

    def __init__(self, path: str, session_id: str, agent_id: str | None = None):
        self.path = path
        self.session_id = session_id
        self.agent_id = agent_id
        self.parent: str | None = None
        self.calls = 0

    def _write(self, rec: dict) -> None:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")

    def record(self, type: str, t: float, **fields) -> dict:
        rec: dict[str, Any] = {"parentUuid": self.parent, "isSidechain": self.agent_id is not None}
        if self.agent_id:
            rec["agentId"] = self.agent_id
        rec.update(type=type, **fields)
        rec.update(
            uuid=str(uuid.uuid4()),
            timestamp=_iso(t),
            userType="external",
            entrypoint="cli",
            cwd=CWD,
            sessionId=self.session_id,
            version="2.1.332",
            gitBranch="dark-mode",
        )
        self.parent = rec["uuid"]
        self._write(rec)
        return rec

    def prompt(self, t: float, text: str) -> None:
        self.record("user", t, message={"role": "user", "content": text}, promptSource="typed")

    def assistant(
        self, t: float, blocks: list[dict], stop: str = "tool_use", tokens: tuple = (6, 120, 9000, 800)
    ) -> None:
        """One API response: one record per content block, sharing id and usage."""
        mid = "msg_01" + uuid.uuid4().hex[:22]
        usage = {
            "input_tokens": tokens[0],
            "output_tokens": tokens[1],
            "cache_read_input_tokens": tokens[2],
            "cache_creation_input_tokens": tokens[3],
            "service_tier": "standard",
        }
        for i, b in enumerate(blocks):
            msg = {
                "id": mid,
                "type": "message",
                "role": "assistant",
                "model": MODEL,
                "content": [b],
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": usage,
            }
            extra = {"attributionAgent": "demo"} if self.agent_id else {}
            self.record(
                "assistant", t + i * 0.02, message=msg, apiBlockIndex=i, requestId="req_011" + mid[6:20], **extra
            )

    def call(self, t: float, name: str, inp: dict, say: str | None = None, tokens: tuple = (6, 120, 9000, 800)) -> str:
        self.calls += 1
        cid = "toolu_01" + uuid.uuid4().hex[:22]
        blocks = ([{"type": "text", "text": say}] if say else []) + [
            {"type": "tool_use", "id": cid, "name": name, "input": inp}
        ]
        self.assistant(t, blocks, tokens=tokens)
        return cid

    def result(self, t: float, cid: str, text: str, error: bool = False, structured=None) -> None:
        block = {"tool_use_id": cid, "type": "tool_result", "content": text, "is_error": error}
        rec = {"message": {"role": "user", "content": [block]}}
        if structured is not None:
            rec["toolUseResult"] = structured
        self.record("user", t, **rec)

    def say(self, t: float, text: str, end: bool = True, tokens: tuple = (8, 180, 12000, 400)) -> None:
        self.assistant(t, [{"type": "text", "text": text}], stop="end_turn" if end else "tool_use", tokens=tokens)
