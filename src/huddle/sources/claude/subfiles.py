"""A Claude Code session's sub-agent files: `<session>/subagents/agent-*.jsonl` (and its
`workflows/` folders), 2.0.x agent files beside the session file, and their `.meta.json`
(kind, description, parent, the call that started it), as the session's handle reads them."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from huddle.io.reader import LineReader
from huddle.io.safefile import listdir, plain_file, read_json, stamp
from huddle.model.session import Session

from .folders import subfolders
from .state import SessionState

if TYPE_CHECKING:
    from .parser import FileParser


def read_small_json(path: str) -> dict[str, Any] | None:
    """Small JSON files that may be rewritten in place (safefile: capped, regular files only)."""
    val = read_json(path)
    return val if isinstance(val, dict) else None


class SubFile:
    """One sub-agent transcript with its meta.json."""

    def __init__(self, path: str, agent_id: str):
        self.path = path
        self.agent_id = agent_id
        self.reader = LineReader(path)
        self.meta_path = path[: -len(".jsonl")] + ".meta.json"
        self.meta_mtime: tuple[int, ...] | None = None
        self.parser: FileParser | None = None


class SubAgentFiles:
    """The handle's part that finds its sub-agent files and reads their meta.json (its
    attributes are the handle's)."""

    session: Session
    state: SessionState
    dir: str
    has_dir: bool
    project_agents: dict[str, str]
    subs: dict[str, SubFile]
    sub_dir_mtime: tuple[int, ...]

    def _find_subs(self) -> None:
        for path, agent_id in self.project_agents.items():
            if path not in self.subs:
                self.subs[path] = SubFile(path, agent_id)
                a = self.session.agent(agent_id, parent=self.session.id, file=path)
                a.name, a.file = agent_id, path  # (known before from its caller's progress records)
        if not self.has_dir:
            return
        base = os.path.join(self.dir, "subagents")
        wf = os.path.join(base, "workflows")
        mtime = _folder_stamps(base, wf)
        if mtime is None or mtime == self.sub_dir_mtime:
            return
        self.sub_dir_mtime = mtime
        for folder in [base] + subfolders(wf):
            for entry in listdir(folder):
                name = entry.name
                if entry.path in self.subs:
                    continue  # known: its reader says what is wrong with it now
                # Never a FIFO or a symlink out of the agent's folder (a note says it was skipped).
                if name.startswith("agent-") and name.endswith(".jsonl") and plain_file(entry):
                    path = entry.path
                    if path not in self.subs:
                        agent_id = name[len("agent-") : -len(".jsonl")]
                        self.subs[path] = SubFile(path, agent_id)
                        a = self.session.agent(agent_id, parent=self.session.id, file=path)
                        a.name, a.file = agent_id, path  # (known before from its caller's progress records)

    def _read_meta(self, sf: SubFile) -> None:
        mtime = stamp(sf.meta_path)
        if mtime is None or mtime == sf.meta_mtime:
            return
        meta = read_small_json(sf.meta_path)
        if meta is None:
            return  # half-written: next round
        sf.meta_mtime = mtime
        a = self.session.agent(sf.agent_id)
        a.kind = str(meta.get("agentType") or a.kind or "")
        a.description = str(meta.get("description") or a.description or "")
        a.name = f"{a.kind}: {a.description}" if a.description else (a.kind or sf.agent_id)
        parent = meta.get("parentAgentId")
        a.parent = str(parent) if parent else self.session.id
        a.background = meta.get("requestShape") == "background"
        a.finished = bool(meta.get("finished")) if "finished" in meta else False
        if meta.get("model") and not a.model:
            a.model = str(meta["model"])
        call = meta.get("toolUseId")
        if call:
            a.tool_use_id = str(call)
            self.state.agent_by_call[a.tool_use_id] = sf.agent_id
        self.session.version += 1


def _folder_stamps(base: str, inner: str) -> tuple[int, ...] | None:
    """A folder's stamps and its inner folder's, if there (ctime too: a chmod back makes
    it readable again); None without the folder."""
    try:
        st = os.stat(base)
    except OSError:
        return None
    out: tuple[int, ...] = (st.st_mtime_ns, st.st_ctime_ns)
    try:
        st = os.stat(inner)
        out += (st.st_mtime_ns, st.st_ctime_ns)
    except OSError:
        pass
    return out
