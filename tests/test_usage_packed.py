"""A first `huddle usage` read in workers leaves the sessions no other has a say in
packed (core.coldread.Packed): their rows are made in the workers and never unpickled
in the parent; after a board, it starts from the board's cached handles instead. What
it counts, and what the index then answers, is what one process reading every file
says, on every Claude Code version and every Codex sample."""

from __future__ import annotations

import functools
import json
import os
import shutil
import sqlite3
import time

import msgspec
import pytest

from conftest import SAMPLES
from huddle.core import FirstRead, Huddle, Keeper, UsageMode, coldread
from huddle.core.cache import BOARD
from huddle.cost.pricing import current
from huddle.sources import Settings
from huddle.usage.index import CACHE_NAME, _own_entry, counted_from_index
from huddle.usage.report import aggregate

GROUPS = ("day", "session", "agent", "model", "project")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Every Claude Code history home's projects side by side, every Codex sample's
    rollouts in one sessions folder."""
    root = tmp_path_factory.mktemp("mixed")
    projects = root / "claude" / "projects"
    for cfg in sorted((SAMPLES / "claude-history").glob("*/*/config")):
        for p in (cfg / "projects").iterdir():
            shutil.copytree(p, projects / f"{cfg.parent.parent.name}-{cfg.parent.name}{p.name}")
    sessions = root / "codex" / "sessions" / "2026" / "11" / "30"
    sessions.mkdir(parents=True)
    for f in sorted(SAMPLES.glob("codex/*/codex_home/sessions/**/rollout-*.jsonl")):
        if not (sessions / f.name).exists():
            shutil.copy(f, sessions / f.name)
    then = time.time() - 3600  # (written a while ago: a file that moved around a read is read again)
    for dirpath, dirs, files in os.walk(root):
        for n in [*files, *dirs, "."]:
            os.utime(os.path.join(dirpath, n), (then, then))
    return {"claude": str(root / "claude"), "codex": str(root / "codex"), "vibe": str(root / "none")}


def _settings(folders, home) -> Settings:
    return Settings(folders=folders, huddle_home=str(home))


def _report(settings: Settings) -> dict[str, dict]:
    table = current(settings.huddle_home)
    counted, _notes = counted_from_index(settings, table)
    return {by: aggregate(counted, by=by, table=table) for by in GROUPS}


@pytest.fixture
def in_workers(monkeypatch):
    monkeypatch.setattr(coldread, "MIN_BYTES", 0)  # the samples are small: read them in workers anyway
    monkeypatch.setattr(coldread.os, "cpu_count", lambda: 2)


def test_packed_first_read_counts_what_one_process_counts(folders, tmp_path, monkeypatch, in_workers):
    packed_home = _settings(folders, tmp_path / "packed")
    cold = _report(packed_home)
    warm = _report(packed_home)  # from the index the packed read wrote
    monkeypatch.setattr(coldread, "MIN_BYTES", 1 << 60)  # one process, every file read here
    plain = _report(_settings(folders, tmp_path / "plain"))
    assert cold["day"]["rows"]  # (there is usage to count)
    for by in GROUPS:
        assert cold[by] == plain[by], by
        assert warm[by] == plain[by], by


def test_sessions_that_share_responses_or_titles_are_unpacked(folders, tmp_path, in_workers):
    """Claude Code 1.0.x resumes copy a session's responses into a new file, and its
    summaries title sessions across a folder: those are read into the parent, the rest
    sleep with the rows their workers made."""
    settings = msgspec.structs.replace(_settings(folders, tmp_path / "hh"), usage_only=True)
    h = Huddle(settings, keep=Keeper(UsageMode(), CACHE_NAME))
    h.keeper.autosave = False
    h.refresh(FirstRead(pack=functools.partial(_own_entry, table=current(settings.huddle_home))))
    assert h.packed == len(h.dormant) > 0
    assert h.handles, "sessions with a shared response or a folder's title are read here"
    assert all(d.blob is not None for d in h.dormant.values())  # not stored until the save
    ledger_keys = {k for keys in h.ledger.multi.values() for k in keys}
    assert ledger_keys and ledger_keys <= set(h.handles)
    h.keeper.save(h, {})
    assert all(d.blob is None for d in h.dormant.values())
    assert h.cache is not None and set(h.dormant) <= set(h.cache.versions)
    h.wake_all()  # from the store now
    assert not h.dormant and len(h.handles) > 0


def _blobs(db_path) -> dict[str, bytes]:
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return dict(db.execute("SELECT key, blob FROM entries"))
    finally:
        db.close()


def test_a_first_count_after_a_board_starts_from_its_handles(folders, tmp_path, in_workers):
    """The board's cache holds full reads, which hold every usage event: a first count
    takes its handles (the index keeps their pickles as the board stored them: no session
    read again), leaves that cache as it was, and counts what a count from the files does."""
    settings = _settings(folders, tmp_path / "hh")
    h = Huddle(settings, keep=Keeper())
    h.refresh(FirstRead())
    # (closed now, its log folded into the file: not whenever a collection frees the core,
    # perhaps in the middle of the count, which changed the file's bytes, not what it holds)
    assert h.cache is not None
    h.cache.store.close()
    board = tmp_path / "hh" / "cache" / BOARD
    before, stored = board.read_bytes(), _blobs(board)
    counted = _report(settings)
    assert _blobs(tmp_path / "hh" / "cache" / CACHE_NAME) == stored
    assert board.read_bytes() == before and _blobs(board) == stored
    assert counted == _report(_settings(folders, tmp_path / "fresh"))


def test_a_first_count_reads_what_moved_since_the_board(folders, tmp_path_factory):
    root = tmp_path_factory.mktemp("moved")
    mine = {k: str(shutil.copytree(v, root / k)) if k != "vibe" else v for k, v in folders.items()}
    settings = _settings(mine, root / "hh")
    Huddle(settings, keep=Keeper()).refresh()
    before = _report(_settings(mine, root / "before"))
    f = sorted((root / "claude" / "projects").rglob("*.jsonl"), key=lambda p: p.stat().st_size)[-1]
    usage = {"input_tokens": 3, "output_tokens": 5, "cache_read_input_tokens": 7, "cache_creation_input_tokens": 0}
    message = {"id": "msg_after_board", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5"}
    message.update(content=[{"type": "text", "text": "more"}], usage=usage)
    line = {"type": "assistant", "sessionId": f.stem, "uuid": "a-after", "timestamp": "2026-11-30T12:00:00.000Z"}
    with open(f, "a") as out:  # (after the board read it: the count reads it from there)
        out.write(json.dumps({**line, "message": message}, separators=(",", ":")) + "\n")
    counted = _report(settings)
    assert counted == _report(_settings(mine, root / "fresh"))
    assert counted["day"]["totals"]["responses"] == before["day"]["totals"]["responses"] + 1


def test_a_damaged_board_cache_is_not_taken_nor_touched(folders, tmp_path):
    board = tmp_path / "hh" / "cache" / BOARD
    board.parent.mkdir(parents=True)
    board.write_bytes(b"not a database" * 100)
    counted = _report(_settings(folders, tmp_path / "hh"))
    assert board.read_bytes() == b"not a database" * 100  # (the board's own run says and rebuilds it)
    assert counted == _report(_settings(folders, tmp_path / "fresh"))
