"""What each agent of a session is in the middle of (open calls, an open turn, waits,
work in the background), kept up to date event by event: the attention states are
computed from it (views/states.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import events as ev
from .events import Event

if TYPE_CHECKING:
    from .session import Session


# (sets made once: a tuple of the kinds was built anew for every event of every read)
_NO_ACTIVITY = frozenset((ev.USAGE, ev.TITLE, ev.CONTEXT))
_CALLS = frozenset((ev.TOOL_CALL, ev.ORDER, ev.TOOL_RESULT, ev.REPORT))
_TURN_ENDS = frozenset((ev.TURN_END, ev.INTERRUPT))


class Activity:
    """What an agent is in the middle of, kept up to date event by event."""

    __slots__ = (
        "background",
        "ended_by",
        "exited",
        "last_kind",
        "last_t",
        "open_calls",
        "turn_open",
        "turn_t",
        "waits",
    )

    def __init__(self) -> None:
        self.open_calls: dict[str, Event] = {}  # tool calls and orders without a result
        self.turn_open = False  # a prompt came and no turn end / interrupt yet
        self.turn_t: float | None = None  # when the open turn began
        self.last_kind = ""
        self.last_t: float | None = None
        self.waits: dict[str, Event] = {}  # open waiting-for-you events
        self.background: dict[str, Event] = {}  # work launched in the background, not done
        self.exited = False  # the transcript says its process exited
        self.ended_by = ""  # the response whose turn end closed the last turn

    def _open_turn(self, t: float | None) -> None:
        if not self.turn_open:
            self.turn_open = True
            self.turn_t = t
        self.exited = False

    def apply(self, e: Event) -> None:
        k = e.kind
        if k == ev.CONTEXT and e.name == "session_end":
            self.exited = True
            return
        if k in _NO_ACTIVITY:
            return
        if e.t is not None:
            self.last_t = e.t
        self.last_kind = k
        if k in _CALLS:
            self._call(e)
        elif k in _TURN_ENDS:
            self.ended_by = e.id if k == ev.TURN_END else ""
            self.turn_open = False
            self.open_calls.clear()
            self.waits.clear()
        elif k == ev.WAITING:
            self.waits[e.id] = e
        elif k == ev.RESOLVED:
            self.waits.pop(e.id, None)
        elif k == ev.PROMPT or (k in (ev.SAY, ev.THINK) and not (e.id and e.id == self.ended_by)):
            self._open_turn(e.t)  # (a later block of the response that ended the turn does not)

    def _call(self, e: Event) -> None:
        """A call opened (an order to itself: a turn of its own), answered (in the
        background: kept there until it reports), or reported on."""
        if e.kind == ev.REPORT:
            self.background.pop(e.id, None)
            self.open_calls.pop(e.id, None)
        elif e.kind == ev.TOOL_RESULT:
            call = self.open_calls.pop(e.id, None)
            if e.detail == "background":
                self.background[e.id] = call or e
            else:
                self.background.pop(e.id, None)
            if call is not None:
                self._open_turn(e.t)
        else:
            self._open_turn(e.t)
            if e.id and not (e.kind == ev.ORDER and e.agent == e.target):
                self.open_calls[e.id] = e


def activity_at(session: Session, at: float) -> dict[str, Activity]:
    """Each agent's activity as of a past time, replayed from the timeline (an event
    without a time takes the last known time before it in its file)."""
    acts: dict[str, Activity] = {a: Activity() for a in session.agents}
    last_t: dict[str, float | None] = {}
    for e in session.events:
        t = e.t if e.t is not None else last_t.get(e.file)
        last_t[e.file] = t
        if t is not None and t > at:
            continue
        acts.setdefault(e.agent, Activity()).apply(e)
    return acts
