"""The live line on every real stream capture: activity phrases, token totals
counted once per message, sub-agent totals said apart, failures explained by the
lines the stream actually printed; and any chunking gives the same summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from huddle.host.liveline import LineSplitter, LiveLine, is_partial
from huddle.model.doing import WIDTH

STREAMS = sorted((Path(__file__).parent / "fixtures" / "samples" / "claude-stream").glob("*/*.jsonl"))
IDS = [f"{p.parent.name}/{p.stem}" for p in STREAMS]


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def fed(lines) -> tuple[LiveLine, list[str]]:
    live = LiveLine()
    seen: list[str] = []
    for line in lines:
        live.feed(line)
        if not seen or seen[-1] != live.activity:
            seen.append(live.activity)
    return live, seen


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in lines_of(path)]


def up_down(u: dict) -> tuple[int, int]:
    up = sum(u.get(k) or 0 for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))
    return up, u.get("output_tokens") or 0


def oracle(path: Path) -> dict:
    """What the stream itself says, computed independently of the parser."""
    recs = records(path)
    results = [r for r in recs if r.get("type") == "result"]
    res = [up_down(r["usage"]) for r in results]
    last_delta: dict[str, dict] = {}
    starts: dict[str, dict] = {}
    for r in recs:
        if r.get("type") == "stream_event" and r["event"]["type"] == "message_delta":
            last_delta[r["api_message_id"]] = r["event"]["usage"]
        if r.get("type") == "assistant" and not r.get("parent_tool_use_id"):
            starts.setdefault(r["message"]["id"], r["message"]["usage"])
    tasks = {}
    for r in recs:
        if r.get("subtype") == "task_notification":
            tasks[r["task_id"]] = r["usage"]["total_tokens"]
    tools = {
        b["id"]
        for r in recs
        if r.get("type") == "assistant"
        for b in r["message"]["content"]
        if b.get("type") in ("tool_use", "server_tool_use")
    }
    return {
        "result": (sum(u for u, _ in res), sum(d for _, d in res)),
        "complete": bool(results) and all(u + d for u, d in res),
        "deltas": tuple(map(sum, zip(*[up_down(u) for u in last_delta.values()]))) or (0, 0),
        "starts": tuple(map(sum, zip(*[up_down(u) for u in starts.values()]))) or (0, 0),
        "unsplit": sum(tasks.values()),
        "subagents": sum(1 for r in recs if r.get("subtype") == "task_started"),
        "tools": len(tools),
    }


@pytest.mark.parametrize("path", STREAMS, ids=IDS)
def test_tokens_are_counted_once_per_message(path):
    live, _ = fed(lines_of(path))
    o = oracle(path)
    assert (live.up - live.unsplit, live.down) == o["deltas"]
    if o["complete"]:
        assert (live.up - live.unsplit, live.down) == o["result"]
    assert live.unsplit == o["unsplit"]
    assert live.tool_calls == o["tools"]
    assert live.subagents == o["subagents"]


@pytest.mark.parametrize("path", STREAMS, ids=IDS)
def test_tokens_without_partial_messages(path):
    """Without --include-partial-messages the final usage only comes with `result`."""
    plain = [line for line in lines_of(path) if b'"type":"stream_event"' not in line]
    live, _ = fed(plain)
    o = oracle(path)
    expected = o["result"] if o["complete"] else o["starts"]
    assert (live.up - live.unsplit, live.down) == expected
    assert live.unsplit == o["unsplit"]


def test_a_turn_after_the_first_is_mostly_cache_reads():
    live, _ = fed(lines_of(STREAMS[IDS.index("01-basic-tools/basic")]))
    assert live.up == 164_658 and live.down == 656
    assert live.render().startswith("done · 9 tool calls")


EXPECTED_PHRASES = {
    "01-basic-tools/basic": [
        "listing project files and git status",
        "reading README.md",
        "searching for TODO",
        "loading TodoWrite",
        "finding **/*.py",
        "writing NOTES.md",
        "editing NOTES.md",
        "done",
    ],
    "02-subagents/subagents": [
        "delegating: survey source files",
        "delegating: check README claims",
        "reading README.md",
        "listing source directory",
        "reading app.py",
        "done",
    ],
    "03-background-agent/bg-agent": [
        "delegating: count lines of code",
        "showing recent commits",
        "counting lines in Python files",
        "done",
    ],
    "04-resume-continue-fork/turn1": ["Let me run the app first.", "running the demo app"],
    "04-resume-continue-fork/turn2-resume": ["reading app.py", "editing app.py"],
    "05-compact/compact": ["compacting the conversation", "compacted the conversation"],
    "05-compact/turn2": ["running the test suite"],
    "07-errors/errors": [
        "reading does_not_exist.txt",
        "running a failing command",
        "retrying after overloaded 529 (attempt 1)",
    ],
    "08-tasks-v2/tasks": ["loading TaskCreate, TaskUpdate", "adding a task: check the greeting"],
    "09-auto-mode-denied/auto": ["delegating: inspect util module", "denied: Agent"],
    "11-sigint-print/sigint": ["Writing a long answer slowly.", "interrupted", "stopped"],
    "12-nested-and-custom-agents/nested": [
        "delegating: investigate with helper",
        "delegating: review app.py",
        "delegating: nested README check",
    ],
    "13-late-message-delta/hang": ["First block, written before the pause.", "printing hi", "Done after the pause."],
}


@pytest.mark.parametrize("name", sorted(EXPECTED_PHRASES))
def test_activity_phrases(name):
    _, seen = fed(lines_of(STREAMS[IDS.index(name)]))
    want = EXPECTED_PHRASES[name]
    got = [p for p in seen if p in want]
    assert [p for p in want if p in got] == want, seen
    assert all(len(p) <= WIDTH for p in seen)


def test_sigint_says_it_was_interrupted():
    live, _ = fed(lines_of(STREAMS[IDS.index("11-sigint-print/sigint")]))
    assert live.state == "stopped"
    assert live.error == "interrupted (aborted_streaming)"
    assert live.explanation() == live.error


def test_a_failure_printed_as_prose_is_explained_by_those_lines():
    init = lines_of(STREAMS[0])[0]
    live, _ = fed([init, b"Invalid API key \xc2\xb7 Please run /login", b"", b"Error: 401 Unauthorized"])
    assert live.error is None
    assert live.plain == ["Invalid API key · Please run /login", "Error: 401 Unauthorized"]
    assert live.explanation() == "Invalid API key · Please run /login\nError: 401 Unauthorized"
    live.feed_plain("stderr: request failed")  # the host's stderr lines join them, in order
    assert live.explanation().endswith("Error: 401 Unauthorized\nstderr: request failed")


def test_an_error_the_stream_reports():
    sid = "s-1"
    lines = [
        json.dumps({"type": "system", "subtype": "init", "session_id": sid, "model": "m"}),
        json.dumps(
            {
                "type": "assistant",
                "error": "authentication_failed",
                "session_id": sid,
                "message": {
                    "id": "x",
                    "model": "<synthetic>",
                    "role": "assistant",
                    "content": [{"type": "text", "text": "API Error: 401 invalid x-api-key"}],
                },
            }
        ),
        json.dumps(
            {
                "type": "result",
                "subtype": "success",
                "is_error": True,
                "result": "API Error: 401 invalid x-api-key",
                "usage": {"input_tokens": 0, "output_tokens": 0},
                "session_id": sid,
            }
        ),
    ]
    live, _ = fed(lines)
    assert live.state == "failed"
    assert live.error == "API Error: 401 invalid x-api-key"
    assert (live.up, live.down) == (0, 0)


def whole(path: Path) -> dict:
    live, _ = fed(lines_of(path))
    return live.summary()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(STREAMS), st.lists(st.integers(min_value=0, max_value=1 << 20), max_size=40), st.booleans())
def test_any_chunking_gives_the_same_summary(path, cuts, crlf):
    data = path.read_bytes()
    if crlf:
        data = data.replace(b"\n", b"\r\n")
    points = sorted({c % (len(data) + 1) for c in cuts})
    splitter = LineSplitter()
    live = LiveLine()
    for a, b in zip([0, *points], [*points, len(data)]):
        for line in splitter.feed(data[a:b]):
            live.feed(line)
    for line in splitter.close():
        live.feed(line)
    assert live.summary() == whole(path)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=200), st.sampled_from(lines_of(STREAMS[1])[:60])), max_size=40))
def test_hostile_lines_never_break_the_line(lines):
    live = LiveLine()
    for line in lines:
        live.feed(line)
    assert len(live.activity) <= WIDTH
    assert live.up >= 0 and live.down >= 0
    live.render()


def test_the_trace_leaves_out_partials_matched_as_text():
    lines = lines_of(STREAMS[0])
    partial = [line for line in lines if is_partial(line)]
    assert len(partial) == sum(
        1 for r in records(STREAMS[0]) if r.get("event", {}).get("type") == "content_block_delta"
    )
    assert not is_partial(b'{"type":"user","message":{"content":"\\"type\\":\\"content_block_delta\\""}}')
