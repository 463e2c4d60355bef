"""Sub-agent files of Claude Code 2.0.x: `projects/<folder>/agent-<id>.jsonl`, beside the
session files rather than under `<session>/subagents/` (2.1 on).

Nothing in the name says whose agent a file is: its records' `sessionId` does (the
parent session). A process started with `--resume` or `--continue` writes its warm-up
agents' first record under the new process's session id (a file it leaves empty) and
the next under the resumed one, so every id a file names is a candidate, and the first
one whose session file holds something wins. A file none of whose sessions is there is
an orphan: a session of its own. So is a `<session>/` folder whose transcript is not
there: its sub-agents, under a lead with no file (`lone_folder`).
"""

from __future__ import annotations

import os
import re
import stat
from typing import Any

import msgspec

from huddle.io.safefile import open_regular

TYPE_CHECKING = False
if TYPE_CHECKING:
    from huddle.sources.base import Handle

    from .source import ClaudeSource

HEAD_BYTES = 64 << 10  # the first records name the parent; a sub-agent's prompt fits easily
HEAD_LINES = 8


class _Head(msgspec.Struct):
    sessionId: str | None = None


_decode_head = msgspec.json.Decoder(_Head).decode


def is_agent_file(name: str) -> bool:
    return name.startswith("agent-") and name.endswith(".jsonl")


def agent_id_of(name: str) -> str:
    return name[len("agent-") : -len(".jsonl")]


def session_ids(path: str) -> list[str]:
    """The session ids the first records of an agent file name, in order (none when it
    is empty, unreadable or still being written)."""
    try:
        with open_regular(path) as f:
            head = f.read(HEAD_BYTES)
    except OSError:
        return []
    out: list[str] = []
    for line in head.split(b"\n")[:HEAD_LINES]:
        if not line.strip():
            continue
        try:
            sid = _decode_head(line).sessionId
        except (msgspec.MsgspecError, RecursionError):
            continue  # a cut last line or an odd record: the others say it
        if sid and sid not in out:
            out.append(sid)
    return out


class AgentHeads:
    """The session ids each agent file's first records name (`session_ids`), read once
    per change of the file. A history holds hundreds of 2.0.x agent files that never
    change again, and every scan (each `claude` start makes one) read all their heads:
    now a stat vouches for what an earlier scan read, in this process or, through the
    handle cache (Source.memo), in an earlier one."""

    def __init__(self) -> None:
        self.was: dict[str, list[Any]] = {}  # path -> [size, mtime_ns, ids] as the last scan left it
        self.now: dict[str, list[Any]] = {}

    def begin(self) -> None:
        """A scan starts: what the last one read is what this one may reuse."""
        if self.now:
            self.was, self.now = self.now, {}

    def recall(self, memo: Any) -> None:
        if isinstance(memo, dict) and not self.now:
            self.was = memo

    def keep(self, path: str) -> None:
        """An agent file this scan placed without its head (its session's handle held it):
        what was read of it is kept for the next scan all the same."""
        if path in self.was:
            self.now[path] = self.was[path]

    def ids(self, f: os.DirEntry[str]) -> list[str]:
        try:
            st = f.stat(follow_symlinks=False)
        except OSError:
            return session_ids(f.path)
        k = self.was.get(f.path)
        if isinstance(k, list) and len(k) == 3 and k[0] == st.st_size and k[1] == st.st_mtime_ns:
            ids = [i for i in k[2] if isinstance(i, str)] if isinstance(k[2], list) else session_ids(f.path)
        else:
            ids = session_ids(f.path)
        self.now[f.path] = [st.st_size, st.st_mtime_ns, ids]
        return ids


def choose_parent(candidates: list[str], sizes: dict[str, int]) -> str | None:
    """The parent session among `candidates`: the first whose file holds something,
    else the first whose (empty) file exists, else None (an orphan). `sizes`: session id
    -> its file's size, for the session files of the same project folder."""
    present = [sid for sid in candidates if sid in sizes]
    for sid in present:
        if sizes[sid] > 0:
            return sid
    return present[0] if present else None


