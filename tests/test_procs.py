"""The one answer to "is this process alive" (huddle.io.procs), on real processes:
running, gone, a zombie, a reused pid, another pid namespace, another user's
process that /proc does not show."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from hosting import wait_until
from huddle.io import procs


@pytest.fixture
def sleeper():
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield p
    p.kill()
    p.wait()


def test_a_running_process_is_alive_and_a_reused_pid_is_not(sleeper):
    start = procs.start_time(sleeper.pid)
    assert start is not None
    assert procs.alive(sleeper.pid) is True
    assert procs.alive(sleeper.pid, start) is True
    assert procs.alive(sleeper.pid, str(start)) is True  # Claude Code records it as text
    # The same pid with another start time is another process: the recorded one is gone.
    assert procs.alive(sleeper.pid, start + 1) is False


def test_a_gone_or_zombie_process_is_not_alive():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    wait_until(lambda: getattr(procs.stat(p.pid), "state", "Z") == "Z", "the child to exit")
    assert procs.alive(p.pid) is False  # exited, not yet collected: a zombie
    p.wait()
    assert procs.alive(p.pid) is False
    assert procs.stat(p.pid) is None


@pytest.mark.parametrize("pid", [0, -1, True, "123", None, 1.5])
def test_what_is_not_a_pid_is_not_alive(pid):
    # kill(0) and kill(-1) would ask about whole process groups: never sent
    assert procs.alive(pid) is False


def test_a_pid_of_another_namespace_cannot_be_told():
    mine = procs.own_pid_namespace()
    assert mine.startswith("pid:[")
    assert procs.alive(os.getpid(), pid_domain="pid:[1]") is None
    assert procs.alive(os.getpid(), pid_domain=mine) is True
    assert procs.alive(os.getpid(), pid_domain="") is True  # not recorded: ours


def test_a_process_proc_hides_exists_but_its_start_cannot_be_checked(sleeper):
    """/proc mounted with hidepid=2 shows a user only their own processes: kill(pid, 0)
    then says "not permitted", which means the process exists."""
    code = textwrap.dedent(
        f"""
        import sys
        sys.path[:0] = {sys.path!r}
        from huddle.io import procs
        assert procs.stat({sleeper.pid}) is None, "hidepid did not hide it"
        print(procs.alive({sleeper.pid}), procs.alive({sleeper.pid}, 12345))
        """
    )
    as_root = [] if os.geteuid() == 0 else ["sudo", "-n"]  # a private mount of /proc (scripts/test has sudo)
    cmd = 'mount -t proc -o hidepid=2 proc /proc && exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@"'
    r = subprocess.run(
        [*as_root, "unshare", "-m", "--propagation", "private", "sh", "-c", cmd, "sh", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "None"]


def test_started_at_is_when_the_process_started(sleeper):
    import time

    t = procs.started_at(sleeper.pid)
    assert t is not None and abs(t - time.time()) < 120


def test_the_process_table_holds_this_process_and_its_parent():
    me = os.getpid()
    table = procs.table()
    assert table[me].ppid == os.getppid()
    assert procs.argv(me) and procs.cwd(me) == os.getcwd()


def test_a_suite_sees_only_its_own_processes(monkeypatch):
    """HUDDLE_PROCS_BELOW (conftest sets it to this run's pid) hides every process outside
    the run's tree: another suite's fake agents are not ours to find."""
    assert procs.scope() == int(os.environ[procs.SCOPE_ENV])
    # a process that left our tree (its parent exited: it now hangs below init, as another
    # suite's agents do), and one of ours
    code = "import os, sys, time\nif os.fork():\n    os._exit(0)\nprint(os.getpid(), flush=True)\ntime.sleep(120)"
    orphan = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert orphan.stdout is not None
    pid = int(orphan.stdout.readline())
    orphan.wait()
    orphan.stdout.close()
    try:
        wait_until(lambda: getattr(procs.stat(pid), "ppid", None) not in (None, orphan.pid), "the orphan's new parent")
        assert procs.alive(pid) is False and pid not in procs.table()
        assert os.getpid() in procs.table() and procs.alive(os.getpid()) is True
        monkeypatch.delenv(procs.SCOPE_ENV)  # no scope: the machine's whole table
        assert procs.alive(pid) is True and pid in procs.table()
    finally:
        os.kill(pid, 9)
