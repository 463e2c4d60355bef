"""The GitHub Copilot CLI source on the real files of Copilot CLI 1.0.102: what is its own
(usage records by call id, never the exits' shutdowns; an older CLI's usage; titles, events,
sub-agents inline, retries from the process log, workspace.yaml, the folders the CLI
honours, what the scan accounts for, Copilot's hostile shapes, the read-only promise).
Sessions, trees, tokens against a count of their own, live reads and live snapshots from
the files alone over every sample: tests/test_conformance.py."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from conftest import SAMPLES, fingerprint
from huddle.cli import main
from huddle.core import Huddle
from huddle.model import events as ev
from huddle.model.doing import doing
from huddle.model.signals import Live
from huddle.server import ServerThread
from huddle.sources import Settings
from huddle.sources.copilot import CopilotSource
from huddle.views import api

COPILOT = SAMPLES / "copilot"
SCENARIOS = sorted(p.name for p in COPILOT.iterdir() if (p / "truth.json").exists())


def core(home: Path | str) -> Huddle:
    h = Huddle(Settings(folders={"copilot": str(home)}, huddle_home="/nonexistent-huddle-test"), sources=["copilot"])
    h.refresh()
    return h


def scenario(name: str) -> Huddle:
    return core(COPILOT / name / "home" / ".copilot")


def truth(name: str) -> dict:
    return json.loads((COPILOT / name / "truth.json").read_text())["sessions"][0]


def only(h: Huddle):
    (s,) = h.sessions()
    return s


def kinds(s, kind, agent=None):
    return [e for e in s.events if e.kind == kind and (agent is None or e.agent == agent)]


def records(name: str) -> list[dict]:
    (f,) = (COPILOT / name / "home" / ".copilot" / "session-state").glob("*/events.jsonl")
    return [json.loads(x) for x in f.read_text().splitlines()]


def straight_count(name: str) -> dict[str, tuple[int, int, int, int]]:
    """Tokens straight from the records: every `session.usage_record`, by the agent its
    `agentId` names (the task call `subagent.started` gives it) or the lead; input net of
    the cached part. (input, cache read, output, responses)"""
    recs = records(name)
    lead = recs[0]["data"]["sessionId"]
    sub = {r["agentId"]: r["data"]["toolCallId"] for r in recs if r["type"] == "subagent.started"}
    out: dict[str, list[int]] = {}
    for r in recs:
        if r["type"] == "session.usage_record":
            u = r["data"]["usage"]
            a = out.setdefault(sub.get(r.get("agentId"), lead), [0, 0, 0, 0])
            a[0] += u["inputTokens"] - u["cacheReadTokens"] - u["cacheWriteTokens"]
            a[1] += u["cacheReadTokens"]
            a[2] += u["outputTokens"]
            a[3] += 1
    return {k: (v[0], v[1], v[2], v[3]) for k, v in out.items()}


@pytest.mark.parametrize("name", SCENARIOS)
def test_usage_events_are_named_by_their_call_ids(name):
    """(Sessions, trees, tokens against a count of their own: tests/test_conformance.py.)
    One usage event per model response, named by its apiCallId, in order; no cache writes."""
    s = only(scenario(name))
    assert s.usage.cache_write == 0 and not s.usage_note
    for ta in truth(name)["agents"]:
        assert [e.id for e in kinds(s, ev.USAGE, ta["id"])] == ta["response_ids"]


def test_shutdowns_repeat_the_whole_session_and_are_never_summed():
    recs = records("04-resume")
    shutdowns = [
        r["data"]["modelMetrics"]["fake-model"]["usage"]["outputTokens"]
        for r in recs
        if r["type"] == "session.shutdown"
    ]
    assert shutdowns == [21, 42, 55]  # cumulative: each exit repeats the runs before it
    s = only(scenario("04-resume"))
    assert s.usage.output == 55 != sum(shutdowns)


@pytest.mark.parametrize("name", SCENARIOS)
def test_titles_and_results(name):
    """--name is the user's title; without it, the name the CLI keeps is the first prompt, a
    placeholder. Every call has exactly one result."""
    t = truth(name)
    s = only(scenario(name))
    if t["expected_title"]:
        assert s.title == s.custom_title == t["expected_title"]
    else:
        assert s.custom_title == s.ai_title == "" and s.title == t["first_prompt"]
    results = [e.id for e in kinds(s, ev.TOOL_RESULT)]
    assert len(results) == len(set(results))
    assert set(results) == {e.id for e in s.events if e.kind in (ev.TOOL_CALL, ev.ORDER)}


def test_qa_events_in_order():
    s = only(scenario("01-qa"))
    assert [e.kind for e in s.events] == [ev.CONTEXT, ev.PROMPT, ev.USAGE, ev.THINK, ev.SAY, ev.TURN_END, ev.CONTEXT]
    assert kinds(s, ev.SAY)[0].text.startswith("A Python list is mutable")
    assert kinds(s, ev.USAGE)[0].name == "fake-model"
    assert [e.name for e in kinds(s, ev.CONTEXT)] == ["session_start", "shutdown"]


def test_a_turn_stays_open_between_model_calls_and_ends_with_the_answer():
    s = only(scenario("02-shell"))
    assert len(kinds(s, ev.TURN_END)) == 1 and s.events[-2].kind == ev.TURN_END  # (the shutdown after it)
    calls = kinds(s, ev.TOOL_CALL)
    assert [c.name for c in calls] == ["bash"] * 3
    assert doing(calls[0].name, calls[0].detail).startswith("running ")
    assert all(r.ok for r in kinds(s, ev.TOOL_RESULT))


def test_tool_errors_and_a_failing_command_fail():
    s = only(scenario("05-tool-error"))
    assert [(c.name, r.ok) for c, r in zip(kinds(s, ev.TOOL_CALL), kinds(s, ev.TOOL_RESULT), strict=True)] == [
        ("view", False),  # could not run: success false
        ("bash", False),  # ran, exit code 2
    ]


def test_resume_appends_to_the_same_session():
    s = only(scenario("04-resume"))
    assert [e.text for e in kinds(s, ev.PROMPT)] == [
        "[[scn:turn1]] How many lines does app.py have?",
        "[[scn:turn2]] And what does the README say?",
        "[[scn:turn3]] Is this still the same session?",
    ]
    assert [e.name for e in kinds(s, ev.CONTEXT)] == [
        "session_start",
        "shutdown",
        "resume",
        "shutdown",
        "resume",
        "shutdown",
    ]
    assert len(kinds(s, ev.TURN_END)) == 3 and len(kinds(s, ev.USAGE)) == 5


def test_sub_agent_order_report_and_its_own_events():
    s = only(scenario("07-subagent"))
    t = truth("07-subagent")
    child = s.agents["call_subagent_0_0_1"]
    ta = t["agents"][1]
    assert child.kind == ta["agent_name"] and child.name == ta["display_name"]
    assert child.description == ta["task_description"] and child.tool_use_id == ta["id"]
    assert child.parent == s.id and child.order.startswith("[[scn:sub_gen]] Count the Python files")
    assert child.report == "There is 1 Python file: app.py." and child.finished
    (order,) = kinds(s, ev.ORDER)
    assert order.agent == s.id and order.target == child.id == order.id and order.name == "general-purpose"
    (report,) = kinds(s, ev.REPORT)
    assert report.target == child.id and report.ok
    assert [e.name for e in kinds(s, ev.TOOL_CALL, child.id)] == ["bash"]
    assert kinds(s, ev.TURN_END, child.id) and not kinds(s, ev.PROMPT, child.id)  # its prompt: the order
    assert s.agents[s.id].usage.total + child.usage.total == s.usage.total
    assert t["agents"][1]["copilot_agent_id"] in {r.get("agentId") for r in records("07-subagent")}


def test_the_approval_waits_then_is_answered():
    s = only(scenario("08-interactive-approval"))
    (w,) = kinds(s, ev.WAITING)
    (r,) = kinds(s, ev.RESOLVED)
    assert w.id == r.id == "call_approve_0_0_1" and w.name == "bash" and r.text == "approved"
    assert w.detail == "approve bash: sleep 8; echo slept"


def test_the_long_session():
    s = only(scenario("09-long"))
    assert len(kinds(s, ev.TOOL_CALL)) == 49 and len(kinds(s, ev.USAGE)) == 50 and len(kinds(s, ev.TURN_END)) == 1


def test_content_read_back_of_a_call_its_output_and_a_prompt():
    h = scenario("02-shell")
    s = only(h)
    out = api.events(h, s.id)
    call = next(e for e in out["events"] if e["kind"] == "tool_call")
    res = next(e for e in out["events"] if e["kind"] == "tool_result")
    prompt = next(e for e in out["events"] if e["kind"] == "prompt")
    assert api.content(h, s.id, call["ref"])["input"]["command"].startswith("ls")
    assert "app.py" in api.content(h, s.id, res["ref"])["text"]
    said = api.content(h, s.id, prompt["ref"])["text"]
    assert said == s.first_prompt  # what was typed, without the date the harness put before it
    h = scenario("05-tool-error")
    s = only(h)
    failed = next(e for e in api.events(h, s.id)["events"] if e["kind"] == "tool_result")
    assert "does not exist" in api.content(h, s.id, failed["ref"])["text"]


# -- folders ----------------------------------------------------------------------------------


def test_folder_rules_of_the_cli(tmp_path):
    home = tmp_path / "home"
    env = {"HOME": str(home)}
    s = Settings.from_env(env)
    assert s.folder("copilot") == str(home / ".copilot") and "copilot" not in s.explicit
    env["COPILOT_HOME"] = str(tmp_path / "alt")  # the CLI's own variable: the folder itself
    s = Settings.from_env(env)
    assert s.folder("copilot") == str(tmp_path / "alt") and "copilot" in s.explicit
    assert CopilotSource(s).roots() == [str(tmp_path / "alt")]


def test_an_older_cli_s_xdg_state_folder_is_read_too(tmp_path, monkeypatch):
    """CLIs before 1.0 kept state in $XDG_STATE_HOME/.copilot; today's move it to ~/.copilot at
    start. Both are read; a session in both counts once, from ~/.copilot."""
    home, state = tmp_path / "home", tmp_path / "state"
    shutil.copytree(COPILOT / "01-qa" / "home" / ".copilot", home / ".copilot")
    shutil.copytree(COPILOT / "02-shell" / "home" / ".copilot", state / ".copilot")
    shutil.copytree(COPILOT / "01-qa" / "home" / ".copilot", state / ".copilot", dirs_exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    settings = Settings.from_env()
    h = Huddle(settings, sources=["copilot"])
    h.refresh()
    assert sorted(s.id[:8] for s in h.sessions()) == ["5218add8", "be7ac7cf"]
    assert only_of(h, "5218add8").agents[only_of(h, "5218add8").id].file.startswith(str(home))
    src = next(s for s in h.sources if s.name == "copilot")
    copy = str(state / ".copilot" / "session-state" / "5218add8-c733-4917-8f16-240bc5324700")
    assert src.accounts[copy][0] == "not read" and "a copy of session" in src.accounts[copy][1]
    monkeypatch.setenv("COPILOT_HOME", str(home / ".copilot"))  # the CLI's own variable wins
    assert CopilotSource(Settings.from_env()).roots() == [str(home / ".copilot")]


def only_of(h: Huddle, prefix: str):
    return next(s for s in h.sessions() if s.id.startswith(prefix))


def test_huddle_sources_selects_it_and_it_is_registered(tmp_path, monkeypatch):
    from huddle.sources.registry import BUILTIN, all_sources, source_classes

    assert "copilot" in BUILTIN and source_classes()["copilot"] is CopilotSource
    monkeypatch.setenv("HUDDLE_SOURCES", "copilot")
    assert [s.name for s in all_sources(Settings.from_env())] == ["copilot"]


# -- what the scan accounts for -----------------------------------------------------------------


def test_every_file_looked_at_and_not_made_a_session_is_accounted_for(tmp_path):
    home = tmp_path / ".copilot"
    shutil.copytree(COPILOT / "08-interactive-approval" / "live" / "01-needs-you-approval" / "home" / ".copilot", home)
    state = home / "session-state"
    (state / "0b0e0b0e-0000-4000-8000-000000000000").mkdir()  # a pruned transcript: its folder stays
    (state / "0b0e0b0e-0000-4000-8000-000000000000" / "workspace.yaml").write_text("id: x\n")
    (state / "stray.txt").write_text("?")
    (home / "history-session-state").mkdir()
    (home / "history-session-state" / "session_1.json").write_text("{}")
    src = CopilotSource(Settings(folders={"copilot": str(home)}))
    found = src.scan({})
    assert list(found) == ["copilot:df8521fe-2abe-4488-85e9-c32b72d26544"]
    verdicts = {os.path.relpath(p, home): v for p, v in src.accounts.items()}
    assert verdicts["session-state/0b0e0b0e-0000-4000-8000-000000000000"][0] == "not read"
    assert "no events.jsonl" in verdicts["session-state/0b0e0b0e-0000-4000-8000-000000000000"][1]
    assert verdicts["session-state/stray.txt"][0] == "not a session"
    assert verdicts["history-session-state/session_1.json"][0] == "not read"
    assert verdicts["open-sessions-state.json"][0] == "not a session"
    locks = [p for p in verdicts if "inuse." in p]
    assert len(locks) == 2 and all(verdicts[p] == ("not a session", "a lock (live signal)") for p in locks)


def test_an_event_log_of_another_format_version_is_not_read_and_said(tmp_path):
    home = tmp_path / ".copilot"
    shutil.copytree(COPILOT / "01-qa" / "home" / ".copilot", home)
    (f,) = home.glob("session-state/*/events.jsonl")
    lines = f.read_text().splitlines()
    first = json.loads(lines[0])
    first["data"]["version"] = 2
    f.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    h = core(home)
    s = only(h)
    assert "format version 2" in s.error and not kinds(s, ev.PROMPT)
    src = next(x for x in h.sources if x.name == "copilot")
    assert src.accounts[str(f)][0] == "not read"


# -- workspace.yaml ----------------------------------------------------------------------------


def test_workspace_yaml_as_the_cli_writes_it():
    from huddle.sources.copilot.workspace import parse

    got = parse(
        "id: 1\nname: 'it''s a title'\nuser_named: false\ncwd: /a b/c\n"
        'summary: >-\n  folded over\n  two lines\nother: "q\\"uote"\nempty:\nn: 12 # a comment\n'
    )
    assert got == {
        "id": 1,
        "name": "it's a title",
        "user_named": False,
        "cwd": "/a b/c",
        "summary": "folded over two lines",
        "other": 'q"uote',
        "empty": None,
        "n": 12,
    }


def test_a_generated_name_is_a_title_and_the_first_prompt_is_none(tmp_path):
    home = tmp_path / ".copilot"
    shutil.copytree(COPILOT / "01-qa" / "home" / ".copilot", home)
    (ws,) = home.glob("session-state/*/workspace.yaml")
    text = ws.read_text()
    h = core(home)
    assert only(h).ai_title == ""
    ws.write_text(
        text.replace("name: '[[scn:qa]] What is the difference between a list and a tuple?'", "name: Lists vs tuples")
    )
    h.refresh()
    s = only(h)
    assert s.ai_title == "Lists vs tuples" == s.title and s.custom_title == ""
    ws.write_text(text.replace("tuple?'", "tu...'"))  # the prompt cut short: still the prompt
    h.refresh()
    assert only(h).ai_title == ""
    ws.write_text(text.replace("user_named: false", "user_named: true"))  # /rename to the prompt's words
    h.refresh()
    assert only(h).custom_title.startswith("[[scn:qa]]")


# -- the read-only promise and the CLI -----------------------------------------------------------


def test_read_only_and_the_cli_twins(tmp_path, monkeypatch):
    home = tmp_path / "user"
    shutil.copytree(COPILOT / "08-interactive-approval" / "home", home)  # with session-store.db, -wal, -shm
    shutil.copytree(
        COPILOT / "07-subagent" / "home" / ".copilot" / "session-state",
        home / ".copilot" / "session-state",
        dirs_exist_ok=True,
    )
    before = fingerprint(home)
    assert any(p.endswith("session-store.db-wal") for p in before)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HUDDLE_SOURCES", "copilot")
    r = CliRunner().invoke(main, ["status", "--json"])
    assert r.exit_code == 0, r.output
    rows = {row["id"]: row for row in json.loads(r.output)["sessions"]}
    sub = rows["bbae6404-23b1-468e-87db-74be03061149"]
    assert sub["source"] == "copilot" and len(sub["agents"]) == 2 and sub["state"] == "ended"
    assert sub["resume"] == "copilot --resume bbae6404-23b1-468e-87db-74be03061149"
    for args in (
        ["show", sub["id"], "--json"],
        ["usage", "--json"],
        ["search", "Python files", "--json"],
        ["events", sub["id"], "--json"],
    ):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 0, (args, r.output)
    r = CliRunner().invoke(main, ["export", sub["id"], "-o", str(tmp_path / "x.md"), "--format", "md"])
    assert r.exit_code == 0, r.output
    assert "Count the Python files" in (tmp_path / "x.md").read_text()
    h = Huddle(Settings.from_env(), sources=["copilot"])  # and a server's run, its watcher and pages
    fast = {"poll_watched": 0.3, "poll_unwatched": 0.2}
    with ServerThread(h, watch_options=fast) as srv, httpx.Client(base_url=srv.url, timeout=30) as c:
        assert {r["id"] for r in c.get("/api/sessions").json()["sessions"]} == set(rows)
        for path in (
            f"/api/sessions/{sub['id']}",
            f"/api/sessions/{sub['id']}/transcript",
            f"/session/{sub['id']}",
        ):
            assert c.get(path).status_code == 200, path
        events = c.get(f"/api/sessions/{sub['id']}/events").json()["events"]
        ref = next(e["ref"] for e in events if e["kind"] == "report")
        assert c.get(f"/api/sessions/{sub['id']}/content/{ref}").json()["text"] == "There is 1 Python file: app.py."
    assert fingerprint(home) == before


# -- an older CLI: no usage records --------------------------------------------------------------


def older_cli(tmp_path: Path, name: str, keep_last_exit: bool = True) -> Huddle:
    """A sample as Copilot CLI 1.0.x before `session.usage_record` wrote it: each response's
    output on its `assistant.message`, input and cache counts only in the exits' shutdowns."""
    home = tmp_path / name / ".copilot"
    shutil.copytree(COPILOT / name / "home" / ".copilot", home)
    (f,) = home.glob("session-state/*/events.jsonl")
    out, output = [], None
    for r in records(name):
        if r["type"] == "session.usage_record":
            output = r["data"]["usage"]["outputTokens"]
            continue
        if r["type"] == "assistant.message":
            r["data"]["outputTokens"] = output
        out.append(r)
    if not keep_last_exit:
        last = max(i for i, r in enumerate(out) if r["type"] == "session.shutdown")
        del out[last:]
    f.write_text("".join(json.dumps(r) + "\n" for r in out))
    return core(home)


