"""Answering the real Claude Code CLI (npm, 2.1.332) that huddle hosts, from a page in
Chromium, the CLI and the API, against the scripted model server on 127.0.0.1.

One run goes through every kind of answer: a Bash call waits and a click allows it (the
model server sees its tool result), a question is answered by its option, a second
Bash call is denied with a reason by the keyboard (the model sees the refusal and the
reason), a second answer to a settled request is refused, and the reply box sends the
next user message. Another run's host is killed with a request pending."""

from __future__ import annotations

import json
import os
import signal

import pytest
from playwright.sync_api import expect

import agent_clis as ac
import hosting
from fake_models import FakeModels
from huddle.core import Huddle
from huddle.server import ServerThread
from huddle.sources import Settings
from huddle.views.board import board_json
from said import as_json
from test_browser import ARGS, CHROMIUM, FAST

pytestmark = pytest.mark.browser

SCRIPT = {
    "work": [
        ("tool", "Bash", {"command": "echo allowed > out.txt", "description": "write out.txt"}),
        (
            "tool",
            "AskUserQuestion",
            {
                "questions": [
                    {
                        "question": "Which colour?",
                        "header": "Colour",
                        "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}],
                        "multiSelect": False,
                    }
                ]
            },
        ),
        ("tool", "Bash", {"command": "rm -rf build", "description": "clean the build"}),
        ("text", "All done."),
    ],
    "wait": [("tool", "Bash", {"command": "echo never > never.txt", "description": "write never.txt"})],
}


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    expect.set_options(timeout=60_000)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


def _core(tmp_path, agent_home):
    hh = tmp_path / "huddle-home"
    settings = Settings(folders={"claude": str(agent_home / ".claude")}, huddle_home=str(hh))
    h = Huddle(settings)
    h.refresh()
    return hh, h


