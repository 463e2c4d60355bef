"""The Pi source on the real session files of Pi 1.6.0 and 0.73.1: the quirks of its format
(the extension's sub-agents, forks and branches, failed tries, Pi's own hostile shapes,
its folders, the read-only promise). Sessions, trees, tokens against a count of their
own, live reads and live snapshots over every sample: tests/test_conformance.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import SAMPLES, fingerprint
from huddle.cli import main
from huddle.core import Huddle
from huddle.model import events as ev
from huddle.sources import Settings
from huddle.sources.pi import PiSource
from huddle.views import api
from said import as_json

PI = SAMPLES / "pi"
SCENARIOS = sorted(p.name for p in PI.iterdir() if (p / "truth.json").exists())
TRUTHS = [(name, t) for name in SCENARIOS for t in json.loads((PI / name / "truth.json").read_text())["sessions"]]


def agent_dir(name: str) -> Path:
    return PI / name / "home" / ".pi" / "agent"


def pi_huddle(home: Path | str) -> Huddle:
    h = Huddle(Settings(folders={"pi": str(home)}, huddle_home="/nonexistent-huddle-test"), sources=["pi"])
    h.refresh()
    return h


def session(name: str, sid: str):
    h = pi_huddle(agent_dir(name))
    return h, next(s for s in h.sessions() if s.id == sid)


def kinds(s, kind, agent=None, copied=False):
    return [e for e in s.events if e.kind == kind and (agent is None or e.agent == agent) and e.copied == copied]


@pytest.mark.parametrize("name,t", TRUTHS, ids=[f"{n}:{t['session_id'][-4:]}" for n, t in TRUTHS])
def test_sub_agents_forks_titles_and_responses_as_pi_says_them(name, t):
    """(Sessions, trees, tokens against a count of their own, tool calls: the conformance
    suite.) The extension's children under `<call id>#<task>` with their task and report;
    a fork continues its parent; Pi makes no title; one usage event per response named by
    its id, in order; a compaction's two calls summed into one record by Pi; every call
    answered once, every prompt's turn ended."""
    h, s = session(name, t["session_id"])
    for ta in t["agents"]:
        if ta["parent_id"]:
            a = s.agents[ta["id"]]
            assert a.kind == ta["agent_name"] and a.tool_use_id == ta["spawned_by_call_id"]
            assert a.order == ta["task"] and a.report == ta["final_answer_80"]
        got = [e.id for e in kinds(s, ev.USAGE, ta["id"]) if e.id.startswith("chatcmpl-")]
        assert got == ta["response_ids"]
    assert (s.continues or None) == t["forked_from_session_id"]
    assert len(h.sessions()) == len(json.loads((PI / name / "truth.json").read_text())["sessions"])
    summaries = [e for e in kinds(s, ev.USAGE, s.id) if not e.id.startswith("chatcmpl-")]
    recorded = [r for r in t["summary_responses"] if t.get("summary_usage_in_session_total")]
    assert len(summaries) == len({r["purpose"].split("_")[0] for r in recorded})
    if t["expected_title"]:
        assert s.title == t["expected_title"] == s.custom_title and not s.ai_title
    else:
        assert s.title.startswith("[[scn:") and not s.custom_title  # the first prompt: Pi makes no title
    opened = {e.id for e in s.events if e.kind in (ev.TOOL_CALL, ev.ORDER) and not e.copied}
    answered = [e.id for e in s.events if e.kind in (ev.TOOL_RESULT, ev.REPORT) and not e.copied]
    assert sorted(answered) == sorted(opened)
    assert len(kinds(s, ev.TURN_END, s.id)) == t["user_turns"]


