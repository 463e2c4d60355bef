"""The protocol channels on the real agents' own lines (tests/fixtures/answer: Claude
Code 2.1.332's control requests, OpenCode 1.18.33's ACP session; Codex 0.171.0's
shapes from the schema its `app-server generate-json-schema` writes), and the checks
every answer passes before it reaches an agent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from huddle.answer.acp import AcpChannel
from huddle.answer.asks import PERMISSION, QUESTION, TURN, AnswerRefused, BadAnswer, check_offered, parse_answer
from huddle.answer.channel import Withdrawn, Write, program
from huddle.answer.claude import ClaudeChannel
from huddle.answer.codex import CodexChannel
from huddle.answer.protocols import pick

HERE = Path(__file__).parent / "fixtures" / "answer"
CLAUDE_ARGV = ["claude", "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]


def lines(name: str) -> list[dict]:
    return [json.loads(x) for x in (HERE / name).read_text().splitlines() if x.strip()]


def sent(b: bytes) -> dict:
    return json.loads(b)


def test_which_protocol_a_command_speaks():
    assert isinstance(pick(CLAUDE_ARGV, "/p"), ClaudeChannel)
    assert pick(["claude", "-p", "hi"], "/p") is None  # no stream-json on stdin: logged, not answerable
    assert isinstance(pick(["codex", "app-server"], "/p"), CodexChannel)
    assert pick(["codex", "exec", "hi"], "/p") is None
    for argv in (
        ["opencode", "acp"],
        ["gemini", "--acp"],
        ["npx", "-y", "@github/copilot@1", "--acp"],
        ["claude-agent-acp"],
    ):
        assert isinstance(pick(argv, "/p"), AcpChannel), argv
    assert pick(["bash", "-c", "x"], "/p") is None
    assert isinstance(pick(["./my-agent"], "/p", protocol="acp"), AcpChannel)
    assert pick(CLAUDE_ARGV, "/p", protocol="none") is None
    assert program(["node", "/x/node_modules/@openai/codex/bin/codex.js", "app-server"]) == "codex"
    assert program(["env", "A=1", "/usr/bin/claude"]) == "claude"


def test_claude_gets_its_prompt_channel_and_its_first_turn():
    c = ClaudeChannel(CLAUDE_ARGV, "/p")
    assert c.command()[-2:] == ["--permission-prompt-tool", "stdio"]
    assert ClaudeChannel([*CLAUDE_ARGV, "--permission-prompt-tool", "mcp__x"], "/p").command()[-1] == "mcp__x"
    (turn,) = c.start()
    assert turn.type == TURN and turn.offers == ["reply"]
    (w,) = ClaudeChannel(CLAUDE_ARGV, "/p", prompt="go").start()
    assert sent(w.line) == {"type": "user", "message": {"role": "user", "content": "go"}}


def test_claude_permission_and_question_from_the_real_cli():
    c = ClaudeChannel(CLAUDE_ARGV, "/p")
    bash, question, result = lines("claude-2.1.332-control.jsonl")
    (ask,) = c.feed(bash)
    assert (ask.type, ask.tool, ask.call) == (PERMISSION, "Bash", "toolu_01")
    assert ask.input == {"command": "echo hello > out.txt", "description": "write a file"}
    assert ask.summary == "Bash: write a file"
    assert {"allow", "allow_edit", "deny", "deny_reason", "reply"} == set(ask.offers)
    edit = parse_answer({"request": 7, "choice": "allow", "input": {"command": "echo edited"}}, "web")
    (out,) = c.respond(ask, edit)
    assert sent(out) == {
        "type": "control_response",
        "response": {
            "subtype": "success",
            "request_id": bash["request_id"],
            "response": {"behavior": "allow", "updatedInput": {"command": "echo edited"}},
        },
    }
    (out,) = c.respond(ask, parse_answer({"request": 7, "choice": "deny", "message": "not now"}, "cli"))
    assert sent(out)["response"]["response"] == {"behavior": "deny", "message": "not now"}
    (out,) = c.respond(ask, parse_answer({"request": 7, "choice": "reply", "text": "use pytest"}, "cli"))
    assert sent(out)["response"]["response"] == {"behavior": "deny", "message": "use pytest"}

    (q,) = c.feed(question)
    assert q.type == QUESTION and q.questions[0]["options"][1]["label"] == "Blue"
    (out,) = c.respond(q, parse_answer({"request": 9, "choice": "reply", "text": "Blue"}, "web"))
    upd = sent(out)["response"]["response"]["updatedInput"]
    assert upd["answers"] == {"Which colour?": "Blue"} and upd["questions"] == question["request"]["input"]["questions"]
    (t,) = c.feed(result)
    assert t.type == TURN


def test_claude_cancels_and_requests_huddle_does_not_serve():
    c = ClaudeChannel(CLAUDE_ARGV, "/p")
    assert c.feed({"type": "control_cancel_request", "request_id": "r1"}) == [Withdrawn("r1", "the agent withdrew it")]
    (w,) = c.feed({"type": "control_request", "request_id": "r2", "request": {"subtype": "hook_callback"}})
    assert isinstance(w, Write) and sent(w.line)["response"]["subtype"] == "error"
    for odd in (None, 3, [], {"type": "control_request"}, {"type": "control_request", "request_id": 5, "request": {}}):
        assert c.feed(odd) == []


def test_acp_handshake_permission_and_turn_from_opencode():
    c = AcpChannel(["opencode", "acp"], "/proj")
    (w,) = c.start()
    init = sent(w.line)
    assert init["method"] == "initialize" and init["params"]["clientCapabilities"]["terminal"] is False
    got = lines("opencode-1.18.33-acp.jsonl")
    (w,) = c.feed(got[0])  # initialize's result: a session in the run's folder
    assert sent(w.line)["method"] == "session/new" and sent(w.line)["params"]["cwd"] == "/proj"
    (turn,) = c.feed(got[1])
    assert turn.type == TURN and c.session == got[1]["result"]["sessionId"]
    (p,) = c.prompt("go")
    assert sent(p)["params"]["prompt"] == [{"type": "text", "text": "go"}]
    asks = [s for m in got[2:] for s in c.feed(m)]
    perms = [a for a in asks if a.type == PERMISSION]
    assert [a.summary for a in perms] == ["execute: echo allowed > out.txt", "execute: rm -rf src"]
    allow, deny = perms
    assert sent(c.respond(allow, parse_answer({"request": 1, "choice": "allow"}, "web"))[0])["result"] == {
        "outcome": {"outcome": "selected", "optionId": "once"}
    }
    assert sent(c.respond(deny, parse_answer({"request": 2, "choice": "deny"}, "web"))[0])["result"] == {
        "outcome": {"outcome": "selected", "optionId": "reject"}
    }
    always = parse_answer({"request": 1, "choice": "allow", "option": "always"}, "web")
    check_offered(allow, always)
    assert sent(c.respond(allow, always)[0])["result"]["outcome"]["optionId"] == "always"
    assert asks[-1].type == TURN and "end_turn" in asks[-1].summary  # the prompt's response ends the turn
    (w,) = c.feed({"jsonrpc": "2.0", "id": 9, "method": "fs/read_text_file", "params": {}})
    assert sent(w.line)["error"]["code"] == -32601


def test_acp_takes_no_reason_and_no_edit():
    c = AcpChannel(["gemini", "--acp"], "/p")
    perm = next(
        a for m in lines("opencode-1.18.33-acp.jsonl") for a in c.feed(m) if getattr(a, "type", "") == PERMISSION
    )
    for body, words in (
        ({"choice": "deny", "message": "why"}, "takes no reason"),
        ({"choice": "allow", "input": {"command": "x"}}, "takes no edited input"),
        ({"choice": "reply", "text": "do y"}, "takes allow or deny, not a reply"),
        ({"choice": "allow", "option": "never"}, "has no option 'never'"),
    ):
        with pytest.raises(AnswerRefused, match=words):
            check_offered(perm, parse_answer({"request": 4, **body}, "web"))
    with pytest.raises(AnswerRefused, match="no session yet"):
        AcpChannel(["gemini", "--acp"], "/p").prompt("too soon")


def test_codex_handshake_approvals_and_questions():
    c = CodexChannel(["codex", "app-server"], "/proj")
    (w,) = c.start()
    assert sent(w.line)["method"] == "initialize" and "jsonrpc" not in sent(w.line)
    ack, start = c.feed({"id": 1, "result": {"userAgent": "codex"}})
    assert sent(ack.line) == {"method": "initialized"} and sent(start.line)["params"] == {"cwd": "/proj"}
    (turn,) = c.feed({"id": 2, "result": {"thread": {"id": "th1"}}})
    assert turn.type == TURN
    (p,) = c.prompt("fix it")
    assert sent(p)["params"]["threadId"] == "th1" and sent(p)["params"]["input"][0]["text"] == "fix it"
    req = {
        "id": 0,
        "method": "item/commandExecution/requestApproval",
        "params": {
            "threadId": "th1",
            "turnId": "t1",
            "itemId": "c1",
            "command": "rm -rf build",
            "cwd": "/proj",
            "startedAtMs": 1,
        },
    }
    (ask,) = c.feed(req)
    assert ask.summary == "command: rm -rf build" and ask.offers == ["allow", "deny"]
    assert sent(c.respond(ask, parse_answer({"request": 5, "choice": "deny"}, "web"))[0]) == {
        "id": 0,
        "result": {"decision": "decline"},
    }
    (ask,) = c.feed({"id": 1, "method": "applyPatchApproval", "params": {"callId": "p1", "fileChanges": {}}})
    assert sent(c.respond(ask, parse_answer({"request": 6, "choice": "allow"}, "web"))[0])["result"] == {
        "decision": "approved"
    }
    (ask,) = c.feed(
        {
            "id": 2,
            "method": "item/fileChange/requestApproval",
            "params": {"itemId": "f", "threadId": "th1", "turnId": "t1", "startedAtMs": 1},
        }
    )
    assert c.feed({"method": "serverRequest/resolved", "params": {"requestId": 2, "threadId": "th1"}}) == [
        Withdrawn(2, "settled by the agent")
    ]
    qreq = {
        "id": 3,
        "method": "item/tool/requestUserInput",
        "params": {
            "itemId": "q",
            "threadId": "th1",
            "turnId": "t1",
            "isBlocking": True,
            "questions": [
                {
                    "id": "colour",
                    "header": "Colour",
                    "question": "Which colour?",
                    "options": [{"label": "Blue", "description": "cool"}],
                }
            ],
        },
    }
    (q,) = c.feed(qreq)
    out = sent(c.respond(q, parse_answer({"request": 7, "choice": "reply", "text": "Blue"}, "web"))[0])
    assert out == {"id": 3, "result": {"answers": {"colour": {"answers": ["Blue"]}}}}
    assert (
        c.feed({"method": "turn/completed", "params": {"threadId": "th1", "turn": {"status": "completed"}}})[0].type
        == TURN
    )
    (w,) = c.feed({"id": 4, "method": "account/chatgptAuthTokens/refresh", "params": {}})
    assert sent(w.line)["error"]["code"] == -32601


def test_what_a_turn_takes():
    turn = ClaudeChannel(CLAUDE_ARGV, "/p").turn()
    with pytest.raises(AnswerRefused, match="takes a reply, not allow"):
        check_offered(turn, parse_answer({"request": 1, "choice": "allow"}, "web"))
    with pytest.raises(AnswerRefused, match="cannot be denied"):
        check_offered(turn, parse_answer({"request": 1, "choice": "deny"}, "web"))
    check_offered(turn, parse_answer({"request": 1, "choice": "reply", "text": "next"}, "web"))


@settings(max_examples=300, deadline=None)
@given(
    body=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda kids: (
            st.lists(kids, max_size=4)
            | st.dictionaries(
                st.sampled_from(["request", "choice", "input", "message", "text", "option", "answers", "x"]),
                kids,
                max_size=6,
            )
        ),
        max_leaves=20,
    )
)
def test_an_answer_of_any_shape_is_an_answer_or_one_clear_refusal(body):
    try:
        a = parse_answer(body, "web")
    except BadAnswer as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert a.request >= 1 and a.choice in ("allow", "deny", "reply")
