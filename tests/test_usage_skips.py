"""Lines a read passes over are judged where they lie in the reader's buffer: the same
judgment as of the line alone, whatever bytes stand before and after it (a pattern
just past the line's end never counts)."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SAMPLES
from huddle.io.reader import HEAD
from huddle.model import events as ev
from huddle.model.session import Session
from huddle.sources.claude.skips import UsageFilter, meta_skips, usage_skips, wanted_for_usage
from huddle.sources.codex import records as codex_records
from huddle.sources.codex import skips as codex_skips
from huddle.sources.codex.results import Links
from huddle.sources.codex.thread import ThreadParser

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
        assert bool(judge(*in_buffer(line))) == bool(judge(line, 0, len(line))), line[:200]  # (a match: truthy)
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


def in_copy(buf: bytes, i: int, end: int) -> bool:
    return codex_skips.usage_skips(buf, i, end, copying=True)


@pytest.mark.parametrize("judge", [codex_skips.meta_skips, codex_skips.usage_skips, in_copy])
def test_codex_lines_are_judged_in_the_buffer_as_alone(judge):
    skipped = 0
    for line in CODEX:
        alone = judge(line, 0, len(line))
        assert judge(*in_buffer(line)) == alone, line[:200]
        skipped += alone
    assert skipped < len(CODEX)
    if judge is not codex_skips.meta_skips:
        assert skipped > len(CODEX) // 2  # tool calls, outputs, reasoning, messages: most lines


def codex_parser(copying: bool, usage: bool = False) -> ThreadParser:
    """A full read's parser for a lead thread past its first line and event; `copying`:
    inside a copy of another thread's history (a 0.144 fork, told by its turn markers)."""
    info = codex_records.ThreadInfo(codex_records.Meta(id="t1"))
    p = ThreadParser(Session("codex", "t1"), Links(), info, "/x/rollout.jsonl", True, usage)
    p.seen_meta = p.out_seen = True
    p.copying = copying
    p._judge()
    return p


def usage_state(p: ThreadParser) -> tuple:
    """What a usage-only read needs a full read to have taken from a line: counts (the
    ledger), the model, prompts and titles, a fork's copy (its turns while it lasts),
    links between agents."""
    L = p.ledger
    kinds = (ev.USAGE, ev.PROMPT, ev.TITLE)
    return (
        [(e.kind, e.id, e.t, e.usage, e.text, e.copied) for e in p.out if e.kind in kinds],
        (L.total, L.inherited, L.pending, L.counted, L.records),
        (p.model, p.copying, p.copy_turn_open),
        (dict(p.links.child_of_call), set(p.links.finished), dict(p.links.nickname)),
        (set(p.links.reported), len(p.links.unresolved), dict(p.links.child_by_path)),
    )


# Mutations of real lines: cut short, a byte changed, a type renamed into another kind
# Codex writes, a key added at the head (ordinal) or in the payload, a key's space.
KINDS = [
    b'"type":"token_count"',
    b'"type":"user_message"',
    b'"type":"task_started"',
    b'"type":"task_complete"',
    b'"type":"thread_name_updated"',
    b'"type":"token_usage_record"',
    b'"type":"turn_context"',
    b'"type":"session_meta"',
    b'"type":"item_completed"',
    b'"type":"UserMessage"',
    b'"type":"CollabAgentToolCall"',
    b'"type":"message"',
    b'"type":"function_call"',
    b'"type":"agent_message"',
    b'"type":"sub_agent_activity"',
]


# The lines a usage-only read lives on (rare among a rollout's lines): drawn as often as any
KEY_LINES = [x for x in CODEX if any(k in x[:200] for k in KINDS[:11])]