@pytest.mark.parametrize("name", ["04-resume", "07-subagent"])
def test_an_older_cli_s_usage_from_its_messages_and_the_differences_of_its_exits(tmp_path, name):
    s = only(older_cli(tmp_path, name))
    tu = truth(name)["usage_session_total"]
    assert (s.usage.input, s.usage.cache_read, s.usage.output) == (
        tu["input_tokens"],
        tu["cache_read_input_tokens"],
        tu["output_tokens"],
    )
    for aid, (inp, cached, outp, _n) in straight_count(name).items():  # each agent its own
        u = s.agents[aid].usage
        assert (u.input, u.cache_read, u.output) == (inp, cached, outp), aid
    assert not s.usage_note


def test_an_older_cli_s_run_without_its_exit_says_its_input_is_not_known(tmp_path):
    s = only(older_cli(tmp_path, "04-resume", keep_last_exit=False))
    assert s.usage.output == 55  # every response's output
    assert s.usage.input + s.usage.cache_read < 12543 + 48640  # the last run's input: at its exit, never written
    assert "output only" in s.usage_note


def test_hostile_lines_cost_one_line_each_and_the_rest_is_read(tmp_path):
    home = tmp_path / ".copilot"
    shutil.copytree(COPILOT / "01-qa" / "home" / ".copilot", home)
    (f,) = home.glob("session-state/*/events.jsonl")
    h = core(home)
    before = only(h).usage.to_dict()
    bad = [
        {"type": "assistant.message", "data": {"toolRequests": "not a list"}},
        {"type": "session.usage_record", "data": {"usage": {"apiCallId": "x", "inputTokens": -5, "outputTokens": 1}}},
        ["not", "a", "record"],
        {"type": "assistant.message", "data": {"content": "deep", "toolRequests": [{"arguments": [[[[[]]]]]}]}},
    ]
    lines = [json.dumps(b) for b in bad]
    lines.insert(3, '{"type": "user.message", "data": {"content": ' + "[" * 100_000 + "]" * 100_000 + "}}")
    future = {"type": "user.message", "timestamp": "9999-01-01T00:00:00Z", "data": {"content": "canary after all"}}
    with open(f, "a") as out:
        out.write("\n".join([*lines, json.dumps(future)]) + "\n")
    h.refresh()
    s = only(h)
    assert s.error is None and s.skipped_lines == 4, s.problems
    assert s.usage.to_dict() == before  # the count that is no count is not counted
    assert kinds(s, ev.PROMPT)[-1].text == "canary after all" and kinds(s, ev.PROMPT)[-1].t is not None
    assert any("9999" in p for p in s.problems)  # the odd time: said, the line kept


