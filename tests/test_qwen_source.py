"""The Qwen Code source on the real chat files of Qwen Code 0.24.4: the quirks of its format
(sessions, trees, tokens against a count of their own, titles, live snapshots and live
reads over every sample: tests/test_conformance.py)."""

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
from huddle.sources.qwen import QwenSource
from huddle.views import api

QWEN = SAMPLES / "qwen"
SCENARIOS = sorted(p.name for p in QWEN.iterdir() if (p / "truth.json").exists())


def qwen_huddle(home: Path | str) -> Huddle:
    h = Huddle(Settings(folders={"qwen": str(home)}, huddle_home="/nonexistent-huddle-test"), sources=["qwen"])
    h.refresh()
    return h


def scenario(name: str) -> Huddle:
    return qwen_huddle(QWEN / name / "home" / ".qwen")


def truth(name: str) -> dict:
    return json.loads((QWEN / name / "truth.json").read_text())["sessions"][0]


def only(h: Huddle):
    (s,) = h.sessions()
    return s


def kinds(s, kind, agent=None):
    return [e for e in s.events if e.kind == kind and (agent is None or e.agent == agent)]


def test_telemetry_and_the_usage_record_are_never_counted():
    """ui_telemetry repeats every lead response and adds the sub-agents' and the memory
    extractor's; usage_record.jsonl sums side calls too: neither is the count."""
    s = only(scenario("04-resume"))
    home = QWEN / "04-resume" / "home" / ".qwen"
    last = json.loads((home / "usage_record.jsonl").read_text().splitlines()[-1])
    assert last["models"]["fake-model"]["requests"] == 6 and len(kinds(s, ev.USAGE)) == 5
    telemetry = sum(
        1 for f in home.rglob("*.jsonl") for line in f.read_text().splitlines() if '"qwen-code.api_response"' in line
    )
    assert telemetry == 6  # the five responses and the memory extractor's


@pytest.mark.parametrize("name", SCENARIOS)
def test_titles_said_once_and_calls_by_their_ids(name):
    """(Sessions, trees, tokens, tool calls by name: tests/test_conformance.py.) A title is
    appended again at the session's end: said once; without one, the first prompt; every
    call keeps the id the model gave it, and has exactly one result."""
    t = truth(name)
    s = only(scenario(name))
    if t["expected_title"]:
        assert s.title == t["expected_title"] and s.ai_title == t["expected_title"]
        assert len(kinds(s, ev.TITLE)) == 1
        assert kinds(s, ev.TITLE)[0].detail == "ai"
    else:
        assert s.title.startswith("[[scn:") and not kinds(s, ev.TITLE)  # the first prompt, as typed
    for ta in t["agents"]:
        assert [e.id for e in kinds(s, ev.TOOL_CALL, ta["id"])] == [
            c["call_id"] for c in ta["tool_calls"] if c["name"] != "agent"
        ]
    assert all(e.name == "fake-model" for e in kinds(s, ev.USAGE))  # a sub-agent's records name no model
    ids = [e.id for e in kinds(s, ev.TOOL_RESULT)]
    assert len(ids) == len(set(ids))
    assert set(ids) == {e.id for e in s.events if e.kind in (ev.TOOL_CALL, ev.ORDER)}


def test_qa_events_in_order():
    s = only(scenario("01-qa"))
    assert [e.kind for e in s.events] == [ev.PROMPT, ev.THINK, ev.SAY, ev.USAGE, ev.TURN_END]
    assert kinds(s, ev.SAY)[0].text.startswith("A Python list is mutable")
    assert kinds(s, ev.THINK)[0].text
    assert kinds(s, ev.USAGE)[0].name == "fake-model"


def test_shell_calls_and_their_results():
    s = only(scenario("02-shell"))
    calls = kinds(s, ev.TOOL_CALL)
    assert [c.name for c in calls] == ["run_shell_command"] * 3
    assert doing(calls[0].name, calls[0].detail).startswith("running ")
    assert all(r.ok for r in kinds(s, ev.TOOL_RESULT))
    assert len(kinds(s, ev.TURN_END)) == 1


