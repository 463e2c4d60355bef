"""huddle.io.apart: a child run apart ends with its parent, however the parent ends.

Real processes throughout: a parent Python that runs a child apart, the child forks a
worker as the first read's does, and the parent is then stopped or killed outright."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from huddle.io import procs

# The child's work: fork a worker (as a first read's forked readers), say both pids, and
# work on (wait) until ended.
LINGER = """
import os, threading

def linger(argument, say):
    worker = os.fork()
    if worker == 0:
        threading.Event().wait()
        os._exit(0)
    say(f"pids {os.getpid()} {worker} {argument}")
    threading.Event().wait()
"""

# The parent: a server's side of run_apart, saying what it heard; stopped when its
# stdin says "stop".
PARENT = """
import os, select, sys
from huddle.io.apart import run_apart

def stopping():
    return bool(select.select([sys.stdin], [], [], 0)[0]) and sys.stdin.readline().strip() == "stop"

print("result", run_apart("linger", "linger", "told", stopping, lambda line: print(line, flush=True)), flush=True)
"""


def _line(proc: subprocess.Popen, within: float = 30.0) -> str:
    """The parent's next line of output, within `within` seconds."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        assert sel.select(within), "the parent said nothing"
    return proc.stdout.readline().decode().strip()


def _ended(pids: list[int], within: float = 20.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(procs.alive(p) for p in pids):
            return True
        time.sleep(0.05)  # (polled until a deadline)
    return False


@pytest.fixture
def parent(tmp_path):
    (tmp_path / "linger.py").write_text(textwrap.dedent(LINGER))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(PARENT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    started: list[int] = []
    try:
        yield proc, started
    finally:
        for pid in started:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()


def _pids(proc: subprocess.Popen, started: list[int]) -> list[int]:
    words = _line(proc).split()
    assert words[0] == "pids" and words[3] == "told"  # (the argument reached the child whole)
    started += [int(words[1]), int(words[2])]
    assert all(procs.alive(p) for p in started)
    return started


def test_a_child_ends_with_its_group_when_its_parent_is_killed_outright(parent):
    proc, started = parent
    pids = _pids(proc, started)
    proc.kill()  # SIGKILL: the parent's own clean-up never runs
    proc.wait()
    assert _ended(pids), "the child (or its worker) read on for a parent that was gone"


def test_a_stopped_parent_ends_the_child_and_says_so(parent):
    proc, started = parent
    pids = _pids(proc, started)
    assert proc.stdin is not None
    proc.stdin.write(b"stop\n")
    proc.stdin.flush()
    assert _line(proc) == "result stopped"
    assert proc.wait(timeout=30) == 0
    assert _ended(pids)
