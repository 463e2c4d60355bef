"""Answering a real ACP agent huddle hosts: OpenCode 1.18.33 (`opencode acp`, npm
`opencode-ai`) against the scripted OpenAI-compatible server on 127.0.0.1.

huddle speaks the protocol itself (initialize, session/new, session/prompt); a bash
call under `permission.bash = "ask"` arrives as `session/request_permission`: a click
on the board allows it (the model sees its output), the CLI rejects the next (OpenCode
ends its turn; the model sees the refusal with the next message), a second answer is
refused, and a reply is the next turn."""

from __future__ import annotations

import json
import os

import pytest
from playwright.sync_api import expect

import agent_clis as ac
import hosting
from fake_models import FakeModels
from huddle.core import Huddle
from huddle.server import ServerThread
from huddle.sources import Settings
from test_answer_claude import browser  # noqa: F401  (the module's Chromium)
from test_browser import FAST

pytestmark = pytest.mark.browser

SCRIPT = {
    "acp": [
        ("tool", "bash", {"command": "echo allowed > out.txt", "description": "write out.txt"}),
        ("tool", "bash", {"command": "rm -rf src", "description": "remove src"}),
        ("text", "Stopped as you asked."),
    ]
}


def _tool_messages(fm: FakeModels) -> list[str]:
    return [
        json.dumps(m.get("content"))
        for r in fm.requests
        for m in r["body"].get("messages") or []
        if m.get("role") == "tool"
    ]


@pytest.mark.timeout(300)
def test_an_acp_agent_is_allowed_denied_and_replied_to(tmp_path, browser):  # noqa: F811
    hh = tmp_path / "huddle-home"
    env_cli = {**os.environ, "HUDDLE_HOME": str(hh)}
    with FakeModels(SCRIPT) as fm:
        env = ac.opencode_env(tmp_path, fm.url)
        proj = tmp_path / "proj"
        d, _ = ac.start_run(hh, "acp", [ac.installed(ac.OPENCODE), "acp"], env, proj, prompt="[[scn:acp]] go")
        ask = ac.wait_entry(d, kind="ask", type="permission")
        assert ask["summary"] == "execute: echo allowed > out.txt"
        assert [o["kind"] for o in ask["options"]] == ["allow_once", "allow_always", "reject_once"]
        assert "allow_edit" not in ask["offers"] and "deny_reason" not in ask["offers"]  # ACP carries neither

        h = Huddle(Settings(folders={}, huddle_home=str(hh)))
        h.refresh()
        with ServerThread(h, watch_options=FAST) as srv:
            ctx = browser.new_context(viewport={"width": 1280, "height": 900})
            page = ctx.new_page()
            page.goto(srv.url)
            allow = page.locator(f'tr[data-id="acp"] .ask[data-request="{ask["request"]}"] button[data-act="allow"]')
            expect(allow).to_be_visible()
            allow.click()
            fm.wait_for(lambda reqs: len(_tool_messages(fm)) >= 1, "the allowed call's output")
            hosting.wait_until(lambda: (proj / "out.txt").exists(), "the allowed command's file")
            assert (proj / "out.txt").read_text().strip() == "allowed"
            assert ac.wait_entry(d, kind="answer", request=ask["request"])["by"] == "web"
            ctx.close()

        second = ac.wait_entry(d, kind="ask", type="permission", summary="execute: rm -rf src")
        no = ac.huddle_cli("answer", "acp", "deny", "--request", str(second["request"]), env=env_cli)
        assert no.returncode == 0, no.stderr
        sent = [e for e in ac.log_entries(d) if e["kind"] == "stdin" and e["json"].get("id") == 1]
        assert sent and sent[-1]["json"]["result"] == {"outcome": {"outcome": "selected", "optionId": "reject"}}

        again = ac.huddle_cli("answer", "acp", "allow", "--request", str(second["request"]), env=env_cli)
        assert again.returncode == 1 and "already settled: deny from cli" in again.stderr

        turn = ac.wait_entry(d, kind="ask", type="turn")
        said = ac.huddle_cli("answer", "acp", "reply", "now the docs please", "--json", env=env_cli)
        assert said.returncode == 0, said.stderr
        assert json.loads(said.stdout)["request"] == turn["request"]
        fm.wait_for(lambda reqs: "now the docs please" in fm.sent_text(), "the reply as the next turn")
        # OpenCode ends its turn on a rejection; the model sees it with the next message
        assert "reject" in _tool_messages(fm)[-1].lower()
        assert ac.huddle_cli("stop", str(d)).returncode == 0

    h = Huddle(Settings(folders={}, huddle_home=str(hh)))
    h.refresh()
    s = h.sessions()[0]
    kinds = [e.kind for e in s.events]
    assert kinds.count("prompt") == 2 and "waiting" in kinds and "resolved" in kinds
    assert any(e.kind == "tool_call" and e.detail == "echo allowed > out.txt" for e in s.events)