def settled(candidates: list[str], parent: str, sizes: dict[str, int]) -> bool:
    """Whether no later size can give this agent file to another session: its parent is
    the first session it names, and holds something (a file does not shrink but by a
    rewrite, which reads everything again)."""
    return bool(candidates) and candidates[0] == parent and sizes.get(parent, 0) > 0


# -- placing them, scan by scan (ClaudeSource.scan) -----------------------------------


def place(
    source: ClaudeSource,
    f: os.DirEntry[str],
    files: dict[str, Any],
    known: dict[str, Handle],
    was: tuple[dict[str, Any], dict[str, Any]],
    found: dict[str, Any],  # (ClaudeHandles, as the scan makes them)
) -> None:
    """A 2.0.x agent file: into its parent session's handle, or an orphan session.
    `files`: the folder's session files by id; `was`: where the held handles had agent
    files, and the candidates of those a size can still move (unsettled)."""
    ClaudeHandle = source.handle_class
    placed, unsettled = was
    heads = source.agent_heads
    if placed.get(f.path) in found and f.path not in unsettled:
        found[placed[f.path]].project_agents[f.path] = agent_id_of(f.name)
        heads.keep(f.path)
        return
    stem = f.name[: -len(".jsonl")]
    key = f"claude:{stem}"
    orphan = known.get(key)
    if isinstance(orphan, ClaudeHandle) and orphan.path == f.path and orphan.candidates:
        candidates = orphan.candidates
        heads.keep(f.path)
    elif f.path in unsettled:
        candidates = unsettled[f.path]
        heads.keep(f.path)
    else:
        candidates = heads.ids(f)
    sizes = {}
    for sid in candidates:
        entry = files.get(sid)
        if entry is not None:
            try:
                sizes[sid] = entry.stat(follow_symlinks=False).st_size
            except OSError:
                pass
    parent = choose_parent(candidates, sizes)
    if parent is not None and f"claude:{parent}" in found:
        h = found[f"claude:{parent}"]
        h.project_agents[f.path] = agent_id_of(f.name)
        if not settled(candidates, parent, sizes):
            h.unsettled[f.path] = candidates
        return
    if not isinstance(orphan, ClaudeHandle) or orphan.path != f.path:
        orphan = ClaudeHandle(source, f.path, stem)
    orphan.candidates = candidates
    orphan.has_dir = False
    orphan.session.parent_session = candidates[0] if candidates else None
    found[key] = orphan


def regroup(source: ClaudeSource, placed: dict[str, str], known: dict[str, Any], found: dict[str, Any]) -> None:
    """A held session that lost an agent file to another is read again from its start
    (as a first read gives it), not kept with what it read from that file. `placed`:
    agent file -> the key of the held session it was in before this scan."""
    ClaudeHandle = source.handle_class
    now = {path: key for key, h in found.items() if isinstance(h, ClaudeHandle) for path in h.project_agents}
    for key in {k for path, k in placed.items() if now.get(path) != k}:
        h = found.get(key)
        if h is known.get(key) and isinstance(h, ClaudeHandle):
            fresh = ClaudeHandle(source, h.path, h.session.id)
            fresh.has_dir, fresh.project_agents, fresh.unsettled = h.has_dir, h.project_agents, h.unsettled
            found[key] = fresh


_SESSION_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def lone_folder(src: ClaudeSource, project: str, sid: str, known: dict[str, Handle], found: dict[str, Handle]) -> None:
    """A session's folder whose transcript is not there (deleted, or a copy that left it
    out): its sub-agents are a session still, under a lead with no file (the handle says
    the file is missing). A handle that had read the transcript holds what it said: a
    fresh one."""
    path = os.path.join(project, f"{sid}.jsonl")
    try:  # (a folder, not a symlink to one: as the listing says)
        if not _SESSION_ID.match(sid) or not stat.S_ISDIR(os.lstat(os.path.join(project, sid, "subagents")).st_mode):
            return
    except OSError:
        return
    key = f"claude:{sid}"
    h = known.get(key)
    if not isinstance(h, src.handle_class) or h.path != path or h.reader.cursor.ino:
        h = src.handle_class(src, path, sid)
    h.has_dir, h.project_agents, h.unsettled = True, {}, {}
    found[key] = h
