"""A sub-agent's responses mirrored in its caller's file (Claude Code 2.1.x `progress`
records of type agent_progress): counted once, as the sub-agent's, whether its own file is
there too or gone (real histories keep the main files only; ccusage counts these too).

No sample of ours was written by a version that mirrors (2.1.29 did, on real users'
files): the mirror is built here from the real 2.1.105 sub-agent sample, in the shape
2.1.29 writes: each assistant record of `subagents/agent-<id>.jsonl` copied under
`data.message`, `data.agentId` = <id>, `parentToolUseID` = the Agent call."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import SAMPLES
from helpers import claude_huddle
from test_claude_history import largest_per_id, listed, total, usage4, usage_only

SAMPLE = SAMPLES / "claude-history" / "2.1.105" / "02-subagents" / "config"


def _calls(main: Path) -> dict[str, str]:
    """sub-agent id -> the Agent call that started it (its result names the agent)."""
    out = {}
    for line in main.read_bytes().splitlines():
        d = json.loads(line)
        res = d.get("toolUseResult")
        content = (d.get("message") or {}).get("content")
        if isinstance(res, dict) and res.get("agentId") and isinstance(content, list):
            out[res["agentId"]] = content[0]["tool_use_id"]
    return out


def _progress(sub_id: str, call: str, rec: dict, n: int) -> bytes:
    mirrored = {"type": "assistant", "timestamp": rec["timestamp"], "message": rec["message"], "uuid": rec["uuid"]}
    d = {
        "parentUuid": None,
        "isSidechain": False,
        "sessionId": rec["sessionId"],
        "version": "2.1.29",
        "type": "progress",
        "data": {
            "message": mirrored,
            "normalizedMessages": [],
            "type": "agent_progress",
            "prompt": "",
            "agentId": sub_id,
        },
        "toolUseID": f"agent_msg_{n}",
        "parentToolUseID": call,
        "uuid": f"progress-{n}",
        "timestamp": rec["timestamp"],
    }
    return json.dumps(d, separators=(",", ":")).encode()


@pytest.fixture
def mirrored(tmp_path) -> Path:
    """The sample with each sub-agent's responses mirrored into the main file, right after
    the Agent call that started it."""
    config = tmp_path / "config"
    shutil.copytree(SAMPLE, config)
    (main,) = config.glob("projects/*/*.jsonl")
    calls = _calls(main)
    assert len(calls) == 2
    lines = main.read_bytes().splitlines()
    n = 0
    for sub in sorted(config.glob("projects/*/*/subagents/agent-*.jsonl")):
        sub_id = sub.stem[len("agent-") :]
        call = calls[sub_id]
        at = next(i for i, line in enumerate(lines) if f'"id":"{call}"'.encode() in line) + 1
        copies = []
        for line in sub.read_bytes().splitlines():
            rec = json.loads(line)
            if rec.get("type") == "assistant":
                n += 1
                copies.append(_progress(sub_id, call, rec, n))
        lines[at:at] = copies
    main.write_bytes(b"\n".join(lines) + b"\n")
    return config


def _agents(h) -> dict[str, tuple]:
    (s,) = h.sessions()
    return {a.id: (a.parent, a.tool_use_id, usage4(a.usage), a.order) for a in s.agents.values()}


def test_mirrored_responses_count_once_beside_the_sub_agents_own_files(mirrored):
    assert _agents(claude_huddle(mirrored)) == _agents(claude_huddle(SAMPLE))
    (s,) = claude_huddle(mirrored).sessions()
    assert s.skipped_lines == 0, s.problems


def test_a_sub_agent_whose_file_is_gone_is_known_from_its_callers_progress(mirrored):
    truth = total(largest_per_id(SAMPLE.glob("projects/**/*.jsonl")))  # main and sub-agent files
    whole = _agents(claude_huddle(SAMPLE))
    for folder in mirrored.glob("projects/*/*/subagents"):
        shutil.rmtree(folder)
    h = claude_huddle(mirrored)
    (s,) = h.sessions()
    assert usage4(s.usage) == truth
    gone = _agents(h)
    assert set(gone) == set(whole)
    for agent, (_parent, call, used, order) in whole.items():
        assert gone[agent][2] == used, agent  # each response counted as its own agent's
        assert (gone[agent][1], gone[agent][3]) == (call, order), agent  # tied to the call that started it
        assert gone[agent][0] == s.lead_id or agent == s.lead_id
        assert agent == s.lead_id or order  # (the sample's calls carry orders)
    assert [r["state"] for r in listed(h).values()] == [r["state"] for r in listed(claude_huddle(SAMPLE)).values()]


def test_a_usage_only_read_counts_the_mirror_as_a_full_read(mirrored):
    for folder in mirrored.glob("projects/*/*/subagents"):
        shutil.rmtree(folder)
    assert _agents(usage_only(mirrored)) == _agents(claude_huddle(mirrored))
