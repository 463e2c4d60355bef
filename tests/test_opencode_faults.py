"""OpenCode's files in a hostile world (issue 11): a FIFO in place of the database, its
WAL, its shared-memory index or a lock's meta.json never blocks a refresh (SQLite, and
huddle's own look at the WAL's header, open them by name and would wait on a FIFO for
ever, with the core's lock held); the board says it in one line naming the file, and
once the file is back the session reads as before.

Each refresh runs in a forked child, bounded (tests/faults.py's `in_child`)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest import SAMPLES
from faults import in_child
from huddle.core import Huddle
from huddle.sources import Settings

DATA = SAMPLES / "opencode" / "07-subagent" / "home" / ".local" / "share" / "opencode"
LIMIT = 30.0


def _board(data: Path, state: Path) -> dict:
    def read() -> dict:
        h = Huddle(
            Settings(
                folders={"opencode": str(data), "opencode-state": str(state)}, huddle_home=str(data.parent / "hh")
            ),
            sources=["opencode"],
        )
        h.refresh()
        return {
            "notes": list(h.notes),
            "sessions": {s.key: (len(s.events), s.error) for s in h.sessions()},
        }

    got = in_child(read, LIMIT)
    assert isinstance(got, dict) and "sessions" in got, f"the refresh did not end well: {str(got)[:500]}"
    return got


def _lines(board: dict, path: Path) -> list[str]:
    said = [n for n in board["notes"] if str(path) in n]
    said += [err for _n, err in board["sessions"].values() if err and str(path) in err]
    return said


@pytest.mark.parametrize("name", ["opencode.db", "opencode.db-wal", "opencode.db-shm"])
def test_a_fifo_for_the_database_or_its_wal_or_shm_is_one_line_and_recovers(tmp_path, name):
    data = tmp_path / "opencode"
    shutil.copytree(DATA, data)
    state = tmp_path / "state"
    state.mkdir()
    before = _board(data, state)
    assert before["sessions"] and not any(err for _n, err in before["sessions"].values())
    target = data / name
    saved = target.read_bytes()
    target.unlink()
    os.mkfifo(target)
    during = _board(data, state)
    said = _lines(during, target)
    assert len(said) == 1 and "FIFO" in said[0], during
    target.unlink()
    target.write_bytes(saved)
    assert _board(data, state)["sessions"] == before["sessions"]


def test_a_fifo_for_a_lock_meta_is_no_wait(tmp_path):
    data = tmp_path / "opencode"
    shutil.copytree(DATA, data)
    state = tmp_path / "state"
    (state / "locks" / "x").mkdir(parents=True)
    before = _board(data, state)
    os.mkfifo(state / "locks" / "x" / "meta.json")
    assert _board(data, state)["sessions"] == before["sessions"]
