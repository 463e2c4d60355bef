"""Answering the real Codex CLI (npm 0.171.0) as `codex app-server`, which huddle hosts
and speaks to (initialize, thread/start, turn/start), against the scripted Responses
API on 127.0.0.1: an escalated command waits for approval; the CLI allows it (the model
sees its output), denies the next (the model sees it declined), and a reply starts the
next turn."""

from __future__ import annotations

import json
import os

import pytest

import agent_clis as ac
from fake_models import FakeModels

ESCALATED = {"sandbox_permissions": "require_escalated", "justification": "May I?"}
SCRIPT = {
    "cx": [
        ("tool", "exec_command", {"cmd": "echo approved > out.txt", **ESCALATED}),
        ("tool", "exec_command", {"cmd": "touch declined.txt", **ESCALATED}),
        ("text", "Done."),
    ]
}


def _outputs(fm: FakeModels) -> list[str]:
    """The tool outputs the model was last sent (each request carries the whole history)."""
    last = [r for r in fm.requests if r["body"].get("tools")][-1]
    return [
        json.dumps(i.get("output"))
        for i in last["body"].get("input") or []
        if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]


@pytest.mark.timeout(300)
def test_codex_app_server_is_allowed_denied_and_replied_to(tmp_path):
    hh = tmp_path / "huddle-home"
    cli_env = {**os.environ, "HUDDLE_HOME": str(hh)}
    proj = tmp_path / "proj"
    proj.mkdir()
    with FakeModels(SCRIPT) as fm:
        env = ac.codex_env(tmp_path, fm.url, proj)
        d, _ = ac.start_run(hh, "cx", [ac.installed(ac.CODEX), "app-server"], env, proj, prompt="[[scn:cx]] go")
        first = ac.wait_entry(d, kind="ask", type="permission")
        assert first["tool"] == "command" and "echo approved > out.txt" in first["summary"]
        ok = ac.huddle_cli("answer", "cx", "allow", env=cli_env)
        assert ok.returncode == 0 and f"answered request {first['request']}: allow" in ok.stdout
        second = ac.wait_entry(d, kind="ask", tool="command", request=_next_ask(d, first["request"]))
        assert "touch declined.txt" in second["summary"]
        no = ac.huddle_cli("answer", "cx", "deny", "--request", str(second["request"]), env=cli_env)
        assert no.returncode == 0, no.stderr
        turn = ac.wait_entry(d, kind="ask", type="turn", summary="the agent's turn is over (completed)")
        outs = _outputs(fm)
        assert len(outs) == 2 and "rejected by user" in outs[1] and not (proj / "declined.txt").exists()
        assert (proj / "out.txt").read_text().strip() == "approved"
        said = ac.huddle_cli("answer", "cx", "reply", "and the changelog", "--json", env=cli_env)
        assert json.loads(said.stdout)["request"] == turn["request"]
        fm.wait_for(lambda reqs: "and the changelog" in fm.sent_text(), "the reply as the next turn")
        late = ac.huddle_cli("answer", "cx", "allow", "--request", str(second["request"]), env=cli_env)
        assert late.returncode == 1 and "already settled: deny from cli" in late.stderr
        assert ac.huddle_cli("stop", str(d)).returncode == 0
    sent = [e["json"] for e in ac.log_entries(d) if e["kind"] == "stdin"]
    assert {"id": 0, "result": {"decision": "accept"}} in sent and {"id": 1, "result": {"decision": "decline"}} in sent


def _next_ask(d, after: int) -> int:
    import hosting

    return hosting.wait_until(
        lambda: next((e["request"] for e in ac.log_entries(d) if e["kind"] == "ask" and e["request"] > after), None),
        "the next ask",
        60,
    )
