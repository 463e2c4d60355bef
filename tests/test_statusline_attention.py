"""The status line agrees with the board: a Codex thread lock or a Vibe session lock
taken by another process (a wait read from the transcript, not from Claude's registry)
reaches `huddle statusline` within a second while `huddle serve` runs (the watcher
keeps the status line's board file level), and without a server its own staleness
check notices the lock folder moved. Real processes, real flocks, the real command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from huddle.core import Huddle
from huddle.io.boardfile import board_path, read_board
from huddle.server import ServerThread
from huddle.statusline import is_stale
from huddle.views.board import board_json, leave_board
from live_agents import WITHIN, LockHolder, wait_until
from test_live_attention import SLOW_NETS, codex_home, vibe_home

BOUND = 15.0


def needs_you(settings) -> list[str]:
    env = {**os.environ, **settings.env()}
    p = subprocess.run(
        [sys.executable, "-m", "huddle", "statusline", "--json"], input="{}", capture_output=True, text=True, env=env
    )
    assert p.returncode == 0, p.stderr
    return [r["id"] for r in json.loads(p.stdout)["needs_you"]]


def in_board_file(settings, sid: str) -> str | None:
    board = read_board(board_path(settings.huddle_home))
    return next((r["state"] for r in (board or {}).get("sessions", ()) if r["id"] == sid), None)


def seen_by_the_status_line(settings, sid: str, lock, meta=None, lock_sid: str = "") -> None:
    """The board file the status line reads has the wait within a second of the lock
    (read here directly: a command's own start-up is not the figure), and the command
    itself says so; the lock let go, both say it no more."""
    with ServerThread(Huddle(settings), watch_options=SLOW_NETS):
        wait_until(lambda: in_board_file(settings, sid), time.time() + BOUND, "the board file")
        assert sid not in needs_you(settings)
        holder = LockHolder(lock, meta, lock_sid)
        try:
            wait_until(lambda: in_board_file(settings, sid) == "needs_you", holder.taken_at + BOUND, "the file")
            took = time.time() - holder.taken_at
            assert took <= WITHIN, f"board file {took:.2f} s after the lock"
            assert sid in needs_you(settings)
            t0 = time.time()
            holder.release()
            wait_until(lambda: in_board_file(settings, sid) == "ended", t0 + BOUND, "the wait gone")
            assert time.time() - t0 <= WITHIN
            assert sid not in needs_you(settings)
        finally:
            holder.kill()


def test_a_codex_lock_reaches_the_status_line_while_serve_runs(tmp_path):
    # codex-live 03: an approval pending; needs you once a live process holds its lock
    settings, thread, home = codex_home(tmp_path, "03-needs-you-approval-tui")
    seen_by_the_status_line(settings, thread, home / "thread-writer-locks" / f"{thread}.lock")


def test_a_vibe_lock_reaches_the_status_line_while_serve_runs(tmp_path):
    settings, sid, active = vibe_home(tmp_path)
    seen_by_the_status_line(settings, sid, active / f"{sid}.lock", active / f"{sid}.lock.json", sid)


def test_without_a_server_a_codex_lock_makes_the_board_file_stale(tmp_path):
    settings, thread, home = codex_home(tmp_path, "03-needs-you-approval-tui")
    h = Huddle(settings)
    h.refresh()
    leave_board(h, board_json(h))
    board = read_board(board_path(settings.huddle_home))
    assert board is not None and not is_stale(board, time.monotonic() + 5)
    holder = LockHolder(home / "thread-writer-locks" / f"{thread}.lock")
    try:
        assert is_stale(board, time.monotonic() + 5)  # the refresher is asked at once, not after 10 s
    finally:
        holder.kill()


@pytest.mark.parametrize("follower", [["watch"], ["status", "--watch"]])
def test_the_terminal_followers_keep_the_board_file_too(tmp_path, follower):
    """`huddle watch` and `huddle status --watch` run the same watcher: the status line
    reads what they show."""
    settings, sid, active = vibe_home(tmp_path)
    env = {**os.environ, **settings.env(), "COLUMNS": "200"}
    p = subprocess.Popen(
        [sys.executable, "-m", "huddle", *follower], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    try:
        wait_until(lambda: in_board_file(settings, sid), time.time() + 60, "the board file")  # (its first read)
        holder = LockHolder(active / f"{sid}.lock", active / f"{sid}.lock.json", sid)
        try:
            wait_until(lambda: in_board_file(settings, sid) == "needs_you", holder.taken_at + BOUND, "needs you")
            assert time.time() - holder.taken_at <= WITHIN
            assert sid in needs_you(settings)
        finally:
            holder.kill()
    finally:
        p.terminate()
        p.wait(timeout=30)