def test_tool_errors_fail_and_a_failing_command_fails_too():
    s = only(scenario("05-tool-error"))
    res = {c.name: r.ok for c, r in zip(kinds(s, ev.TOOL_CALL), kinds(s, ev.TOOL_RESULT), strict=True)}
    assert res == {"read_file": False, "run_shell_command": False}


def test_resume_and_continue_append_to_one_file():
    s = only(scenario("04-resume"))
    assert [e.text for e in kinds(s, ev.PROMPT)] == [ta["typed"] or ta["argv"][3] for ta in truth("04-resume")["turns"]]
    assert len(kinds(s, ev.TURN_END)) == 3 and len(kinds(s, ev.USAGE)) == 5


def test_a_foreground_sub_agent_reports_through_its_call():
    s = only(scenario("07-subagent"))
    child = s.agents["call_subagent_0_0_1"]
    assert child.kind == "general-purpose" and child.description == "Count Python files" and child.finished
    assert child.tool_use_id == child.id and child.order.startswith("[[scn:sub_gen]]")
    (order,) = kinds(s, ev.ORDER)
    assert order.agent == s.id and order.target == child.id == order.id and order.name == "general-purpose"
    assert order.detail == "Count Python files"
    (res,) = [e for e in kinds(s, ev.TOOL_RESULT) if e.id == order.id]
    assert res.ok and res.detail == ""
    (report,) = kinds(s, ev.REPORT)
    assert report.target == child.id and report.ok and child.report == "There is 1 Python file: app.py."
    assert not child.background
    assert [e.name for e in kinds(s, ev.TOOL_CALL, child.id)] == ["run_shell_command"]


def test_a_background_sub_agent_reports_through_a_notification():
    s = only(scenario("10-background-subagent"))
    child = s.agents["call_bgsub_0_0_1"]
    assert child.background and child.finished
    (res,) = [e for e in kinds(s, ev.TOOL_RESULT) if e.id == "call_bgsub_0_0_1"]
    assert res.detail == "background"
    (report,) = kinds(s, ev.REPORT)
    assert report.name == "task-notification" and report.text == "There is 1 Python file: app.py."
    assert report.seq > kinds(s, ev.TURN_END)[0].seq  # it came after the lead's first answer
    assert [e.text for e in kinds(s, ev.SAY, s.id)][-1].startswith("The background helper counted")


def test_the_long_session():
    s = only(scenario("09-long"))
    assert len(kinds(s, ev.TOOL_CALL)) == 49 and len(kinds(s, ev.USAGE)) == 50


def test_content_read_back_of_a_call_and_its_output():
    h = scenario("02-shell")
    s = only(h)
    out = api.events(h, s.id)
    call = next(e for e in out["events"] if e["kind"] == "tool_call")
    res = next(e for e in out["events"] if e["kind"] == "tool_result")
    got = api.content(h, s.id, call["ref"])
    assert "run_shell_command" in json.dumps(got)
    assert "Exit Code: 0" in json.dumps(api.content(h, s.id, res["ref"]))


def test_a_fork_s_copied_records_are_shown_not_counted(tmp_path):
    """/branch copies each record into a new session with `forkedFrom`: the copy shows its
    history, and its responses count in the session they came from."""
    home = tmp_path / ".qwen"
    shutil.copytree(QWEN / "01-qa" / "home" / ".qwen", home)
    chats = home / "projects" / "-home-dev-work-proj" / "chats"
    (src,) = chats.glob("*.jsonl")
    fork = "0b0b0b0b-0000-4000-8000-000000000001"
    lines = []
    for line in src.read_text().splitlines():
        d = json.loads(line)
        d["forkedFrom"] = {"sessionId": d["sessionId"], "messageUuid": d["uuid"]}
        d["sessionId"] = fork
        lines.append(json.dumps(d))
    (chats / f"{fork}.jsonl").write_text("\n".join(lines) + "\n")
    h = qwen_huddle(home)
    by = {s.id: s for s in h.sessions()}
    copy, original = by[fork], by[src.stem]
    assert kinds(copy, ev.USAGE) and all(e.copied for e in kinds(copy, ev.USAGE))
    assert copy.usage.total == 0 and original.usage.output == 37
    assert kinds(copy, ev.SAY)[0].text == kinds(original, ev.SAY)[0].text


