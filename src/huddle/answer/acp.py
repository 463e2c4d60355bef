"""The Agent Client Protocol (JSON-RPC 2.0 on stdio): Gemini CLI `--acp`, Copilot CLI
`--acp`, `opencode acp`, Qwen Code `--acp` and the `*-acp` adapters.

huddle is the client: `initialize` (no file system, no terminal offered: the agent
uses its own), `session/new` in the run's folder, then one `session/prompt` per reply;
its response ends the turn. A tool call that needs permission is the agent's request
`session/request_permission` with the options it offers (allow once, always, reject);
the answer is `{"outcome": {"outcome": "selected", "optionId": ...}}`. Checked against
OpenCode 1.18.33. ACP carries no reason with a rejection and no edited input.
"""

from __future__ import annotations

from typing import Any

from .asks import PERMISSION, Answer, AnswerRefused, Ask
from .channel import Channel, Step, Write, line, obj, program

VERSION = 1
NOT_SERVED = -32601  # JSON-RPC: method not found


def rpc(id_: int, method: str, params: dict) -> bytes:
    return line({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})


class AcpChannel(Channel):
    name = "acp"

    def __init__(self, argv: list[str], cwd: str, prompt: str = ""):
        super().__init__(argv, cwd, prompt)
        self.next_id = 1
        self.mine: dict[int, str] = {}  # our request id -> what it asked
        self.session: str | None = None

    @classmethod
    def matches(cls, argv: list[str]) -> bool:
        prog = program(argv)
        return (
            any(a in ("--acp", "--experimental-acp") for a in argv)
            or (prog in ("opencode", "kilo", "kilocode") and "acp" in argv)
            or prog.endswith("-acp")
        )

    def _call(self, method: str, params: dict) -> bytes:
        i = self.next_id
        self.next_id += 1
        self.mine[i] = method
        return rpc(i, method, params)

    def start(self) -> list[Step]:
        caps = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
        info = {"name": "huddle", "title": "huddle", "version": "1"}
        return [
            Write(
                self._call("initialize", {"protocolVersion": VERSION, "clientCapabilities": caps, "clientInfo": info})
            )
        ]

    def feed(self, msg: Any) -> list[Step]:
        if not isinstance(msg, dict):
            return []
        method = msg.get("method")
        if method is None and "id" in msg:
            return self._response(msg)
        if isinstance(method, str) and "id" in msg:
            if method == "session/request_permission":
                return [self._permission(msg)]
            err = {"code": NOT_SERVED, "message": f"huddle does not serve {method}"}
            return [Write(line({"jsonrpc": "2.0", "id": msg["id"], "error": err}))]
        return []

    def _response(self, msg: dict) -> list[Step]:
        what = self.mine.pop(msg["id"], None) if isinstance(msg.get("id"), int) else None
        ok = isinstance(msg.get("result"), dict)
        if what == "initialize" and ok:
            return [Write(self._call("session/new", {"cwd": self.cwd, "mcpServers": []}))]
        if what == "session/new" and ok:
            self.session = str(msg["result"].get("sessionId") or "")
            if self.first_prompt:
                return [Write(ln) for ln in self.prompt(self.first_prompt)]
            return [self.turn("the agent is ready for its first message")]
        if what == "session/prompt":
            why = msg["result"].get("stopReason") if ok else (msg.get("error") or {}).get("message", "error")
            return [self.turn(f"the agent's turn is over ({why})")]
        return []

    def _permission(self, msg: dict) -> Ask:
        p = obj(msg.get("params"))
        call = obj(p.get("toolCall"))
        opts = [
            {
                "id": str(o.get("optionId", "")),
                "label": str(o.get("name") or o.get("optionId", "")),
                "kind": str(o.get("kind", "")),
            }
            for o in p.get("options") or []
            if isinstance(o, dict)
        ]
        tool = str(call.get("kind") or "tool")
        title = str(call.get("title") or "")
        return Ask(
            PERMISSION,
            msg["id"],
            tool,
            f"{tool}: {title}" if title else tool,
            call.get("rawInput"),
            options=opts,
            offers=["allow", "deny", "option"],
            call=str(call.get("toolCallId") or ""),
        )

    def respond(self, ask: Ask, answer: Answer) -> list[bytes]:
        pick = answer.option
        if not pick:
            kinds = ("allow_once", "allow_always") if answer.choice == "allow" else ("reject_once", "reject_always")
            pick = next((o["id"] for k in kinds for o in ask.options if o.get("kind") == k), "")
        outcome = {"outcome": "selected", "optionId": pick} if pick else {"outcome": "cancelled"}
        return [line({"jsonrpc": "2.0", "id": ask.key, "result": {"outcome": outcome}})]

    def prompt(self, text: str) -> list[bytes]:
        if not self.session:
            raise AnswerRefused("the agent has no session yet: wait until it says it is ready")
        return [self._call("session/prompt", {"sessionId": self.session, "prompt": [{"type": "text", "text": text}]})]

    def is_prompt(self, msg: Any) -> bool:
        return isinstance(msg, dict) and msg.get("method") == "session/prompt"
