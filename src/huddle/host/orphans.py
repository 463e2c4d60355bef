"""Agents whose host was killed outright (kill -9, the OOM killer): never left running
unlogged.

An agent gets SIGTERM when its host dies (process.py arms PR_SET_PDEATHSIG). One that
ignores it, or its own children in sessions of their own, would run on with no one
logging them. So each host, as it starts, looks at the other runs beside its own: a
run whose log was not closed (no `exited` after its last `started`), whose host is
gone and whose agent (pid and start time) still runs, is stopped: its process group
and what it started get SIGTERM, then SIGKILL, and the run's own log says so, in the
dead host's place (`stopping` entries, then `exited` naming the host that stopped it).
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from huddle.io.procs import alive

from . import proctree
from .client import running
from .log import EventLog, LogError, read_entries
from .paths import LOG_NAME

_decode = msgspec.json.Decoder().decode
WAIT = 1.0  # seconds each signal is given (a host starting waits for this)


def lost_agent(path: str) -> tuple[int, int] | None:
    """(pid, start) of the agent a run's log says was started and never exited, when its
    host is gone and the agent still runs; else None."""
    host = agent = None
    for e in _host_entries(path):
        kind = e.get("kind")
        if kind == "host":
            host, agent = (e.get("host_pid"), e.get("host_start")), None
        elif kind == "started":
            agent = (e.get("pid"), e.get("start"))
        elif kind == "exited":
            agent = None
    if agent is None or host is None:
        return None
    (pid, start), (host_pid, host_start) = agent, host
    if not (isinstance(pid, int) and isinstance(start, int) and isinstance(host_pid, int)):
        return None  # (what a log of another shape says is no process of ours)
    if alive(host_pid, host_start) or not alive(pid, start):
        return None  # a living host answers for it; a gone agent needs nothing
    return pid, start


def _host_entries(path: str) -> Iterator[dict[str, Any]]:
    """A run log's entries the host wrote (the agent's own stdout and stderr lines, most
    of a log, passed over unread), each a dict; an entry that is none is skipped."""
    for _seq, line in read_entries(path):
        if b'"kind":"stdout"' in line[:80] or b'"kind":"stderr"' in line[:80]:
            continue
        try:
            e = _decode(line)
        except (msgspec.DecodeError, RecursionError):
            continue
        if isinstance(e, dict):
            yield e


def _closed(path: str) -> bool:
    """Whether a log's last entry is its `exited` (most runs: nothing more to read)."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - 4096))
            tail = f.read()
    except OSError:
        return True
    last = tail.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    return b'"kind":"exited"' in last[:80]


async def sweep(runs: str, me: str, say: Callable[[str], None]) -> list[str]:
    """Stop the agents of `runs` (the folder holding this host's run `me`) that their
    dead hosts left running; returns the runs it stopped."""
    try:
        names = sorted(os.listdir(runs))
    except OSError:
        return []
    done = []
    for name in names:
        d = os.path.join(runs, name)
        if os.path.realpath(d) == os.path.realpath(me) or not os.path.isfile(os.path.join(d, LOG_NAME)):
            continue
        path = os.path.join(d, LOG_NAME)
        if _closed(path) or running(d):
            continue  # ended, or its host answers for it
        found = lost_agent(path)
        if found is None:
            continue
        log = EventLog(path)
        try:
            log.open()  # its dead host's lock went with it; a host starting there now has it
        except LogError:
            continue
        try:
            await _stop(log, found, me)
        except LogError as exc:
            say(f"{d}: its agent was stopped, but its log cannot say so ({exc})")
        finally:
            log.close()
        say(f"stopped the agent (pid {found[0]}) of {d}: its host was killed")
        done.append(d)
    return done


async def _stop(log: EventLog, agent: tuple[int, int], me: str) -> None:
    pid, start = agent
    by = f"the host of {me}"
    tree = proctree.Tree(host_pid=pid)
    tree.seen[pid] = start
    tree.snapshot()  # (what it started: its tree below it, sessions of their own included)
    last = signal.SIGTERM
    for step, sig in (("SIGTERM", signal.SIGTERM), ("SIGKILL", signal.SIGKILL)):
        if not any(alive(p, s) for p, s in tree.seen.items()):
            break
        last = sig
        pids = tree.signal_all(sig, also_group=pid if alive(pid, start) else None)
        log.append("stopping", {"step": step, "by": by, "pids": pids})
        log.sync()
        for _ in range(int(WAIT / 0.05)):
            if not any(alive(p, s) for p, s in tree.snapshot().items()):
                break
            await asyncio.sleep(0.05)
    gone = not alive(pid, start)
    reason = f"its host was killed; stopped by {by}" + ("" if gone else " (it did not end)")
    name = proctree.SIGNAL_NAMES.get(
        last, str(last)
    )  # (its status is its dead host's to know: the signal that ended it)
    log.append("exited", {"status": 128 + last, "signal": name, "reason": reason, "stopped": True, "adopted_by": me})
    log.sync()
