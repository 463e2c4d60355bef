"""Lines a read passes over are judged where they lie in the reader's buffer: the same
judgment as of the line alone, whatever bytes stand before and after it (a pattern
just past the line's end never counts)."""

from __future__ import annotations

import re

import pytest

from conftest import SAMPLES
from huddle.sources.claude.records import UsageFilter, meta_skips, usage_skips, wanted_for_usage
from huddle.sources.codex import records as codex_records

# Bytes that match every pattern, put around a line: only the line's own bytes may decide.
BAIT = (
    b'{"type":"user","message":{"role":"user","content":"x"},"role":"assistant","type":"assistant"}'
    b'"payload":{"type":"reasoning"}{"type":"world_state"}{"type":"api-request"}'
    b'"isSidechain":true,"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result"}'
)


def sample_lines(*globs: str) -> list[bytes]:
    out = []
    for g in globs:
        for p in sorted(SAMPLES.glob(g)):
            out += [x.rstrip(b"\r") for x in p.read_bytes().split(b"\n") if x]
    return out


CLAUDE = sample_lines("claude/*/config/projects/**/*.jsonl", "claude-history/*/*/config/projects/**/*.jsonl")
CODEX = sample_lines("codex/*/codex_home/sessions/**/*.jsonl")


def in_buffer(line: bytes) -> tuple[bytes, int, int]:
    buf = BAIT + b"\n" + line + BAIT + b"\n"
    i = len(BAIT) + 1
    return buf, i, i + len(line)


def test_the_samples_are_there():
    assert len(CLAUDE) > 1000 and len(CODEX) > 1000


@pytest.mark.parametrize("judge", [usage_skips, meta_skips])
def test_claude_lines_are_judged_in_the_buffer_as_alone(judge):
    for line in CLAUDE:
        assert judge(*in_buffer(line)) == judge(line, 0, len(line)), line[:200]
    kept = [x for x in CLAUDE if wanted_for_usage(x)]
    assert 0 < len(kept) < len(CLAUDE)  # the samples have lines of both kinds


CALLS = {m.decode() for line in CLAUDE for m in re.findall(rb'"tool_use_id":"([^"]+)"', line)} | {"toolu_1"}


class Calls:
    agent_calls = dict.fromkeys(CALLS, "lead")


LEARNT = UsageFilter(Calls())
LEARNT.whole, LEARNT.sidechains = False, True


def kept_results(buf: bytes, i: int, end: int) -> bool:
    """The usage-only judgment in a file with inline sub-agents, every call an Agent call."""
    return LEARNT.skip(buf, i, end)


def test_claude_lines_are_judged_in_the_buffer_as_alone_with_agent_calls_and_sidechains():
    for line in CLAUDE:
        assert kept_results(*in_buffer(line)) == kept_results(line, 0, len(line)), line[:200]
        assert kept_results(line, 0, len(line)) <= usage_skips(line, 0, len(line))  # keeps more, never less
    # a tool result names its call first: the result of an Agent call is kept
    results = [x for x in CLAUDE if b'"content":[{"tool_use_id":"' in x[:768] and not meta_skips(x, 0, len(x))]
    assert results and not any(kept_results(x, 0, len(x)) for x in results)
    assert all(usage_skips(x, 0, len(x)) for x in results)  # and passed over when its call was another's


@pytest.mark.parametrize("usage", [False, True])
def test_codex_lines_are_judged_in_the_buffer_as_alone(usage):
    skipped = 0
    for line in CODEX:
        alone = codex_records.SKIP_LINE.search(line, 0, 160) is not None or (
            usage and codex_records.USAGE_SKIP_LINE.search(line, 0, 480) is not None
        )
        assert codex_records.skips(*in_buffer(line), usage) == alone, line[:200]
        if not usage:
            assert codex_records.meta_skips(*in_buffer(line)) == alone, line[:200]
        skipped += alone
    assert skipped < len(CODEX)


def test_a_last_prompt_record_is_kept_until_a_prompt_names_the_session_and_attachments_never():
    f = UsageFilter(Calls())
    last = b'{"type":"last-prompt","lastPrompt":"fix it","sessionId":"s"}'
    attachment = next(x for x in CLAUDE if b'"attachment":{"type":"' in x[:300] and not meta_skips(x, 0, len(x)))
    assert not f.skip(last, 0, len(last)) and not f.skip(attachment, 0, len(attachment))  # read whole, first
    f.whole = False
    assert not f.skip(last, 0, len(last)) and f.skip(attachment, 0, len(attachment))
    f.prompted = True
    assert f.skip(last, 0, len(last))