def test_failed_tries_and_failing_tools():
    _, s = session("06-http-retry", "01a2494a-d761-75a0-a58c-7cb5c69e36b5")
    errors = [e.text[:4] for e in kinds(s, ev.ERROR)]
    assert errors == ["429:", "500:"]
    assert [e.name for e in kinds(s, ev.CONTEXT)] == ["retry", "retry"]
    assert len(kinds(s, ev.TURN_END)) == 1  # the retries carried the turn on
    _, s = session("05-tool-error", "01a2494a-c8c3-72a8-93e4-a0f6c4971c78")
    assert [(e.name, e.ok) for e in kinds(s, ev.TOOL_RESULT)] == [("read", False), ("bash", False), ("edit", False)]


def test_a_fork_shows_its_parent_s_history_counted_once():
    h = pi_huddle(agent_dir("11-fork"))
    parent = next(s for s in h.sessions() if not s.continues)
    fork = next(s for s in h.sessions() if s.continues)
    assert fork.continues == parent.id
    copies = [e for e in fork.events if e.copied]
    assert {e.kind for e in copies} >= {ev.PROMPT, ev.SAY, ev.TOOL_CALL, ev.USAGE}
    assert all(e.origin == parent.id for e in copies if e.kind == ev.USAGE)
    ids = {e.id for e in parent.events if e.kind == ev.USAGE}
    assert {e.id for e in copies if e.kind == ev.USAGE} == ids
    assert not fork.usage_note
    board = as_json(api.sessions(h))["sessions"]
    assert sum(row["usage"]["input"] for row in board) == 1470 + 42  # the truths', each response once


def test_a_fork_without_its_parent_says_what_it_does_not_count(tmp_path):
    home = tmp_path / "agent"
    shutil.copytree(agent_dir("11-fork"), home)
    next((home / "sessions").rglob("*a156*.jsonl")).unlink()
    (s,) = pi_huddle(home).sessions()
    assert s.usage.input == 42 and "not counted" in s.usage_note


def test_a_branch_is_said_where_the_conversation_went_back():
    _, s = session("12-tree-compact", "01a2495f-72af-7053-a423-5d756dcfb5d3")
    (branch,) = [e for e in s.events if e.kind == ev.CONTEXT and e.name == "branch"]
    assert "4 entries after it stay in the file on another branch" in branch.text
    assert "“[[scn:tree1]] Suggest plan A.” and 1 more prompt" in branch.text
    assert "Pi's summary of the branch left" in branch.text
    after = [e.text for e in s.events if e.kind == ev.PROMPT and e.seq > branch.seq]
    assert after == ["[[scn:tree3]] Suggest plan B."]
    assert len(kinds(s, ev.COMPACTION)) == 1


@pytest.mark.parametrize(
    "bad",
    [
        b"{not json\n",
        b'{"type":"message","id":"x1","parentId":null,"message":{"role":"assistant","usage":"lots"}}\n',
        b'{"type":"message","id":"x2","parentId":null,"message":{"role":"user","content":7}}\n',
        b'{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":5}]}}\n',
        b'{"type":"message","timestamp":"9999-99-99","message":{"role":"toolResult","details":[1]}}\n',
        b"[1,2,3]\n",
    ],
)
def test_a_hostile_line_costs_that_line(tmp_path, bad):
    home = tmp_path / "agent"
    shutil.copytree(agent_dir("02-shell"), home)
    (f,) = (home / "sessions").rglob("*.jsonl")
    lines = f.read_bytes().splitlines(keepends=True)
    (clean,) = pi_huddle(home).sessions()
    f.write_bytes(b"".join(lines[:5] + [bad] + lines[5:]))
    (s,) = pi_huddle(home).sessions()
    assert s.error is None and s.usage.to_dict() == clean.usage.to_dict()
    keep = {ev.PROMPT, ev.SAY, ev.TOOL_CALL, ev.TOOL_RESULT, ev.USAGE, ev.TURN_END}
    assert [(e.kind, e.id) for e in s.events if e.kind in keep] == [
        (e.kind, e.id) for e in clean.events if e.kind in keep
    ]


