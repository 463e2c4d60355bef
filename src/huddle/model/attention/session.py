"""A session's state and each agent's, decided from its transcripts and its source's
live signals: who is working, who needs you, who waits on whom, since when and what
for, and when time alone moves it next.

The transcripts give each agent's Activity (open calls, open turn, open waits,
background work) and the table's transcript rules a state; the source's `Live`
(huddle.model.signals: the process alive or gone, its own status word, a pending
prompt, each agent's thread and calls as seen) is heard over it; time settles what
nothing vouches for. The result is said in words (`since`, `waiting_for`, `doing`).
"""

from __future__ import annotations

import time

from huddle.model import events as ev
from huddle.model.activity import Activity, activity_at
from huddle.model.doing import doing
from huddle.model.session import Agent, Session
from huddle.model.signals import NOTHING, Live
from huddle.model.tools import QUESTION_TOOLS

from . import (
    ENDED,
    IDLE,
    IDLE_AFTER,
    NEEDS_YOU,
    WAITING,
    WORKING,
    YOUR_TURN,
    Signals,
    State,
    after_quiet,
    agent_signal_state,
    call_timers,
    next_change,
    settled,
    shows_lead,
    transcript_rule,
    urgency,
    with_process_status,
)


def _call_words(e: ev.Event) -> str:
    """What a pending call is, for "waiting for": the tool and its input summary."""
    return f"{e.name}: {e.detail}" if e.detail else e.name


def signals(agent: Agent, act: Activity, is_lead: bool, ordered: bool = False) -> Signals:
    """What the attention rules read of one agent's transcript (`ordered`: its lead's
    order to it is open)."""
    asks = bool(act.waits) or any(c.kind == ev.TOOL_CALL and c.name in QUESTION_TOOLS for c in act.open_calls.values())
    return Signals(
        asks=asks,
        orders=any(c.kind == ev.ORDER for c in act.open_calls.values()),
        exited=act.exited,
        done=agent.report is not None or bool(agent.finished),
        turn_open=act.turn_open,
        is_lead=is_lead,
        ordered=ordered,
    )


def waiting_on(act: Activity) -> tuple[str, str] | None:
    """For an agent that needs you: the call it waits on and for what, "answer" (a
    question) or "approval" (a permission prompt: the newest open tool call), so a page
    can say so on that call instead of "running"."""
    calls = [c for c in act.open_calls.values() if c.kind == ev.TOOL_CALL]
    if act.waits:
        w = list(act.waits.values())[-1]
        kind = "answer" if w.name in QUESTION_TOOLS else "approval"
        if w.id and w.id in act.open_calls:
            return (w.id, kind)
        # a wait with an id of its own (Vibe's approval record): the open call of its tool
        calls = [c for c in calls if c.name == w.name] if w.name else []
        if not calls:
            return (w.id or "", kind)
        return (max(calls, key=lambda c: (c.t or 0, c.seq)).id or "", kind)
    if not calls:
        return None
    c = max(calls, key=lambda c: (c.t or 0, c.seq))
    return (c.id or "", "answer" if c.name in QUESTION_TOOLS else "approval")


def open_orders(acts: dict[str, Activity]) -> dict[str, ev.Event]:
    """Sub-agent id -> its lead's order to it, while the lead still waits on its report."""
    return {c.target: c for act in acts.values() for c in act.open_calls.values() if c.kind == ev.ORDER and c.target}


def agent_state(agent: Agent, act: Activity, is_lead: bool, session: Session, order: ev.Event | None = None) -> State:
    """The transcript rules (`huddle.model.attention.TRANSCRIPT`), said in words.
    `order`: the lead's open order to this sub-agent, if any."""
    state, rule = transcript_rule(signals(agent, act, is_lead, ordered=order is not None and not is_lead))
    open_calls = list(act.open_calls.values())
    if rule == "ordered" and order is not None and not act.turn_open and not open_calls:
        return State(WORKING, order.t if act.last_t is None else act.last_t, doing="starting on its task")
    if state == NEEDS_YOU:
        if act.waits:
            w = list(act.waits.values())[-1]
            return State(NEEDS_YOU, w.t, w.detail or w.text or w.name or "your answer")
        c = next(c for c in reversed(open_calls) if c.kind == ev.TOOL_CALL and c.name in QUESTION_TOOLS)
        return State(NEEDS_YOU, c.t, c.detail or "a question")
    if state == WAITING:
        o = [c for c in open_calls if c.kind == ev.ORDER][-1]
        sub = session.agents.get(o.target)
        who = (sub.description or sub.name) if sub is not None else (o.detail or o.name)
        return State(WAITING, o.t, who)
    if state == WORKING:
        words = doing(open_calls[-1].name, open_calls[-1].detail) if open_calls else "thinking"
        return State(WORKING, open_calls[-1].t if open_calls else act.turn_t, doing=words)
    return State(state, act.last_t)


