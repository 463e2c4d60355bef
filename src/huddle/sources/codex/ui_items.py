"""Codex 0.160+ UI items (`item_completed`: CommandExecution, FileChange, McpToolCall,
CollabAgentToolCall, SubAgentActivity, ContextCompaction, UserMessage): a call's
result with its exit code, who spawned whom, a compaction. A base of ThreadParser
(thread.py), beside LegacyLines (the rollouts from before session_meta)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from huddle.model.tools import SPAWN_TOOLS, WAIT_TOOLS

from . import records as rec
from .results import mcp_ok

if TYPE_CHECKING:
    from .results import Links, Results


class UiItems:
    results: Results
    links: Links

    def order(self, text: str, off: int, n: int) -> None: ...

    def _compaction(self, off: int, n: int, text: str) -> None: ...

    def _ui_item(self, it: rec.Item, off: int, n: int) -> None:
        ty = it.type
        if ty == "UserMessage":
            self.order(rec.parts_text(it.content, ("text",)), off, n)
        elif ty == "CommandExecution":
            self.results.command_result(it.id or "", it.exit_code, it, off, n)
        elif ty == "FileChange":
            self.results.file_change(it.id or "", it.status == "completed", it.changes, off, n)
        elif ty == "McpToolCall":
            err = rec.raw_json(it.error)
            why = str(err.get("message") or "") if isinstance(err, dict) else ""
            self.results.mcp_result(it.id or "", it.status == "completed" and mcp_ok(it.result), why, off, n, it)
        elif ty == "CollabAgentToolCall":
            if it.tool in SPAWN_TOOLS:
                for i, child in enumerate(it.receiver_thread_ids or ()):
                    if i == 0:
                        self.links.link(it.id or "", child)
                for r in it.receiver_agents or ():
                    if r.thread_id and r.agent_nickname:
                        self.links.nickname.setdefault(r.thread_id, r.agent_nickname)
            elif it.tool in WAIT_TOOLS:
                self.results.report_states(rec.raw_json(it.agents_states), off, n, via="wait")
        elif ty == "SubAgentActivity":
            self.links.activity(it.kind, it.id or "", it.agent_thread_id or "", it.agent_path or "")
        elif ty == "ContextCompaction":
            self._compaction(off, n, "")
