"""Vibe tool calls in a few words: what went in (a command, a file, a question) and how
it ended (exit code, denied). Shared by the unified and the legacy engine, whose tool
names differ (`file_system.bash` / `bash`); which tool does what is `huddle.model.tools`.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
from msgspec import Raw

from huddle.model.events import one_line

_decode = msgspec.json.Decoder().decode
_RETURN_CODE = re.compile(r"Return code: (-?\d+)")


def decode(raw: Raw | bytes | str | None, limit: int = 1 << 20) -> Any:
    """A JSON value, or None when absent, too big to be worth building, or broken."""
    if raw is None or len(raw) > limit:
        return None
    try:
        return _decode(raw)
    except msgspec.MsgspecError:
        return None


def question_text(detail: Any) -> str:
    """The question(s) of a user_input callback's detail."""
    req = detail.get("request") if isinstance(detail, dict) else None
    qs = req.get("questions") if isinstance(req, dict) else None
    if isinstance(qs, list):
        texts = [q["question"] for q in qs if isinstance(q, dict) and isinstance(q.get("question"), str)]
        if texts:
            return one_line(" / ".join(texts), 200)
    return ""


def exit_code(output: Any) -> int | None:
    """A shell result's exit code from its structured output (unified or legacy)."""
    if not isinstance(output, dict):
        return None
    sc = output.get("structured_content", output)
    if isinstance(sc, dict):
        for key in ("returncode", "exit_code"):
            v = sc.get(key)
            if isinstance(v, int):
                return v
    return None


def legacy_exit_code(content: str) -> int | None:
    """A failed legacy shell call only says it in text: `Return code: 2`."""
    m = _RETURN_CODE.search(content[:4000])
    return int(m.group(1)) if m else None


def agent_path_name(path: str) -> str:
    """`/root/helper` or `helper` -> `helper` (3.x addresses agents by path)."""
    return path.rstrip("/").rsplit("/", 1)[-1]


def content_text(content: Any) -> str:
    """A message's text: a string, or its text parts (other parts as `[image]` etc.)."""
    if isinstance(content, str):
        return content
    if not content:
        return ""
    return "\n".join(p.text if p.type == "text" and p.text else f"[{p.type}]" for p in content if p.type)
