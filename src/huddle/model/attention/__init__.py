"""The attention rules: one table for everything that says who needs you, and the one
place any state is decided.

Sources report signals (huddle.model.signals), never states. Here: the transcript
rules, a process's own status word over them, an agent's own signals (its thread, its
calls as seen), liveness, and time (`after_quiet`, and `next_change`: when time alone
moves a state next). `session.py` applies them to a session (the board, the pages: the
server sends states, the pages never derive one), `trail.py` to each event for the
pages' replays, `debounce.py` says how long a new state is held; the status line
overlays Claude Code's registry with this table, and reads a board past a row's
`next_change` as stale; the watcher looks at a row again then.

States, most urgent first (a session shows the most urgent of its agents):

    needs_you   a question or permission prompt waits for the human
    waiting     it waits on a sub-agent it ordered
    working     its turn is open: the model or a tool is busy
    your_turn   its turn is over: the human is expected to speak
    idle        nothing happened for IDLE_AFTER and nothing runs
    ended       its process exited (or a sub-agent is done)

Each rule reads one agent's signals and nothing else, so one agent, or one session's
row, is re-evaluated alone, cheaply, whenever one of its signals changes.

This module is standard library only and imports nothing: the status line imports it
(its submodules read the event model).
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing costs the status line ~2.5 ms: read by mypy alone)
if TYPE_CHECKING:  # (read by attribute: this module imports nothing, the status line imports it)
    from collections.abc import Iterable

    from huddle.model.signals import AgentLive, Call

NEEDS_YOU = "needs_you"
WAITING = "waiting"
WORKING = "working"
YOUR_TURN = "your_turn"
IDLE = "idle"
ENDED = "ended"

STATES = (NEEDS_YOU, WAITING, WORKING, YOUR_TURN, IDLE, ENDED)  # most urgent first
URGENCY = {s: i for i, s in enumerate(STATES)}
ACTIVE = frozenset({NEEDS_YOU, WAITING, WORKING})  # something is under way
IDLE_AFTER = 30 * 60.0  # seconds


SETTLED = frozenset({IDLE, ENDED})  # states only a move of the session's files (or process) changes


def settled(state: object) -> bool:
    """Whether time alone cannot move this state."""
    return state in SETTLED


def urgency(state: str | None) -> int:
    """Sort key: most urgent first; an unknown state last."""
    return URGENCY.get(state or "", len(STATES))


class State:
    """A state as decided: since when, what it waits for (words), what it is doing,
    the background work beside it, why it is a guess (if a signal said so), and when
    time alone moves it next."""

    __slots__ = ("background", "doing", "guess", "next_change", "since", "state", "waiting_for")

    def __init__(
        self, state: str, since: float | None = None, waiting_for: str | None = None, doing: str = "", guess: str = ""
    ) -> None:
        self.state = state
        self.since = since
        self.waiting_for = waiting_for
        self.doing = doing  # what it is doing right now, in a few words
        self.guess = guess
        self.background: list[str] = []
        self.next_change: float | None = None  # when time alone moves it (a session's: see next_change())

    def __repr__(self) -> str:
        return f"State({self.state!r}, waiting_for={self.waiting_for!r})"


class Signals:
    """What the transcript says of one agent (from its Activity)."""

    __slots__ = ("asks", "done", "exited", "is_lead", "ordered", "orders", "turn_open")

    def __init__(
        self,
        asks: bool = False,
        orders: bool = False,
        exited: bool = False,
        done: bool = False,
        turn_open: bool = False,
        is_lead: bool = True,
        ordered: bool = False,
    ) -> None:
        self.asks = asks  # an open waiting event, or an open call of a QUESTION tool
        self.orders = orders  # an open order to a sub-agent
        self.exited = exited  # the transcript says its process exited
        self.done = done  # a sub-agent that reported back or that its files say finished
        self.turn_open = turn_open
        self.is_lead = is_lead
        self.ordered = ordered  # a sub-agent whose lead's order to it is still open (no report yet)


# The transcript rules, first match wins: (state, rule).
TRANSCRIPT: tuple[tuple[str, str], ...] = (
    (NEEDS_YOU, "asks"),  # a question or permission prompt is open
    (WAITING, "orders"),  # an order to a sub-agent is open
    (ENDED, "exited"),  # its process exited
    (WORKING, "ordered"),  # a sub-agent given work its lead still waits on (before its first line too)
    (ENDED, "done"),  # a sub-agent that is done, between turns
    (WORKING, "turn_open"),
    (YOUR_TURN, "otherwise"),
)


def _holds(rule: str, s: Signals) -> bool:
    if rule == "done":
        return not s.is_lead and s.done and not s.turn_open
    if rule == "ordered":
        return not s.is_lead and s.ordered
    return rule == "otherwise" or bool(getattr(s, rule))


def transcript_rule(s: Signals) -> tuple[str, str]:
    """The state the transcript alone gives, and the rule that gave it."""
    for state, rule in TRANSCRIPT:
        if _holds(rule, s):
            return state, rule
    return YOUR_TURN, "otherwise"


# A process-reported status (Claude Code's sessions/<pid>.json: busy / waiting / shell /
# idle) heard over the transcript's state: status -> (the state it means, the states it
# leaves as they are). Either may lead the other by a moment; the status is fresher.
PROCESS: dict[str, tuple[str, frozenset[str]]] = {
    "waiting": (NEEDS_YOU, frozenset({NEEDS_YOU})),  # a prompt is on screen
    "busy": (WORKING, ACTIVE),  # a pending order or prompt stays what it is
    "idle": (YOUR_TURN, frozenset({YOUR_TURN, IDLE, ENDED})),
    "shell": (YOUR_TURN, frozenset({YOUR_TURN, IDLE, ENDED})),  # a background shell, the turn over
}


def with_process_status(state: str | None, status: object, background: bool = False) -> str | None:
    """The state once the process's own status is heard. Busy while the turn is over
    and work runs in the background is that work, not a new turn: your turn."""
    rule = PROCESS.get(status) if isinstance(status, str) else None
    if rule is None:
        return state
    means, keeps = rule
    if state in keeps:
        return state
    if status == "busy" and background:
        return YOUR_TURN
    return means


def with_liveness(state: str | None, alive: object) -> str | None:
    """A process known to be gone has ended, whatever its files last said."""
    return ENDED if alive is False else state


def _clock(state: str, background: bool, liveness_known: bool) -> str:
    """Which quiet moves this state with time alone: "since" (a turn over with nothing
    in the background, quiet since it began), "untouched" (work that nothing vouches
    for, no liveness and no process status, since its files last moved: a turn open, or
    over with background work left), or ""."""
    if state == YOUR_TURN and not background:
        return "since"
    if not liveness_known and (state in ACTIVE or state == YOUR_TURN):
        return "untouched"
    return ""


def after_quiet(
    state: str,
    quiet_for: float,
    untouched_for: float | None,
    background: bool,
    liveness_known: bool,
    idle_after: float = IDLE_AFTER,
) -> str:
    """Time alone moves a state. `quiet_for`: since the state began; `untouched_for`:
    since the session's files last moved. A turn over with nothing in the background
    goes idle; work that nothing vouches for and whose files stopped moving long ago
    is not work any more: idle too, whether the turn is open or over with background
    work left that never reported back (a year-old session's sub-agent is not running
    still)."""
    clock = _clock(state, background, liveness_known)
    if clock == "since" and quiet_for > idle_after:
        return IDLE
    if clock == "untouched" and untouched_for is not None and untouched_for > idle_after:
        return IDLE
    return state


def next_change(
    state: str,
    since: float | None,
    last: float | None,
    background: bool,
    liveness_known: bool,
    idle_after: float = IDLE_AFTER,
    timers: tuple[float, ...] = (),
) -> float | None:
    """When (unix seconds) time alone moves this state next: the moment `after_quiet`
    turns it idle, or a call's timer (`timers`: see `call_timers`) fires; None when only
    a file or a live signal can move it. `since`: when the state began; `last`: when
    the session's files last moved. The watcher looks at a row again then, the core
    lets a session sleep when there is no such moment, the status line reads a board
    past it as stale."""
    at = list(timers)
    clock = _clock(state, background, liveness_known)
    start = (since or last) if clock == "since" else (last if clock == "untouched" else None)
    if start is not None:
        at.append(start + idle_after)
    return min(at) if at else None


def call_timers(agents: Iterable[AgentLive], now: float) -> tuple[float, ...]:
    """The moments at which a call seen open turns into an approval prompt with time
    alone (`Call.asks_after`), those still to come."""
    out = []
    for a in agents:
        for c in a.calls:
            if c.runs is None and c.asks_after is not None and c.since is not None and c.since + c.asks_after >= now:
                out.append(c.since + c.asks_after)
    return tuple(out)


def shows_lead(top: str, lead: str) -> bool:
    """A session shows its most urgent agent's state (`top`), except: a sub-agent working
    under a lead that waits on it or whose turn is over leaves the lead's state (the work
    is listed as background), and an ended agent never hides a lead that has not ended."""
    if top == WORKING and lead in (WAITING, YOUR_TURN, ENDED):
        return True
    return top == ENDED and lead != ENDED


# -- an agent's own signals (huddle.model.signals.AgentLive) ---------------------------------


def call_state(c: Call, now: float) -> State:
    """What one open call, as its process or store shows it, says of its agent."""
    if c.question:
        return State(NEEDS_YOU, c.since, c.words or "a question", guess=c.guess)
    if c.waits_on is not None:
        return State(WAITING, c.since, c.waits_on or "sub-agents", guess=c.guess)
    if c.runs is True:
        return State(WORKING, c.since, doing=c.doing, guess=c.guess)
    asks = c.runs is False or (c.asks_after is not None and c.since is not None and now - c.since > c.asks_after)
    if asks:
        return State(NEEDS_YOU, c.since, c.words or "approve a tool call", guess=c.guess)
    return State(WORKING, c.since, doing=c.doing, guess=c.guess)


def agent_signal_state(a: AgentLive, last_t: float | None, is_lead: bool, now: float) -> State | None:
    """An agent's state from its own signals, over what its transcript says; None when
    they leave it to the transcript. Its own process gone: ended. Its calls as seen:
    the most urgent (the first of equals). Its own word on its turn: open, working;
    over (a lead), your turn."""
    if a.alive is False:
        return State(ENDED, last_t, a.gone or None, guess=a.guess)
    best: State | None = None
    for c in a.calls:
        st = call_state(c, now)
        if best is None or urgency(st.state) < urgency(best.state):
            best = st
    if best is not None:
        return best
    if a.turn == "open":
        return State(WORKING, a.turn_since, guess=a.guess)
    if a.turn == "over" and is_lead:
        return State(YOUR_TURN, a.turn_since, guess=a.guess)
    return None
