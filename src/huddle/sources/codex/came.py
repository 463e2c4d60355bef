"""A Codex rollout that came (a live server's notice named it, no session reads it yet),
placed without scanning the home (Source.came)."""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING

from .records import read_meta

if TYPE_CHECKING:
    from huddle.sources.base import Handle

    from .records import ThreadInfo
    from .source import CodexSource

DEPTH = 4  # sessions/YYYY/MM/DD/rollout-*.jsonl: as deep as the scan finds one (folders.rollouts)


def came(src: CodexSource, path: str, known: dict[str, Handle]) -> tuple[ThreadInfo, str] | None:
    """A rollout under `sessions/` whose thread starts a session (every `codex` start):
    no parent, no fork, no root but itself, no copy of it elsewhere, no thread already
    naming it; the thread, placed as the scan places it, to be a session of its own. A
    sub-agent's, a fork's, a put-away one, anything else only the scan says (None)."""
    root = src.folders.sessions_dir
    name = os.path.basename(path)
    if not root or not name.startswith("rollout-") or not name.endswith(".jsonl"):
        return None
    parts = os.path.relpath(path, root).split(os.sep)
    if len(parts) > DEPTH or parts[0] in ("", os.curdir, os.pardir) or path in src._threads:
        return None
    try:  # (a link, a FIFO: the scan says what it is)
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
    except OSError:
        return None
    info, _why = read_meta(path)
    if info is None or info.legacy or info.parent or info.forked_from or info.source == "subagent":
        return None
    if (info.root_hint and info.root_hint != info.id) or f"codex:{info.id}" in known:
        return None
    for other in src._threads.values():  # (a copy of it, or a thread of it that came first)
        if info.id in (other.id, other.parent, other.forked_from) or other.root_hint == info.id:
            return None
    src._threads[path] = info
    src._bad.pop(path, None)  # (read well now: what was wrong with it before is forgotten)
    src.system.forget()  # (its writer lock was just taken: read as held, not from the last look)
    return info, path