# -- folders, accounts, the CLI ------------------------------------------------------------


def test_folder_rules_of_the_cli(tmp_path):
    home = tmp_path / "home"
    env = {"HOME": str(home)}
    assert Settings.from_env(env).folder("qwen") == str(home / ".qwen")
    env["QWEN_HOME"] = str(tmp_path / "qh")  # the CLI's global folder: its sessions too, by default
    assert Settings.from_env(env).folder("qwen") == str(tmp_path / "qh")
    env["QWEN_RUNTIME_DIR"] = str(tmp_path / "rt")  # where the CLI writes sessions, first
    assert Settings.from_env(env).folder("qwen") == str(tmp_path / "rt")
    env["HUDDLE_QWEN_DIR"] = str(tmp_path / "mine")  # huddle's own setting, over all
    s = Settings.from_env(env)
    assert s.folder("qwen") == str(tmp_path / "mine") and "qwen" in s.explicit
    assert Settings.from_env({"HOME": str(home), "QWEN_HOME": "relative"}).folder("qwen") == str(home / ".qwen")


def test_the_settings_may_move_the_runtime_dir(tmp_path):
    """`advanced.runtimeOutputDir` moves projects/ and sessions/ (the CLI's rule); a relative
    one is resolved per project by the CLI: not followed, and said."""
    home = tmp_path / ".qwen"
    home.mkdir()
    elsewhere = tmp_path / "runtime"
    shutil.copytree(QWEN / "01-qa" / "home" / ".qwen" / "projects", elsewhere / "projects")
    (home / "settings.json").write_text(json.dumps({"advanced": {"runtimeOutputDir": str(elsewhere)}}))
    h = qwen_huddle(home)
    assert only(h).id == truth("01-qa")["session_id"]
    assert str(elsewhere) in h.agent_roots() and not h.notes
    (home / "settings.json").write_text(json.dumps({"advanced": {"runtimeOutputDir": "rel/dir"}}))
    h.refresh()
    assert not h.sessions() and any("relative runtimeOutputDir" in n for n in h.notes)


def test_every_file_looked_at_is_a_session_or_accounted_for():
    src = QwenSource(Settings(folders={"qwen": str(QWEN / "10-background-subagent" / "home" / ".qwen")}))
    found = src.scan({})
    assert list(found) == ["qwen:79357424-6518-458a-82ae-445711262f74"]
    why = {Path(p).name: v for p, v in src.accounts.items()}
    assert why["usage_record.jsonl"][0] == "not a session" and "side calls" in why["usage_record.jsonl"][1]
    assert why["agent-general-purpose-call_bgsub_0_0_1.meta.json"][0] == "not a session"
    live = QwenSource(
        Settings(
            folders={
                "qwen": str(QWEN / "08-interactive-approval" / "live" / "01-needs-you-approval" / "home" / ".qwen")
            }
        )
    )
    live.scan({})
    why = {Path(p).name: v for p, v in live.accounts.items()}
    assert why["3219.json"][1] == "a running TUI's registry entry"
    assert why["f8458de6-6cd9-48a7-8f8a-6853ec632dcc.runtime.json"][0] == "not a session"


def test_read_only_and_cli_twins(tmp_path, monkeypatch):
    home = tmp_path / "user"
    shutil.copytree(QWEN / "07-subagent" / "home", home)
    before = fingerprint(home)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HUDDLE_SOURCES", "qwen")
    r = CliRunner().invoke(main, ["status", "--json"])
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.output)["sessions"]
    assert row["source"] == "qwen" and len(row["agents"]) == 2 and row["state"] == "ended"
    assert row["resume"] == f"qwen --resume {row['id']}"
    for cmd in (["show", row["id"], "--json"], ["usage", "--json"], ["search", "Python", "--json"]):
        r = CliRunner().invoke(main, cmd)
        assert r.exit_code == 0, (cmd, r.output)
    r = CliRunner().invoke(main, ["export", row["id"], "--format", "md", "-o", str(tmp_path / "out.md")])
    assert r.exit_code == 0, r.output
    assert "There is 1 Python file" in (tmp_path / "out.md").read_text()
    assert fingerprint(home) == before


