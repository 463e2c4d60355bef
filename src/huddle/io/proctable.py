"""The process table at one moment: who runs, under whom, where, with what argv.

Used by the Gemini CLI and OpenCode sources, whose files cannot tell "waiting for your
approval" from "running a tool" or "finished" from "ended": the process can. Built on
`io.procs` (the one reader of /proc); this module only holds a moment's table, its tree
and a once-a-second cache of it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator

from huddle.io import procs


class Proc:
    __slots__ = ("argv", "cwd", "pid", "ppid")

    def __init__(self, pid: int, ppid: int, argv: list[str], cwd: str = ""):
        self.pid, self.ppid, self.argv, self.cwd = pid, ppid, argv, cwd

    def __repr__(self) -> str:
        return f"Proc({self.pid}, ppid={self.ppid}, argv={self.argv[:3]!r})"


class ProcTable:
    """Processes at one moment, by pid."""

    def __init__(self, procs: Iterable[Proc]):
        self.procs = {p.pid: p for p in procs}
        self._kids: dict[int, list[Proc]] | None = None

    def get(self, pid: int) -> Proc | None:
        return self.procs.get(pid)

    def __iter__(self) -> Iterator[Proc]:
        return iter(self.procs.values())

    def children(self, pid: int) -> list[Proc]:
        if self._kids is None:
            self._kids = {}
            for p in self.procs.values():
                self._kids.setdefault(p.ppid, []).append(p)
        return self._kids.get(pid, [])

    def below(self, pid: int) -> list[Proc]:
        """Every process under `pid` (not itself), nearest first."""
        out: list[Proc] = []
        seen = {pid}
        todo = [pid]
        while todo:
            for c in self.children(todo.pop(0)):
                if c.pid not in seen:
                    seen.add(c.pid)
                    out.append(c)
                    todo.append(c.pid)
        return out

    @classmethod
    def current(cls) -> ProcTable | None:
        """This machine's processes now, or None when /proc cannot be read."""
        stats = procs.table()
        if not stats:
            return None
        out = []
        for pid, st in stats.items():
            argv = procs.argv(pid)
            if argv is not None:
                out.append(Proc(pid, st.ppid, argv, procs.cwd(pid)))
        return cls(out)


class ProcCache:
    """A source's view of the process table: read at most once a second; a recorded one
    when set (tests, replays); none when evaluating a past time (the files alone decide)."""

    def __init__(self) -> None:
        self.recorded: ProcTable | None = None
        self._view: ProcTable | None = None
        self._at = 0.0

    def view(self, at: float | None) -> ProcTable | None:
        if self.recorded is not None:
            return self.recorded
        if at is not None:
            return None
        now = time.monotonic()
        if self._view is None or now - self._at > 1.0:
            self._view, self._at = ProcTable.current(), now
        return self._view
