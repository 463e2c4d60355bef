"""The model requests that failed and were retried, from Copilot CLI's process logs.

`events.jsonl` keeps no record of a failed model call (an HTTP 429 or 500 the CLI retries:
its `model.call_failure` and `assistant.turn_retry` events are never persisted). The
process's own log does: `logs/process-<start ms>-<pid>.log`, one per process, where
`Workspace initialized: <session id>` names the session it works on (again at each
`/resume` in a TUI) and each failure is a line
`... [WARNING] ... Model provider request failed {"http_status":429,...}`.

A session follows the logs of its own runs: the one started just before each
`session.start` / `session.resume` its file records (verified by the id it names), and
the log of the process holding its lock. Each is read incrementally, the lines that say
neither thing passed over unread (a Python `find`, never a decode).
"""

from __future__ import annotations

import json
import os
import re
from bisect import bisect_left, bisect_right
from typing import Any

from huddle.io.reader import GONE, RESET, SAME, LineReader
from huddle.model import events as ev
from huddle.model.events import Event
from huddle.model.times import parse_time

NAME = re.compile(r"process-([0-9]{10,16})-([0-9]{1,10})\.log$")
OPENED = b"Workspace initialized: "
FAILED = b"request failed"
WINDOW = 300.0  # seconds: a run's session.start or resume comes this soon after its process started
EARLY = 1.0  # (a log's name is its process's start in ms; the first record comes after it)


def _skip(buf: bytes, start: int, end: int) -> bool:
    return buf.find(OPENED, start, end) < 0 and buf.find(FAILED, start, end) < 0


def index(folder: str, names: list[str]) -> list[tuple[float, int, str]]:
    """(start time in seconds, pid, path) of each process log, oldest first."""
    out = []
    for n in names:
        m = NAME.match(n)
        if m is not None:
            out.append((int(m.group(1)) / 1000, int(m.group(2)), os.path.join(folder, n)))
    return sorted(out)


class Followed:
    __slots__ = ("mine", "reader")

    def __init__(self, path: str):
        self.reader = LineReader(path)
        self.mine = False  # the section being read is this session's


class SessionLogs:
    """The process logs one session follows, and the retries read from them not yet said."""

    def __init__(self, sid: str):
        self.sid = sid.encode()
        self.logs: dict[str, Followed] = {}
        self.looked: set[str] = set()  # logs read once and found to name another session only
        self.pending: list[Event] = []  # failures read, waiting for their place in the timeline

    def paths(self) -> list[str]:
        return list(self.logs)

    def follow(self, logs: list[tuple[float, int, str]], at: float | None = None, pid: int | None = None) -> None:
        """Start following the log of process `pid`, or of the run that began just before
        `at`: the nearest log started before it that names this session (the others
        looked at are remembered, never read again for it)."""
        if pid is not None:
            near = [path for _, p, path in logs if p == pid]
        elif at is not None:
            lo, hi = bisect_left(logs, (at - WINDOW,)), bisect_right(logs, (at + EARLY,))  # (sorted by start)
            near = [path for _, _, path in sorted(logs[lo:hi], key=lambda x: abs(at - x[0]))]
        else:
            return
        for path in near:
            if path in self.logs:
                return  # (its run's log is followed already: a resume in the same process)
            if path in self.looked:
                continue
            f = Followed(path)
            self._read(f)
            # the lock holder's log is this session's whatever it says yet (its line naming
            # the session may still be on its way); another run's only if it names it
            if pid is not None or f.mine or any(e.file == path for e in self.pending):
                self.logs[path] = f
                return
            self.looked.add(path)  # (a log of another session's run)

    def refresh(self) -> None:
        """New lines of the logs followed."""
        for f in self.logs.values():
            self._read(f)

    def _read(self, f: Followed) -> None:
        r = f.reader
        try:
            status = r.check()
        except OSError:
            return  # a log that is not a plain file any more: left alone
        if status in (GONE, SAME):
            return
        if status == RESET:
            f.mine = False
        for off, line in r.lines(None, _skip):
            at = line.find(OPENED)
            if at >= 0:
                f.mine = line[at + len(OPENED) :].split(b" ", 1)[0].strip() == self.sid
                continue
            if f.mine and FAILED in line:
                self.pending.append(self._failure(r.path, off, line))

    def _failure(self, path: str, off: int, line: bytes) -> Event:
        t = parse_time(line[:24].decode("ascii", "replace"))
        brace = line.find(b"{")
        detail: dict[str, Any] = {}
        if brace >= 0:
            try:
                got = json.loads(line[brace:])
                detail = got if isinstance(got, dict) else {}
            except (ValueError, RecursionError):
                detail = {}
        status, kind = detail.get("http_status"), detail.get("failure_kind")
        words = "model request failed" + (f": HTTP {status}" if isinstance(status, int) else "")
        if isinstance(kind, str) and kind:
            words += f" ({kind})"
        return Event(kind=ev.ERROR, agent="", t=t, file=path, offset=off, length=len(line), name="retry", text=words)

    def due(self, t: float | None, lead: str) -> list[Event]:
        """The failures that happened by `t` (all of them when `t` is None), for the lead."""
        if not self.pending:
            return []
        if t is None:
            out, self.pending = self.pending, []
        else:
            out = [e for e in self.pending if e.t is None or e.t <= t]
            self.pending = [e for e in self.pending if not (e.t is None or e.t <= t)]
        for e in out:
            e.agent = lead
        return out
