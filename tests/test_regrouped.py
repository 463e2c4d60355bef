"""Claude Code 2.0.x writes agent files beside the sessions, and the scan gives each to
the candidate session their sizes choose (sources.claude.project_agents): when an empty
session file grows, agent files move to it. A sleeping session that lost them (or
gained them) is read again, so the index and the cached board say what a first read
says, and no response is counted twice (core.keeper.Keeper.kept)."""

from __future__ import annotations

import json
import os
import shutil

from conftest import SAMPLES
from huddle import oneshot
from huddle.core import Huddle, Keeper
from huddle.cost.pricing import current
from huddle.sources import Settings
from huddle.views.board import board_json, leave_board
from said import as_json

COMPACT = SAMPLES / "claude-history" / "2.0.77" / "05-compact" / "config" / "projects"
EMPTY = "9e96af71-0893-4ce3-89ae-3d07ae257c3a"  # an empty session file the agent files name


def _home(tmp_path):
    shutil.copytree(COMPACT, tmp_path / "claude" / "projects")
    folders = {"claude": str(tmp_path / "claude"), "codex": str(tmp_path / "none"), "vibe": str(tmp_path / "none")}
    (path,) = (tmp_path / "claude" / "projects").glob(f"*/{EMPTY}.jsonl")
    assert path.stat().st_size == 0
    return folders, path


def _grow(path) -> None:
    rec = {
        "type": "user",
        "sessionId": EMPTY,
        "uuid": "00000000-0000-4000-8000-000000000001",
        "timestamp": "2026-12-01T12:00:00.000Z",
        "message": {"role": "user", "content": "one more thing"},
    }
    with open(path, "a") as f:
        f.write(json.dumps(rec) + "\n")


def _per_session(folders, hh) -> dict[str, int]:
    settings = Settings(folders=folders, huddle_home=str(hh))
    report = oneshot.usage(settings, current(str(hh)), "session", None, None)
    return {r["key"]: r["responses"] for r in report["rows"]}


def test_the_index_counts_what_a_first_read_does_when_agent_files_change_session(tmp_path):
    folders, path = _home(tmp_path)
    before = _per_session(folders, tmp_path / "hh")
    assert before == _per_session(folders, tmp_path / "fresh0")
    _grow(path)
    warm, fresh = _per_session(folders, tmp_path / "hh"), _per_session(folders, tmp_path / "fresh1")
    assert warm == fresh
    assert fresh != before  # (the agent files did change session)
    assert sum(warm.values()) == sum(before.values())  # each response counted once, before and after


def _board(folders, hh=None) -> dict:
    h = Huddle(Settings(folders=folders, huddle_home=str(hh or "")), keep=Keeper() if hh is not None else None)
    h.refresh()
    built: dict = {}
    b = as_json(board_json(h, built=built))
    if hh is not None:
        leave_board(h, b, built)
        h.cache.store.close()
    return {r["id"]: (r.get("agents"), r.get("usage"), r.get("title")) for r in b["sessions"]}


def test_the_cached_board_shows_what_a_first_read_does_when_agent_files_change_session(tmp_path):
    folders, path = _home(tmp_path)
    hh = tmp_path / "hh"
    then = os.path.getmtime(path) - 3600
    for d, _, fs in os.walk(tmp_path / "claude"):
        for n in fs:
            os.utime(os.path.join(d, n), (then, then))
    assert _board(folders, hh) == _board(folders)
    _grow(path)
    assert _board(folders, hh) == _board(folders)


def test_a_held_board_shows_what_a_first_read_does_when_agent_files_change_session(tmp_path):
    # the server holds every session between refreshes: the session that lost the agent
    # files is read again, the one that took them reads them (scan's placement kept no longer)
    folders, path = _home(tmp_path)
    held = Huddle(Settings(folders=folders, huddle_home=""))
    held.refresh()

    def rows(h) -> dict:
        return {r["id"]: (r.get("agents"), r.get("usage"), r.get("title")) for r in as_json(board_json(h))["sessions"]}

    assert rows(held) == _board(folders)
    before = rows(held)
    _grow(path)
    held.refresh()
    assert rows(held) == _board(folders)
    assert rows(held) != before
