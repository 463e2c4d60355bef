"""The Gemini CLI source on the real chat files of Gemini CLI 0.61.0 (ten scenarios, each
with the truth the scripted model API recorded)."""

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
from huddle.model.doing import doing
from huddle.sources import Settings
from huddle.sources.gemini import GeminiSource
from huddle.views import api

GEMINI = SAMPLES / "gemini"
SCENARIOS = sorted(p.name for p in GEMINI.iterdir() if (p / "truth.json").exists())


def gemini_huddle(home: Path | str) -> Huddle:
    h = Huddle(Settings(folders={"gemini": str(home)}, huddle_home="/nonexistent-huddle-test"), sources=["gemini"])
    h.refresh()
    return h


def scenario(name: str) -> Huddle:
    return gemini_huddle(GEMINI / name / "home" / ".gemini")


def truth(name: str) -> dict:
    return json.loads((GEMINI / name / "truth.json").read_text())


def only(h: Huddle):
    (s,) = h.sessions()
    return s


def kinds(s, kind, agent=None):
    return [e for e in s.events if e.kind == kind and (agent is None or e.agent == agent)]


@pytest.mark.parametrize("name", SCENARIOS)
def test_folder_project_and_agent_kinds(name):
    """(sessions, trees and parents against the truth: tests/test_conformance.py)"""
    t = truth(name)["sessions"][0]
    s = only(scenario(name))
    assert s.cwd == t["cwd"] and s.summary().project == t["project"]
    for ta in t["agents"]:
        if ta["agent_name"]:
            assert s.agents[ta["id"]].kind == ta["agent_name"]


@pytest.mark.parametrize("name", SCENARIOS)
def test_tokens_and_responses_are_the_truths(name):
    """(against a count straight from the records: tests/test_conformance.py)"""
    s = only(scenario(name))
    tu = truth(name)["sessions"][0]["usage_session_total"]
    assert s.usage.input == tu["input_tokens"]
    assert s.usage.cache_read == tu["cache_read_input_tokens"]
    assert s.usage.output == tu["output_tokens"]
    assert s.usage.cache_write == 0
    for ta in truth(name)["sessions"][0]["agents"]:
        assert len(kinds(s, ev.USAGE, ta["id"])) == ta["n_model_responses"]


@pytest.mark.parametrize("name", SCENARIOS)
def test_titles_and_tool_calls(name):
    t = truth(name)["sessions"][0]
    s = only(scenario(name))
    if t["expected_title"]:
        assert s.title == t["expected_title"]
        assert s.ai_title == t["expected_title"]
    else:
        assert s.title.startswith("[[scn:")  # the first prompt, as typed
    for ta in t["agents"]:
        calls = [e.name for e in kinds(s, ev.TOOL_CALL, ta["id"])] + [e.name for e in kinds(s, ev.ORDER, ta["id"])]
        want = [c["name"] for c in ta["tool_calls"]]
        names = {"invoke_agent": "generalist"}
        assert sorted(calls) == sorted(names.get(n, n) for n in want)
    # every call has exactly one result, each event once
    ids = [e.id for e in kinds(s, ev.TOOL_RESULT)]
    assert len(ids) == len(set(ids))
    opened = {e.id for e in s.events if e.kind in (ev.TOOL_CALL, ev.ORDER) and e.agent == e.agent}
    assert set(ids) == opened


def test_qa_events_in_order():
    s = only(scenario("01-qa"))
    seq = [e.kind for e in s.events]
    assert seq == [ev.CONTEXT, ev.PROMPT, ev.THINK, ev.SAY, ev.USAGE]
    assert kinds(s, ev.SAY)[0].text.startswith("A Python list is mutable")
    assert kinds(s, ev.THINK)[0].text  # the thought's subject and description
    assert kinds(s, ev.USAGE)[0].name == "gemini-2.5-flash"


def test_a_response_written_twice_gives_its_calls_once():
    s = only(scenario("02-shell"))
    calls = kinds(s, ev.TOOL_CALL)
    assert [c.detail.rsplit(": ", 1)[-1] for c in calls] == ["ls -la", "git log --oneline -3", "python3 app.py"]
    assert doing(calls[0].name, calls[0].detail) == "running ls -la"
    assert all(r.ok for r in kinds(s, ev.TOOL_RESULT))
    assert len(kinds(s, ev.USAGE)) == 3  # three responses, though five gemini records


def test_tool_errors_fail_and_a_failing_command_fails_too():
    s = only(scenario("05-tool-error"))
    res = {c.detail.rsplit(": ", 1)[-1]: r.ok for c, r in zip(kinds(s, ev.TOOL_CALL), kinds(s, ev.TOOL_RESULT))}
    assert res == {"does/not/exist.txt": False, "ls missing-dir": False}


def test_resume_counts_each_response_once_and_marks_the_resumes():
    s = only(scenario("04-resume"))
    assert [e.text for e in kinds(s, ev.PROMPT)] == [
        "[[scn:turn1]] How many lines does app.py have?",
        "[[scn:turn2]] And what does the README say?",
        "[[scn:turn3]] Is this still the same session?",
    ]
    assert [e.name for e in kinds(s, ev.CONTEXT)] == ["session_context", "resume", "resume"]
    assert len(kinds(s, ev.USAGE)) == 5
    assert len(kinds(s, ev.TURN_END)) == 2  # the last answer waits for what comes next


