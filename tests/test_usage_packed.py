"""A first `huddle usage` read in workers leaves the sessions no other has a say in
packed (core.coldread.Packed): their rows are made in the workers and never unpickled
in the parent. What it counts, and what the index then answers, is what one process
reading every file says, on every Claude Code version and every Codex sample."""

from __future__ import annotations

import dataclasses
import functools
import shutil

import pytest

from conftest import SAMPLES
from huddle.core import FirstRead, Huddle, Keeper, UsageMode, coldread
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
    settings = dataclasses.replace(_settings(folders, tmp_path / "hh"), usage_only=True)
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
