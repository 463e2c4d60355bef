"""Attention states said for the board and the pages (JSON), and a session's live
signals as its page shows them. The states are decided in `huddle.model.attention`
(session.py: a session's and each agent's; trail.py: each event's for the pages;
debounce.py: how long a new one is held); this module says them.
"""

from __future__ import annotations

from typing import Any

from huddle.model.attention import State, urgency
from huddle.model.attention.debounce import Debouncer
from huddle.model.attention.session import classify, waiting_on
from huddle.model.attention.trail import state_changes, target_changes
from huddle.model.signals import Live
from huddle.model.times import iso

__all__ = [
    "Debouncer",
    "State",
    "classify",
    "live_json",
    "state_changes",
    "state_dict",
    "target_changes",
    "waiting_on",
]


def live_json(live: Live) -> dict[str, Any]:
    """A session's live signals as its page shows them: what the source knows beyond
    the rules' fields (`facts`) beside them."""
    return {**live.facts, **{k: v for k, v in live.json().items() if k != "facts"}}


def state_dict(st: State) -> dict[str, Any]:
    d: dict[str, Any] = {"state": st.state, "state_since": iso(st.since), "waiting_for": st.waiting_for}
    d["urgency"] = urgency(st.state)  # the pages sort by it: the order is the rules' too
    if st.doing:
        d["doing"] = st.doing
    if st.next_change is not None:
        d["next_change"] = iso(st.next_change)  # when time alone moves it (no file, no signal)
    if st.guess:
        d["guess"] = st.guess  # why this state is a guess (a signal said so)
    return d
