"""Attention states said for the board and the pages (JSON), and a session's live
signals as its page shows them. The states are decided in `huddle.model.attention`
(session.py: a session's and each agent's; trail.py: each event's for the pages;
debounce.py: how long a new one is held); this module says them.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET

from huddle.model.attention import ACTIVE, ENDED, State, settled, urgency
from huddle.model.attention.debounce import Debouncer
from huddle.model.attention.session import classify, waiting_on
from huddle.model.attention.trail import state_changes, target_changes
from huddle.model.rows import AgentRow, Row
from huddle.model.signals import Live
from huddle.model.times import iso, parse_time

__all__ = [
    "Debouncer",
    "State",
    "classify",
    "live_json",
    "look_again_in",
    "said_state",
    "state_changes",
    "target_changes",
    "waiting_on",
]


def live_json(live: Live) -> dict[str, Any]:
    """A session's live signals as its page shows them: what the source knows beyond
    the rules' fields (`facts`) beside them. Every field of the rules is there, unknown
    ones as null or empty: scripts read `live.alive` and `live.agents`, which each source
    said before signals were typed."""
    said = {k: v for k, v in live.json().items() if k != "facts"}
    return {**_EVERY_FIELD, **live.facts, **said}


_EVERY_FIELD: dict[str, Any] = {
    f.name: msgspec.json.decode(
        msgspec.json.encode(f.default_factory() if f.default is msgspec.NODEFAULT else f.default)
    )
    for f in msgspec.structs.fields(Live)
    if f.name != "facts"
}


def said_state(row: Row | AgentRow, st: State) -> None:
    """A state said on a row or an agent of one (their fields of the same names): what
    they always say set, what only some say (doing, next_change, guess) set when said."""
    row.state, row.state_since, row.waiting_for = st.state, iso(st.since), st.waiting_for
    row.urgency = urgency(st.state)  # the pages sort by it: the order is the rules' too
    if st.doing:
        row.doing = st.doing
    if st.next_change is not None:
        row.next_change = iso(st.next_change) or UNSET  # when time alone moves it (no file, no signal)
    if st.guess:
        row.guess = st.guess  # why this state is a guess (a signal said so)


def look_again_in(row: Row, now: float, hot_every: float = 1.0) -> float | None:
    """Seconds until a row is to be looked at again with no file touched (None: only a
    file or a live signal moves it). A live row (a process known, or something under
    way) every `hot_every`: what a process shows moves with no file (it dies, a command
    starts); any other when time alone moves its state (its `next_change`)."""
    # (a session settled with agents still "working" (2.0's warm-ups, a sub-agent that
    # never reported back): nothing but a file or its process moves them)
    states = {row.state} if settled(row.state) else {row.state} | {a.state for a in row.agents}
    if states & ACTIVE or (row.pid is not UNSET and row.state != ENDED):
        return hot_every
    at = parse_time(row.next_change or None)
    return None if at is None else max(hot_every, at - now + 0.05)
