"""Codex lines read by their head (sources/codex/heads.py: token counts and turn contexts
decoded narrow, the model's UI words passed over undecoded) say what the same lines say in
another hand, read whole: spaces, keys in another order."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from conftest import SAMPLES
from huddle.core import Huddle
from huddle.sources import Settings
from huddle.sources.codex import heads
from huddle.sources.codex.records import SKIP_EVENTS
from huddle.usage.report import report

CODEX = SAMPLES / "codex"
# 0.169 (with ordinals), 0.144 and 0.96 (without); forks, sub-agents, compactions
SHAPES = [
    "multiturn",
    "subagents_v2",
    "subagents_v2__v0.144.3",
    "multiturn__v0.144.3",
    "compaction__v0.144.3",
    "multiturn__v0.96.0",
    "subagents_collab_old__v0.96.0",
]


def rewritten(line: bytes) -> bytes:
    """The same record in another hand: spaces after separators, keys in reverse order."""

    def reverse(v):
        if isinstance(v, dict):
            return {k: reverse(v[k]) for k in reversed(list(v))}
        if isinstance(v, list):
            return [reverse(x) for x in v]
        return v

    return json.dumps(reverse(json.loads(line))).encode()


def copy(name: str, dest: Path, hand=None) -> Path:
    root = dest / "codex_home"
    shutil.copytree(CODEX / name / "codex_home" / "sessions", root / "sessions")
    if hand is not None:
        for p in (root / "sessions").rglob("rollout-*.jsonl"):
            lines = p.read_bytes().splitlines()
            p.write_bytes(b"".join(hand(line) + b"\n" for line in lines))
    return root


def read(root: Path, usage_only: bool = False) -> Huddle:
    settings = Settings(folders={"codex": str(root)}, huddle_home="/nonexistent-huddle-test")
    h = Huddle(dataclasses.replace(settings, usage_only=usage_only), sources=["codex"])
    h.refresh()
    return h


def said(h: Huddle) -> dict:
    """Every session's events as views see them, but where their lines lie (another hand
    is longer), and its problems."""
    out = {}
    for s in h.sessions():
        events = [
            (e.agent, e.kind, e.t, e.id, e.name, e.text, e.detail, e.ok, e.target, e.copied, e.usage) for e in s.events
        ]
        out[s.id] = (events, s.skipped_lines, {a.id: a.kind for a in s.agents.values()})
    return out


def spans_lines(h: Huddle) -> bool:
    """Each event points at the whole line that told it."""
    data: dict[str, bytes] = {}
    for s in h.sessions():
        for e in s.events:
            raw = data.setdefault(e.file, Path(e.file).read_bytes())
            if not (e.offset == 0 or raw[e.offset - 1 : e.offset] == b"\n") or raw[e.offset + e.length] != 10:
                return False
    return True


def heads_read(root: Path) -> int:
    return sum(
        line.startswith(heads.KNOWN, heads.TYPE_AT)
        for p in root.rglob("rollout-*.jsonl")
        for line in p.read_bytes().splitlines()
    )


@pytest.mark.parametrize("name", SHAPES)
def test_lines_read_by_their_head_say_what_they_say_read_whole(name, tmp_path):
    codex = copy(name, tmp_path / "codex")
    other = copy(name, tmp_path / "other", rewritten)
    assert heads_read(codex) > 0 and heads_read(other) == 0  # (each hand takes its own path)
    assert said(read(codex)) == said(read(other))
    assert spans_lines(read(codex))
    assert report(read(codex, usage_only=True), by="session") == report(read(other, usage_only=True), by="session")


def test_a_count_with_an_odd_time_is_read_whole(tmp_path):
    root = copy("multiturn__v0.144.3", tmp_path)
    (path,) = [p for p in root.rglob("rollout-*.jsonl") if b'"token_count","info":{' in p.read_bytes()][:1]
    lines = path.read_bytes().splitlines()
    i = next(i for i, line in enumerate(lines) if b'"token_count","info":{' in line)
    before = said(read(root))
    # same length, so the head still looks like Codex's: a time no decoder takes
    lines[i] = lines[i][:14] + b"2026-13-45T99:99:99.999Z" + lines[i][38:]
    assert lines[i].startswith(heads.KNOWN, heads.TYPE_AT)
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    after = said(read(root))
    assert after.keys() == before.keys()
    for sid, (events, skipped, agents) in after.items():
        assert skipped == before[sid][1] and agents == before[sid][2]
        assert [e[:2] + e[3:] for e in events] == [e[:2] + e[3:] for e in before[sid][0]]  # (times aside)


def test_the_ui_words_passed_over_are_those_a_full_read_passes_over():
    assert set(heads.PASSED_EVENTS) <= SKIP_EVENTS