def test_sub_agent_tree_order_and_report():
    s = only(scenario("07-subagent"))
    lead = s.agents[s.id]
    (child,) = [a for a in s.agents.values() if a.id != s.id]
    assert child.parent == s.id and child.kind == "generalist"
    assert child.order.startswith("[[scn:sub_gen]] Count the Python files")
    assert child.report == "There is 1 Python file: app.py."
    assert child.finished and child.tool_use_id
    (order,) = kinds(s, ev.ORDER)
    assert order.agent == s.id and order.target == child.id and order.id == child.tool_use_id
    (report,) = kinds(s, ev.REPORT)
    assert report.target == child.id and report.ok
    assert [e.name for e in kinds(s, ev.TOOL_CALL, child.id)] == ["run_shell_command", "complete_task"]
    assert lead.usage.total + child.usage.total == s.usage.total


def test_a_summary_written_into_an_earlier_session_titles_it():
    s = only(scenario("10-summary"))
    assert s.title == "Compare Python lists and tuples"
    (title,) = kinds(s, ev.TITLE)
    assert title.detail == "ai"
    assert kinds(s, ev.TURN_END)  # the summary record comes after the answer: the turn was over


def test_the_long_session():
    s = only(scenario("09-long"))
    assert len(kinds(s, ev.TOOL_CALL)) == 49 and len(kinds(s, ev.USAGE)) == 50


def test_content_read_back_of_a_call_and_its_output():
    h = scenario("02-shell")
    s = only(h)
    out = api.events(h, s.id)
    call = next(e for e in out["events"] if e["kind"] == "tool_call")
    res = next(e for e in out["events"] if e["kind"] == "tool_result")
    assert api.content(h, s.id, call["ref"])["input"] == {"command": "ls -la", "description": "list the project"}
    assert "README.md" in api.content(h, s.id, res["ref"])["text"]


# -- folders ----------------------------------------------------------------------------------


def test_folder_rules_of_the_cli(tmp_path):
    home = tmp_path / "home"
    env = {"HOME": str(home)}
    assert Settings.from_env(env).folder("gemini") == str(home / ".gemini")
    env["GEMINI_CLI_HOME"] = str(tmp_path / "alt")  # the CLI's own variable: a stand-in for the home
    assert Settings.from_env(env).folder("gemini") == str(tmp_path / "alt" / ".gemini")
    env["HUDDLE_GEMINI_DIR"] = str(tmp_path / "mine")  # huddle's: the .gemini folder itself
    s = Settings.from_env(env)
    assert s.folder("gemini") == str(tmp_path / "mine") and "gemini" in s.explicit


def test_read_only_and_cli_twins(tmp_path, monkeypatch):
    home = tmp_path / "user"
    shutil.copytree(GEMINI / "07-subagent" / "home", home)
    before = fingerprint(home)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HUDDLE_SOURCES", "gemini")
    r = CliRunner().invoke(main, ["status", "--json"])
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.output)["sessions"]
    assert row["source"] == "gemini" and len(row["agents"]) == 2 and row["state"] == "ended"
    r = CliRunner().invoke(main, ["show", row["id"], "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["id"] == row["id"]
    assert fingerprint(home) == before


def test_a_first_line_that_is_no_header_costs_that_session(tmp_path):
    home = tmp_path / ".gemini"
    shutil.copytree(GEMINI / "01-qa" / "home" / ".gemini", home)
    chats = home / "tmp" / "proj" / "chats"
    (chats / "session-2026-12-01T10-00-deadbeef.jsonl").write_text('{"nope": 1}\n{"type":"user"}\n')
    h = gemini_huddle(home)
    by_error = {bool(s.error) for s in h.sessions()}
    assert by_error == {True, False} and len(h.sessions()) == 2


def test_an_older_cli_s_whole_session_document(tmp_path):
    """Before JSONL, one JSON document per session, rewritten in place: read whole, again
    when it changes."""
    home = tmp_path / ".gemini"
    chats = home / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True)
    src = GEMINI / "02-shell" / "home" / ".gemini" / "tmp" / "proj" / "chats"
    lines = [json.loads(x) for x in next(src.glob("*.jsonl")).read_text().splitlines()]
    msgs = {}
    for d in lines:
        if "type" in d:
            msgs[d["id"]] = d  # the last version of each message, as the old document held it
    doc = {"sessionId": lines[0]["sessionId"], "startTime": lines[0]["startTime"], "messages": list(msgs.values())}
    path = chats / "session-2026-01-01T00-00-c2b4cde6.json"
    path.write_text(json.dumps(doc))
    h = gemini_huddle(home)
    s = only(h)
    assert s.usage.output == 134 and len(kinds(s, ev.TOOL_CALL)) == 3
    doc["summary"] = "Look around and run the app"
    path.write_text(json.dumps(doc))
    h.refresh()
    s = only(h)
    assert s.title == "Look around and run the app" and s.usage.output == 134


def test_registered_with_the_builtins():
    from huddle.sources.registry import BUILTIN, source_classes

    assert "gemini" in BUILTIN and source_classes()["gemini"] is GeminiSource
