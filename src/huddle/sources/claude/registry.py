"""Claude Code's per-process registry: `$CLAUDE_CONFIG_DIR/sessions/<pid>.json`.

Each running Claude Code process keeps one file, rewritten in place when its status
changes (busy / waiting / shell / idle, `waitingFor`). A file left behind by a
killed process is recognised by checking the pid and its start time (`procStart`,
field 22 of /proc/<pid>/stat), so a reused pid is not mistaken for the session.
Read-only: huddle never takes or touches these files.
"""

from __future__ import annotations

import os

from huddle.io.procs import alive as process_alive
from huddle.io.safefile import forget, read_json, remember, stamp


def _read(path: str) -> dict | None:
    # Rewritten in place, not atomically: a read may catch it half-written (read_json
    # retries once); if still bad, ignore it for this round.
    val = read_json(path)
    if isinstance(val, dict) and isinstance(val.get("sessionId"), str):
        return val
    return None


class Registry:
    def __init__(self, folder: str):
        self.folder = folder
        self.entries: dict[str, dict] = {}  # file name -> parsed content
        self._mtimes: dict[str, tuple[int, ...]] = {}
        self.by_session: dict[str, dict] = {}
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
                self.entries.pop(n, None)  # unknown shape or half-written: transcript decides
                self._mtimes.pop(n, None)
                continue
            self._mtimes[n] = mtime
            self.entries[n] = val
        by: dict[str, dict] = {}
        for val in self.entries.values():
            sid = val["sessionId"]
            prev = by.get(sid)
            if prev is None or (val.get("updatedAt") or 0) > (prev.get("updatedAt") or 0):
                by[sid] = val
        prev = self.by_session
        self.moved = {sid for sid in prev.keys() | by.keys() if prev.get(sid) != by.get(sid)}
        self.by_session = by

    def for_session(self, session_id: str, at: float | None = None) -> dict | None:
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


def live_signals(h, at: float | None = None) -> dict:
    """Claude Code's own word on a session's process (ClaudeHandle.live): its
    sessions/<pid>.json (status, waitingFor), checked against the pid and its start time so
    a file left by a killed process reads as ended; and its background agents still at work."""
    reg = h.source.registry
    info = reg.for_session(h.session.id, at=at)
    out: dict = {"permission_mode": h.state.permission_mode}
    if info is not None:
        out["registry"] = info
        out["pid"] = info["pid"]
        out["alive"] = info["alive"]
        if info["alive"] is not False:
            out["status"] = info["status"] or "idle"
            out["waiting_for"] = info["waiting_for"]
            out["since"] = info["since"]
    elif reg.exists():
        out["alive"] = False  # this Claude Code keeps a registry: no file, no process
    agents = h.session.agents
    running = [
        sf.agent_id
        for sf in h.subs.values()
        if agents[sf.agent_id].background and agents[sf.agent_id].finished is False
    ]
    if running:
        out["background_agents"] = running
    return out
