"""Codex rollouts every version of the CLI left in a user's folders: from before
session_meta (summer 2025), forked children that start with a copy of their parent's
history, threads the user archived. Small fixtures written here in the shape each writer
produced (the writer is named beside each)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from huddle.cli import main
from huddle.core import Huddle
from huddle.model import events as ev
from huddle.sources import Settings
from huddle.views.board import board_json
from said import as_json

NOWHERE = "/nonexistent-huddle-test"
LEAD = "40cb3c9c-9557-4cb0-b9cf-f6661872da35"


def codex_huddle(home: Path) -> Huddle:
    h = Huddle(Settings(folders={"codex": str(home)}, huddle_home=NOWHERE), sources=["codex"])
    h.refresh()
    return h


def write(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


# -- before session_meta ------------------------------------------------------------------


def legacy_rollout(head_extra: dict | None = None) -> list[dict]:
    """codex-rs/core/src/rollout.rs (July-September 2025): the `SessionMeta` head
    (`{"id","timestamp","instructions"}` + `git` once collected), then each persisted
    `ResponseItem` as it is and a `{"record_type":"state"}` line per state update."""

    def user(text):
        return {
            "type": "message",
            "id": None,
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        }

    return [
        {"id": LEAD, "timestamp": "2025-08-31T11:51:11.655Z", "instructions": "", **(head_extra or {})},
        {"record_type": "state"},
        user(
            "<environment_context>\n  <cwd>/home/u/proj</cwd>\n  <approval_policy>on-request</approval_policy>\n</environment_context>"
        ),
        {"record_type": "state"},
        user("what is the date today"),
        {"record_type": "state"},
        {
            "type": "function_call",
            "id": None,
            "name": "shell",
            "arguments": json.dumps({"command": ["zsh", "-c", "date +%Y-%m-%d"], "timeout_ms": 1000}),
            "call_id": "call_1",
        },
        {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": json.dumps({"output": "2025-08-31\n", "metadata": {"exit_code": 0, "duration_seconds": 0.0}}),
        },
        {
            "type": "reasoning",
            "id": "",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": "The user wants the date."}],
            "encrypted_content": None,
        },
        {
            "type": "message",
            "id": None,
            "role": "assistant",
            "content": [{"type": "output_text", "text": "2025-08-31"}],
        },
        {"record_type": "state"},
    ]


def test_a_rollout_from_before_session_meta_is_a_session_with_usage_unknown(tmp_path):
    write(
        tmp_path / f"sessions/2025/08/31/rollout-2025-08-31T11-51-11-{LEAD}.jsonl",
        legacy_rollout({"git": {"branch": "main"}}),
    )
    h = codex_huddle(tmp_path)
    (s,) = h.sessions()
    assert s.id == LEAD and s.cwd == "/home/u/proj"
    assert s.title == "what is the date today"
    assert [e.kind for e in s.events if e.kind != ev.CONTEXT] == [
        ev.PROMPT, ev.TOOL_CALL, ev.TOOL_RESULT, ev.THINK, ev.SAY,
    ]  # fmt: skip
    call = next(e for e in s.events if e.kind == ev.TOOL_CALL)
    assert (call.name, call.detail) == ("shell", "date +%Y-%m-%d")
    assert next(e for e in s.events if e.kind == ev.TOOL_RESULT).ok is True
    assert next(e for e in s.events if e.kind == ev.THINK).text == "The user wants the date."
    # one time in the file, the head's: every event there, and said estimated
    assert all(e.t == s.started_at and e.estimated for e in s.events)
    assert s.skipped_lines == 0
    row = next(r for r in as_json(board_json(h))["sessions"] if r["id"] == LEAD)
    assert row["usage_unknown"] is True and "no token counts" in row["usage_note"]
    assert row["cost"]["usd"] is None  # not $0: nothing was counted
    assert row["times_estimated"] is True


def test_the_oldest_rollouts_right_in_sessions_are_read_too(tmp_path):
    # codex-rs until June 2025: `create_log_file` wrote sessions/rollout-<time>-<id>.jsonl
    write(tmp_path / f"sessions/rollout-2025-05-07T17-24-21-{LEAD}.jsonl", legacy_rollout())
    (s,) = codex_huddle(tmp_path).sessions()
    assert s.id == LEAD and s.usage_unknown


def test_the_table_says_unknown_not_zero(tmp_path, monkeypatch):
    write(tmp_path / f"sessions/2025/08/31/rollout-2025-08-31T11-51-11-{LEAD}.jsonl", legacy_rollout())
    monkeypatch.setenv("CODEX_HOME", str(tmp_path))
    monkeypatch.setenv("HUDDLE_SOURCES", "codex")
    out = CliRunner().invoke(main, ["status", "--all"], env={"COLUMNS": "160"}).output
    line = next(x for x in out.splitlines() if "what is the date" in x)
    assert "?" in line and " 0 " not in line


def test_a_bad_bare_item_costs_its_line(tmp_path):
    recs = legacy_rollout()
    lines = [json.dumps(r) for r in recs]
    lines.insert(5, '{"type":"message","role":"user","content":7}')  # content of no known shape
    lines.insert(6, "{not json")
    p = tmp_path / f"sessions/2025/08/31/rollout-2025-08-31T11-51-11-{LEAD}.jsonl"
    p.parent.mkdir(parents=True)
    p.write_text("\n".join(lines) + "\n")
    (s,) = codex_huddle(tmp_path).sessions()
    assert s.skipped_lines == 2
    assert s.title == "what is the date today"


# -- a forked child: its copy of the parent's history ------------------------------------

PARENT = "01a22a65-844a-7a42-9a13-b62ee3ec36dc"
CHILD = "01a22a65-85de-7ee0-a63c-bac1c5cb9be4"


def tokens(inp: int, cached: int, out: int) -> dict:
    return {
        "input_tokens": inp, "cached_input_tokens": cached, "output_tokens": out,
        "reasoning_output_tokens": 0, "total_tokens": inp + out,
    }  # fmt: skip


def count(total: dict, last: dict) -> dict:
    return {
        "type": "event_msg",
        "payload": {"type": "token_count", "info": {"total_token_usage": total, "last_token_usage": last}},
    }


def env(t: str, payload: dict) -> dict:
    return {"timestamp": f"2026-11-30T03:00:{t}Z", "type": "event_msg", "payload": payload}


def meta(tid: str, **kw) -> dict:
    return {"timestamp": "2026-11-30T03:00:00.000Z", "type": "session_meta", "payload": {"id": tid, "cwd": "/w", **kw}}


def say(text: str) -> dict:
    return {
        "timestamp": "2026-11-30T03:00:10.000Z",
        "type": "response_item",
        "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]},
    }


@pytest.mark.parametrize("ordinals", [False, True])
def test_a_forked_child_is_charged_only_its_own_responses(tmp_path, ordinals):
    """The child's file holds the parent's session_meta and a copy of its history up to
    the spawn, counts and all (formats/codex.md section 3). 0.144 writes no ordinals:
    the child's own turn opens inside the copied one; 0.169 numbers the lines and says
    where the child's own start (`subagent_history_start_ordinal`), after a synthetic
    turn_aborted. Either way the child's first count repeats the parent's totals and its
    last response, before the child has answered."""
    p1, p2 = tokens(10_000, 0, 100), tokens(12_000, 9_000, 50)  # the parent's two responses
    both = tokens(22_000, 9_000, 150)
    mine = tokens(8_000, 6_000, 40)
    day = tmp_path / "sessions/2026/11/30"
    history = [
        env("01.000", {"type": "task_started", "turn_id": "t1"}),
        env("01.100", {"type": "user_message", "message": "split the work"}),
        say("one"),
        {**count(p1, p1), "timestamp": "2026-11-30T03:00:02.000Z"},
        say("spawning"),
        {**count(both, p2), "timestamp": "2026-11-30T03:00:03.000Z"},
    ]
    write(day / f"rollout-2026-11-30T03-00-00-{PARENT}.jsonl", [
        meta(PARENT), *history, env("20.000", {"type": "task_complete", "turn_id": "t1"}),
    ])  # fmt: skip
    link = {"forked_from_id": PARENT, "parent_thread_id": PARENT}
    own = [
        {**count(both, p2), "timestamp": "2026-11-30T03:00:04.200Z"},  # repeats the parent's
        say("done"),
        {**count(tokens(30_000, 15_000, 190), mine), "timestamp": "2026-11-30T03:00:05.000Z"},
        env("06.000", {"type": "task_complete", "turn_id": "t2"}),
    ]
    if ordinals:
        copy = [
            meta(PARENT),
            *history,
            env("04.000", {"type": "turn_aborted", "turn_id": "t1", "reason": "interrupted"}),
        ]
        start = 1 + len(copy)
        child = [meta(CHILD, subagent_history_start_ordinal=start, **link), *copy,
                 env("04.100", {"type": "task_started", "turn_id": "t2",
                                "turn_attribution": {"parent_turn_id": "t1"}}), *own]  # fmt: skip
        child = [{"ordinal": i, **r} for i, r in enumerate(child)]
    else:
        child = [meta(CHILD, **link), meta(PARENT), *history,
                 env("04.100", {"type": "task_started", "turn_id": "t2"}), *own]  # fmt: skip
    write(day / f"rollout-2026-11-30T03-00-04-{CHILD}.jsonl", child)
    for usage_only in (False, True):  # the board and `huddle usage` alike
        h = Huddle(
            Settings(folders={"codex": str(tmp_path)}, huddle_home=NOWHERE, usage_only=usage_only), sources=["codex"]
        )
        h.refresh()
        (s,) = h.sessions()
        assert s.agents[CHILD].usage.to_dict() == {"input": 2_000, "output": 40, "cache_read": 6_000, "cache_write": 0}
        assert s.agents[PARENT].usage.to_dict() == {
            "input": 13_000,
            "output": 150,
            "cache_read": 9_000,
            "cache_write": 0,
        }
        # together, what was sent: the parent's two responses and the child's one
        assert s.usage.to_dict() == {"input": 15_000, "output": 190, "cache_read": 15_000, "cache_write": 0}


def test_a_parent_whose_rollout_is_gone_leaves_the_session_to_the_root_codex_names(tmp_path):
    root, gone = "00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000003"
    write(tmp_path / f"sessions/2026/06/14/rollout-2026-06-14T12-00-00-{CHILD}.jsonl", [
        meta(CHILD, session_id=root, parent_thread_id=gone),
        env("01.000", {"type": "user_message", "message": "hi"}),
    ])  # fmt: skip
    (s,) = codex_huddle(tmp_path).sessions()
    assert s.id == root and CHILD in s.agents


# -- archived threads ---------------------------------------------------------------------


def small_thread(tid: str, prompt: str) -> list[dict]:
    return [
        meta(tid),
        env("01.000", {"type": "task_started", "turn_id": "t"}),
        env("01.100", {"type": "user_message", "message": prompt}),
        say("ok"),
        {**count(tokens(1_000, 0, 10), tokens(1_000, 0, 10)), "timestamp": "2026-11-30T03:00:11.000Z"},
        env("12.000", {"type": "task_complete", "turn_id": "t"}),
    ]


def test_an_archived_thread_is_read_counted_and_said_archived(tmp_path, monkeypatch):
    # `codex archive` moves the rollout to archived_sessions/, flat (codex-rs thread-store)
    write(tmp_path / f"archived_sessions/rollout-2026-11-30T03-00-00-{PARENT}.jsonl", small_thread(PARENT, "put away"))
    write(
        tmp_path / f"sessions/2026/11/30/rollout-2026-11-30T03-00-01-{CHILD}.jsonl", small_thread(CHILD, "still here")
    )
    h = codex_huddle(tmp_path)
    rows = {r["id"]: r for r in as_json(board_json(h))["sessions"]}
    assert rows[PARENT]["archived"] is True and "archived" not in rows[CHILD]
    assert rows[PARENT]["usage"]["input"] == 1_000  # the spend happened
    monkeypatch.setenv("CODEX_HOME", str(tmp_path))
    monkeypatch.setenv("HUDDLE_SOURCES", "codex")
    table = CliRunner().invoke(main, ["status", "--since", "100w"], env={"COLUMNS": "160"}).output
    assert "still here" in table and "put away" not in table  # off the table, as off Codex's resume list
    every = CliRunner().invoke(main, ["status", "--all"], env={"COLUMNS": "160"}).output
    assert "put away" in every
    data = json.loads(CliRunner().invoke(main, ["status", "--json"]).output)
    assert {r["id"] for r in data["sessions"]} == {PARENT, CHILD}  # the route's answer holds both


def test_a_thread_in_both_folders_is_read_from_its_live_copy(tmp_path):
    write(tmp_path / f"archived_sessions/rollout-2026-11-30T03-00-00-{PARENT}.jsonl", small_thread(PARENT, "old"))
    write(tmp_path / f"sessions/2026/11/30/rollout-2026-11-30T03-00-00-{PARENT}.jsonl", small_thread(PARENT, "new"))
    (s,) = codex_huddle(tmp_path).sessions()
    assert s.title == "new" and not s.archived


def test_archiving_and_unarchiving_moves_the_row(tmp_path):
    live = write(
        tmp_path / f"sessions/2026/11/30/rollout-2026-11-30T03-00-00-{PARENT}.jsonl", small_thread(PARENT, "p")
    )
    h = codex_huddle(tmp_path)
    assert not h.sessions()[0].archived
    away = tmp_path / "archived_sessions" / live.name
    away.parent.mkdir()
    live.rename(away)
    h.refresh()
    (s,) = h.sessions()
    assert s.archived and s.usage.input == 1_000
    away.rename(live)
    h.refresh()
    assert not h.sessions()[0].archived


def test_an_archived_thread_is_found_by_search(tmp_path):
    from huddle.search import SearchIndex, attach
    from huddle.views.search import search

    write(
        tmp_path / f"archived_sessions/rollout-2026-11-30T03-00-00-{PARENT}.jsonl",
        small_thread(PARENT, "flamingoquest"),
    )
    settings = Settings(folders={"codex": str(tmp_path)}, huddle_home=str(tmp_path / "hh"))
    h = Huddle(settings, sources=["codex"])
    h.refresh()
    index = SearchIndex(settings.huddle_home, settings.folders)
    index.update(h)
    attach(h, index)
    (hit,) = search(h, "flamingoquest")["results"]
    assert hit["session"] == PARENT


def test_a_threads_last_line_waits_while_its_writer_lock_is_held(tmp_path):
    """A rollout whose last line has no newline: read once the thread's writer lock is
    let go (formats/codex.md section 13: held with flock while a process has the thread)."""
    import fcntl
    import os
    import time

    from huddle.io.stamps import SETTLE_NS

    recs = small_thread(PARENT, "p")
    p = tmp_path / f"sessions/2026/11/30/rollout-2026-11-30T03-00-00-{PARENT}.jsonl"
    p.parent.mkdir(parents=True)
    p.write_text("".join(json.dumps(r) + "\n" for r in recs[:-2]) + json.dumps(recs[-2]))  # its count, unended
    then = (time.time_ns() - 3 * SETTLE_NS) / 1e9
    os.utime(p, (then, then))
    locks = tmp_path / "thread-writer-locks"
    locks.mkdir()
    with open(locks / f"{PARENT}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # this test plays the Codex process holding the thread
        h = codex_huddle(tmp_path)
        assert h.sessions()[0].usage.input == 0  # the count waits for its newline
    (locks / f"{PARENT}.lock").unlink()  # a clean unload removes the lock
    h.refresh()
    assert h.sessions()[0].usage.input == 1_000