def test_files_that_are_not_sessions_are_accounted_for(tmp_path):
    home = tmp_path / "agent"
    shutil.copytree(agent_dir("01-qa"), home)
    proj = home / "sessions" / "--home-dev-work-proj--"
    (proj / "2026-12-06T00-00-00-000Z_empty.jsonl").write_bytes(b"")
    (proj / "2026-12-06T00-00-00-000Z_bad.jsonl").write_bytes(b'{"type":"message"}\n')
    (proj / "notes.md").write_text("hi")
    (proj / "subagent-artifacts").mkdir()
    src = PiSource(Settings(folders={"pi": str(home)}))
    assert len(src.scan({})) == 1
    why = {Path(p).name: v for p, v in src.accounts.items()}
    assert why["2026-12-06T00-00-00-000Z_empty.jsonl"] == ("not a session", "empty file")
    assert why["2026-12-06T00-00-00-000Z_bad.jsonl"] == ("not read", "first line is not a session header")
    assert why["notes.md"][0] == "not a session" and why["subagent-artifacts"][0] == "not read"
    assert why["settings.json"] == ("not a session", "Pi's settings")


def test_the_session_folders_pi_honours(tmp_path, monkeypatch):
    """PI_CODING_AGENT_SESSION_DIR (flat, as `--session-dir` writes), settings.json's
    sessionDir, and a sibling that embeds Pi (GSD) with the same layout."""
    home = tmp_path / "home"
    agent = home / ".pi" / "agent"
    shutil.copytree(agent_dir("01-qa"), agent)
    flat = tmp_path / "flat"
    flat.mkdir()
    for f in (agent_dir("02-shell") / "sessions").rglob("*.jsonl"):
        shutil.copy(f, flat)
    named = tmp_path / "named"
    shutil.copytree(agent_dir("03-files") / "sessions", named)
    (agent / "settings.json").write_text(json.dumps({"sessionDir": str(named)}))
    shutil.copytree(agent_dir("10-name"), home / ".gsd" / "agent")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(flat))
    monkeypatch.setenv("HUDDLE_SOURCES", "pi")
    r = CliRunner().invoke(main, ["status", "--json", "--all"])
    assert r.exit_code == 0, r.output
    got = {row["title"] for row in json.loads(r.output)["sessions"]}
    assert len(got) == 4 and "Test runner question" in got


def test_read_only_and_cli_twins(tmp_path, monkeypatch):
    home = tmp_path / "user"
    shutil.copytree(PI / "07-subagent-extension" / "home", home)
    before = fingerprint(home)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HUDDLE_SOURCES", "pi")
    r = CliRunner().invoke(main, ["status", "--json", "--all"])
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.output)["sessions"]
    assert row["source"] == "pi" and len(row["agents"]) == 2 and row["state"] == "ended"
    assert row["resume"] == f"pi --session {row['id']}"
    for args in (
        ["show", row["id"], "--json"],
        ["usage", "--json"],
        ["export", row["id"], "-o", str(tmp_path / "x.md")],
    ):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 0, (args, r.output)
    assert fingerprint(home) == before


def test_a_version_1_file_reads_as_a_sequence(tmp_path):
    """Before ids (version 1): no tree, `branchedFrom` where `parentSession` is now, the model
    in the header; made here from the fork sample by taking those away."""
    home = tmp_path / "agent"
    shutil.copytree(agent_dir("11-fork"), home)
    for f in (home / "sessions").rglob("*.jsonl"):
        recs = [json.loads(x) for x in f.read_text().splitlines()]
        head = recs[0]
        head.pop("version")
        head["modelId"] = "fake-model"
        if "parentSession" in head:
            head["branchedFrom"] = head.pop("parentSession")
        for r in recs[1:]:
            r.pop("id")
            r.pop("parentId")
        f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    h = pi_huddle(home)
    fork = next(s for s in h.sessions() if s.continues)
    assert fork.usage.input == 42 and not fork.problems
    assert sum(row["usage"]["input"] for row in as_json(api.sessions(h))["sessions"]) == 1470 + 42
