"""The agent's process tree, from /proc: everything it started, including tools
that went into sessions of their own (setsid) and orphans whose parent died.

The host makes itself a child subreaper, so orphans of the tree are re-parented
to the host rather than to init and stay findable as its descendants; it also
remembers every descendant it has seen (pid and start time, so a reused pid is
never mistaken for one of ours).
"""

from __future__ import annotations

import ctypes
import os
import signal

from huddle.io.procs import alive, stat, table

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def descendants(root: int) -> dict[int, int]:
    """pid -> start time of every living descendant of `root` (not root itself)."""
    procs = table()
    children: dict[int, list[int]] = {}
    for pid, st in procs.items():
        children.setdefault(st.ppid, []).append(pid)
    out: dict[int, int] = {}
    todo = list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        if pid in out:
            continue
        st = procs[pid]
        if st.state not in ("Z", "X"):
            out[pid] = st.start
        todo.extend(children.get(pid, ()))
    return out


class Tree:
    """The processes the host is answerable for: its descendants now, plus any seen
    before that still run (in case one escaped the subreaper)."""

    def __init__(self, host_pid: int | None = None):
        self.host_pid = host_pid or os.getpid()
        self.seen: dict[int, int] = {}

    def snapshot(self) -> dict[int, int]:
        now = descendants(self.host_pid)
        self.seen.update(now)
        for pid, start in list(self.seen.items()):
            if pid not in now and not alive(pid, start):
                del self.seen[pid]
        return dict(self.seen)

    def signal_all(self, sig: int, also_group: int | None = None) -> list[int]:
        """Send `sig` to every living process of the tree; return their pids."""
        if also_group:
            try:
                os.killpg(also_group, sig)
            except OSError:
                pass
        hit = []
        for pid, start in self.snapshot().items():
            if alive(pid, start):
                try:
                    os.kill(pid, sig)
                    hit.append(pid)
                except OSError:
                    pass
        return hit

    def reap(self, keep: int | None = None) -> None:
        """Collect adopted orphans that have exited (not `keep`: the agent, whose
        status its own waiter collects)."""
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == keep:
                continue
            st = stat(int(name))
            if st is not None and st.ppid == self.host_pid and st.state == "Z":
                try:
                    os.waitpid(int(name), os.WNOHANG)
                except ChildProcessError:
                    pass

    def living(self) -> list[int]:
        return [pid for pid, start in self.snapshot().items() if alive(pid, start)]


SIGNAL_NAMES = {s.value: s.name for s in signal.Signals}
