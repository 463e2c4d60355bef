"""Sub-agents of one unified Vibe session: who was asked what, and what came back.

The lead's `*.spawn` / `*.send_message` effects are the orders (made inside its
`run_typescript` calls); a child store `unified/child-*` is the sub-agent's own
history. Answers come back two ways, and either may be all there is:
- 2.26 `subagent.wait` returns the child's answer (and `close` deletes the child
  store, so after a run this is the only trace);
- 3.x keeps the child store: the answer is the child's last message of the turn
  the order started.
The n-th answer to a sub-agent answers the n-th order it got; each order gets one
report, whichever way it is read first. Child ids are the child store ids; where a
store was never seen and no effect names it, the agent name stands in.
"""

from __future__ import annotations

import re

from huddle.model import events as ev
from huddle.model.events import Event, cap
from huddle.model.session import Session

_TURN_NO = re.compile(r":turn:(\d+)$")


class Family:
    def __init__(self, session: Session):
        self.session = session
        self.orders: dict[tuple[str, str], list[Event]] = {}  # (parent, agent name) -> its orders, in order
        self.child_of: dict[tuple[str, str], str] = {}  # (parent, agent name) -> child store id
        self.key_of: dict[str, tuple[str, str]] = {}  # child id -> (parent, agent name)
        self.spawn_of: dict[str, str] = {}  # child id -> spawning effect id
        self.answers: dict[tuple[str, str], int] = {}  # wait answers seen per sub-agent
        self.turns: dict[str, list[tuple[int, str, float | None, str]]] = {}  # child -> (turn no, text, t, file)
        self.reported: set[str] = set()  # order ids that have their report
        self.model = ""  # the lead's model, which its sub-agents run on unless they say

    # -- what the lead's effects say -------------------------------------------------

    def order(self, e: Event, parent: str, name: str, child: str | None, kind: str, spawn: bool) -> None:
        key = (parent, name or e.id)
        self.orders.setdefault(key, []).append(e)
        e.detail = name
        e.name = kind or e.name
        if spawn:
            self.learn(parent, name or e.id, child, e.id, kind)
        e.target = self.child_of.get(key) or name or e.id

    def learn(self, parent: str, name: str, child: str | None, spawn_id: str | None, kind: str = "") -> None:
        """A sub-agent's identity: its store id as soon as anything names it."""
        key = (parent, name)
        if child and self.child_of.get(key) not in (None, child, name):
            return  # a second spawn under the same name: keep the first
        agent_id = child or self.child_of.get(key) or name
        old = self.child_of.get(key)
        self.child_of[key] = agent_id
        self.key_of[agent_id] = key
        s = self.session
        if old and old != agent_id and old in s.agents:  # the name stood in until now
            a = s.agents.pop(old)
            a.id = agent_id
            s.agents[agent_id] = a
            for e in s.events:
                if e.agent == old:
                    e.agent = agent_id
                if e.target == old:
                    e.target = agent_id
        a = s.agent(agent_id, parent=parent, name=name)
        a.parent = parent
        a.name = name or a.name
        if kind and not a.kind:
            a.kind = kind
        if spawn_id:
            self.spawn_of[agent_id] = spawn_id
            a.tool_use_id = a.tool_use_id or spawn_id
        for o in self.orders.get(key, ()):
            o.target = agent_id
        first = self.orders.get(key)
        if first and not a.order:
            a.order = first[0].text

    def answer(self, parent: str, name: str, text: str, t: float | None, file: str) -> Event | None:
        """A `subagent.wait` result: the report for the next unanswered order."""
        key = (parent, name)
        n = self.answers.get(key, 0)
        self.answers[key] = n + 1
        orders = self.orders.get(key, [])
        return self._report(orders[n], text, t, file) if n < len(orders) else None

    def stopped(self, parent: str, name: str) -> None:
        sub = self.session.agents.get(self.child_of.get((parent, name), ""))
        if sub is not None:
            sub.finished = True

    # -- what a child store says -----------------------------------------------------

    def first_order(self, child: str, text: str) -> None:
        a = self.session.agents.get(child)
        if a is not None and not a.order:
            a.order = text

    def turn_done(self, child: str, turn_id: str, text: str, t: float | None, file: str) -> None:
        done = self.turns.setdefault(child, [])
        m = _TURN_NO.search(turn_id)
        done.append((int(m.group(1)) if m else len(done) + 1, text, t, file))

    def link(self) -> list[Event]:
        """Reports for child turns whose order is now known; returns the new ones."""
        out: list[Event] = []
        for child, done in self.turns.items():
            key = self.key_of.get(child)
            orders = self.orders.get(key, []) if key else []
            for no, text, t, file in done:
                if 0 < no <= len(orders) and text:
                    e = self._report(orders[no - 1], text, t, file)
                    if e is not None:
                        out.append(e)
        return out

    def _report(self, order: Event, text: str, t: float | None, file: str) -> Event | None:
        if order.id in self.reported:
            return None
        self.reported.add(order.id)
        body, cut = cap(text)
        return Event(
            kind=ev.REPORT,
            agent=order.agent,
            t=t,
            file=file,
            id=order.id,
            target=order.target,
            text=body,
            truncated=cut,
        )

    def children(self) -> list[str]:
        """Sub-agent ids that are store ids (worth looking for on disk)."""
        return [c for c in self.key_of if c.startswith("child-")]
