"""Attention states: who is working, who needs you, who waits on whom.

Every agent and every session gets one state, the time it began and, where it
waits, what for. The rules combine what the transcripts show (each agent's
Activity: open calls, open turn, open waits, background work) with what a source
knows about the process (its `live()` signals: alive or not, a process-reported
status such as Claude Code's sessions/<pid>.json, per-agent overrides).
"""

from __future__ import annotations

import time

from huddle.model import events as ev
from huddle.model.doing import doing
from huddle.model.session import Activity, Agent, Session
from huddle.model.tools import QUESTION_TOOLS

WORKING = "working"
NEEDS_YOU = "needs_you"
WAITING = "waiting"
YOUR_TURN = "your_turn"
IDLE = "idle"
ENDED = "ended"

# Most urgent first: the session shows the most urgent state of its agents.
URGENCY = {NEEDS_YOU: 0, WAITING: 1, WORKING: 2, YOUR_TURN: 3, IDLE: 4, ENDED: 5}
IDLE_AFTER = 30 * 60.0


class State:
    __slots__ = ("background", "doing", "since", "state", "waiting_for")

    def __init__(self, state: str, since: float | None = None, waiting_for: str | None = None, doing: str = ""):
        self.state = state
        self.since = since
        self.waiting_for = waiting_for
        self.doing = doing  # what it is doing right now, in a few words
        self.background: list[str] = []

    def __repr__(self) -> str:
        return f"State({self.state!r}, waiting_for={self.waiting_for!r})"


def activity_at(session: Session, at: float) -> dict[str, Activity]:
    """Each agent's activity as of a past time, replayed from the timeline."""
    acts: dict[str, Activity] = {a: Activity() for a in session.agents}
    last_t: dict[str, float | None] = {}
    for e in session.events:
        t = e.t if e.t is not None else last_t.get(e.file)
        last_t[e.file] = t
        if t is not None and t > at:
            continue
        acts.setdefault(e.agent, Activity()).apply(e)
    return acts


def _call_words(e: ev.Event) -> str:
    """What a pending call is, for "waiting for": the tool and its input summary."""
    return f"{e.name}: {e.detail}" if e.detail else e.name


def agent_state(agent: Agent, act: Activity, is_lead: bool, session: Session) -> State:
    """The generic rules, from the transcript alone."""
    if act.waits:
        w = list(act.waits.values())[-1]
        return State(NEEDS_YOU, w.t, w.detail or w.text or w.name or "your answer")
    open_calls = list(act.open_calls.values())
    for c in reversed(open_calls):
        if c.kind == ev.TOOL_CALL and c.name in QUESTION_TOOLS:
            return State(NEEDS_YOU, c.t, c.detail or "a question")
    orders = [c for c in open_calls if c.kind == ev.ORDER]
    if orders:
        o = orders[-1]
        sub = session.agents.get(o.target)
        who = (sub.description or sub.name) if sub is not None else (o.detail or o.name)
        return State(WAITING, o.t, who)
    if act.exited:
        return State(ENDED, act.last_t)
    if not is_lead and (agent.report is not None or agent.finished) and not act.turn_open:
        return State(ENDED, act.last_t)
    if act.turn_open:
        words = doing(open_calls[-1].name, open_calls[-1].detail) if open_calls else "thinking"
        return State(WORKING, open_calls[-1].t if open_calls else act.turn_t, doing=words)
    return State(YOUR_TURN, act.last_t)


def classify(
    session: Session,
    live: dict | None = None,
    at: float | None = None,
    now: float | None = None,
    idle_after: float = IDLE_AFTER,
) -> tuple[State, dict[str, State]]:
    """The session's state and each agent's, as of `at` (default: now)."""
    live = live or {}
    now = at if at is not None else (now if now is not None else time.time())
    acts = activity_at(session, at) if at is not None else {a.id: a.activity for a in session.agents.values()}
    per: dict[str, State] = {}
    for a in session.agents.values():
        act = acts.get(a.id) or Activity()
        per[a.id] = agent_state(a, act, a.id == session.lead_id, session)
    lead_act = acts.get(session.lead_id) or Activity()

    proc = live.get("status")  # a process-reported status: busy / waiting / shell / idle
    alive = live.get("alive")
    if alive is not False and proc:
        _apply_process_status(session, per, acts, proc, live)
    for aid, o in (live.get("agents") or {}).items():
        if aid in per and o.get("state"):
            per[aid] = State(o["state"], o.get("since") or per[aid].since, o.get("waiting_for"))
    if alive is False:
        for aid, st in per.items():
            if st.state != ENDED:
                per[aid] = State(ENDED, live.get("ended_at") or st.since)

    background = _background(session, acts, live)
    lead = per.get(session.lead_id) or State(YOUR_TURN)
    candidates = [st for aid, st in per.items() if not session.agents[aid].quiet]
    top = min(candidates, key=lambda s: URGENCY.get(s.state, 9)) if candidates else lead
    # A sub-agent still working under a lead that waits on it makes the session "waiting";
    # a lead whose turn is over stays "your turn" with the background work listed beside it.
    if top.state == WORKING and lead.state in (WAITING, YOUR_TURN, ENDED):
        top = lead
    if top.state == ENDED and lead.state != ENDED:
        top = lead
    st = State(top.state, top.since, top.waiting_for, top.doing)
    st.background = background

    # Unknown liveness and nothing for a long time: idle, whatever the transcript ended on.
    last = session.updated_at if at is None else (lead_act.last_t or session.updated_at)
    quiet_for = now - (st.since or last or now)
    if st.state == YOUR_TURN and quiet_for > idle_after and not background:
        st = State(IDLE, st.since)
    elif (
        st.state in (WORKING, WAITING, NEEDS_YOU)
        and alive is None
        and not proc
        and last is not None
        and now - last > idle_after
    ):
        st = State(IDLE, last)
    return st, per


