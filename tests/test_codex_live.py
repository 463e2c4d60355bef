"""Codex liveness and attention states on the 22 live snapshots of real 0.169.0 sessions
(each with its truth), and on this machine's own /proc with a lock held for real."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import SAMPLES
from huddle.model.attention.session import classify
from huddle.model.times import parse_time
from huddle.sources import Settings
from huddle.sources.codex import CodexSource
from huddle.sources.codex.live import load_capture
from said import as_json

LIVE = SAMPLES / "codex-live"
SNAPSHOTS = sorted(p.name for p in LIVE.iterdir() if (p / "truth.json").exists())
TRUTHS = [(snap, t) for snap in SNAPSHOTS for t in json.loads((LIVE / snap / "truth.json").read_text())]


def huddle_state(truth: dict) -> str:
    return {"waiting_on_subagent": "waiting"}.get(truth["state"], truth["state"])


def read(home: Path, capture: Path | None = None):
    src = CodexSource(Settings(folders={"codex": str(home)}))
    if capture is not None:
        src.system.recorded = load_capture(str(capture), str(home))
    handles = list(src.scan({}).values())
    for h in handles:
        h.refresh()
    return handles


def state_of(handles, thread: str, at: float | None):
    h = next(h for h in handles if thread in h.session.agents)
    live = h.live(at=at)
    _, per = classify(h.session, live, at=at)
    return live, per[thread]


@pytest.mark.parametrize("snap,truth", TRUTHS, ids=[f"{s}:{t['thread_id'][-4:]}" for s, t in TRUTHS])
def test_snapshot_with_its_recorded_locks_and_processes(snap, truth):
    home = LIVE / snap / "codex_home"
    handles = read(home, LIVE / snap / "capture.json")
    at = parse_time(truth["taken_at"])
    live, st = state_of(handles, truth["thread_id"], at)
    assert truth["thread_id"] in live.agents  # the lock and processes recorded: signals of its own
    assert st.state == huddle_state(truth)
    if st.state == "needs_you":
        assert st.waiting_for


def test_waiting_names_the_sub_agent_and_the_session_waits():
    snap = "05x-waiting-on-subagent-exec"
    handles = read(LIVE / snap / "codex_home", LIVE / snap / "capture.json")
    (h,) = handles
    at = parse_time(json.loads((LIVE / snap / "truth.json").read_text())[0]["taken_at"])
    session_state, per = classify(h.session, h.live(at=at), at=at)
    assert session_state.state == "waiting" and session_state.waiting_for == "/root/slow_check"
    assert per[h.session.id].state == "waiting"


def test_stale_lock_means_ended_whatever_the_rollout_says():
    snap = "08y-ended-exec-killed"
    handles = read(LIVE / snap / "codex_home", LIVE / snap / "capture.json")
    (h,) = handles
    live = h.live(at=parse_time(json.loads((LIVE / snap / "truth.json").read_text())[0]["taken_at"]))
    assert live.alive is False and set(live.facts["locks"].values()) == {"stale"}


# -- this machine, for real ---------------------------------------------------------------


@pytest.fixture
def live_home(tmp_path):
    """A CODEX_HOME holding one TUI thread whose open exec_command waits (03d's rollout,
    its command made long-lived so a real process can run it)."""
    home = tmp_path / "codex_home"
    shutil.copytree(LIVE / "03d-needs-you-approval-rule-tui" / "codex_home" / "sessions", home / "sessions")
    (rollout,) = (home / "sessions").rglob("rollout-*.jsonl")
    rollout.write_text(rollout.read_text().replace("mkdir -p build/out", "sleep 30 && echo huddle-test"))
    thread = json.loads(rollout.read_text().split("\n", 1)[0])["payload"]["id"]
    return home, thread


def fresh_state(src: CodexSource, handles, thread: str):
    src.system.forget()
    h = handles[0]
    live = h.live()
    _, per = classify(h.session, live)
    return live, per[thread]


def test_liveness_from_the_real_lock_and_process_table(live_home):
    home, thread = live_home
    src = CodexSource(Settings(folders={"codex": str(home)}))
    handles = list(src.scan({}).values())
    handles[0].refresh()

    live, st = fresh_state(src, handles, thread)
    assert live.alive is None and thread not in live.agents  # no lock folder: cannot tell

    locks = home / "thread-writer-locks"
    locks.mkdir()
    lock = locks / f"{thread}.lock"
    lock.write_text("")
    live, st = fresh_state(src, handles, thread)
    assert live.alive is False and st.state == "ended"  # present, held by nobody

    with open(lock, "rb") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # this test plays the Codex process holding the thread
        live, st = fresh_state(src, handles, thread)
        assert live.alive is True and live.pid == os.getpid()
        assert st.state == "needs_you" and "sleep 30" in (st.waiting_for or "")  # no command process: approval

        proc = subprocess.Popen(["bash", "-c", "sleep 30 && echo huddle-test"], stdout=subprocess.DEVNULL)
        try:
            # the command runs below the holder, once bash has started it (poll: under load
            # the child can still be a fork that has not exec'd yet)
            deadline = time.time() + 120
            while (st := fresh_state(src, handles, thread)[1]).state != "working" and time.time() < deadline:
                time.sleep(0.02)
            assert st.state == "working"
        finally:
            proc.kill()
            proc.wait()
        _, st = fresh_state(src, handles, thread)
        assert st.state == "needs_you"
    lock.unlink()
    live, st = fresh_state(src, handles, thread)
    assert live.alive is False and st.state == "ended"


def test_a_warm_cache_gives_the_same_states(tmp_path):
    """huddle's cache keeps a session's usage events only: a second `huddle status --at`
    must still see the open calls."""
    from huddle.core import Huddle, Keeper, WholeMode
    from huddle.views.board import board_json

    snap = "05x-waiting-on-subagent-exec"
    at = parse_time(json.loads((LIVE / snap / "truth.json").read_text())[0]["taken_at"])
    settings = Settings(
        folders={"claude": "/nonexistent", "codex": str(LIVE / snap / "codex_home"), "vibe": "/nonexistent"},
        huddle_home=str(tmp_path / "huddle"),
    )
    rows = []
    for _ in range(2):
        h = Huddle(settings, sources=["codex"], keep=Keeper(WholeMode()))
        h.refresh()
        (row,) = as_json(board_json(h, at=at))["sessions"]
        rows.append((row["state"], [a["state"] for a in row["agents"]]))
    assert rows[0] == rows[1] == ("waiting", ["waiting", "working"])