def _tool_results(fm: FakeModels) -> list[dict]:
    out = []
    for r in fm.requests:
        for m in r["body"].get("messages") or []:
            if isinstance(m.get("content"), list):
                out += [b for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
    return out


def _result_for(fm: FakeModels, words: str):
    return fm.wait_for(
        lambda reqs: [b for b in _tool_results(fm) if words in json.dumps(b.get("content"))],
        f"a tool result saying {words!r}",
    )


@pytest.mark.timeout(400)
def test_allow_question_deny_and_reply_from_the_page(tmp_path, browser):
    with FakeModels(SCRIPT) as fm:
        env = ac.claude_env(tmp_path, fm.url)
        proj = tmp_path / "proj"
        hh, h = _core(tmp_path, tmp_path / "agent-home")
        d, _ = ac.start_run(hh, "work", ac.claude_argv(), env, proj, prompt="[[scn:work]] tidy up")
        ask = ac.wait_entry(d, kind="ask", type="permission")
        assert ask["tool"] == "Bash" and ask["input"]["command"] == "echo allowed > out.txt"
        assert "allow_edit" in ask["offers"] and "deny_reason" in ask["offers"]
        with ServerThread(h, watch_options=FAST) as srv:
            ctx = browser.new_context(viewport={"width": 1280, "height": 900})
            page = ctx.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(srv.url)
            row = page.locator('tr[data-id="work"]')
            allow = row.locator(f'.ask[data-request="{ask["request"]}"] button[data-act="allow"]')
            expect(allow).to_be_visible()
            allow.click()
            # the agent ran the command: the model sees its result, the file is there
            fm.wait_for(lambda reqs: any(not b.get("is_error") for b in _tool_results(fm)), "the allowed call's result")
            hosting.wait_until(lambda: (proj / "out.txt").exists(), "the allowed command's file")
            assert (proj / "out.txt").read_text().strip() == "allowed"
            answered = ac.wait_entry(d, kind="answer", request=ask["request"])
            assert answered["choice"] == "allow" and answered["by"] == "web"

            # a second answer to the same request is refused, from the API and the CLI
            status, body = page.evaluate(
                """async ([id, req]) => {
                    const info = await (await fetch('/api/info')).json();
                    const r = await fetch(`/api/sessions/${id}/answer`, {method: 'POST',
                      headers: {'content-type': 'application/json', 'x-huddle-token': info.answer_token},
                      body: JSON.stringify({request: req, choice: 'deny'})});
                    return [r.status, await r.json()];
                }""",
                ["work", ask["request"]],
            )
            assert status == 409 and "already settled: allow from web" in body["error"]
            cli = ac.huddle_cli("answer", "work", "deny", "--request", str(ask["request"]), env=_env(hh))
            assert cli.returncode == 1 and "already settled" in cli.stderr

            # the question: its options on the card, one click answers it
            q = ac.wait_entry(d, kind="ask", type="question")
            assert q["questions"][0]["question"] == "Which colour?"
            qbox = row.locator(f'.ask[data-request="{q["request"]}"]')
            qbox.get_by_role("button", name="Blue").click()
            _result_for(fm, '\\"Which colour?\\"=\\"Blue\\"')

            # the second Bash call: denied with a reason, from the keyboard on the session page
            deny = ac.wait_entry(d, kind="ask", type="permission", summary="Bash: clean the build")
            page.goto(f"{srv.url}session/work")
            box = page.locator(f'#s-answer .ask[data-request="{deny["request"]}"]')
            expect(box).to_be_visible()
            page.keyboard.press("d")
            reason = box.locator(".ask-reason")
            expect(reason).to_be_focused()
            reason.fill("not the build folder, keep it")
            reason.press("Enter")
            refused = _result_for(fm, "not the build folder, keep it")
            assert any(b.get("is_error") for b in refused)
            denied = ac.wait_entry(d, kind="answer", request=deny["request"])
            assert denied["choice"] == "deny" and denied["message"] == "not the build folder, keep it"

            # its turn: the reply box sends the next user message
            turn = ac.wait_entry(d, kind="ask", type="turn", summary="the agent waits for your next message")
            reply = page.locator(f'#s-answer .ask[data-request="{turn["request"]}"] .ask-reply')
            expect(reply).to_be_visible()
            reply.fill("and now the docs")
            reply.press("Enter")
            fm.wait_for(lambda reqs: "and now the docs" in fm.sent_text(), "the reply as the next user turn")
            assert ac.wait_entry(d, kind="answer", request=turn["request"])["choice"] == "reply"
            assert errors == []
            ctx.close()

    # what was shown and what was chosen are numbered entries, in order, before the agent's stdin
    log = ac.log_entries(d)
    kinds = [(e["kind"], e.get("request")) for e in log if e["kind"] in ("ask", "answer")]
    seqs = [e["seq"] for e in log]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    for e in log:
        if e["kind"] == "answer" and e["choice"] in ("allow", "deny"):
            nxt = next(x for x in log if x["seq"] > e["seq"] and x["kind"] == "stdin")
            assert nxt["json"]["type"] == "control_response"
    assert kinds[0] == ("ask", ask["request"]) and kinds[1] == ("answer", ask["request"])
    # nothing of huddle's in the agent's folder: its run lives under huddle's home
    assert not any("events.jsonl" in f for _, _, fs in os.walk(tmp_path / "agent-home") for f in fs)


def _env(hh) -> dict:
    return {**os.environ, "HUDDLE_HOME": str(hh)}


@pytest.mark.timeout(300)
def test_a_killed_host_takes_its_pending_request_with_it(tmp_path):
    with FakeModels(SCRIPT) as fm:
        env = ac.claude_env(tmp_path, fm.url)
        hh, h = _core(tmp_path, tmp_path / "agent-home")
        d, host = ac.start_run(hh, "killed", ac.claude_argv(), env, tmp_path / "proj", prompt="[[scn:wait]] go")
        ask = ac.wait_entry(d, kind="ask", type="permission")
        host.send_signal(signal.SIGKILL)
        host.wait(timeout=30)
        # the board: the run is over and offers nothing to answer
        h.refresh()
        row = next(r for r in as_json(board_json(h))["sessions"] if r["id"] == "killed")
        assert row["answer"]["pending"] == [] and "not running" in row["answer"]["closed"]
        cli = ac.huddle_cli("answer", "killed", "allow", "--request", str(ask["request"]), env=_env(hh))
        assert cli.returncode == 1 and "no host is running" in cli.stderr
        # a new host in the same folder says the request is gone, and refuses it so
        d2, _ = ac.start_run(hh, "killed", ac.claude_argv(), env, tmp_path / "proj")
        gone = ac.wait_entry(d, kind="gone", request=ask["request"])
        assert "host ended before it was answered" in gone["why"]
        cli = ac.huddle_cli("answer", "killed", "allow", "--request", str(ask["request"]), "--json", env=_env(hh))
        assert cli.returncode == 1 and "already settled: gone" in cli.stderr
        assert not (tmp_path / "proj" / "never.txt").exists()
        stop = ac.huddle_cli("stop", str(d2))
        assert stop.returncode == 0
