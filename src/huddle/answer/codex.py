"""`codex app-server`: Codex's JSON-RPC on stdio (lines without a "jsonrpc" field).

huddle is the client: `initialize`, the `initialized` notification, `thread/start` in
the run's folder, then one `turn/start` per reply; `turn/completed` ends the turn.
Approvals are the server's requests `item/commandExecution/requestApproval` and
`item/fileChange/requestApproval` (answered `{"decision": "accept" | "decline"}`),
questions `item/tool/requestUserInput` (`{"answers": {id: {"answers": [...]}}}`);
`serverRequest/resolved` says a request was settled without us. The older
`execCommandApproval` / `applyPatchApproval` take `approved` / `denied`. Checked
against the JSON schema Codex 0.171.0 generates (`codex app-server generate-json-schema`).
"""

from __future__ import annotations

from typing import Any

from huddle.model.doing import input_summary

from .asks import PERMISSION, QUESTION, Answer, AnswerRefused, Ask
from .channel import Channel, Step, Withdrawn, Write, line, obj, program

NOT_SERVED = -32601
APPROVALS = {
    "item/commandExecution/requestApproval": "command",
    "item/fileChange/requestApproval": "file change",
    "execCommandApproval": "command",
    "applyPatchApproval": "file change",
}
LEGACY = ("execCommandApproval", "applyPatchApproval")


class CodexChannel(Channel):
    name = "codex"

    def __init__(self, argv: list[str], cwd: str, prompt: str = ""):
        super().__init__(argv, cwd, prompt)
        self.next_id = 1
        self.mine: dict[int, str] = {}
        self.thread: str | None = None
        self.methods: dict[object, str] = {}  # a pending server request's id -> its method
        self.changes: dict[str, Any] = {}  # a file-change item's id -> its changes (from item/started)

    @classmethod
    def matches(cls, argv: list[str]) -> bool:
        return program(argv) == "codex" and "app-server" in argv

    def _call(self, method: str, params: dict) -> bytes:
        i = self.next_id
        self.next_id += 1
        self.mine[i] = method
        return line({"id": i, "method": method, "params": params})

    def start(self) -> list[Step]:
        return [Write(self._call("initialize", {"clientInfo": {"name": "huddle", "title": "huddle", "version": "1"}}))]

    def feed(self, msg: Any) -> list[Step]:
        if not isinstance(msg, dict):
            return []
        method = msg.get("method")
        if method is None and "id" in msg:
            return self._response(msg)
        params = obj(msg.get("params"))
        if isinstance(method, str) and "id" in msg:
            return self._request(msg["id"], method, params)
        if method == "turn/completed":
            turn = obj(params.get("turn"))
            return [self.turn(f"the agent's turn is over ({turn.get('status') or 'completed'})")]
        if method == "serverRequest/resolved" and params.get("requestId") in self.methods:
            self.methods.pop(params["requestId"], None)
            return [Withdrawn(params["requestId"], "settled by the agent")]
        if method == "item/started":
            item = obj(params.get("item"))
            if item.get("type") == "fileChange" and item.get("id"):
                self.changes[str(item["id"])] = item.get("changes")
        return []

    def _response(self, msg: dict) -> list[Step]:
        what = self.mine.pop(msg["id"], None) if isinstance(msg.get("id"), int) else None
        result = msg.get("result") if isinstance(msg.get("result"), dict) else None
        if what == "initialize" and result is not None:
            start = self._call("thread/start", {"cwd": self.cwd})
            return [Write(line({"method": "initialized"})), Write(start)]
        if what == "thread/start" and result is not None:
            thread = obj(result.get("thread"))
            self.thread = str(thread.get("id") or "")
            if self.first_prompt:
                return [Write(ln) for ln in self.prompt(self.first_prompt)]
            return [self.turn("the agent is ready for its first message")]
        if what == "turn/start" and result is None:
            why = (msg.get("error") or {}).get("message", "error") if isinstance(msg.get("error"), dict) else "error"
            return [self.turn(f"the turn did not start ({why})")]
        return []

    def _request(self, rid: object, method: str, p: dict) -> list[Step]:
        if method in APPROVALS:
            self.methods[rid] = method
            tool = APPROVALS[method]
            item = str(p.get("itemId") or p.get("callId") or "")
            if tool == "command":
                cmd = p.get("command")
                cmd = " ".join(map(str, cmd)) if isinstance(cmd, list) else str(cmd or "")
                inp: dict[str, Any] = {"command": cmd, "cwd": p.get("cwd")}
                words = cmd or input_summary(p)
            else:
                inp = {"changes": p.get("fileChanges") or self.changes.get(item), "grantRoot": p.get("grantRoot")}
                words = str(p.get("reason") or "apply the changes")
            if p.get("reason"):
                inp["reason"] = p["reason"]
            return [Ask(PERMISSION, rid, tool, f"{tool}: {words}", inp, offers=["allow", "deny"], call=item)]
        if method == "item/tool/requestUserInput":
            self.methods[rid] = method
            qs = [
                {
                    "id": str(q.get("id", "")),
                    "question": str(q.get("question", "")),
                    "header": str(q.get("header", "")),
                    "options": [
                        {"label": str(o.get("label", "")), "description": str(o.get("description", ""))}
                        for o in q.get("options") or []
                        if isinstance(o, dict)
                    ],
                    "multi": False,
                }
                for q in p.get("questions") or []
                if isinstance(q, dict)
            ]
            first = str(qs[0]["question"]) if qs else "a question"
            return [
                Ask(
                    QUESTION,
                    rid,
                    "request_user_input",
                    first,
                    questions=qs,
                    offers=["reply"],
                    call=str(p.get("itemId") or ""),
                )
            ]
        err = {"code": NOT_SERVED, "message": f"huddle does not serve {method}"}
        return [Write(line({"id": rid, "error": err}))]

    def respond(self, ask: Ask, answer: Answer) -> list[bytes]:
        method = self.methods.pop(ask.key, "")
        if ask.type == QUESTION:
            answers = {}
            for i, q in enumerate(ask.questions):
                given = answer.answers.get(q["question"]) or answer.answers.get(q.get("id", ""))
                if given is None and i == 0:
                    given = answer.text or answer.option
                if given:
                    answers[q.get("id") or str(i)] = {"answers": [given]}
            result: dict[str, Any] = {"answers": answers}
        elif method in LEGACY:
            result = {"decision": "approved" if answer.choice == "allow" else "denied"}
        else:
            result = {"decision": "accept" if answer.choice == "allow" else "decline"}
        return [line({"id": ask.key, "result": result})]

    def prompt(self, text: str) -> list[bytes]:
        if not self.thread:
            raise AnswerRefused("the agent has no thread yet: wait until it says it is ready")
        return [
            self._call(
                "turn/start", {"threadId": self.thread, "input": [{"type": "text", "text": text, "text_elements": []}]}
            )
        ]

    def is_prompt(self, msg: Any) -> bool:
        return isinstance(msg, dict) and msg.get("method") == "turn/start"
