"""Gemini CLI sub-agent runs in every layout the CLI wrote them, and a session spread over
several chat files carrying one session id. Small documents written here in the shape of
packages/core/src/services/chatRecordingService.ts at each time (the commits beside)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from huddle.core import Huddle
from huddle.sources import Settings
from huddle.views.board import board_json
from said import as_json

NOWHERE = "/nonexistent-huddle-test"
LEAD = "2d9ea14f-1e4e-44f6-8bf5-7a7819cb1cd9"
PROJECT = "ab14fe397f91d5f283525b3178d2314aef552f761131c42172a21b7bf735e73d"


def gemini_huddle(home: Path, usage_only: bool = False) -> Huddle:
    h = Huddle(Settings(folders={"gemini": str(home)}, huddle_home=NOWHERE, usage_only=usage_only), sources=["gemini"])
    h.refresh()
    return h


def chats(home: Path) -> Path:
    c = home / "tmp" / PROJECT / "chats"
    c.mkdir(parents=True, exist_ok=True)
    (home / "tmp" / PROJECT / ".project_root").write_text("/home/u/proj")
    return c


def user(mid: str, text: str, t: str) -> dict:
    return {"id": mid, "timestamp": t, "type": "user", "content": [{"text": text}]}


def gemini(mid: str, text: str, t: str, inp: int, cached: int, out: int, calls: list | None = None) -> dict:
    m = {
        "id": mid, "timestamp": t, "type": "gemini", "content": text, "thoughts": [],
        "tokens": {"input": inp, "output": out, "cached": cached, "thoughts": 0, "tool": 0, "total": inp + out},
        "model": "gemini-2.5-pro",
    }  # fmt: skip
    if calls is not None:
        m["toolCalls"] = calls
    return m


def doc(sid: str, start: str, messages: list[dict], kind: str | None = None) -> dict:
    """A ConversationRecord: the whole chat, rewritten in place at every message."""
    d = {"sessionId": sid, "projectHash": PROJECT, "startTime": start, "lastUpdated": start, "messages": messages}
    if kind is not None:
        d["kind"] = kind
    return d


def lead_doc(kind: str | None = "main") -> dict:
    call = {
        "id": "codebase_investigator-1", "name": "codebase_investigator",
        "args": {"objective": "find the parser"}, "status": "success",
        "timestamp": "2026-03-01T10:05:30.000Z", "result": [],
    }  # fmt: skip
    return doc(LEAD, "2026-03-01T10:00:00.000Z", [
        user("u1", "where is the parser?", "2026-03-01T10:00:00.000Z"),
        gemini("g1", "", "2026-03-01T10:00:05.000Z", 1_000, 200, 10, [call]),
        gemini("g2", "In src/parser.rs.", "2026-03-01T10:06:00.000Z", 1_500, 1_000, 20),
    ], kind)  # fmt: skip


def sub_messages() -> list[dict]:
    return [
        user("s1", "Your task: find the parser.", "2026-03-01T10:05:01.000Z"),
        gemini("s2", "Found it.", "2026-03-01T10:05:20.000Z", 700, 0, 30),
    ]


def check(h: Huddle, sub_count: int = 1) -> None:
    (s,) = h.sessions()
    assert s.id == LEAD and s.cwd == "/home/u/proj"
    subs = [a for a in s.agents.values() if a.parent]
    assert len(subs) == sub_count
    lead_usage = {"input": 800 + 500, "output": 30, "cache_read": 1_200, "cache_write": 0}
    assert s.agents[LEAD].usage.to_dict() == lead_usage
    if sub_count:
        assert subs[0].usage.to_dict() == {"input": 700, "output": 30, "cache_read": 0, "cache_write": 0}
        assert subs[0].order == "Your task: find the parser."
    assert s.usage.input == 1_300 + 700 * sub_count


@pytest.mark.parametrize("usage_only", [False, True])
def test_a_sub_agent_document_in_its_leads_folder(tmp_path, usage_only):
    # 104587bae8 (2026-03-27) to f744913584 (2026-04-09): chats/<lead session id>/<agent id>.json
    c = chats(tmp_path)
    (c / f"session-2026-03-01T10-00-{LEAD[:8]}.json").write_text(json.dumps(lead_doc()))
    (c / LEAD).mkdir()
    (c / LEAD / "k3x9qa.json").write_text(
        json.dumps(doc("k3x9qa", "2026-03-01T10:05:00.000Z", sub_messages(), "subagent"))
    )
    check(gemini_huddle(tmp_path, usage_only))


@pytest.mark.parametrize("usage_only", [False, True])
def test_a_sub_agent_document_beside_its_lead_under_the_leads_id(tmp_path, usage_only):
    # d2d345f41a (2026-02-21) to 104587bae8 (2026-03-27): the sub-agent's GeminiChat took the
    # config's session id, its file session-<its start>-<lead id8>.json, kind "subagent"
    c = chats(tmp_path)
    (c / f"session-2026-03-01T10-00-{LEAD[:8]}.json").write_text(json.dumps(lead_doc()))
    sub = doc(LEAD, "2026-03-01T10:05:00.000Z", sub_messages(), "subagent")
    (c / f"session-2026-03-01T10-05-{LEAD[:8]}.json").write_text(json.dumps(sub))
    h = gemini_huddle(tmp_path, usage_only)
    check(h)
    (s,) = h.sessions()
    (sub_agent,) = [a for a in s.agents.values() if a.parent]
    assert sub_agent.name == "sub-agent 10:05" and sub_agent.parent == LEAD


def test_a_session_in_two_chat_files_of_one_id_is_one_session(tmp_path):
    # before b804fe9662 (2026-03-11) /clear started a new recording under the old id: two
    # documents, no kind, one session id. Gemini's resume list shows that id once.
    c = chats(tmp_path)
    first = lead_doc(kind=None)
    first["lastUpdated"] = "2026-03-01T10:06:00.000Z"  # its last message, before the /clear
    (c / f"session-2026-03-01T10-00-{LEAD[:8]}.json").write_text(json.dumps(first))
    after = doc(LEAD, "2026-03-01T11:00:00.000Z", [
        user("u9", "now the lexer", "2026-03-01T11:00:00.000Z"),
        gemini("g9", "In src/lexer.rs.", "2026-03-01T11:00:09.000Z", 400, 100, 5),
    ])  # fmt: skip
    (c / f"session-2026-03-01T11-00-{LEAD[:8]}.json").write_text(json.dumps(after))
    h = gemini_huddle(tmp_path)
    (s,) = h.sessions()
    assert [a.id for a in s.agents.values()] == [LEAD]
    assert s.usage.to_dict() == {"input": 1_300 + 300, "output": 35, "cache_read": 1_300, "cache_write": 0}
    assert [e.text for e in s.events if e.kind == "prompt"] == ["where is the parser?", "now the lexer"]
    (row,) = as_json(board_json(h))["sessions"]
    assert row["id"] == LEAD


def test_a_jsonl_sub_agent_in_its_leads_folder_still_reads(tmp_path):
    # f744913584 (2026-04-09) on: the same folder, one JSONL log per sub-agent run
    c = chats(tmp_path)
    (c / f"session-2026-03-01T10-00-{LEAD[:8]}.json").write_text(json.dumps(lead_doc()))
    (c / LEAD).mkdir()
    head = {"sessionId": "k3x9qa", "projectHash": PROJECT, "startTime": "2026-03-01T10:05:00.000Z",
            "lastUpdated": "2026-03-01T10:05:00.000Z", "kind": "subagent"}  # fmt: skip
    (c / LEAD / "k3x9qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [head, *sub_messages()]))
    check(gemini_huddle(tmp_path))


def test_a_second_file_of_a_session_appearing_later_joins_it(tmp_path):
    c = chats(tmp_path)
    (c / f"session-2026-03-01T10-00-{LEAD[:8]}.json").write_text(json.dumps(lead_doc()))
    h = gemini_huddle(tmp_path)
    check(h, sub_count=0)
    (c / LEAD).mkdir()
    (c / LEAD / "k3x9qa.json").write_text(
        json.dumps(doc("k3x9qa", "2026-03-01T10:05:00.000Z", sub_messages(), "subagent"))
    )
    h.refresh()
    check(h)


@pytest.mark.parametrize("bad", ["not json", "deep", "fifo", "a list", "messages of odd shape"])
def test_a_bad_sub_agent_document_costs_itself_only(tmp_path, bad):
    import os

    c = chats(tmp_path)
    (c / f"session-2026-03-01T10-00-{LEAD[:8]}.json").write_text(json.dumps(lead_doc()))
    (c / LEAD).mkdir()
    sub = c / LEAD / "k3x9qa.json"
    if bad == "fifo":
        os.mkfifo(sub)  # must never block the scan nor the read
    else:
        sub.write_text({
            "not json": '{"sessionId": "k3x9qa", "messages": [',
            "deep": '{"sessionId": "k3x9qa", "messages": ' + "[" * 100_000 + "]" * 100_000 + "}",
            "a list": "[1, 2, 3]",
            "messages of odd shape": json.dumps(doc("k3x9qa", "2026-03-01T10:05:00.000Z", [7, "x", {"type": 5}], "subagent")),
        }[bad])  # fmt: skip
    h = gemini_huddle(tmp_path)
    (s,) = h.sessions()
    assert s.error is None
    assert s.agents[LEAD].usage.input == 1_300  # the lead's own spend, whatever its sub-agent's file holds
    if bad != "fifo":
        assert s.problems, "the bad document is said"


def test_before_kinds_a_chat_begun_while_the_lead_was_written_is_its_sub_agent(tmp_path):
    # before d2d345f41a (2026-02-21) a sub-agent's chat carried its lead's id and no kind:
    # it began while the lead's was still being written (the lead went on after it)
    c = chats(tmp_path)
    lead = lead_doc(kind=None)
    lead["lastUpdated"] = "2026-03-01T10:06:00.000Z"
    (c / f"session-2026-03-01T10-00-{LEAD[:8]}.json").write_text(json.dumps(lead))
    sub = doc(LEAD, "2026-03-01T10:05:00.000Z", sub_messages())
    sub["lastUpdated"] = "2026-03-01T10:05:20.000Z"
    (c / f"session-2026-03-01T10-05-{LEAD[:8]}.json").write_text(json.dumps(sub))
    check(gemini_huddle(tmp_path))
