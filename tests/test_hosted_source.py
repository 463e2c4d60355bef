"""A hosted run is a session like any other: on the board with its state, its
prompt, its tree and usage, its live partial text, linked to the agent's own
transcript. Runs are hosted for real (`huddle host` and the replay script)."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import fingerprint
from hosting import PY, REPLAY, entries, has_entry, huddle, start_host, wait_until
from huddle.core import Huddle
from huddle.sources import Settings
from huddle.views.board import board_json
from said import as_json

STREAM = Path(__file__).parent / "fixtures" / "samples" / "claude-stream"
SUBAGENTS = STREAM / "02-subagents" / "subagents.jsonl"
SIGINT = STREAM / "11-sigint-print" / "sigint.jsonl"
LATE = STREAM / "13-late-message-delta" / "hang.jsonl"


def runs() -> Path:
    return Path(os.environ["HUDDLE_HOME"]) / "runs"


def hosted(name: str, capture: Path, *flags: str, wait: bool = True):
    d = runs() / name
    host = start_host(d, PY, REPLAY, str(capture), *flags)
    if wait:
        assert host.wait() == 0
    return d, host


def board(sources=("hosted",)) -> tuple[Huddle, dict]:
    h = Huddle(Settings.from_env(), sources=list(sources))
    h.refresh()
    return h, {row["id"]: row for row in as_json(board_json(h))["sessions"]}


def stream_records(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_bytes().splitlines()]


def test_a_hosted_run_is_a_session_with_its_tree_and_usage():
    hosted("survey", SUBAGENTS)
    h, rows = board()
    s = h.session("hosted:survey")
    recs = stream_records(SUBAGENTS)
    sid = recs[0]["session_id"]
    assert s.live.facts["agent_session"] == {"source": "claude", "id": sid}
    assert s.live.alive is False and s.live.facts["exited"]["status"] == 0
    assert rows["survey"]["state"] == "ended"
    subs = {a.id: a for a in s.agents.values() if a.id != "survey"}
    started = [r for r in recs if r.get("subtype") == "task_started"]
    assert sorted(subs) == sorted(r["task_id"] for r in started)
    for r in started:
        a = subs[r["task_id"]]
        assert a.parent == "survey" and a.name == f"{r['subagent_type']}: {r['description']}"
        assert a.tool_use_id == r["tool_use_id"] and a.finished is True and a.report
    notified = {r["task_id"]: r["usage"]["total_tokens"] for r in recs if r.get("subtype") == "task_notification"}
    assert {k: a.usage.input for k, a in subs.items()} == notified  # unsplit: counted as input
    lead = s.agents["survey"].usage
    deltas = [
        r["event"]["usage"] for r in recs if r.get("type") == "stream_event" and r["event"]["type"] == "message_delta"
    ]
    assert lead.output == sum(u["output_tokens"] for u in deltas)
    assert lead.input + lead.cache_read + lead.cache_write == sum(
        u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"] for u in deltas
    )
    result = recs[-1]["usage"]
    assert lead.output == result["output_tokens"] and lead.cache_read == result["cache_read_input_tokens"]
    assert s.counts["tool_call"] == 3 and s.counts["order"] == 2 and s.counts["report"] == 2
    assert s.cwd == recs[0]["cwd"]


def test_prompts_come_from_stdin_and_the_state_from_the_host():
    d, host = hosted("talk", LATE, "--wait-stdin", "--hold", "stdin", wait=False)
    wait_until(lambda: has_entry(d, kind="started"), "the start")
    h, rows = board()
    assert h.session("hosted:talk").live.alive is True
    assert rows["talk"]["state"] != "ended"
    prompt = {"type": "user", "message": {"role": "user", "content": "Say hi, then run echo hi"}}
    assert huddle("send", str(d), json.dumps(prompt)).returncode == 0
    wait_until(lambda: any(e.get("json", {}).get("type") == "result" for e in entries(d)), "the result")
    h, rows = board()
    s = h.session("hosted:talk")
    assert s.first_prompt == "Say hi, then run echo hi" and rows["talk"]["title"] == "Say hi, then run echo hi"
    assert rows["talk"]["state"] == "your_turn"  # alive, its turn over
    assert huddle("stop", str(d)).returncode == 0
    assert host.wait() == 0
    h, rows = board()
    assert rows["talk"]["state"] == "ended" and h.session("hosted:talk").live.alive is False


def test_the_live_partial_text():
    d, host = hosted("partial", SIGINT, "--stop-at", "14", "--hold", "stdin", wait=False)
    wait_until(lambda: sum(e["kind"] == "stdout" for e in entries(d)) == 14, "the first lines")
    text = "".join(
        r["event"]["delta"].get("text", "")
        for r in stream_records(SIGINT)[:14]
        if r.get("type") == "stream_event" and r["event"]["type"] == "content_block_delta"
    )
    assert text
    h, _ = board()
    assert h.session("hosted:partial").live.facts["partial"] == {"agent": "partial", "kind": "say", "text": text}
    assert huddle("stop", str(d)).returncode == 0
    host.wait()
    h, _ = board()
    assert "partial" not in h.session("hosted:partial").live.facts


def test_linked_to_the_agents_own_transcript(samples, isolated_home):
    shutil.copytree(samples / "claude" / "02-subagents" / "config", isolated_home / ".claude")
    hosted("linked", SUBAGENTS)
    h, rows = board(("claude", "hosted"))
    link = h.session("hosted:linked").live.facts["agent_session"]
    assert h.session(f"{link['source']}:{link['id']}") is not None
    assert rows[link["id"]]["source"] == "claude"


def test_a_host_that_died_without_its_exit():
    d, host = hosted("lost", LATE, "--wait-stdin", "--hold", "signal", wait=False)
    wait_until(lambda: has_entry(d, kind="started"), "the start")
    agent_pid = entries(d)[1]["pid"]
    host.kill()
    host.wait()
    try:
        h, rows = board()
        live = h.session("hosted:lost").live
        assert live.alive is False and live.facts["lost"] is True and live.facts["host"]["alive"] is False
        assert rows["lost"]["state"] == "ended"
    finally:
        os.kill(agent_pid, signal.SIGKILL)


def test_a_past_time():
    hosted("past", LATE)
    h, _ = board()
    handle = h.handle("hosted:past")
    log = entries(runs() / "past")
    started, exited = log[1]["t"], log[-1]["t"]
    assert handle.live(at=started - 1).alive is None
    assert handle.live(at=(started + exited) / 2).alive is True
    assert handle.live(at=exited + 1).alive is False


def test_reads_only_appended_bytes_and_writes_nothing():
    _d, _ = hosted("again", LATE)
    before = fingerprint(runs())
    h = Huddle(Settings.from_env(), sources=["hosted"])
    h.refresh()
    s = h.session("hosted:again")
    first = list(s.events)
    assert fingerprint(runs()) == before
    hosted("again", SUBAGENTS)  # a second host in the same folder carries the log on
    h.refresh()
    assert s is h.session("hosted:again") and s.epoch == 0 and s.events[: len(first)] == first
    assert len(s.events) > len(first) and len(s.agents) == 3


def test_a_bad_line_costs_one_line():
    d, _ = hosted("clean", SUBAGENTS)
    lines = (d / "events.jsonl").read_bytes().splitlines(keepends=True)
    bad = runs() / "bad"
    bad.mkdir()
    (bad / "events.jsonl").write_bytes(
        b"".join(lines[:20] + [b"{not an entry\n", b'{"seq":"x","kind":5}\n'] + lines[20:])
    )
    h, _ = board()
    clean, broken = h.session("hosted:clean"), h.session("hosted:bad")
    assert broken.skipped_lines == 2 and str(bad / "events.jsonl") in broken.problems[0]
    usage = lambda s: [(e.id, e.usage) for e in s.events if e.kind == "usage"]  # noqa: E731
    assert usage(broken) == usage(clean) and broken.counts == clean.counts
    # the same responses in two sessions count in one of them only (model/ledger.py)
    assert sorted([broken.usage.total, clean.usage.total])[0] == 0


GOOD = (
    Path(__file__).parent / "fixtures" / "samples" / "claude-stream" / "01-basic-tools" / "basic.jsonl"
).read_bytes()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=80),
            st.sampled_from(GOOD.splitlines()[:40]).map(
                lambda x: b'{"seq":1,"t":1.0,"kind":"stdout","json":' + x + b"}"
            ),
            st.fixed_dictionaries(
                {
                    "seq": st.integers(),
                    "kind": st.sampled_from(["stdout", "stdin", "started", "exited", "x"]),
                    "json": st.recursive(
                        st.none() | st.integers() | st.text(max_size=5),
                        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
                        max_leaves=8,
                    ),
                }
            ).map(lambda e: json.dumps(e).encode()),
        ),
        max_size=30,
    )
)
def test_hostile_logs_never_take_the_board_down(lines):
    d = runs() / "hostile"
    d.mkdir(parents=True, exist_ok=True)
    (d / "events.jsonl").write_bytes(b"\n".join(x.replace(b"\n", b" ") for x in lines) + b"\n")
    h, rows = board()
    s = h.session("hosted:hostile")
    assert s is not None and s.error is None
    assert "hostile" in rows or (not s.has_conversation and s.started_at is None)  # nothing to show: off the board
    shutil.rmtree(d)