@st.composite
def odd_codex_lines(draw) -> bytes:
    line = draw(st.sampled_from(KEY_LINES) | st.sampled_from(CODEX))
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["cut", "byte", "kind", "ordinal", "key", "space"]))
        at = draw(st.integers(0, max(0, min(len(line), 600) - 1)))
        if op == "cut":
            line = line[:at]
        elif op == "byte":
            line = line[:at] + bytes([draw(st.integers(32, 126))]) + line[at + 1 :]
        elif op == "kind":
            found = [m.start() for m in re.finditer(rb'"type":"[A-Za-z_]+"', line[:600])]
            if found:
                i = draw(st.sampled_from(found))
                j = line.index(b'"', i + 8) + 1
                line = line[:i] + draw(st.sampled_from(KINDS)) + line[j:]
        elif op == "ordinal":
            line = line.replace(b'","type":"', b'","ordinal":' + str(at).encode() + b',"type":"', 1)
        elif op == "key":
            line = line.replace(b'"payload":{', b'"payload":{"x":' + str(at).encode() + b",", 1)
        else:
            line = line.replace(b'":', b'": ', 1)
    return line


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(odd_codex_lines(), st.booleans())
def test_the_codex_usage_judge_passes_over_only_lines_a_full_read_takes_nothing_from(line, copying):
    """Whatever a line looks like (cut, mutated, renamed, another head), the usage-only
    judge keeps every line from which a full read takes a count, a model, a prompt or
    title, a copy's start or end, or a link; it may keep more."""
    if not codex_parser(copying, usage=True).skip(line, 0, len(line)):
        return
    p = codex_parser(copying)
    before = usage_state(p)
    try:
        p.feed_kept(0, line)  # (a full read passes nothing over in the buffer: it knows by the type)
    except Exception:  # a line the decoder gives up on costs itself (sources.base.drain)
        p.out.clear()  # (a fresh parser: all it made is this line's)
    assert usage_state(p) == before, line[:300]


def test_a_last_prompt_record_is_kept_until_a_prompt_names_the_session_and_attachments_never():
    f = UsageFilter(Calls())
    last = b'{"type":"last-prompt","lastPrompt":"fix it","sessionId":"s"}'
    attachment = next(x for x in CLAUDE if b'"attachment":{"type":"' in x[:300] and not meta_skips(x, 0, len(x)))
    assert not f.skip(last, 0, len(last)) and not f.skip(attachment, 0, len(attachment))  # read whole, first
    f.whole = False
    assert not f.skip(last, 0, len(last)) and f.skip(attachment, 0, len(attachment))
    f.prompted = True
    assert f.skip(last, 0, len(last))


@pytest.mark.parametrize("copying", [False, True])
def test_a_parser_pickles_without_its_judge_and_says_it_again_on_load(copying):
    """The reader reads a parser's `skip` (a compiled pattern's match past the thread's
    first event): a cached or packed parser carries its state, never the pattern, and
    judges as before once loaded."""
    import pickle

    p = codex_parser(copying, usage=True)
    blob = pickle.dumps(p)
    assert codex_skips.USAGE_SKIP_HEAD.pattern[:40] not in blob
    q = pickle.loads(blob)
    assert q.skip == p.skip and q.skip != codex_skips.meta_skips
    assert pickle.loads(pickle.dumps(codex_parser(copying))).skip is None  # a full read passes nothing over


def long_forms(line: bytes) -> list[bytes]:
    """A line made longer than a `cut` reads (HEAD bytes): spaces before its closing
    brace (still the same record), and after them the words the whole-line checks
    look for."""
    pad = b" " * (HEAD + 64)
    if not line.endswith(b"}"):
        return [line + pad]
    body = line[:-1]
    return [body + pad + b"}", body + pad + b',"x":"assistant"}', body + pad + b',"x":"user"}']


@pytest.mark.parametrize("state", ["alone", "learnt"])
def test_a_claude_line_is_cut_by_its_head_only_where_its_whole_says_the_same(state):
    f = UsageFilter() if state == "alone" else LEARNT
    cut = 0
    for line in CLAUDE:
        for long in long_forms(line):
            if f.skips_head(long[:HEAD]):
                cut += 1
                assert f.skip(long, 0, len(long)), long[:200]
    assert cut > len(CLAUDE) // 4  # tool results, attachments, metadata: most of a transcript


@pytest.mark.parametrize("usage", [False, True])
def test_a_codex_line_is_cut_by_its_head_as_its_whole_is_judged(usage):
    p = codex_parser(False, usage)
    judge = p.skip or codex_skips.meta_skips  # (a full read's long line: by the records no read needs)
    for line in CODEX:
        for long in long_forms(line):
            assert p.skips_head(long[:HEAD]) == bool(judge(long, 0, len(long))), long[:200]
