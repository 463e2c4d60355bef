"""The OpenCode source on the real databases of OpenCode 1.18.33 (eight scenarios, each with
the truth the scripted model API recorded)."""

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
from huddle.sources.opencode import OpenCodeSource
from huddle.views import api

OPENCODE = SAMPLES / "opencode"
SCENARIOS = sorted(p.name for p in OPENCODE.iterdir() if (p / "home" / ".local" / "share" / "opencode").is_dir())


def data_dir(name: str) -> Path:
    return OPENCODE / name / "home" / ".local" / "share" / "opencode"


def opencode_huddle(data: Path | str) -> Huddle:
    h = Huddle(Settings(folders={"opencode": str(data)}, huddle_home="/nonexistent-huddle-test"), sources=["opencode"])
    h.refresh()
    return h


def scenario(name: str) -> Huddle:
    return opencode_huddle(data_dir(name))


def truth(name: str) -> dict:
    return json.loads((OPENCODE / name / "truth.json").read_text())["sessions"][0]


def only(h: Huddle):
    (s,) = h.sessions()
    return s


def kinds(s, kind, agent=None):
    return [e for e in s.events if e.kind == kind and (agent is None or e.agent == agent)]


@pytest.mark.parametrize("name", SCENARIOS)
def test_folder_of_every_scenario(name):
    """(sessions, trees and parents against the truth: tests/test_conformance.py)"""
    assert only(scenario(name)).cwd == truth(name)["cwd"]


@pytest.mark.parametrize("name", SCENARIOS)
def test_tokens_and_responses_are_the_truths(name):
    """(against a count straight from the records: tests/test_conformance.py)"""
    s = only(scenario(name))
    tu = truth(name)["usage_session_total"]
    assert (s.usage.input, s.usage.cache_read, s.usage.output) == (
        tu["input_tokens"],
        tu["cache_read_input_tokens"],
        tu["output_tokens"],
    )
    for ta in truth(name)["agents"]:
        assert len(kinds(s, ev.USAGE, ta["id"])) == ta["n_model_responses"]  # the title call counted nowhere


@pytest.mark.parametrize("name", SCENARIOS)
def test_titles_and_tool_calls(name):
    t = truth(name)
    s = only(scenario(name))
    assert s.title == t["expected_title"]
    for ta in t["agents"]:
        calls = [e.name for e in kinds(s, ev.TOOL_CALL, ta["id"])] + [e.name for e in kinds(s, ev.ORDER, ta["id"])]
        names = {"task": "general"}
        assert sorted(calls) == sorted(names.get(c["name"], c["name"]) for c in ta["tool_calls"])
    ids = [e.id for e in kinds(s, ev.TOOL_RESULT)]
    assert len(ids) == len(set(ids))
    assert set(ids) == {e.id for e in s.events if e.kind in (ev.TOOL_CALL, ev.ORDER) and e.id}


def test_qa_events_in_order():
    s = only(scenario("01-qa"))
    assert [e.kind for e in s.events if e.kind != ev.TITLE] == [ev.PROMPT, ev.THINK, ev.SAY, ev.USAGE, ev.TURN_END]
    assert kinds(s, ev.USAGE)[0].name == "fake-model"
    assert kinds(s, ev.PROMPT)[0].text.startswith('"[[scn:qa]]')  # `run` passes the quotes it was given


def test_continued_sessions_and_errors():
    s = only(scenario("04-continue"))
    assert len(kinds(s, ev.PROMPT)) == 3 and len(kinds(s, ev.TURN_END)) == 3
    s = only(scenario("05-errors"))
    oks = [r.ok for r in kinds(s, ev.TOOL_RESULT)]
    assert oks == [False, False, True]  # a read that could not run; `ls` that exited 2; the retried echo


def test_sub_agent_order_report_and_tree():
    s = only(scenario("07-subagent"))
    (child,) = [a for a in s.agents.values() if a.id != s.id]
    (order,) = kinds(s, ev.ORDER)
    assert order.agent == s.id and order.target == child.id and order.name == "general"
    assert order.detail == "Count Python files"
    assert child.tool_use_id == order.id and child.kind == "general" and child.description == "Count Python files"
    assert child.order.startswith("[[scn:sub_gen]]")
    assert child.report == "There is 1 Python file: app.py."
    (report,) = kinds(s, ev.REPORT)
    assert report.id == order.id and report.ok
    assert [e.name for e in kinds(s, ev.TOOL_CALL, child.id)] == ["bash"]


def test_content_read_back_of_a_call_its_output_and_a_text():
    h = scenario("02-shell")
    s = only(h)
    out = api.events(h, s.id)["events"]
    call = next(e for e in out if e["kind"] == "tool_call")
    res = next(e for e in out if e["kind"] == "tool_result")
    say = next(e for e in out if e["kind"] == "say")
    assert api.content(h, s.id, call["ref"])["input"]["command"] == "ls -la"
    assert "README.md" in api.content(h, s.id, res["ref"])["text"]
    assert api.content(h, s.id, say["ref"])["text"] == say["text"]


# -- folders ----------------------------------------------------------------------------------


def test_folder_rules_of_the_cli(tmp_path, monkeypatch):
    env = {"HOME": str(tmp_path)}
    assert Settings.from_env(env).folder("opencode") == str(tmp_path / ".local" / "share" / "opencode")
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    assert Settings.from_env(env).folder("opencode") == str(tmp_path / "data" / "opencode")
    env["HUDDLE_OPENCODE_DIR"] = str(tmp_path / "mine")
    assert Settings.from_env(env).folder("opencode") == str(tmp_path / "mine")
    # the database: OPENCODE_DB (absolute, or under the data folder), else every channel's
    data = tmp_path / "d"
    data.mkdir()
    for n in ("opencode.db", "opencode-dev.db", "other.db"):
        (data / n).write_bytes(b"")
    src = OpenCodeSource(Settings(folders={"opencode": str(data)}))
    assert [Path(p).name for p in src.db_paths()] == ["opencode.db", "opencode-dev.db"]
    monkeypatch.setenv("OPENCODE_DB", "custom.db")
    assert src.db_paths() == [str(data / "custom.db")]
    monkeypatch.setenv("OPENCODE_DB", str(tmp_path / "else" / "x.db"))
    assert src.db_paths() == [str(tmp_path / "else" / "x.db")]
    assert str(tmp_path / "else") in src.roots()
    # the lock folders beside the data folder's home, as OpenCode keeps them
    src = OpenCodeSource(Settings(folders={"opencode": str(tmp_path / "h" / ".local" / "share" / "opencode")}))
    assert src.state_dir == str(tmp_path / "h" / ".local" / "state" / "opencode")


def test_cli_twins_and_read_only(tmp_path, monkeypatch):
    home = tmp_path / "user"
    shutil.copytree(OPENCODE / "07-subagent" / "home", home)
    before = fingerprint(home)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HUDDLE_SOURCES", "opencode")
    r = CliRunner().invoke(main, ["status", "--json"])
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.output)["sessions"]
    assert row["source"] == "opencode" and len(row["agents"]) == 2 and row["title"] == "Count Python files with helper"
    r = CliRunner().invoke(main, ["show", row["id"], "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["id"] == row["id"]
    r = CliRunner().invoke(main, ["usage", "--json"])
    assert r.exit_code == 0, r.output
    assert fingerprint(home) == before


def test_registered_with_the_builtins():
    from huddle.sources.registry import BUILTIN, source_classes

    assert "opencode" in BUILTIN and source_classes()["opencode"] is OpenCodeSource
