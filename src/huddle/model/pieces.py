"""Pull the heavy piece an event points at out of its raw record, whatever the agent.

The record (one JSON line of a transcript) is searched by shape rather than by a
per-agent schema: a tool call is the object carrying the call id and its input
(`input`, `arguments`, `function.arguments`), a result the object answering that id
(`tool_use_id`, `call_id`, `tool_call_id`, `toolCallId`), a long text the longest string that
starts like the event's kept text. Images come back as base64 with a safe type.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

from huddle.model import events as ev

_MAX_NODES = 200_000
_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
TEXT_MAX = 4 << 20

_decode = msgspec.json.Decoder().decode


def _walk(node: object, depth: int = 0, budget: list[int] | None = None) -> Iterator[dict[str, Any]]:
    """Every dict in a decoded record, depth first, within a node budget."""
    budget = budget if budget is not None else [_MAX_NODES]
    if budget[0] <= 0 or depth > 40:
        return
    budget[0] -= 1
    if isinstance(node, dict):
        yield node
        for v in node.values():
            if isinstance(v, (dict, list)):
                yield from _walk(v, depth + 1, budget)
    elif isinstance(node, list):
        for v in node:
            if isinstance(v, (dict, list)):
                yield from _walk(v, depth + 1, budget)


def _strings(node: object, depth: int = 0, budget: list[int] | None = None) -> Iterator[str]:
    budget = budget if budget is not None else [_MAX_NODES]
    if budget[0] <= 0 or depth > 40:
        return
    budget[0] -= 1
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for v in node.values():
            yield from _strings(v, depth + 1, budget)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v, depth + 1, budget)


def _maybe_json(value: object) -> Any:
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return _decode(value)
        except msgspec.DecodeError:
            return value
    return value


def _text_of(value: object) -> str:
    """The readable text of a result's content (a string, or blocks with text)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("text", "output", "content", "stdout"):
            if isinstance(value.get(key), (str, list, dict)):
                return _text_of(value[key])
        return msgspec.json.encode(value).decode()
    if isinstance(value, list):
        parts = [_text_of(v) for v in value if not (isinstance(v, dict) and v.get("type") in ("image", "input_image"))]
        return "\n".join(p for p in parts if p)
    return str(value)


def _images(node: object) -> list[dict[str, str]]:
    out = []
    for d in _walk(node):
        src = d.get("source") if d.get("type") == "image" else None
        if isinstance(src, dict) and isinstance(src.get("data"), str):
            mt = src.get("media_type") or ""
            if mt in _IMAGE_TYPES:
                out.append({"media_type": mt, "data": src["data"]})
        if d.get("type") == "image" and isinstance(d.get("data"), str) and d.get("mimeType") in _IMAGE_TYPES:
            out.append({"media_type": d["mimeType"], "data": d["data"]})  # Pi
        url = d.get("image_url")
        if isinstance(url, dict):
            url = url.get("url")
        if isinstance(url, str) and url.startswith("data:") and ";base64," in url:
            mt, data = url[5:].split(";base64,", 1)
            if mt in _IMAGE_TYPES:
                out.append({"media_type": mt, "data": data})
    return out


def _cap(text: str) -> tuple[str, bool]:
    return (text, False) if len(text) <= TEXT_MAX else (text[:TEXT_MAX], True)


def _call_input(rec: object, call_id: str) -> tuple[bool, Any]:
    for d in _walk(rec):
        if d.get("id") == call_id or d.get("call_id") == call_id or d.get("toolCallId") == call_id:
            for key in ("input", "arguments", "args", "parameters"):
                if key in d:
                    return True, _maybe_json(d[key])
            fn = d.get("function")
            if isinstance(fn, dict) and "arguments" in fn:
                return True, _maybe_json(fn["arguments"])
    return False, None


def _result(rec: object, call_id: str) -> tuple[bool, Any, dict[str, Any] | None]:
    for d in _walk(rec):
        if (
            d.get("tool_use_id") == call_id
            or d.get("tool_call_id") == call_id
            or (d.get("call_id") == call_id and "output" in d)
            or (d.get("id") == call_id and "response" in d)  # Gemini's functionResponse
            or (d.get("toolCallId") == call_id and ("result" in d or "error" in d))  # Copilot CLI's
            or (d.get("toolCallId") == call_id and d.get("role") == "toolResult")  # Pi's
        ):
            for key in ("content", "output", "result", "tool_result", "response", "error"):
                if key in d:
                    return True, d[key], d
    return False, None, None


def piece(raw: bytes, e: ev.Event) -> dict[str, Any]:
    """The piece of `raw` (one record) that event `e` stands for."""
    try:
        rec = _decode(raw)
    except msgspec.DecodeError:
        text, cut = _cap(raw.decode("utf-8", "replace"))
        return {"kind": e.kind, "text": text, "truncated": cut}
    out: dict[str, Any] = {"kind": e.kind}
    if e.kind in (ev.TOOL_CALL, ev.ORDER, ev.WAITING) and e.id:
        found, value = _call_input(rec, e.id)
        if found:
            out["input"] = value
    if e.kind in (ev.TOOL_RESULT, ev.REPORT) and e.id:
        _result_piece(out, rec, e.id)
    if "text" not in out and e.text:
        head = e.text[:200]
        best = max((s for s in _strings(rec) if s.startswith(head)), key=len, default=e.text)
        out["text"], out["truncated"] = _cap(best)
    if "images" not in out and e.kind in (ev.PROMPT, ev.CONTEXT):
        imgs = _images(rec)
        if imgs:
            out["images"] = imgs
    return out


def _result_piece(out: dict[str, Any], rec: Any, call: str) -> None:
    """A call's result in its record: its text, images, error flag, and the structured
    result beside it (Claude Code's toolUseResult)."""
    found, value, holder = _result(rec, call)
    if found:
        out["images"] = _images(value)
        out["text"], out["truncated"] = _cap(_text_of(value))
        if isinstance(holder, dict) and holder.get("is_error", holder.get("isError")) is not None:
            out["is_error"] = bool(holder.get("is_error", holder.get("isError")))
    structured = rec.get("toolUseResult") if isinstance(rec, dict) else None
    if isinstance(structured, dict):
        out["structured"] = structured