def classify(
    session: Session,
    live: Live | None = None,
    at: float | None = None,
    now: float | None = None,
    idle_after: float = IDLE_AFTER,
) -> tuple[State, dict[str, State]]:
    """The session's state and each agent's, as of `at` (default: now), from its
    transcripts and its source's live signals (`huddle.model.signals.Live`)."""
    live = live or NOTHING
    now = at if at is not None else (now if now is not None else time.time())
    acts = activity_at(session, at) if at is not None else {a.id: a.activity for a in session.agents.values()}
    per: dict[str, State] = {}
    orders = open_orders(acts)
    for a in session.agents.values():
        act = acts.get(a.id) or Activity()
        per[a.id] = agent_state(a, act, a.id == session.lead_id, session, orders.get(a.id))
    lead_act = acts.get(session.lead_id) or Activity()

    proc = live.status or ("waiting" if live.pending is not None else "")  # busy / waiting / shell / idle
    alive = live.alive
    if alive is not False and proc:
        _apply_process_status(session, per, acts, proc, live)
    _own_signals(session, per, acts, live, now)
    if alive is False:
        for aid, st in per.items():
            if st.state != ENDED:
                per[aid] = State(ENDED, live.ended_at or st.since)

    background = _background(session, acts, live)
    lead = per.get(session.lead_id) or State(YOUR_TURN)
    candidates = [st for aid, st in per.items() if not session.agents[aid].quiet]
    top = min(candidates, key=lambda s: urgency(s.state)) if candidates else lead
    if shows_lead(top.state, lead.state):
        top = lead
    st = State(top.state, top.since, top.waiting_for, top.doing, top.guess)
    st.background = background

    # Time alone moves a state (idle after a while; unknown liveness and no news for long).
    last = session.updated_at if at is None else (lead_act.last_t or session.updated_at)
    if live.last_write is not None and at is None:
        last = max(last or 0.0, live.last_write)
    quiet_for = now - (st.since or last or now)
    untouched_for = now - last if last is not None else None
    known = alive is not None or bool(proc)
    by_time = after_quiet(st.state, quiet_for, untouched_for, bool(background), known, idle_after)
    if by_time != st.state:
        st = State(by_time, st.since if st.state == YOUR_TURN else last)
        _quiet_agents(per, acts, live, last)
    timers = call_timers(live.agents.values(), now)
    st.next_change = next_change(st.state, st.since, last, bool(background), known, idle_after, timers)
    return st, per


def _quiet_agents(per: dict[str, State], acts: dict[str, Activity], live: Live, last: float | None) -> None:
    """The session went idle with time alone: nothing vouches for any of its agents'
    work either (a year-old lead is not "working: thinking" still, nor its turn open),
    unless an agent's own signals said so."""
    for aid, st in per.items():
        if settled(st.state) or aid in live.agents:
            continue
        act = acts.get(aid)
        per[aid] = State(IDLE, st.since if st.state == YOUR_TURN else ((act.last_t if act else None) or last))


def _own_signals(session: Session, per: dict[str, State], acts: dict[str, Activity], live: Live, now: float) -> None:
    """Each agent's own signals (its thread, its calls as seen) over its transcript's state."""
    for aid, own in live.agents.items():
        if aid in per:
            act = acts.get(aid) or Activity()
            st = agent_signal_state(own, act.last_t, aid == session.lead_id, now)
            if st is not None:
                st.since = st.since or per[aid].since
                if st.state == per[aid].state and not st.doing:  # (a call seen at work: as its transcript says it)
                    st.doing = per[aid].doing
                per[aid] = st


def _apply_process_status(
    session: Session, per: dict[str, State], acts: dict[str, Activity], proc: str, live: Live
) -> None:
    """A process-reported status over the transcripts (`attention.PROCESS`): waiting is
    the agent with the newest pending call needing you (which tool, which agent); busy
    and idle/shell move the lead."""
    since = live.status_since
    lead_id = session.lead_id
    lead_act = acts.get(lead_id) or Activity()
    if proc == "waiting":
        why = (live.pending.words if live.pending is not None else "") or "your answer"
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
    if lead is None and proc != "busy":
        return
    # busy while the turn is over and work runs in the background: that work, not a new turn
    background = not lead_act.turn_open and bool(lead_act.background or live.background)
    state = with_process_status(lead.state if lead is not None else None, proc, background)
    if lead is not None and state == lead.state and not (proc == "busy" and background):
        return
    if state == WORKING:
        per[lead_id] = State(WORKING, since, doing="thinking")
    elif state == YOUR_TURN:
        turn_over = lead_act.last_t if proc == "busy" else (since or (lead.since if lead is not None else None))
        per[lead_id] = State(YOUR_TURN, turn_over)


def _background(session: Session, acts: dict[str, Activity], live: Live) -> list[str]:
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
    if live.status == "shell" and not any("background" in b for b in out):
        out.append("a background shell")
    return out
