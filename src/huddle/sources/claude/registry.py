"""Claude Code's per-process registry: `$CLAUDE_CONFIG_DIR/sessions/<pid>.json`.

Each running Claude Code process keeps one file, rewritten in place when its status
changes (busy / waiting / shell / idle, `waitingFor`). A file left behind by a
killed process is recognised by checking the pid and its start time (`procStart`,
field 22 of /proc/<pid>/stat), so a reused pid is not mistaken for the session.
Read-only: huddle never takes or touches these files.
"""

from __future__ import annotations

import os
from typing import Any

from huddle.io.procs import alive as process_alive
from huddle.io.safefile import forget, read_json, remember, stamp
from huddle.model.signals import Live, Pending


def _read(path: str) -> dict[str, Any] | None:
    # Rewritten in place, not atomically: a read may catch it half-written (read_json
    # retries once); if still bad, ignore it for this round.
    val = read_json(path)
    if isinstance(val, dict) and isinstance(val.get("sessionId"), str):
        return val
    return None


class Registry:
    def __init__(self, folder: str):
        self.folder = folder
        self.entries: dict[str, dict[str, Any]] = {}  # file name -> parsed content
        self._mtimes: dict[str, tuple[int, ...]] = {}
        self.by_session: dict[str, dict[str, Any]] = {}
        self.moved: set[str] = set()  # session ids whose entry changed at the last refresh
        self.present = False

    def exists(self) -> bool:
        """Whether this Claude Code keeps a registry at all (2.1.139 and later), as of
        the last refresh."""
        return self.present

    def refresh(self) -> None:
        try:
            names = [n for n in os.listdir(self.folder) if n.endswith(".json")]
            self.present = True
            forget(self.folder)
        except OSError as exc:
            remember(self.folder, exc)  # unreadable (not missing): a note
            names = []
            self.present = False
        seen = set(names)
        for n in list(self.entries):
            if n not in seen:
                del self.entries[n]
                self._mtimes.pop(n, None)
        for n in names:
            path = os.path.join(self.folder, n)
            mtime = stamp(path)
            if mtime is None:
                continue
            if self._mtimes.get(n) == mtime:
                continue
            val = _read(path)
            if val is None:
                # half-written (rewritten in place) or of an unknown shape: the last good
                # reading stands until a good one replaces it (or the file goes), so a row
                # never flickers to "ended"; its stamp is left old, so it is read again
                continue
            self._mtimes[n] = mtime
            self.entries[n] = val
        by: dict[str, dict[str, Any]] = {}
        for val in self.entries.values():
            sid = val["sessionId"]
            prev = by.get(sid)
            if prev is None or (val.get("updatedAt") or 0) > (prev.get("updatedAt") or 0):
                by[sid] = val
        prev = self.by_session
        self.moved = {sid for sid in prev.keys() | by.keys() if prev.get(sid) != by.get(sid)}
        self.by_session = by

    def for_session(self, session_id: str, at: float | None = None) -> dict[str, Any] | None:
        """The registry's word on a session: status, waitingFor, pid, alive.
        With `at`, the file is trusted as it is (its process is long gone)."""
        val = self.by_session.get(session_id)
        if val is None:
            return None
        pid = val.get("pid")
        alive: bool | None
        if at is not None:
            alive = True
        elif isinstance(pid, int):
            alive = process_alive(pid, val.get("procStart"), val.get("pidDomain"))
        else:
            alive = None  # no pid: the transcript decides
        since = val.get("statusUpdatedAt") or val.get("updatedAt")
        return {
            "pid": pid,
            "status": val.get("status"),
            "waiting_for": val.get("waitingFor"),
            "since": since / 1000 if isinstance(since, (int, float)) else None,
            "alive": alive,
            "kind": val.get("kind"),
            "entrypoint": val.get("entrypoint"),
            "name": val.get("name"),
        }

    def signals(self, session_id: str, at: float | None, background: tuple[str, ...], **facts: Any) -> Live:
        """A session's live signals from its entry (`Handle.live`): alive, pid, its status
        word and the prompt it waits on; no entry in a registry that is kept: no process."""
        info = self.for_session(session_id, at=at)
        if info is None:
            return Live(alive=False if self.exists() else None, background=background, facts=facts)
        facts["registry"] = info
        if info["alive"] is False:
            return Live(alive=False, pid=info["pid"], background=background, facts=facts)
        status = info["status"] or "idle"
        since = info["since"]
        pending = Pending(words=info["waiting_for"] or "", since=since) if status == "waiting" else None
        return Live(
            alive=info["alive"],
            pid=info["pid"],
            status=status,
            status_since=since,
            pending=pending,
            background=background,
            facts=facts,
        )
