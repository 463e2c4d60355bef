"""Processes, from /proc: is one alive, when did it start, who are its children.

The one answer to "is this process alive" for every caller (the Claude registry,
Vibe's locks, the host's process tree, the status line, the demo):

- a pid of another pid namespace (Claude Code's `pidDomain`) cannot be looked up
  here: unknown (None), never a guess;
- a process /proc shows: alive unless it is a zombie, and, when its start time is
  given (field 22 of /proc/<pid>/stat, clock ticks since boot), only if it is the
  same process: a reused pid is dead for us;
- no /proc entry: `kill(pid, 0)` decides. "No such process" is dead; "not
  permitted" (another user's process, /proc mounted with hidepid) means it exists:
  alive, or unknown when its start time should have been checked and cannot be.

A test suite sees only its own processes: with HUDDLE_PROCS_BELOW=<pid> in the
environment (tests/conftest.py sets it to the test run's own pid, and every process it
starts inherits it), the table and `alive()` show only that process and those below
it, so another suite's fake agents on the same machine are not ours to find.

Read-only, standard library only: the status line imports it.
"""

from __future__ import annotations

import os

SCOPE_ENV = "HUDDLE_PROCS_BELOW"


class Stat:
    """What /proc/<pid>/stat says of a process that matters here."""

    __slots__ = ("ppid", "start", "state")

    def __init__(self, ppid: int, state: str, start: int) -> None:
        self.ppid = ppid
        self.state = state  # R, S, D, Z (zombie), X (dead)...
        self.start = start  # clock ticks after boot: with the pid, names one process


def stat(pid: int) -> Stat | None:
    """Parent pid, state letter and start time (clock ticks since boot) of a process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # the command name is in parentheses and may hold spaces or ')'
    rest = data[data.rfind(b")") + 2 :].split()
    try:
        return Stat(int(rest[1]), rest[0].decode(), int(rest[19]))
    except (IndexError, ValueError):
        return None


def start_time(pid: int) -> int | None:
    st = stat(pid)
    return st.start if st is not None else None


def own_pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def scope() -> int | None:
    """The pid whose process tree is all this process may see (HUDDLE_PROCS_BELOW), or None."""
    raw = os.environ.get(SCOPE_ENV, "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else None


def in_scope(pid: int, root: int | None = None, parents: dict[int, int] | None = None) -> bool:
    """Whether `pid` is the scope's root or below it (always, without a scope). Read from
    /proc, a chain that cannot be read to its end (a process /proc hides) is not filtered
    out; from a table's `parents`, one that leaves the table is."""
    root = scope() if root is None else root
    if root is None:
        return True
    seen: set[int] = set()
    while pid > 1 and pid not in seen:
        if pid == root:
            return True
        seen.add(pid)
        if parents is not None:
            if pid not in parents:
                return False
            pid = parents[pid]
        else:
            st = stat(pid)
            if st is None:
                return True
            pid = st.ppid
    return pid == root


def alive(pid: object, start: object = None, pid_domain: object = None) -> bool | None:
    """True, False, or None when it cannot be told (see the module doc). `start` is
    the start time as recorded (ticks, as int or text); `pid_domain` the pid namespace
    the pid was recorded in (`pid:[4026531836]`, as Claude Code writes it)."""
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return False  # kill(0) or kill(-1) would ask about whole groups
    if isinstance(pid_domain, str) and pid_domain:
        ns = own_pid_namespace()
        if ns and not pid_domain.endswith(ns):
            return None
    want = None if start is None or start == "" else str(start)
    st = stat(pid)
    if st is not None and not in_scope(pid):
        return False  # another suite's process (HUDDLE_PROCS_BELOW): not there for us
    if st is not None:
        if st.state in ("Z", "X"):
            return False
        return want is None or str(st.start) == want
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True if want is None else None  # it exists; whether it is the same one cannot be read
    except OSError:
        return False
    # /proc has no entry but the process answers (no /proc here): its start time cannot be checked
    return True if want is None else None


def boot_time() -> float | None:
    try:
        with open("/proc/stat", "rb") as f:
            for line in f:
                if line.startswith(b"btime "):
                    return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def started_at(pid: int) -> float | None:
    """When a process started, in unix seconds; None if it cannot be told."""
    ticks = start_time(pid)
    boot = boot_time()
    if ticks is None or boot is None:
        return None
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def table() -> dict[int, Stat]:
    """Every process /proc shows."""
    out: dict[int, Stat] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if name.isdigit():
            st = stat(int(name))
            if st is not None:
                out[int(name)] = st
    root = scope()
    if root is not None:
        parents = {pid: st.ppid for pid, st in out.items()}
        out = {pid: st for pid, st in out.items() if in_scope(pid, root, parents)}
    return out


def argv(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return None


def cwd(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return ""


def held_flocks() -> dict[str, int | None] | None:
    """Held flocks from /proc/locks, keyed "major:minor:inode" -> pid; None without /proc."""
    try:
        with open("/proc/locks", "rb") as f:
            data = f.read().decode("ascii", "replace")
    except OSError:
        return None
    out: dict[str, int | None] = {}
    for line in data.splitlines():
        parts = line.split()
        if len(parts) < 6 or parts[1] == "->" or parts[1] != "FLOCK":
            continue
        try:
            pid = int(parts[4])
            maj, mino, ino = parts[5].split(":")
            out[f"{int(maj, 16)}:{int(mino, 16)}:{int(ino)}"] = pid
        except ValueError:
            continue
    return out
