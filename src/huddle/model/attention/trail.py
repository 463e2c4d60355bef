"""Per session, the state each event left its agent in, by the transcript rules, kept
up to date event by event: the pages replay a timeline with these, never with rules
of their own."""

from __future__ import annotations

import weakref

from huddle.model import events as ev
from huddle.model.activity import Activity
from huddle.model.session import Agent, Session

from .session import agent_state, open_orders


class _Trail:
    """Per session, the state each event left its agent in, by the transcript rules, kept
    up to date incrementally: the pages replay a timeline with these, never with rules
    of their own. `changes` maps an event's seq to its agent's new state, where it moved."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.done = 0
        self.acts: dict[str, Activity] = {}
        self.last: dict[str, str] = {}
        self.changes: dict[int, str] = {}
        self.target_changes: dict[int, str] = {}  # an order's or report's seq -> its sub-agent's new state
        self.orders: dict[str, ev.Event] = {}  # sub-agent -> its lead's open order to it

    def update(self, s: Session) -> None:
        evs = s.events
        for i in range(self.done, len(evs)):
            e = evs[i]
            act = self.acts.get(e.agent)
            if act is None:
                act = self.acts[e.agent] = Activity()
            act.apply(e)
            if e.kind in (ev.ORDER, ev.REPORT, ev.TOOL_RESULT, ev.TURN_END, ev.INTERRUPT):
                self.orders = open_orders(self.acts)  # the same open orders as classify() reads
            st = self._state(s, e.agent)
            if self.last.get(e.agent) != st:
                self.last[e.agent] = st
                self.changes[e.seq] = st
            if e.kind in (ev.ORDER, ev.REPORT) and e.target and e.target != e.agent:
                # an order starts its sub-agent's work, a report ends it: said on the event
                sub = self._state(s, e.target)
                if self.last.get(e.target) != sub:
                    self.last[e.target] = sub
                    self.target_changes[e.seq] = sub
        self.done = len(evs)

    def _state(self, s: Session, aid: str) -> str:
        agent = s.agents.get(aid) or Agent(aid)
        act = self.acts.get(aid) or Activity()
        return agent_state(agent, act, aid == s.lead_id, s, self.orders.get(aid)).state


_trails: weakref.WeakKeyDictionary[Session, _Trail] = weakref.WeakKeyDictionary()


def _trail(s: Session) -> _Trail:
    trail = _trails.get(s)
    if trail is None or trail.epoch != s.epoch or trail.done > len(s.events):
        trail = _trails[s] = _Trail(s.epoch)
    trail.update(s)
    return trail


def state_changes(s: Session) -> dict[int, str]:
    """seq -> the state that event left its agent in, where it changed (see _Trail)."""
    return _trail(s).changes


def target_changes(s: Session) -> dict[int, str]:
    """seq of an order or report -> the state it left its sub-agent in, where it changed."""
    return _trail(s).target_changes
