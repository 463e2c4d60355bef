"""What a unified store says its agent is waiting on, and for whom.

Callbacks are the store asking its human: `callback_registered` (an approval of a
tool, or questions) and, once answered, `callback_resolved`. An open one is a
`waiting` event until then. A snapshot lists the callbacks of the runtime state
(answered ones keep their result), which covers segments already deleted. From the
same state, `live_state()` says what the agent is doing right now.
"""

from __future__ import annotations

from typing import Any, Protocol

import msgspec

from huddle.model import events as ev
from huddle.model import signals, times
from huddle.model.doing import input_summary
from huddle.model.events import Event, one_line
from huddle.model.signals import TURN_OPEN, AgentLive, Call
from huddle.model.tools import WAIT_TOOLS

from . import records as vr
from . import tools as vt
from .clock import Clock

TURN_OVER = frozenset({"completed", "failed", "interrupted"})
QUESTION_TOOL = "ui.ask_user_question"


def ms(v: object) -> float | None:
    """Vibe's milliseconds (0: not set), checked by model/times."""
    return times.millis(v) if isinstance(v, (int, float)) and v > 0 else None


def status_of(v: object) -> str:
    if isinstance(v, dict):
        return str(v.get("type") or "")
    return v if isinstance(v, str) else ""


class Emit(Protocol):
    """The store parser's event writer: an event of `kind` at time `t`, told by the record being read."""

    def __call__(self, kind: str, t: float | None, **kw: Any) -> Event: ...


class Callbacks:
    """One store's callbacks: open ones are `waiting` events until they resolve."""

    def __init__(self, emit: Emit, clock: Clock, effect_times: dict[str, tuple[float | None, float | None]]) -> None:
        self.emit = emit
        self.clock = clock
        self.effect_times = effect_times  # effect id -> start, settled (the store parser's)
        self.waits: dict[str, Event] = {}  # open callbacks (the human is asked)
        self.waits_done: set[str] = set()

    def runtime(self, callbacks: list[vr.Callback]) -> None:
        """The callbacks a snapshot's runtime state lists (answered ones keep their result)."""
        listed = set()
        for cb in callbacks:
            listed.add(cb.callback_id)
            self.registered(cb, estimated=False)
            resolved = cb.state == "resolved" or len(cb.result) > 4
            if resolved and cb.callback_id in self.waits:
                self.resolved(cb.callback_id, cb.result, self._settle_time(cb.routing), estimated=True)
        for cid in [c for c in self.waits if c not in listed]:
            self.resolved(cid, None, self.clock.last_t, estimated=True)

    def _settle_time(self, r: vr.Routing | None) -> float | None:
        """When a callback answered in an earlier generation was resolved: the journal
        said, but that segment is gone; the effect it held settled just after."""
        if r is None:
            return self.clock.last_t
        span = self.effect_times.get(r.relatedEntryId or "")
        at = ms(r.createdAt)
        if span is None and at is not None:
            span = next((sp for sp in self.effect_times.values() if sp[0] and sp[1] and sp[0] <= at <= sp[1]), None)
        return span[1] if span is not None and span[1] is not None else (at or self.clock.last_t)

    def registered(self, cb: vr.Callback, estimated: bool) -> None:
        cid = cb.callback_id
        if not cid or cid in self.waits or cid in self.waits_done:
            return
        r = cb.routing or vr.Routing()
        detail = vt.decode(r.detail, 200_000) or {}
        if cb.kind == "user_input":
            tool, about = QUESTION_TOOL, vt.question_text(detail) or (r.title or "a question")
        else:
            eff = detail.get("effect") if isinstance(detail, dict) else None
            eff = eff if isinstance(eff, dict) else {}
            tool = str(eff.get("toolName") or r.title or cb.kind)
            about = input_summary(eff.get("input")) or (r.title or "approval")
        t = ms(r.createdAt)
        self.clock.saw(t)
        self.waits[cid] = self.emit(
            ev.WAITING, t, id=cid, name=tool, detail=about, estimated=estimated, text=r.title or ""
        )

    def resolved(self, cid: str, result: msgspec.Raw | None, t: float | None, estimated: bool) -> None:
        w = self.waits.pop(cid, None)
        if w is None:
            return
        self.waits_done.add(cid)
        res = vt.decode(result, 100_000) if result is not None else None
        out = res.get("output") if isinstance(res, dict) else None
        how = ""
        if isinstance(out, dict):
            dec = out.get("decision")
            how = dec.get("type", "") if isinstance(dec, dict) else ""
            answers = (out.get("result") or {}).get("answers") if isinstance(out.get("result"), dict) else None
            if isinstance(answers, list) and answers and isinstance(answers[0], dict):
                how = one_line(str(answers[0].get("answer") or ""), 120)
        self.emit(ev.RESOLVED, t, id=cid, name=w.name, detail=w.detail, text=how, estimated=estimated)


# -- liveness ------------------------------------------------------------------


def live_signals(
    waits: dict[str, Event],
    running: dict[str, tuple[str, float | None, str]],
    latest: vr.Turn | None,
) -> AgentLive | None:
    """What an agent's store shows now (for `live()`): its newest open callback (a
    prompt), its running effects (tool, since, about), its latest turn's status."""
    if waits:
        w = list(waits.values())[-1]
        return AgentLive(calls=(Call(id=w.id or "", tool=w.name, since=w.t, runs=False, words=w.detail or w.name),))
    if running:
        calls = tuple(
            Call(id=eid, tool=tool, since=since, waits_on=about)
            if tool in WAIT_TOOLS
            else Call(id=eid, tool=tool, since=since, runs=True)
            for eid, (tool, since, about) in running.items()
        )
        return AgentLive(calls=calls)
    if latest is None:
        return None
    status = status_of(latest.status)
    if status == "in_progress":
        return AgentLive(turn=TURN_OPEN, turn_since=ms(latest.startedAt))
    if status in TURN_OVER:
        return AgentLive(turn=signals.TURN_OVER, turn_since=ms(latest.completedAt))
    return None
