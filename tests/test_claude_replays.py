"""Where sub-agents go. A sub-agent launched from the lead stays under the lead when a compaction
(`agent-acompact-*`) or a side question (`/btw`: `agent-aside_question-*`) replays the
lead's history, the launching Agent call among it, in a sub-agent file of its own.
(Such files replay the lead's messages verbatim, the same message ids, before their one
new request; they have no meta.json and no call of the lead starts them.) The records
here are trimmed to the fields Claude Code 2.1.x writes that huddle reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import claude_huddle
from said import as_json

SID = "4d5611e5-241a-462a-8d15-5122611a9569"
SUB = "a2898e3b1c4d5e6f7"
CALL = "toolu_01vhLCU1oUgYC3z4bgArSNWP"


def rec(kind: str, uuid: str, parent: str | None, content, t: str, agent: str | None = None, **kw) -> dict:
    r = {
        "parentUuid": parent, "isSidechain": agent is not None, "type": kind, "uuid": uuid,
        "timestamp": f"2026-02-10T10:{t}Z", "sessionId": SID, "cwd": "/w", "version": "2.1.39",
        "message": {"role": kind, "content": content},
    }  # fmt: skip
    if agent is not None:
        r["agentId"] = agent
    r.update(kw)
    return r


def response(uuid: str, parent: str | None, mid: str, blocks: list, t: str, agent: str | None = None, out=10) -> dict:
    r = rec("assistant", uuid, parent, blocks, t, agent)
    r["message"].update(id=mid, model="claude-opus-4-6", stop_reason="tool_use" if blocks[-1]["type"] == "tool_use" else "end_turn",
                        usage={"input_tokens": 5, "output_tokens": out, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 0})  # fmt: skip
    return r


def lead_history(agent: str | None = None) -> list[dict]:
    """The lead's records: in its own file, or replayed (as `agent`'s) in a copy."""
    call = {"type": "tool_use", "id": CALL, "name": "Agent",
            "input": {"description": "Survey", "prompt": "Survey src/", "subagent_type": "Explore"}}  # fmt: skip
    result = {"tool_use_id": CALL, "type": "tool_result", "content": [{"type": "text", "text": "src/ holds app.py"}]}
    return [
        rec("user", "u1", None, "look around", "00:00.000", agent),
        response("a1", "u1", "msg_lead_1", [call], "00:01.000", agent, out=40),
        rec("user", "u2", "a1", [result], "00:09.000", agent, toolUseResult={"status": "completed", "agentId": SUB}),
        response("a2", "u2", "msg_lead_2", [{"type": "text", "text": "Done."}], "00:10.000", agent),
    ]


def write(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.mark.parametrize("replay", ["acompact-e1f845", "aside_question-94d26433f3755c77"])
@pytest.mark.parametrize("with_meta", [False, True])
def test_the_launched_sub_agent_stays_under_the_lead(tmp_path, replay, with_meta):
    project = tmp_path / "config" / "projects" / "-w"
    write(project / f"{SID}.jsonl", lead_history())
    subs = project / SID / "subagents"
    write(subs / f"agent-{SUB}.jsonl", [
        rec("user", "s1", None, "Survey src/", "00:02.000", SUB),
        response("s2", "s1", "msg_sub_1", [{"type": "text", "text": "src/ holds app.py"}], "00:08.000", SUB),
    ])  # fmt: skip
    if with_meta:  # 2.1.105 on
        (subs / f"agent-{SUB}.meta.json").write_text(
            json.dumps({"agentType": "Explore", "description": "Survey", "toolUseId": CALL})
        )
    question = "Your task is to create a detailed summary" if replay.startswith("acompact") else "btw, what is app.py?"
    write(subs / f"agent-{replay}.jsonl", [
        *lead_history(replay),  # the replay: the same messages, the launching call among them
        rec("user", "q1", "a2", question, "00:20.000", replay),
        response("q2", "q1", "msg_side_1", [{"type": "text", "text": "An answer."}], "00:21.000", replay),
    ])  # fmt: skip
    (s,) = claude_huddle(tmp_path / "config").sessions()
    a = s.agents[SUB]
    assert a.parent == SID and a.tool_use_id == CALL
    assert s.agents[replay].parent == SID
    # the replayed responses count once, in the lead
    assert s.agents[SID].usage.output == 50
    assert s.agents[replay].usage.output == 10
    assert s.usage.output == 70


def test_a_sessions_folder_without_its_transcript_is_read(tmp_path):
    """The session's own file is gone (deleted, or a copy that left it out: the spotter
    repository kept only a sub-agent's file of one session); its sub-agents are still a
    session, and the missing file is said."""
    project = tmp_path / "config" / "projects" / "-w"
    write(project / SID / "subagents" / f"agent-{SUB}.jsonl", [
        rec("user", "s1", None, "Survey src/", "00:02.000", SUB),
        response("s2", "s1", "msg_sub_1", [{"type": "text", "text": "src/ holds app.py"}], "00:08.000", SUB),
    ])  # fmt: skip
    (project / "not-a-session").mkdir()  # (a folder of no session's: nothing)
    h = claude_huddle(tmp_path / "config")
    (s,) = h.sessions()
    assert s.id == SID and s.agents[SUB].parent == SID
    assert s.usage.output == 10
    assert any("not there" in p for p in s.problems) and s.skipped_lines == 0
    write(project / f"{SID}.jsonl", lead_history())  # the transcript comes back
    h.refresh()
    (s,) = h.sessions()
    assert s.agents[SUB].tool_use_id == CALL and s.usage.output == 60
    assert not any("not there" in p for p in s.problems)


def test_a_transcript_removed_leaves_its_sub_agents_a_session_cached_or_not(tmp_path):
    import os
    import time

    from huddle.core import Huddle, Keeper
    from huddle.sources import Settings
    from huddle.views.board import board_json, leave_board

    project = tmp_path / "config" / "projects" / "-w"
    write(project / f"{SID}.jsonl", lead_history())
    write(project / SID / "subagents" / f"agent-{SUB}.jsonl", [
        rec("user", "s1", None, "Survey src/", "00:02.000", SUB),
        response("s2", "s1", "msg_sub_1", [{"type": "text", "text": "src/ holds app.py"}], "00:08.000", SUB),
    ])  # fmt: skip

    def board(cache: bool) -> dict:
        then = time.time() - 3600  # files of a while ago, as a history's are
        for d, _, names in os.walk(tmp_path / "config"):
            for n in names:
                os.utime(os.path.join(d, n), (then, then))
        settings = Settings(folders={"claude": str(tmp_path / "config")}, huddle_home=str(tmp_path / "hh"))
        h = Huddle(settings, sources=["claude"], keep=Keeper() if cache else None)
        h.refresh()
        built: dict = {}
        b = as_json(board_json(h, built=built))
        if cache:  # as a command leaves it
            leave_board(h, b, built)
            h.cache.store.close()
        return b

    assert board(True)["sessions"][0]["usage"]["output"] == 60
    (project / f"{SID}.jsonl").unlink()
    cached = board(True)
    (row,) = cached["sessions"]
    assert row["usage"]["output"] == 10 and row["title"] == ""  # its sub-agent's alone, nothing of the lead's
    assert cached["sessions"] == board(False)["sessions"]
