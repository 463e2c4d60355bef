"""Every `codex` start writes a new rollout: a live core told of it (a watcher's notice)
places it as the scan would, without scanning the home (Source.came): read alone,
the board the one a fresh read gives. A thread only the scan can place (a sub-agent's,
a fork's, a copy of one known) asks for the whole refresh."""

from __future__ import annotations

import os
import shutil
import time
import uuid
from pathlib import Path

import pytest

from conftest import SAMPLES
from huddle.core import Huddle, Keeper
from huddle.sources import Settings
from huddle.views.board import board_json, leave_board
from said import as_json

CODEX = SAMPLES / "codex"
DAY = Path("2026") / "11" / "30"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    sessions = tmp_path / "codex" / "sessions"
    for name in ("multiturn", "subagents_v2", "apply_patch__v0.96.0"):
        shutil.copytree(CODEX / name / "codex_home" / "sessions", sessions, dirs_exist_ok=True)
    then = time.time() - 3600
    for dirpath, dirs, files in os.walk(tmp_path):
        for n in files + dirs:
            os.utime(os.path.join(dirpath, n), (then, then))
    return tmp_path


def settings(home: Path) -> Settings:
    return Settings(folders={"codex": str(home / "codex")}, huddle_home=str(home / "hh"))


def fresh(home: Path) -> dict:
    h = Huddle(settings(home), sources=["codex"])
    h.refresh()
    return as_json(board_json(h))


def live(home: Path) -> Huddle:
    """A core as a server holds it: the cache written by two runs, then read."""
    for _ in range(2):
        h = Huddle(settings(home), sources=["codex"], keep=Keeper())
        h.refresh()
        built: dict = {}
        leave_board(h, as_json(board_json(h, built=built)), built)
    h = Huddle(settings(home), sources=["codex"], keep=Keeper())
    h.refresh()
    return h


def copied(model: Path, folder: Path, ids: dict[str, str]) -> Path:
    """A rollout written again with other thread ids (each old id -> its new one)."""
    text, name = model.read_text(), model.name
    for old, new in ids.items():
        text, name = text.replace(old, new), name.replace(old, new)
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / name
    out.write_text(text)
    return out


def thread_id(path: Path) -> str:
    return path.stem[-36:]


def test_a_new_rollout_is_read_alone_as_the_scan_would_place_it(home, monkeypatch):
    h = live(home)
    scans = []
    src = next(s for s in h.sources if s.name == "codex")
    real = src.scan
    monkeypatch.setattr(src, "scan", lambda known: scans.append(1) or real(known))
    model = next((CODEX / "apply_patch" / "codex_home" / "sessions").rglob("rollout-*.jsonl"))  # (a thread alone)
    sid = str(uuid.uuid4())
    came = copied(model, home / "codex" / "sessions" / DAY, {thread_id(model): sid})
    changed = h.read_files([str(came)])
    assert changed is not None and f"codex:{sid}" in changed
    assert scans == []
    assert f"codex:{sid}" in h.handles
    assert as_json(board_json(h)) == fresh(home)
    h.refresh()  # (a later scan finds it placed as it would have placed it)
    assert as_json(board_json(h)) == fresh(home)


FORK_ID = "01a22a65-96d9-72f0-ad22-06c58159ab97"  # `codex resume`'s fork of 8a1c (multiturn)
SPAWNED_ID = "01a22a65-a026-7d00-bbbf-a9615f8b0834"  # a sub-agent of 9ef4 (subagents_v2)
FORK = next((CODEX / "multiturn" / "codex_home" / "sessions").rglob(f"rollout-*-{FORK_ID}.jsonl"))
SPAWNED = next((CODEX / "subagents_v2" / "codex_home" / "sessions").rglob(f"rollout-*-{SPAWNED_ID}.jsonl"))


@pytest.mark.parametrize("which", ["sub-agent", "fork", "a copy of a known thread"])
def test_a_rollout_only_the_scan_can_place_asks_for_the_whole_refresh(home, which):
    h = live(home)
    if which == "a copy of a known thread":  # (the lead of SPAWNED, again under another day)
        lead = next(p for p in SPAWNED.parent.glob("*.jsonl") if "9ef4" in p.name)
        came = copied(lead, home / "codex" / "sessions" / "2026" / "12" / "01", {})
    else:
        model = SPAWNED if which == "sub-agent" else FORK
        came = copied(model, home / "codex" / "sessions" / DAY, {thread_id(model): str(uuid.uuid4())})
    assert h.read_files([str(came)]) is None
    h.refresh()
    assert as_json(board_json(h)) == fresh(home)


def test_a_rollout_that_came_back_forgets_why_it_could_not_be_read(home, tmp_path):
    """A rollout briefly a link out of the agent's folder (the scan says so), then put back
    and placed as one that came: what was wrong with it is forgotten, so a later fault
    (here a loop of links) is said once, for what it is, not with the old reason too."""
    h = live(home)
    src = next(s for s in h.sources if s.name == "codex")
    model = next((CODEX / "apply_patch" / "codex_home" / "sessions").rglob("rollout-*.jsonl"))
    sid = str(uuid.uuid4())
    path = copied(model, home / "codex" / "sessions" / DAY, {thread_id(model): sid})
    data = path.read_bytes()
    h.refresh()
    assert f"codex:{sid}" in h.handles
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(data)

    def errors() -> list[str]:
        found = src.scan({k: v for k, v in h.handles.items() if k != f"codex:{sid}"})
        return [x.session.error for x in found.values() if str(path) in (x.session.error or "")]

    path.unlink()
    assert errors() == []  # (gone: no longer a thread of the scan's)
    path.symlink_to(outside)
    assert [e for e in errors() if "out of the agent's folder" in e]
    path.unlink()
    path.write_bytes(data)
    assert src.came(str(path), {}) is not None  # (put back, placed without a scan)
    path.unlink()
    assert errors() == []
    loop = path.with_name(path.name + ".loop")
    loop.symlink_to(path.name)
    path.symlink_to(loop.name)
    assert not [e for e in errors() if "out of the agent's folder" in e]
