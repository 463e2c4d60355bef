"""What a source knows of a session beyond its events: live signals, never states.

`Handle.live(at)` returns a `Live`: what the agent's process, its registry or its
locks and its store say right now (or as of `at`). A source reports what it sees
(a process alive, a call whose process runs, a turn its store says is open); the
attention rules (`huddle.model.attention`) alone turn signals and events into a
state, and say when time alone moves it next. A source that decides a state itself
is a second owner of a rule: it will disagree one day.

Every field has a default that means "cannot tell": a source fills what it knows.
A `guess` says that what a field says is a guess and why (a call taken for an
approval prompt because the process table cannot be read): the state it decides
carries the words to the row.
"""

from __future__ import annotations

from typing import Any

import msgspec

# An agent's own word on its process (`Live.status`): Claude Code's sessions/<pid>.json
# words, which `huddle.model.attention.PROCESS` reads; a source with other words maps
# its own to these.
BUSY = "busy"  # the model or a tool is at work
WAITING = "waiting"  # a prompt is on screen (say what in `Live.pending`)
SHELL = "shell"  # the turn is over and a background shell runs
IDLE = "idle"  # the turn is over
STATUSES = (BUSY, WAITING, SHELL, IDLE)

# An agent's own word on its turn (`AgentLive.turn`): its store or its marks say so,
# before (or beyond) what its transcript shows.
TURN_OPEN = "open"
TURN_OVER = "over"


class Pending(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """A prompt on the agent's screen: an approval or a question, in its own words."""

    words: str = ""  # "permission: Bash", the question ("" : your answer)
    question: bool = False  # a question to answer (else an approval)
    since: float | None = None


class Call(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """A tool call of one agent as its process or its store shows it. `id` is the
    transcript's call id ("" for calls its files do not show yet: Gemini writes a
    response's calls only once they ran). Say what you see; the rules decide:

    - `question`: it asks the human (needs you, `words`);
    - `waits_on`: it waits on sub-agents (who, in words; "" when unnamed);
    - `runs` True: seen running (its process is there, its store marks it started);
      False: seen not running, so it waits for an approval (needs you, `words`);
      None: cannot tell;
    - `asks_after`: not started this many seconds after `since`, it waits for an
      approval (a tool that applies in milliseconds): time alone moves it."""

    id: str = ""
    tool: str = ""
    since: float | None = None
    words: str = ""  # what the human is asked: "approve command: make", the question
    question: bool = False
    waits_on: str | None = None
    runs: bool | None = None
    asks_after: float | None = None
    doing: str = ""  # what it does while it runs ("running make")
    guess: str = ""  # why what this says is a guess ("" : seen)


class AgentLive(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """One agent's own signals, where an agent has a thread or a process of its own
    (Codex threads, OpenCode and Vibe sub-agent sessions, Gemini's lead)."""

    alive: bool | None = None  # its own thread or process (a Codex thread lock)
    gone: str = ""  # why it counts as ended though its process runs ("no TUI attached")
    turn: str = ""  # TURN_OPEN / TURN_OVER as its store or marks say ("": its transcript tells)
    turn_since: float | None = None
    calls: tuple[Call, ...] = ()  # its open calls as seen (none: its transcript tells)
    guess: str = ""


class Live(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """A session's live signals (see the module doc). `facts`: what else the source
    knows, shown as it is on the session's page (a registry entry, lock words, a
    hosted run's folder) and never read by the rules."""

    alive: bool | None = None  # the session's process: running, gone, or cannot tell
    pid: int | None = None
    started: float | None = None  # when its process started (unix seconds)
    ended_at: float | None = None  # when it is known to have ended
    status: str = ""  # the agent's own word (STATUSES), "" when it keeps none
    status_since: float | None = None
    pending: Pending | None = None  # a prompt on its screen (implies status WAITING)
    last_write: float | None = None  # its newest write the events do not show (a lock, a store)
    background: tuple[str, ...] = ()  # ids of sub-agents still running in the background
    agents: dict[str, AgentLive] = {}
    guess: str = ""  # why `alive`/`status` are a guess
    facts: dict[str, Any] = {}

    def json(self) -> dict[str, Any]:
        """As the session's page shows it (GET /api/sessions/{id}: `live`)."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out

    def word(self) -> tuple[bool | None, str, str]:
        """The process's own word: a move of it is a change to show at once (never held
        by the debouncer)."""
        return (self.alive, self.status, self.pending.words if self.pending is not None else "")


NOTHING = Live()
