"""Fences (live.fences): a command's file in the server's fence folder, read from the
same inotify queue as the agents' folders, says every write made before it was named.
Real folders, real writes, the real kernel; then the command and a real server."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from huddle.io import served
from huddle.live.fences import Fences
from huddle.live.notices import Notices
from test_status_served import answered_by_server, append_response, fresh, server  # noqa: F401 (the fixture)

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/sys/fs/inotify"), reason="Linux's inotify only")


def watching(tmp_path: Path, kernel: bool = True) -> tuple[Notices, list[threading.Thread], Path, Path]:
    root, fences = tmp_path / "projects", tmp_path / "run" / "fences"
    root.mkdir()
    fences.mkdir(parents=True)
    threads: list[threading.Thread] = []
    notices = Notices(threading.Event(), threads, kernel=kernel)
    notices.fences.folder = str(fences)
    notices.ensure([str(root)], lambda: [str(root)])
    assert notices.ready.wait(30) and notices.watching
    return notices, threads, root, fences


def stopped(notices: Notices, threads: list[threading.Thread]) -> None:
    notices.stop()
    for t in threads:
        t.join(30)


def test_what_was_written_before_a_fence_is_named_when_it_is_seen(tmp_path):
    notices, threads, root, fences = watching(tmp_path)
    try:
        assert notices.since_ns > 0 and notices.fencing
        for i in range(20):  # (each time: the writes named by the time its fence is seen, never later)
            files = [root / f"s{i}-{k}.jsonl" for k in range(3)]
            for f in files:
                f.write_text("{}\n")
            fence = fences / f"f{i}"
            fence.touch()
            assert notices.fences.wait(fence.name, 30) == notices.since_ns
            named, _told = notices.take()
            assert named is not None and {str(f) for f in files} <= named
            assert not any(p.startswith(str(fences)) for p in named)  # (a fence is no agent's file)
    finally:
        stopped(notices, threads)


def test_a_fence_never_made_is_not_seen_and_lost_notices_end_a_wait(tmp_path):
    notices, threads, _root, _fences = watching(tmp_path)
    try:
        assert notices.fences.wait("never", 0.05) is None
        ended: list[int | None] = []
        waiting = threading.Thread(target=lambda: ended.append(notices.fences.wait("never", 30)))
        waiting.start()
        deadline = time.monotonic() + 30
        while waiting.is_alive() and time.monotonic() < deadline:
            notices.fences.lost()  # (a restart of the watches, an overflow)
            waiting.join(0.05)
        assert ended == [None]
    finally:
        stopped(notices, threads)


def test_watchfiles_notices_take_no_fence(tmp_path):
    notices, threads, _root, fences = watching(tmp_path, kernel=False)
    try:
        assert notices.since_ns == 0 and not notices.fencing
        (fences / "f").touch()
        assert notices.fences.wait("f", 0.5) is None  # (its batches say nothing of order: the command stats)
    finally:
        stopped(notices, threads)


def test_fences_apart_from_the_agents_files():
    f = Fences()
    assert f.apart({"/a/b.jsonl"}) == ({"/a/b.jsonl"}, [])  # (no fence folder: nothing set apart)
    f.folder = "/h/run/fences"
    rest, names = f.apart({"/a/b.jsonl", "/h/run/fences", "/h/run/fences/9-1", "/h/run/fencesX"})
    assert rest == {"/a/b.jsonl", "/h/run/fencesX"} and names == ["9-1"]


ASK = """
import os, sys
from huddle.io import served
got = served.ask(os.environ["HUDDLE_HOME"], "status", fenced=True)
sys.exit(3) if got is None else sys.stdout.buffer.write(bytes(got[0]))
"""


def fenced(env: dict[str, str]) -> bytes | None:
    """A fenced question asked as the command asks it (a process of its own: its
    environment, huddle's code as a command loads it); None if declined."""
    out = subprocess.run([sys.executable, "-c", ASK], env=env, capture_output=True, timeout=120)
    assert out.returncode in (0, 3), out.stderr
    return out.stdout if out.returncode == 0 else None


def test_a_command_leaves_a_fence_and_states_nothing(server, tmp_path):  # noqa: F811
    proc, env, config = server
    folder = Path(served.fence_folder(env["HUDDLE_HOME"]))
    assert folder.is_dir() and oct(folder.parent.stat().st_mode & 0o777) == "0o700"
    deadline = time.monotonic() + 60  # (its watches take the fence folder in a round after the start)
    while fenced(env) is None and time.monotonic() < deadline:
        pass
    f = append_response(config)
    said = fenced(env)
    assert said is not None, "the server declined a fence"
    assert said + b"\n" == fresh(env, tmp_path) and f.stem.encode() in said  # (the command adds the newline)
    assert os.listdir(folder) == []  # (the command's own fence, removed)
    assert answered_by_server(env) == fresh(env, tmp_path)  # (the command's way: the same)
    os.rmdir(folder)  # (a server that takes no fences: the command asks as before)
    assert fenced(env) is None
    assert answered_by_server(env) == fresh(env, tmp_path)
    assert proc.poll() is None
