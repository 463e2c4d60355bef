"""A line in another JSON hand inside a file in Claude Code's own: a response, prompt or
title re-written with spaces (by another tool) among compact lines. The usage-only
filter's byte checks read the compact hand; a line they cannot judge is read whole,
never passed over, so both reads count it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SAMPLES
from helpers import NOWHERE, claude_huddle
from huddle.core import Huddle
from huddle.sources import Settings
from huddle.sources.claude.skips import UsageFilter, usage_skips

HISTORY = SAMPLES / "claude-history"
BASIC = sorted(HISTORY.glob("*/01-tools/config"))
SPACES = [b" ", b"  ", b"\t", b" \t "]


def counted(line: bytes) -> bool:
    """A response a full read counts: a message id, usage, a real model."""
    d = json.loads(line)
    m = d.get("message")
    return d.get("type") == "assistant" and bool(m.get("id")) and m.get("usage") and m.get("model") != "<synthetic>"


def renamed(line: bytes) -> bytes:
    """The response under a message id of its own (a new response, not a repeat of one read)."""
    mid = json.loads(line)["message"]["id"].encode()
    return line.replace(b'"id":"' + mid + b'"', b'"id":"' + mid + b'_respaced"', 1)


def boundaries(line: bytes) -> list[int]:
    """Where JSON allows whitespace in a line: before and after each structural byte outside strings."""
    out, in_str, esc = {0, len(line)}, False, False
    for n, c in enumerate(line):
        if in_str:
            esc, in_str = (False, in_str) if esc else (c == 92, c != 34)
        elif c == 34:
            in_str = True
        elif c in b"{}[]:,":
            out |= {n, n + 1}
    return sorted(out)


def respace(line: bytes, spots: list[tuple[int, bytes]]) -> bytes:
    for at, ws in sorted(spots, reverse=True):
        line = line[:at] + ws + line[at:]
    return line


@st.composite
def respacings(draw, line: bytes) -> bytes:
    """The line with whitespace at some of its token boundaries (or at each of them)."""
    spots = boundaries(line)
    at = draw(st.lists(st.sampled_from(spots), min_size=1, max_size=12, unique=True) | st.just(spots))
    return respace(line, [(a, draw(st.sampled_from(SPACES))) for a in at])


def session_file(config: Path) -> Path:
    (f,) = (p for p in config.glob("projects/*/*.jsonl") if not p.name.startswith("agent-"))
    return f


def with_line(src: Path, dst: Path, line: bytes, at: int | None = None) -> Path:
    """A copy of a sample with the line put among its session file's lines (at the end by default)."""
    shutil.copytree(src, dst)
    f = session_file(dst)
    lines = f.read_bytes().splitlines()
    lines.insert(len(lines) if at is None else at, line)
    f.write_bytes(b"".join(x + b"\n" for x in lines))
    return dst


def usage_only(config: Path) -> Huddle:
    folders = {"claude": str(config), "codex": NOWHERE, "vibe": NOWHERE}
    h = Huddle(Settings(folders=folders, huddle_home=NOWHERE, usage_only=True), sources=["claude"])
    h.refresh()
    return h


def reads_agree(config: Path) -> int:
    """Both reads count the same, for each session and agent; the responses counted."""
    quick, responses = usage_only(config), 0
    for full in claude_huddle(config).sessions():
        q = quick.session(full.id)
        assert q.usage.to_dict() == full.usage.to_dict() and q.title == full.title
        assert {a: x.usage.to_dict() for a, x in q.agents.items()} == {
            a: x.usage.to_dict() for a, x in full.agents.items()
        }
        ids = [(e.id, e.t) for e in full.events if e.kind == "usage"]
        assert [(e.id, e.t) for e in q.events if e.kind == "usage"] == ids
        responses += len(ids)
    return responses


def last_response(config: Path) -> bytes:
    return [x for x in session_file(config).read_bytes().splitlines() if b'"role":"assistant"' in x and counted(x)][-1]


def test_the_samples_are_there():
    assert len(BASIC) >= 6


@pytest.mark.parametrize("config", BASIC, ids=lambda p: p.parent.parent.name)
def test_a_response_written_with_spaces_among_compact_lines_is_counted_by_both_reads(tmp_path, config):
    responses = reads_agree(config)
    line = json.dumps(json.loads(renamed(last_response(config)))).encode()  # `{"parentUuid": "...", ...}`
    assert b'": "' in line and b'"role":"' not in line
    assert (
        reads_agree(with_line(config, tmp_path / "config", line)) == responses + 1
    )  # the full read counts it: so does the usage-only one


@pytest.mark.parametrize("config", BASIC[:3], ids=lambda p: p.parent.parent.name)
def test_a_title_written_with_spaces_names_the_session_in_both_reads(tmp_path, config):
    title = json.dumps({"type": "custom-title", "customTitle": "renamed by hand", "sessionId": "x"}).encode()
    dst = with_line(config, tmp_path / "config", title)
    reads_agree(dst)
    assert usage_only(dst).session(session_file(dst).stem).title == "renamed by hand"


RESPONSES = [renamed(last_response(c)) for c in BASIC]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.integers(0, len(BASIC) - 1), data=st.data(), where=st.floats(0.2, 1))
def test_any_respacing_of_a_response_is_counted_the_same_by_both_reads(tmp_path_factory, which, data, where):
    line = data.draw(respacings(RESPONSES[which]))
    config = BASIC[which]
    at = round(where * len(session_file(config).read_bytes().splitlines()))
    responses = reads_agree(config)
    assert reads_agree(with_line(config, tmp_path_factory.mktemp("respaced") / "config", line, at)) == responses + 1


LINES = [
    x.rstrip(b"\r")
    for g in ("claude/*/config/projects/**/*.jsonl", "claude-history/*/*/config/projects/**/*.jsonl")
    for p in sorted(SAMPLES.glob(g))
    for x in p.read_bytes().split(b"\n")
    if x
]


class Calls:
    agent_calls = dict.fromkeys(
        (m.group(1).decode() for x in LINES for m in re.finditer(rb'"tool_use_id":"([^"]+)"', x)), "lead"
    )


LEARNT = UsageFilter(Calls())  # a file with inline sub-agents, every call an Agent call
LEARNT.whole, LEARNT.sidechains = False, True
JUDGES = {"alone": usage_skips, "learnt": LEARNT.skip}
KEPT = {name: [x for x in LINES if not skips(x, 0, len(x))] for name, skips in JUDGES.items()}


@settings(max_examples=400, deadline=None)
@given(judge=st.sampled_from(sorted(JUDGES)), data=st.data())
def test_a_line_the_usage_filter_keeps_is_kept_however_it_is_spaced(judge, data):
    """Whatever whitespace stands between its tokens, a line kept compact is kept (a
    response, a prompt, a title, an Agent call's result, a sidechain's record)."""
    skips = JUDGES[judge]
    line = data.draw(st.sampled_from(KEPT[judge]))
    spaced = data.draw(respacings(line))
    assert not skips(spaced, 0, len(spaced)), spaced[:300]
