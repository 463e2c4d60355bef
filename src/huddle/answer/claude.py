"""Claude Code headless (`claude -p --input-format stream-json --output-format
stream-json`), with its permission prompts on stdio (`--permission-prompt-tool stdio`).

Checked against Claude Code 2.1.332: a tool call needing permission prints
    {"type":"control_request","request_id":R,"request":{"subtype":"can_use_tool",
     "tool_name":T,"input":I,"tool_use_id":U,...}}
and waits for
    {"type":"control_response","response":{"subtype":"success","request_id":R,
     "response":{"behavior":"allow","updatedInput":I'} | {"behavior":"deny","message":M}}}
on stdin. AskUserQuestion comes the same way; its answer is an allow whose input carries
`answers` ({question: label}). `control_cancel_request` withdraws a request; `result`
ends a turn, after which a user message on stdin starts the next.
"""

from __future__ import annotations

from typing import Any

from huddle.model.doing import input_summary

from .asks import PERMISSION, QUESTION, Answer, Ask
from .channel import Channel, Step, Withdrawn, Write, line, obj, program

QUESTION_TOOL = "AskUserQuestion"


def _flag(argv: list[str], name: str) -> str | None:
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


class ClaudeChannel(Channel):
    name = "claude"
    reasons = True
    edits = True

    @classmethod
    def matches(cls, argv: list[str]) -> bool:
        return program(argv) in ("claude", "claude-code") and _flag(argv, "--input-format") == "stream-json"

    def command(self) -> list[str]:
        if _flag(self.argv, "--permission-prompt-tool") is not None:
            return list(self.argv)  # the user chose where prompts go
        return [*self.argv, "--permission-prompt-tool", "stdio"]

    def start(self) -> list[Step]:
        if self.first_prompt:
            return [Write(ln) for ln in self.prompt(self.first_prompt)]
        return [self.turn("the agent waits for its first message")]

    def feed(self, msg: Any) -> list[Step]:
        if not isinstance(msg, dict):
            return []
        t = msg.get("type")
        if t == "control_request":
            req = msg.get("request")
            rid = msg.get("request_id")
            if not isinstance(req, dict) or not isinstance(rid, str):
                return []
            if req.get("subtype") == "can_use_tool":
                return [self._ask(rid, req)]
            # hooks and SDK MCP servers are not registered by huddle: say so, do not hang the agent
            err = {"subtype": "error", "request_id": rid, "error": f"huddle does not serve {req.get('subtype')!r}"}
            return [Write(line({"type": "control_response", "response": err}))]
        if t == "control_cancel_request" and isinstance(msg.get("request_id"), str):
            return [Withdrawn(msg["request_id"], "the agent withdrew it")]
        if t == "result":
            return [self.turn()]
        return []

    def _ask(self, rid: str, req: dict) -> Ask:
        tool = str(req.get("tool_name") or req.get("display_name") or "a tool")
        inp = obj(req.get("input"))
        call = str(req.get("tool_use_id") or "")
        if tool == QUESTION_TOOL:
            qs = []
            for q in inp.get("questions") or []:
                if not isinstance(q, dict):
                    continue
                opts = [
                    {"label": str(o.get("label", "")), "description": str(o.get("description", ""))}
                    for o in q.get("options") or []
                    if isinstance(o, dict)
                ]
                qs.append(
                    {
                        "question": str(q.get("question", "")),
                        "header": str(q.get("header", "")),
                        "options": opts,
                        "multi": bool(q.get("multiSelect")),
                    }
                )
            first = str(qs[0]["question"]) if qs else "a question"
            return Ask(
                QUESTION, rid, tool, first, input=inp, questions=qs, offers=["reply", "deny", "deny_reason"], call=call
            )
        summary = str(req.get("description") or "") or input_summary(inp)
        offers = ["allow", "allow_edit", "deny", "deny_reason", "reply"]
        return Ask(PERMISSION, rid, tool, f"{tool}: {summary}" if summary else tool, inp, offers=offers, call=call)

    def respond(self, ask: Ask, answer: Answer) -> list[bytes]:
        if answer.choice == "allow":
            resp: dict[str, Any] = {"behavior": "allow", "updatedInput": answer.input or ask.input or {}}
        elif ask.type == QUESTION and answer.choice == "reply":
            answers = dict(answer.answers)
            if not answers and ask.questions:
                answers[ask.questions[0]["question"]] = answer.text or answer.option
            resp = {"behavior": "allow", "updatedInput": {**(ask.input or {}), "answers": answers}}
        else:  # deny, or a reply to a permission: "no, and do this instead"
            why = answer.message or answer.text
            if not why:
                why = "The user declined to answer." if ask.type == QUESTION else "The user denied this from huddle."
            resp = {"behavior": "deny", "message": why}
        body = {"subtype": "success", "request_id": ask.key, "response": resp}
        return [line({"type": "control_response", "response": body})]

    def prompt(self, text: str) -> list[bytes]:
        return [line({"type": "user", "message": {"role": "user", "content": text}})]

    def is_prompt(self, msg: Any) -> bool:
        return isinstance(msg, dict) and msg.get("type") == "user"