def test_the_retried_requests_are_read_from_the_process_log():
    h = scenario("06-http-retry")
    s = only(h)
    statuses = [e["status"] for e in truth("06-http-retry")["agents"][0]["http_errors"]]
    retries = kinds(s, ev.ERROR)
    assert [e.name for e in retries] == ["retry"] * 2
    assert [int(e.text.split("HTTP ")[1].split()[0]) for e in retries] == statuses == [429, 500]
    out = api.events(h, s.id)
    ref = next(e["ref"] for e in out["events"] if e["kind"] == "error")
    assert "http_status" in api.content(h, s.id, ref)["text"]  # the log's own line, read back
    for name in SCENARIOS:  # nothing failed anywhere else
        if name != "06-http-retry":
            assert not kinds(only(scenario(name)), ev.ERROR), name


def test_a_background_sub_agent_reports_when_it_completes(tmp_path):
    """A sub-agent run in the background (not in the samples: 07 rewritten so): its task call
    returns at once, the lead's turn may end, and the sub-agent reports when it completes."""
    home = tmp_path / ".copilot"
    shutil.copytree(COPILOT / "07-subagent" / "home" / ".copilot", home)
    (f,) = home.glob("session-state/*/events.jsonl")
    recs = records("07-subagent")
    started = next(i for i, r in enumerate(recs) if r["type"] == "subagent.started")
    recs[started]["data"]["executionMode"] = "background"
    done = next(i for i, r in enumerate(recs) if r["type"] == "tool.execution_complete" and "agentId" not in r)
    returned = recs.pop(done)
    returned["data"]["result"] = {"content": "Agent started in background."}
    recs.insert(started + 1, returned)
    completed = next(i for i, r in enumerate(recs) if r["type"] == "subagent.completed")
    f.write_text("".join(json.dumps(r) + "\n" for r in recs[:completed]))
    h = core(home)
    s = only(h)
    sub = s.agents["call_subagent_0_0_1"]
    (res,) = [e for e in kinds(s, ev.TOOL_RESULT) if e.id == sub.id]
    assert res.detail == "background" and sub.background and not sub.finished and not kinds(s, ev.REPORT)
    assert h.handle(s.key).live() == Live(alive=False)  # (no process: nothing runs in the background now)
    with open(f, "a") as out:
        out.write("".join(json.dumps(r) + "\n" for r in recs[completed:]))
    h.refresh()
    s = only(h)
    (report,) = kinds(s, ev.REPORT)
    assert report.target == sub.id and report.ok and s.agents[sub.id].finished


def test_a_handle_from_the_cache_raises_a_response_it_counted_before(tmp_path):
    """A response whose records straddle a restart (chunks of one model call): the handle the
    cache gives back finds its counted usage event again, and the largest counts once."""
    from huddle.core.reading import cache_form

    home = tmp_path / ".copilot"
    shutil.copytree(COPILOT / "01-qa" / "home" / ".copilot", home)
    (f,) = home.glob("session-state/*/events.jsonl")
    src = CopilotSource(Settings(folders={"copilot": str(home)}))
    (h,) = src.scan({}).values()
    h.refresh()
    (u,) = kinds(h.session, ev.USAGE)
    kept = cache_form(h)
    usage = {"apiCallId": u.id, "model": "fake-model", "inputTokens": 12081, "outputTokens": 40, "cacheReadTokens": 0}
    with open(f, "a") as out:
        out.write(json.dumps({"type": "session.usage_record", "data": {"usage": usage}, "id": "x"}) + "\n")
    kept.refresh()
    assert len(kinds(kept.session, ev.USAGE)) == 1 and kept.session.usage.output == 40
    assert kept.session.usage.input == 12081
