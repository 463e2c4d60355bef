"""Vibe's session locks: `<root>/active/<id>.lock` (empty, flock'd) and
`<id>.lock.json` (`process_id`, `acquired_at`), held while a session (or a
sub-agent) is open and removed when it closes. The only on-disk sign of life.

Read-only: huddle never takes, tests or touches the locks. A lock left by a killed
process is told apart by its pid: gone, or a process that started after the lock
was taken (the pid was reused).
"""

from __future__ import annotations

import os
from typing import Any

from huddle.io import procs
from huddle.io.safefile import forget, read_json, remember, stamp
from huddle.model.signals import AgentLive, Live
from huddle.model.times import parse_time


def _read_json(path: str) -> dict[str, Any] | None:
    val = read_json(path)  # written whole, but a half-written one is re-read once
    return val if isinstance(val, dict) else None


def pid_alive(pid: int, acquired: float | None) -> bool | None:
    """The lock's process: alive, gone, or None when it cannot be told (procs.alive)."""
    up = procs.alive(pid)
    if not up:
        return up
    started = procs.started_at(pid)
    # a process that started after the lock was taken is a newer one with the old pid
    return started is None or acquired is None or started <= acquired + 5


class Lock:
    __slots__ = ("acquired_at", "held", "id", "pid")

    def __init__(self, id: str, info: dict[str, Any], held: bool):
        self.id = id
        pid = info.get("process_id")
        self.pid = pid if isinstance(pid, int) else None
        self.acquired_at = parse_time(info.get("acquired_at")) if isinstance(info.get("acquired_at"), str) else None
        self.held = held  # the lock file itself is there too


class Locks:
    def __init__(self, folder: str):
        self.folder = folder
        self.exists = False
        self.locks: dict[str, Lock] = {}
        self._mtimes: dict[str, tuple[int, ...]] = {}
        self.moved: set[str] = set()  # session ids whose lock changed at the last refresh

    def refresh(self) -> None:
        before = {sid: (lk.pid, lk.acquired_at, lk.held) for sid, lk in self.locks.items()}
        self._refresh()
        after = {sid: (lk.pid, lk.acquired_at, lk.held) for sid, lk in self.locks.items()}
        self.moved = {sid for sid in before.keys() | after.keys() if before.get(sid) != after.get(sid)}

    def _refresh(self) -> None:
        try:
            names = set(os.listdir(self.folder))
            forget(self.folder)
        except OSError as exc:
            remember(self.folder, exc)  # unreadable (not missing): a note
            self.exists, self.locks, self._mtimes = False, {}, {}
            return
        self.exists = True
        found: dict[str, Lock] = {}
        for n in names:
            if not n.endswith(".lock.json"):
                continue
            sid = n[: -len(".lock.json")]
            path = os.path.join(self.folder, n)
            mtime = stamp(path)
            if mtime is None:
                continue
            old = self.locks.get(sid)
            if old is not None and self._mtimes.get(sid) == mtime:
                old.held = sid + ".lock" in names
                found[sid] = old
                continue
            info = _read_json(path)
            if info is None:
                continue
            self._mtimes[sid] = mtime
            found[sid] = Lock(sid, info, sid + ".lock" in names)
        self.locks = found

    def alive(self, sid: str, at: float | None = None) -> bool | None:
        """Is a process holding this session? With `at`, the files are trusted as they
        are (their processes are long gone). None when this Vibe keeps no locks here."""
        lock = self.locks.get(sid)
        if lock is None or not lock.held:
            return False if self.exists else None
        if at is not None:
            return True
        if lock.pid is None:
            return None
        return pid_alive(lock.pid, lock.acquired_at)

    def info(self, sid: str) -> dict[str, Any] | None:
        lock = self.locks.get(sid)
        if lock is None:
            return None
        return {"pid": lock.pid, "acquired_at": lock.acquired_at, "held": lock.held}

    def signals(self, sid: str, at: float | None, agents: dict[str, AgentLive] | None = None, **facts: object) -> Live:
        """A handle's `live()`: alive, the lock's pid and when it was taken (its process
        started then), the lock as it is, and what else the handle knows."""
        lock = self.info(sid)
        if lock is not None:
            facts["lock"] = lock
        return Live(
            alive=self.alive(sid, at),
            pid=lock["pid"] if lock is not None else None,
            started=lock["acquired_at"] if lock is not None else None,
            agents=agents or {},
            facts=facts,
        )
