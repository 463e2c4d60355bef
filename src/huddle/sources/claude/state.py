"""What spans the files of one Claude session while they are read: responses counted (by
message id, to their final counts), sub-agents and the calls that started them, sidechains,
summaries, titles. The parser of each file reads and writes it."""

from __future__ import annotations

from typing import Any

from huddle.model import events as ev
from huddle.model.events import Event
from huddle.model.session import Session

from .records import Block

PARTIAL_MIN_CHARS = 80  # below this a response is too short to judge its count by


# Sub-agents that begin with a replay of their lead's history (the same messages, its
# calls among them): a compaction and a side question (/btw). Peers read them so too
# (agent-acompact-*, agent-aside_question-*: no meta.json, no call of their lead).
REPLAYING = ("acompact-", "aside_question-")


def claims(agent: str, held_by: str | None) -> bool:
    """Whether a call read in `agent`'s file is its own: the first file holding the call
    launched it (the lead's is read first), unless that was a replay and this is none."""
    return held_by is None or (held_by.startswith(REPLAYING) and not agent.startswith(REPLAYING))


class SessionState:
    """What spans the files of one Claude session while it is read."""

    def __init__(self) -> None:
        # message id -> its usage event (None: a copy, never counted). Kept so that a later
        # record of the same response, in this read or a later append, raises it to the final counts.
        self.counted: dict[str, Event | None] = {}
        self.agent_calls: dict[str, str] = {}  # Agent tool_use id -> the agent that called it
        self.turn_ended: set[str] = set()  # message ids whose turn end is out (one per response)
        self.agent_by_call: dict[str, str] = {}  # Agent tool_use id -> sub-agent id (from meta.json)
        self.sub_orders: dict[str, str] = {}  # sub-agent id -> its first prompt
        self.warmups: set[str] = set()  # sub-agents whose order was "Warmup" (2.0.x pre-warming)
        # inline sidechains (1.0.x): record uuid -> its sub-agent; Task calls not yet started
        self.sidechain_of: dict[str, str] = {}
        self.summaries: dict[str, str] = {}  # leafUuid -> summary text, from this session's file
        self.chars: dict[str, int] = {}  # message id -> characters its records wrote
        self.partial_output: set[str] = set()  # message ids whose output count cannot be final
        self.last_sidechain = ""
        self.open_calls: list[tuple[str, str, str]] = []  # (call id, prompt, calling agent)
        self.background_agents: set[str] = set()
        self.background_shells: dict[str, str] = {}  # task id -> Bash call id
        self.custom_title = ""
        self.ai_title = ""
        self.permission_mode = ""

    def check_output(self, mid: str, content: str | list[Block] | None) -> None:
        """Whether a response's output count can be its final one, from what it wrote: a
        token is a few characters, so 20 characters or more per counted token means the
        file kept only a count from the start of the stream (Claude Code 2.1.50 never
        writes the final one; a response cut by an interrupt has none either)."""
        chars = self.chars.get(mid, 0)
        if isinstance(content, str):
            chars += len(content)
        elif content:
            for b in content:
                if b.text:
                    chars += len(b.text)
                if b.thinking:
                    chars += len(b.thinking)
                if b.type == "tool_use":
                    chars += len(b.input)
        self.chars[mid] = chars
        e = self.counted.get(mid)
        if e is not None and e.usage is not None and chars >= PARTIAL_MIN_CHARS and e.usage.output * 20 < chars:
            self.partial_output.add(mid)
        else:
            self.partial_output.discard(mid)

    def usage_note(self) -> str:
        n = len(self.partial_output)
        if not n:
            return ""
        total = sum(1 for e in self.counted.values() if e is not None)
        return (
            f"{n} of {total} responses hold only a partial output count (the file never got the final one): "
            "output tokens and cost are a lower bound"
        )

    def __getstate__(self) -> dict[str, Any]:
        # The cache keeps a session's usage events apart (Session.__getstate__): keep
        # only their place here, and find them again on load (`relink`).
        d = self.__dict__.copy()
        d["counted"] = {mid: (e.seq if e is not None else None) for mid, e in self.counted.items()}
        return d

    def relink(self, session: Session) -> None:
        """After a load from the cache: the usage events again, by their place."""
        by_seq = {e.seq: e for e in session.events if e.kind == ev.USAGE}
        places: dict[str, Any] = self.counted  # seq numbers, as the cache kept them
        self.counted = {mid: (None if seq is None else by_seq.get(seq)) for mid, seq in places.items()}