def test_registered_with_the_builtins():
    from huddle.sources.registry import BUILTIN, source_classes

    assert "qwen" in BUILTIN and source_classes()["qwen"] is QwenSource


def test_a_server_run_writes_nothing_in_the_qwen_home(tmp_path):
    """The web app over every sample at once (pages, events, search, export), then the
    home compared byte for byte, mtimes included."""
    import httpx

    from huddle.server import ServerThread

    home = tmp_path / ".qwen"
    for name in SCENARIOS:
        shutil.copytree(QWEN / name / "home" / ".qwen", home, dirs_exist_ok=True)
    before = fingerprint(home)
    h = Huddle(Settings(folders={"qwen": str(home)}, huddle_home=str(tmp_path / "hh")), sources=["qwen"])
    h.refresh()
    fast = {"poll_watched": 0.5, "poll_unwatched": 0.2}
    with ServerThread(h, watch_options=fast) as srv, httpx.Client(base_url=srv.url, timeout=20) as c:
        rows = c.get("/api/sessions").json()["sessions"]
        assert {r["id"] for r in rows} == {truth(n)["session_id"] for n in SCENARIOS}
        for r in rows:
            assert c.get(f"/session/{r['id']}").status_code == 200
            assert c.get(f"/api/sessions/{r['id']}/events").status_code == 200
            assert c.get(f"/api/sessions/{r['id']}/export").status_code == 200
        assert c.get("/api/search", params={"q": "Python"}).json()["results"]
        assert c.get("/api/usage").status_code == 200
    assert fingerprint(home) == before


def test_odd_but_valid_records_cost_their_line_or_their_field(tmp_path):
    """Values of a type the code does not expect where JSON allows them: a record whose
    top-level fields are the wrong type costs its line; a message of the wrong shape, odd
    counts and odd displays cost only what they held."""
    home = tmp_path / ".qwen"
    shutil.copytree(QWEN / "07-subagent" / "home" / ".qwen", home)
    (lead,) = home.glob("projects/*/chats/*.jsonl")
    recs = [json.loads(x) for x in lead.read_text().splitlines()]
    base = {k: recs[0][k] for k in ("sessionId", "cwd", "version")}
    odd = [
        {**base, "type": "assistant", "usageMetadata": "lots"},  # costs its line
        {**base, "type": "assistant", "message": {"parts": "text"}, "timestamp": "9999-99-99"},  # its message
        {**base, "type": "assistant", "message": {"role": "model", "parts": [{"text": "odd counts"}]},
         "usageMetadata": {"promptTokenCount": -5, "candidatesTokenCount": 7.9, "cachedContentTokenCount": None}},
        {**base, "type": "tool_result", "message": {"parts": [{"functionResponse": {"id": "call_subagent_0_0_1",
         "name": "agent", "response": [1, 2]}}]}, "toolCallResult": {"callId": 7}},  # costs its line
        {**base, "type": "system", "subtype": "custom_title", "systemPayload": {"customTitle": ["x"]}},
        {**base, "type": "user", "subtype": "notification", "message": {"parts": [{"text": "<task-notification>"}]}},
        {**base, "type": "system", "subtype": "ui_telemetry",
         "systemPayload": {"uiEvent": {"event.name": "qwen-code.api_error", "error": {"message": "overloaded"},
                                       "status_code": 529}}},
        {**base, "type": "user", "message": {"role": "user", "parts": [{"text": "after the odd ones"}]}},
    ]  # fmt: skip
    with open(lead, "a") as f:
        f.write("".join(json.dumps(r) + "\n" for r in odd) + "{not json\n")
    s = only(qwen_huddle(home))
    assert s.error is None and s.skipped_lines == 3, s.problems  # the two odd records and the broken line
    assert kinds(s, ev.PROMPT)[-1].text == "after the odd ones"
    assert kinds(s, ev.ERROR)[-1].text == "overloaded (HTTP 529)"
    (said,) = [e for e in kinds(s, ev.SAY) if e.text == "odd counts"]
    (odd,) = [e.usage for e in kinds(s, ev.USAGE) if e.offset == said.offset]
    assert (odd.input, odd.output, odd.cache_read) == (0, 7, 0)
    assert s.title.startswith("[[scn:subagent]]")  # a title that is no text is no title
