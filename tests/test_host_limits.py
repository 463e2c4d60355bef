"""Limits of the host (issue 34): an agent that never reads its stdin does not let `send`
buffer without bound (434 MB in the attack), and an agent whose host was killed with
kill -9 is stopped (it dies with its host, or the next host stops it and says so in its
run's log), never left running unlogged. Real processes."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys

import pytest

from hosting import Raw, agent, entries, start_host, wait_until
from huddle.host.serving import STDIN_MAX
from huddle.io import procs

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>

DEAF = agent(  # never reads its stdin
    "import sys, time\nprint('ready', flush=True)\nwhile True: time.sleep(1)\n"
)


def _pid_agent(ignore_term: bool) -> list[str]:
    return agent(
        "import os, signal, sys, time\n"
        + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if ignore_term else "")
        + "print('ready', flush=True)\n"
        "while True: time.sleep(1)\n"
    )


def _ready(d) -> None:
    """The agent said it is up (an agent that writes after its host is gone dies of the
    broken pipe: only one that is quiet then shows what happens to it)."""
    wait_until(lambda: any(e.get("text") == "ready" for e in entries(d)), "the agent")


def test_send_to_an_agent_that_never_reads_is_bounded(tmp_path):
    d = tmp_path / "run"
    host = start_host(d, *DEAF)
    _ready(d)
    c = Raw(d)
    line = {"type": "user", "message": {"role": "user", "content": "x" * (256 << 10)}}
    sent = refused = 0
    for _ in range(4 * STDIN_MAX // (256 << 10) + 8):
        c.send({"op": "write", "json": line})
        reply = c.reply()
        if reply["ok"]:
            sent += 1
        else:
            refused += 1
            assert "stdin" in reply["error"] and "not reading" in reply["error"], reply
    assert refused and sent * (256 << 10) <= STDIN_MAX + (1 << 20)  # (a pipe holds 64 KB to 1 MB)
    logged = [e for e in entries(d) if e["kind"] == "stdin"]
    assert len(logged) == sent  # what was refused was not logged as sent
    c.send({"op": "status"})
    assert c.reply()["running"] is True
    c.send({"op": "stop", "now": True})
    c.reply()
    assert host.wait(timeout=30) is not None


def test_an_agent_dies_with_a_host_killed_outright(tmp_path):
    d = tmp_path / "runs" / "a"
    host = start_host(d, *_pid_agent(ignore_term=False))
    _ready(d)
    pid, start = entries(d)[1]["pid"], entries(d)[1]["start"]
    host.send_signal(signal.SIGKILL)
    host.wait(timeout=30)
    wait_until(lambda: not procs.alive(pid, start), "the agent to go with its host", limit=20)


@pytest.fixture
def subreaper():
    """This process adopts its orphans, as init would: an agent whose host was killed
    stays in the test's own process tree, which is all huddle.io.procs sees in a test
    run (HUDDLE_PROCS_BELOW)."""
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0, os.strerror(ctypes.get_errno())
    try:
        yield
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def test_the_next_host_stops_an_agent_its_host_left_running(tmp_path, subreaper):
    runs = tmp_path / "runs"
    d = runs / "a"
    host = start_host(d, *_pid_agent(ignore_term=True))
    _ready(d)
    pid, start = entries(d)[1]["pid"], entries(d)[1]["start"]
    host.send_signal(signal.SIGKILL)
    host.wait(timeout=30)
    assert procs.alive(pid, start)  # it shrugged off its host's death (SIGTERM ignored)
    other = start_host(runs / "b", sys.executable, "-c", "pass")
    wait_until(lambda: not procs.alive(pid, start), "the next host to stop it", limit=30)
    os.waitpid(pid, 0)  # (adopted: ours to reap)
    other.wait(timeout=30)
    log = entries(d)
    assert [e["seq"] for e in log] == list(range(1, len(log) + 1))
    last = log[-1]
    assert last["kind"] == "exited" and last["stopped"] is True, last
    assert "host" in last["reason"] and str(runs / "b") in json.dumps(last)
    assert os.path.exists(d / "events.jsonl")
