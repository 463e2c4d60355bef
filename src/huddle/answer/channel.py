"""The small interface each hosted protocol implements, and which one a command speaks.

A channel is pure: the host hands it every JSON value the agent printed (`feed`) and
writes what it returns; the channel never touches a pipe, a file or the clock. What it
returns is a list of steps:

- `Ask`: the agent waits for a person (a permission, a question, its next message);
- `Withdrawn(key, why)`: the agent gave up an ask itself (cancelled, resolved elsewhere);
- `Write(line)`: a line for the agent's stdin now (the next step of a handshake, the
  refusal of a request huddle does not serve).

A third protocol is a subclass with `matches`, `feed`, `respond` and `prompt`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import msgspec

from .asks import TURN, Answer, Ask

_encode = msgspec.json.encode


@dataclass
class Withdrawn:
    key: object
    why: str


@dataclass
class Write:
    line: bytes


Step = Ask | Withdrawn | Write


def obj(v: object) -> dict[str, Any]:
    """`v` if it is a JSON object, else an empty one (an agent's odd value costs nothing)."""
    return v if isinstance(v, dict) else {}


def line(value: Any) -> bytes:
    """One JSON value as one line for the agent's stdin (no newline)."""
    return _encode(value)


class Channel:
    name: ClassVar[str] = ""
    # what the pages say this agent can take with its answers
    reasons: ClassVar[bool] = False  # a deny carries a reason to the agent
    edits: ClassVar[bool] = False  # an allow may carry an edited input

    def __init__(self, argv: list[str], cwd: str, prompt: str = ""):
        self.argv = argv
        self.cwd = cwd
        self.first_prompt = prompt

    @classmethod
    def matches(cls, argv: list[str]) -> bool:
        """Whether this command line speaks this protocol (to be told apart from a plain run)."""
        return False

    def command(self) -> list[str]:
        """The command the host runs (a channel may add the flag its protocol needs)."""
        return list(self.argv)

    def start(self) -> list[Step]:
        """What to do once the agent runs: a handshake's first line, or a first turn."""
        return []

    def feed(self, msg: Any) -> list[Step]:
        """One JSON value the agent printed."""
        return []

    def respond(self, ask: Ask, answer: Answer) -> list[bytes]:
        """The lines that answer `ask` (checked against its offers by the host first)."""
        raise NotImplementedError

    def prompt(self, text: str) -> list[bytes]:
        """The lines that send the next user message."""
        raise NotImplementedError

    def is_prompt(self, msg: Any) -> bool:
        """Whether a value written to stdin by hand (`huddle send`) is a user message."""
        return False

    def turn(self, summary: str = "the agent waits for your next message") -> Ask:
        return Ask(type=TURN, tool="", summary=summary, offers=["reply"])


WRAPPERS = ("npx", "node", "bun", "bunx", "env", "pnpm", "exec", "dlx", "uvx")


def program(argv: list[str]) -> str:
    """The program a command line runs, by name: `/x/bin/claude` -> claude, `npx -y
    @google/gemini-cli@1` -> gemini-cli, `node .../node_modules/@openai/codex/bin/codex.js`
    -> codex, `node .../node_modules/x/cli.js` -> x."""
    for a in argv:
        if a.startswith("-") or a in WRAPPERS or "=" in a.split("/")[0]:
            continue
        parts = a.split("/")
        base = parts[-1].split("@")[0] if not parts[-1].startswith("@") else parts[-1][1:].split("@")[0]
        for ext in (".js", ".mjs", ".cjs", ".exe"):
            base = base.removesuffix(ext)
        if base in ("cli", "index", "main") and "node_modules" in parts:
            i = len(parts) - 1 - parts[::-1].index("node_modules")
            base = parts[i + 2] if i + 2 < len(parts) - 1 and parts[i + 1].startswith("@") else parts[i + 1]
        return base
    return ""
