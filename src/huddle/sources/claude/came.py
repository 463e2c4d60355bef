"""A Claude Code file that came (a live server's notice named it, no session reads it
yet), placed without scanning the home (Source.came)."""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING

from .folders import is_dir
from .project_agents import is_agent_file

if TYPE_CHECKING:
    from huddle.sources.base import Handle

    from .source import ClaudeSource


def came(src: ClaudeSource, path: str, known: dict[str, Handle]) -> Handle | None:
    """A file a notice named that no session reads yet, placed as the scan places it
    (Source.came): a file in an awake session's own folder (a sub-agent's transcript, a
    tool's output) is that session's; a `<id>.jsonl` right in a project folder with no
    folder of its own and no 2.0.x agent file beside it (an agent file may name it: only
    the scan places those) is a new session; anything else only the scan says."""
    parts = os.path.relpath(path, src.projects).split(os.sep)
    if len(parts) < 2 or parts[0] in ("", os.curdir, os.pardir):
        return None
    folder = os.path.join(src.projects, parts[0])
    if len(parts) > 2:  # (a file in a session's own folder: a sub-agent's, a tool's output)
        h = known.get(f"claude:{parts[1]}")
        if not isinstance(h, src.handle_class) or h.path != os.path.join(folder, f"{parts[1]}.jsonl"):
            return None
        h.has_dir = is_dir(h.dir)
        return h if h.has_dir else None
    # a `<id>.jsonl` right in a project folder with no folder of its own and no 2.0.x
    # agent file beside it (an agent file may name it: only the scan places those)
    name = parts[1]
    sid = name[: -len(".jsonl")]
    if not name.endswith(".jsonl") or is_agent_file(name):
        return None
    try:  # (a link, a FIFO: the scan says what it is)
        if os.path.lexists(os.path.join(folder, sid)) or not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        if any(is_agent_file(n) for n in os.listdir(folder)):
            return None
    except OSError:
        return None
    h = src.handle_class(src, path, sid)
    h.has_dir, h.project_agents, h.unsettled = False, {}, {}
    return h