def _apply_process_status(
    session: Session, per: dict[str, State], acts: dict[str, Activity], proc: str, live: dict
) -> None:
    """Combine a process-reported status with the transcripts (rules from the Claude notes):
    waiting -> needs you (which tool, raised by which agent); busy + pending order -> waiting;
    busy + turn over -> your turn with background work; busy -> working; shell/idle -> your turn."""
    since = live.get("since")
    lead_id = session.lead_id
    lead_act = acts.get(lead_id) or Activity()
    if proc == "waiting":
        why = live.get("waiting_for") or "your answer"
        # The prompt belongs to the agent with the newest pending tool call (a sub-agent's
        # Bash shows in the lead's UI, but it is the sub-agent that waits).
        best = None
        for aid, act in acts.items():
            for c in act.open_calls.values():
                if c.kind == ev.TOOL_CALL and (best is None or (c.t or 0) >= (best[1].t or 0)):
                    best = (aid, c)
        if best is not None:
            aid, c = best
            label = "question" if c.name in QUESTION_TOOLS else why
            per[aid] = State(NEEDS_YOU, since or c.t, f"{label}: {_call_words(c)}")
        else:
            per[lead_id] = State(NEEDS_YOU, since, why)
        return
    lead = per.get(lead_id)
    if proc == "busy":
        if lead is not None and lead.state in (WAITING, NEEDS_YOU):
            return
        if not lead_act.turn_open and (lead_act.background or live.get("background_agents")):
            per[lead_id] = State(YOUR_TURN, lead_act.last_t)
            return
        if lead is None or lead.state != WORKING:
            per[lead_id] = State(WORKING, since, doing="thinking")
        return
    if proc in ("idle", "shell"):
        for aid, st in per.items():
            if st.state in (WORKING, NEEDS_YOU, WAITING) and aid == lead_id:
                per[aid] = State(YOUR_TURN, since or st.since)
        return


def _background(session: Session, acts: dict[str, Activity], live: dict) -> list[str]:
    out = []
    for act in acts.values():
        for cid, e in act.background.items():
            sub = next((a for a in session.agents.values() if a.tool_use_id == cid), None)
            if sub is not None:
                if sub.finished:
                    continue
                out.append(f"sub-agent: {sub.description or sub.name}")
            else:
                out.append(f"{e.name or 'task'} in background" + (f": {e.detail}" if e.detail else ""))
    if live.get("status") == "shell" and not any("background" in b for b in out):
        out.append("a background shell")
    return out


def state_dict(st: State) -> dict:
    from huddle.model.session import iso

    d = {"state": st.state, "state_since": iso(st.since), "waiting_for": st.waiting_for}
    if st.doing:
        d["doing"] = st.doing
    return d


class Debouncer:
    """Hold a new state until it has lasted `hold` seconds: the pid file and the
    transcript can disagree for ~0.3 s (either may lead), and a flicker helps no one."""

    def __init__(self, hold: float = 0.5):
        self.hold = hold
        self.shown: dict[str, State] = {}
        self.pending: dict[str, tuple[State, float]] = {}

    def __call__(self, key: str, st: State, now: float | None = None) -> State:
        now = time.monotonic() if now is None else now
        shown = self.shown.get(key)
        if shown is None or shown.state == st.state:
            self.shown[key] = st
            self.pending.pop(key, None)
            return st
        p = self.pending.get(key)
        if p is None or p[0].state != st.state:
            self.pending[key] = (st, now)
            return shown
        if now - p[1] >= self.hold:
            self.shown[key] = st
            del self.pending[key]
            return st
        return shown
