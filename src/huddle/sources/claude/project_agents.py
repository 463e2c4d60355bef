"""Sub-agent files of Claude Code 2.0.x: `projects/<folder>/agent-<id>.jsonl`, beside the
session files rather than under `<session>/subagents/` (2.1 on).

Nothing in the name says whose agent a file is: its records' `sessionId` does (the
parent session). A process started with `--resume` or `--continue` writes its warm-up
agents' first record under the new process's session id (a file it leaves empty) and
the next under the resumed one, so every id a file names is a candidate, and the first
one whose session file holds something wins. A file none of whose sessions is there is
an orphan: a session of its own.
"""

from __future__ import annotations

import msgspec

from huddle.io.safefile import open_regular

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


def choose_parent(candidates: list[str], sizes: dict[str, int]) -> str | None:
    """The parent session among `candidates`: the first whose file holds something,
    else the first whose (empty) file exists, else None (an orphan). `sizes`: session id
    -> its file's size, for the session files of the same project folder."""
    present = [sid for sid in candidates if sid in sizes]
    for sid in present:
        if sizes[sid] > 0:
            return sid
    return present[0] if present else None
