"""The JSON-RPC agents a host speaks with (huddle.answer): what their lines say, as events.

ACP (`session/update` notifications: message and thought chunks, tool calls and their
updates; the `session/prompt` response ends a turn) and `codex app-server`
(`item/started`, `item/completed`, `turn/completed`). Text arrives in pieces: it is
said as one event when the next thing happens (a tool call, the turn's end).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from huddle.model import events as ev
from huddle.model.doing import input_summary
from huddle.model.events import Usage, cap

if TYPE_CHECKING:
    from .stream import Mapper


def _d(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


class RpcMapper:
    """One run's JSON-RPC lines (either protocol) -> its session's events. Picklable."""

    def __init__(self, protocol: str):
        self.protocol = protocol
        self.text: dict[str, str] = {}  # kind (say / think) -> text not yet said
        self.prompts: set[object] = set()  # our prompt requests' ids (ACP): their response ends the turn
        self.held: dict[str, dict[str, Any]] = {}  # ACP calls announced before their input is known

    def stdin(self, m: Mapper, val: object) -> bool:
        """A line huddle wrote: a prompt is the human's words. True if it was one."""
        v = _d(val)
        p = _d(v.get("params"))
        if v.get("method") == "session/prompt":
            self.prompts.add(v.get("id"))
            parts: list[Any] = p["prompt"] if isinstance(p.get("prompt"), list) else []
            words = "\n".join(str(_d(b).get("text") or "") for b in parts).strip()
        elif v.get("method") == "turn/start":
            parts = p["input"] if isinstance(p.get("input"), list) else []
            words = "\n".join(str(_d(b).get("text") or "") for b in parts).strip()
        else:
            return False
        text, cut = cap(words)
        m.emit(ev.PROMPT, text=text, truncated=cut)
        return True

    def flush(self, m: Mapper) -> None:
        for cid, u in list(self.held.items()):
            del self.held[cid]
            self._acp_call(m, cid, u)
        for kind, text in self.text.items():
            if text.strip():
                t, cut = cap(text)
                m.emit(kind, text=t, truncated=cut)
        self.text = {}

    def stdout(self, m: Mapper, val: object) -> None:
        v = _d(val)
        if self.protocol == "acp":
            self._acp(m, v)
        else:
            self._codex(m, v)

    def _piece(self, m: Mapper, kind: str, text: object) -> None:
        if isinstance(text, str) and text:
            if any(k != kind and t for k, t in self.text.items()):
                self.flush(m)  # thinking gave way to words, or the other way round
            self._add(kind, text)

    def _add(self, kind: str, text: str) -> None:
        self.text[kind] = (self.text.get(kind, "") + text)[-ev.TEXT_KEEP * 4 :]

    # -- ACP -------------------------------------------------------------------------------

    def _acp(self, m: Mapper, v: dict[str, Any]) -> None:
        if v.get("method") == "session/update":
            u = _d(_d(v.get("params")).get("update"))
            what = u.get("sessionUpdate")
            if what in ("agent_message_chunk", "agent_thought_chunk"):
                self._piece(m, ev.SAY if what == "agent_message_chunk" else ev.THINK, _d(u.get("content")).get("text"))
            elif what == "tool_call":
                self.flush(m)
                cid = str(u.get("toolCallId") or "")
                if u.get("status") == "pending":
                    self.held[cid] = u  # (its first update names what it does: OpenCode's title is the command)
                    return
                self._acp_call(m, cid, u)
            elif what == "tool_call_update":
                cid = str(u.get("toolCallId") or "")
                if cid in self.held:
                    self._acp_call(m, cid, {**self.held.pop(cid), **{k: v for k, v in u.items() if v}})
                else:
                    self._acp_done(m, cid, u)
        elif "id" in v and "method" not in v and v.get("id") in self.prompts:
            self.prompts.discard(v.get("id"))
            self.flush(m)
            r = _d(v.get("result"))
            use = _d(r.get("usage"))
            if use:
                got = Usage(input=int(use.get("inputTokens") or 0), output=int(use.get("outputTokens") or 0))
                m.emit(ev.USAGE, id=f"acp:{m.off}", name="", usage=got)
            if "error" in v:
                m.emit(ev.ERROR, text=cap(str(_d(v.get("error")).get("message") or "error"))[0], name="result")
            m.emit(ev.TURN_END, text=str(r.get("stopReason") or ""))

    def _acp_call(self, m: Mapper, cid: str, u: dict[str, Any]) -> None:
        name = str(u.get("kind") or u.get("title") or "tool")
        detail = str(u.get("title") or "") or input_summary(u.get("rawInput"))
        m.emit(ev.TOOL_CALL, id=cid, name=name, detail=detail)
        self._acp_done(m, cid, u)

    def _acp_done(self, m: Mapper, cid: str, u: dict[str, Any]) -> None:
        if u.get("status") in ("completed", "failed"):
            m.emit(ev.TOOL_RESULT, id=cid, ok=u.get("status") == "completed", size=len(str(u.get("content") or "")))

    # -- codex app-server ------------------------------------------------------------------

    def _codex_done(self, m: Mapper, kind: object, iid: str, item: dict[str, Any]) -> None:
        """An item completed: a whole message (it replaces its pieces), a reasoning
        summary, a call's result."""
        if kind == "agentMessage":
            self.text.pop(ev.SAY, None)
            text, cut = cap(str(item.get("text") or ""))
            if text:
                m.emit(ev.SAY, text=text, truncated=cut)
        elif kind == "reasoning":
            words = "\n".join(str(s) for s in item.get("summary") or [] if s)
            if words:
                m.emit(ev.THINK, text=cap(words)[0])
        elif kind in ("commandExecution", "fileChange", "mcpToolCall"):
            ok = item.get("status") == "completed" and not item.get("exitCode")
            m.emit(ev.TOOL_RESULT, id=iid, ok=ok, size=len(str(item.get("aggregatedOutput") or "")))

    def _codex(self, m: Mapper, v: dict[str, Any]) -> None:
        method = v.get("method")
        p = _d(v.get("params"))
        item = _d(p.get("item"))
        kind = item.get("type")
        iid = str(item.get("id") or "")
        if method == "item/agentMessage/delta":
            self._piece(m, ev.SAY, p.get("delta"))
        elif method == "item/started" and kind in ("commandExecution", "fileChange", "mcpToolCall"):
            self.flush(m)
            m.emit(ev.TOOL_CALL, id=iid, **_codex_call(kind, item))
        elif method == "item/completed":
            self._codex_done(m, kind, iid, item)
        elif method == "turn/completed":
            self.flush(m)
            m.emit(ev.TURN_END, text=str(_d(p.get("turn")).get("status") or ""))


def _codex_call(kind: object, item: dict[str, Any]) -> dict[str, str]:
    """A started item's call: a command, a file change (its files), an MCP tool's call."""
    if kind == "commandExecution":
        return {"name": "shell", "detail": str(item.get("command") or "")}
    if kind == "fileChange":
        files = [str(_d(c).get("path") or "") for c in item.get("changes") or []]
        return {"name": "apply_patch", "detail": ", ".join(f for f in files if f)}
    return {"name": str(item.get("tool") or "mcp"), "detail": str(item.get("server") or "")}
