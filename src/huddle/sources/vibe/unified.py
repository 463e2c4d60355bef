"""A unified Vibe store's history and journal -> events for one agent.

The public projection is a list of history entries that the journal appends to,
replaces in place and removes (`projection_delta`). Events come from entries, and
each entry id remembers what it already gave: an effect seen running gives its
`tool_call` once and, when it settles (maybe generations later), its `tool_result`
once. So replaying a snapshot, or the same journal line twice, or a new generation
over what was already read, adds nothing twice.

Usage is counted by `usage.py`, callbacks and the agent's current state by
`attention.py`, sub-agent orders and reports by `family.py`.
"""

from __future__ import annotations

from typing import Any

from huddle.model import events as ev
from huddle.model import times
from huddle.model.doing import input_summary
from huddle.model.events import Event, cap, one_line
from huddle.model.session import Session
from huddle.model.signals import AgentLive
from huddle.model.tools import ANSWER_TOOLS, MESSAGE_TOOLS, SHELL_TOOLS, SPAWN_TOOLS, STOP_TOOLS, WAIT_TOOLS

from . import records as vr
from . import tools as vt
from .attention import TURN_OVER, Callbacks, live_signals, ms
from .attention import status_of as _status
from .clock import Clock
from .family import Family
from .store import Loaded
from .usage import UsageLedger

SEQUENCE_JUMP = 1 << 32  # records are numbered one by one: a jump past this is a bad record, not a gap
_SETTLED = frozenset({"completed", "failed", "skipped", "cancelled"})


class StoreParser:
    """One store (the lead's or a sub-agent's) for one agent of the session."""

    def __init__(self, session: Session, family: Family, agent: str, is_child: bool):
        self.session = session
        self.family = family
        self.agent = agent
        self.is_child = is_child
        self.out: list[Event] = []
        self.where = ("", -1, 0)  # file, offset, length of what is being read
        self.seen: dict[str, int] = {}  # entry id -> 1 (its start/text given) | 2 (its result given)
        self.running: dict[str, tuple[str, float | None, str]] = {}  # effect id -> tool, since, about
        self.effect_times: dict[str, tuple[float | None, float | None]] = {}  # effect id -> start, settled
        self.turns_done: set[str] = set()
        self.latest: vr.Turn | None = None
        self.last_say: dict[str, str] = {}  # turn id -> its last assistant text
        self.child_prompts = 0
        self.applied = 0  # highest journal sequence applied to the history
        self.ledger = UsageLedger()
        self.clock = Clock()
        self.callbacks = Callbacks(self.emit, self.clock, self.effect_times)
        self.model = ""
        self.title = ""

    # -- helpers -------------------------------------------------------------------

    def emit(self, kind: str, t: float | None, **kw: Any) -> Event:
        f, off, n = self.where
        e = Event(kind=kind, agent=self.agent, t=t, file=f, offset=off, length=n, **kw)
        self.out.append(e)
        return e

    def flush(self) -> list[Event]:
        """This read's events; usage read before the model was known gets its name now."""
        self.clock.flush()
        out, self.out = self.out, []
        for e in out:
            if e.kind == ev.USAGE and not e.name:
                e.name = self.model or self.family.model  # sub-agent stores name no model: the lead's
        return out

    def live_signals(self) -> AgentLive | None:
        """What this agent's store shows now (for `live()`)."""
        return live_signals(self.callbacks.waits, self.running, self.latest)

    def _t(self, v: object) -> float | None:
        """A time in milliseconds from the current record; one that is no time is noted."""
        t = ms(v)
        if t is None and isinstance(v, (int, float)) and v > 0:
            self.session.note(self.where[0], self.where[1], times.odd(v))
        return t

    def problem(self, path: str, off: int, what: str) -> None:
        self.session.problem(path, off, what)

    # -- a generation's snapshot ---------------------------------------------------

    def snapshot(self, loaded: Loaded) -> None:
        self._runtime(loaded)
        snap = loaded.snapshot
        latest_id = snap.latestTurn.id if snap.latestTurn is not None else ""
        prev_turn = ""
        for entry, path, off, n in loaded.entries:
            self.where = (path, off, n)
            turn = entry.turnId or ""
            if prev_turn and turn and turn != prev_turn and prev_turn != latest_id:
                self._close_turn(prev_turn, self.clock.last_t)
            self._entry(entry)
            prev_turn = turn or prev_turn
        self.where = (loaded.segment, -1, 0)
        if snap.session is not None:
            self._session_info(snap.session)
        if snap.latestTurn is not None:
            self._turn(snap.latestTurn)
        self.callbacks.runtime(loaded.runtime.callbacks or [])
        if loaded.sequence > self.ledger.covered:
            tu = snap.session.tokenUsage if snap.session is not None else None
            self._catch_up(tu, self._t(snap.session.createdAt) if snap.session is not None else None, loaded.sequence)
        self.applied = max(self.applied, loaded.sequence)
        # Entries are in history order and results settle later; older segments gave the
        # usage of earlier calls: put all of this read in time order.
        key, last = [], 0.0
        for e in self.out:
            last = e.t if e.t is not None else last
            key.append((last, e.kind != ev.RESOLVED))  # an answer comes before what it let run
        order = sorted(range(len(self.out)), key=key.__getitem__)
        self.out = [self.out[i] for i in order]

    def _runtime(self, loaded: Loaded) -> None:
        rt, s = loaded.runtime, self.session
        md = rt.session_metadata
        if md is not None:
            if md.cwd and not s.cwd:
                s.cwd = md.cwd
            model = _catalogue_model(md.completion_catalogue) or md.active_model or ""
            self.model = model or self.model
        cfg = loaded.meta.config if loaded.meta is not None else None
        if isinstance(cfg, dict) and isinstance(cfg.get("model_name"), str):
            self.model = cfg["model_name"]
        if not self.is_child and self.model:
            self.family.model = self.model
        prov = rt.import_provenance
        if not self.is_child and prov is not None and prov.source is not None and prov.source.session_id:
            s.continues = prov.source.session_id
        subs = rt.subagents.children if rt.subagents is not None else None
        for name, rec in (subs or {}).items():
            self.family.learn(self.agent, rec.agent_name or name, rec.child_session_id, None, rec.agent_type or "")
            if rec.state is not None and rec.state.type == "tombstone":
                self.family.stopped(self.agent, rec.agent_name or name)

    # -- the journal ---------------------------------------------------------------

    def record(self, path: str, off: int, n: int, rec: vr.Record, usage_only: bool = False) -> None:
        self.where = (path, off, n)
        t = rec.type
        if not usage_only and not self._in_order(rec.sequence, path, off):
            return
        mark = len(self.out)
        if not usage_only:
            self.applied = max(self.applied, rec.sequence)
        try:
            if t == "action_result":
                self._action_result(rec, path, off)
            elif t == "core_input":
                self._core_input(rec, path, off)
            elif not usage_only:
                self._projected(rec, t)
        except Exception as exc:  # msgspec errors, odd values: one bad record costs that record
            del self.out[mark:]
            self.problem(path, off, f"{t} record of unexpected shape ({type(exc).__name__}: {exc})")

    def _in_order(self, seq: int, path: str, off: int) -> bool:
        """Whether a record comes after those applied (one far past them, or before them,
        is skipped: said, but for a repeat of the last)."""
        if seq > self.applied + SEQUENCE_JUMP:  # 2^63: every later one "out of order"
            self.problem(path, off, f"journal sequence {seq} is far past {self.applied}: skipped")
            return False
        if 0 <= seq <= self.applied:
            if seq < self.applied:
                self.problem(path, off, f"journal sequence {seq} after {self.applied}: out of order, skipped")
            return False
        return True

    def _projected(self, rec: vr.Record, t: str) -> None:
        """A record of what the store's projection and callbacks became."""
        if t == "projection_delta":
            for op in vr.decode_delta(rec.payload).delta:
                self._op(op)
        elif t == "callback_registered":
            self.callbacks.registered(vr.decode_callback(rec.payload), estimated=False)
        elif t == "callback_resolved":
            r = vr.decode_callback_resolved(rec.payload)
            self.callbacks.resolved(r.callback_id, r.result, self.clock.last_t, estimated=False)

    def _op(self, op: vr.Op) -> None:
        if op.op in ("append_entry", "replace_entry") and op.entry is not None:
            self._entry(op.entry)
        elif op.op == "set_history_entries":
            for entry in op.entries or ():
                self._entry(entry)
        elif op.op == "remove_entry" and op.id:
            self.running.pop(op.id, None)  # an open effect of a finished turn: the turn end closes it
        elif op.op == "set_envelope" and op.state is not None:
            if op.state.session is not None:
                self._session_info(op.state.session)
            if op.state.latestTurn is not None:
                self._turn(op.state.latestTurn)

    def _core_input(self, rec: vr.Record, path: str, off: int) -> None:
        ci = vr.decode_core_input(rec.payload)
        d = ci.input.determinism if ci.input is not None else None
        if d is not None:
            self.clock.saw(self._t(d.time_unix_ms))

    def _action_result(self, rec: vr.Record, path: str, off: int) -> None:
        ar = vr.decode_action_result(rec.payload)
        if ar.result is None or ar.result.type != "completion_succeeded":
            return
        usage = self.ledger.call(ar.action_id, vr.decode_completion(ar.result.result).usage, rec.sequence)
        if usage is not None:
            self.clock.untimed.append(self.emit(ev.USAGE, None, id=ar.action_id, usage=usage))

    def base(self, seq: int, usage: vr.TokenUsage | None, t: float | None) -> None:
        """The cumulative totals of an older snapshot: usage before its sequence."""
        self._catch_up(usage, t, seq)

    def _catch_up(self, tu: vr.TokenUsage | None, t: float | None, seq: int) -> None:
        gap = self.ledger.catch_up(tu, seq)
        if gap is not None:
            self.emit(
                ev.USAGE,
                t,
                id=f"totals-{seq}",
                usage=gap,
                detail=f"model calls up to journal sequence {seq}, from the session's cumulative totals "
                "(their per-call records went with an older generation)",
            )

    # -- history entries -----------------------------------------------------------

    def _entry(self, e: vr.Entry) -> None:
        done = self.seen.get(e.id, 0)
        typ = e.type
        if typ == "effect":
            done = self._effect(e, done)
        elif not done & 1:
            t = self._t(e.createdAt)
            self.clock.saw(t)
            if typ == "message":
                self._message(e, t)
            elif typ == "reasoning":
                text = e.text or ""
                if text:
                    body, cut = cap(text)
                    self.emit(ev.THINK, t, text=body, truncated=cut, copied=e.id.startswith("imported-"))
            elif typ == "checkpoint":
                if e.kind == "compaction":
                    self.emit(ev.COMPACTION, t, text=e.message or "Conversation compacted")
                else:
                    self.emit(ev.CONTEXT, t, name=e.kind or "checkpoint", text=e.message or "")
            elif typ == "notice":
                self.emit(ev.CONTEXT, t, name="notice", text=e.message or "")
            done |= 1
        self.seen[e.id] = done

    def _message(self, e: vr.Entry, t: float | None) -> None:
        text = vt.content_text(e.content)
        body, cut = cap(text)
        imported = e.id.startswith("imported-")
        if e.role == "user":
            if e.source == "turn_start" and not imported:
                if not self.is_child:
                    self.emit(ev.PROMPT, t, text=body, truncated=cut)
                    return
                self.child_prompts += 1
                if self.child_prompts == 1:
                    self.family.first_order(self.agent, body)  # the lead's order carries it
                else:
                    self.emit(ev.ORDER, t, text=body, truncated=cut, target=self.agent)
                return
            self.emit(
                ev.CONTEXT,
                t,
                name="imported" if imported else (e.source or "harness"),
                text=body,
                truncated=cut,
                copied=imported,
            )
        elif e.role == "assistant" and text:
            out = e.outcome
            discarded = out is not None and out.type == "discarded"
            why = f"discarded: {out.cause}" if out is not None and discarded else ""
            self.emit(ev.SAY, t, text=body, truncated=cut, id=e.id, copied=imported, detail=why)
            if e.turnId and not discarded:
                self.last_say[e.turnId] = text

    def _effect(self, e: vr.Entry, done: int) -> int:
        d = e.detail or vr.EffectDetail()
        tool = d.toolName or e.title or "tool"
        st = e.state or vr.EffectState()
        status = _status(st.status)
        t0, t1 = self._t(e.createdAt), self._t(e.updatedAt)
        inp = vt.decode(d.input, 200_000) if not done & 2 else None
        name = (
            (inp or {}).get("agentName")
            or vt.agent_path_name(str((inp or {}).get("agent_path") or ""))
            or d.agentName
            or ""
        )
        if not done & 1:
            self.clock.saw(t0)
            if tool in SPAWN_TOOLS or tool in MESSAGE_TOOLS:
                spawn = tool in SPAWN_TOOLS
                text = str((inp or {}).get("task" if spawn else "message") or "")
                body, cut = cap(text)
                o = self.emit(ev.ORDER, t0, id=e.id, text=body, truncated=cut, name=str((inp or {}).get("agent") or ""))
                self.family.order(o, self.agent, d.agentName or name, d.childSessionId, o.name, spawn)
            else:
                self.emit(ev.TOOL_CALL, t0, id=e.id, name=tool, detail=input_summary(inp))
            about = (name or "sub-agents") if tool in WAIT_TOOLS else (name or input_summary(inp))
            self.running[e.id] = (tool, t0, about)
            done |= 1
        self.effect_times[e.id] = (t0, t1 if status in _SETTLED else None)
        if tool in SPAWN_TOOLS and d.childSessionId:
            self.family.learn(self.agent, d.agentName or name, d.childSessionId, e.id)
        if status in _SETTLED and not done & 2:
            self.clock.saw(t1)
            self._settled(e, tool, st, status, t1, inp, name, d)
            self.running.pop(e.id, None)
            done |= 2
        return done

    def _settled(
        self,
        e: vr.Entry,
        tool: str,
        st: vr.EffectState,
        status: str,
        t: float | None,
        inp: Any,
        name: str,
        d: vr.EffectDetail,
    ) -> None:
        ok = status == "completed"
        out = vt.decode(st.output) if tool in SHELL_TOOLS or tool in ANSWER_TOOLS or tool in SPAWN_TOOLS else None
        if isinstance(out, dict) and out.get("type") == "failure":
            ok = False
        detail = ""
        rc = vt.exit_code(out) if tool in SHELL_TOOLS else None
        if rc is not None:
            detail = f"exit {rc}"
            ok = ok and rc == 0
        if tool in SPAWN_TOOLS and isinstance(out, dict):
            meta = (out.get("_meta") or {}).get("mistral.vibe.subagent") or {}
            if isinstance(meta, dict) and meta.get("childSessionId"):
                self.family.learn(
                    self.agent, d.agentName or meta.get("agentName") or name, meta["childSessionId"], e.id
                )
        if (tool in SPAWN_TOOLS or tool in MESSAGE_TOOLS) and ok:
            detail = "background"  # the sub-agent works on; its report closes the order
        if not ok and not detail:
            detail = (st.error.code if st.error is not None and st.error.code else "") or status
        size = len(st.output) if len(st.output) > 4 else len(st.outputText or "")
        self.emit(ev.TOOL_RESULT, t, id=e.id, name=tool, ok=ok, size=size, detail=detail)
        if tool in ANSWER_TOOLS and ok and isinstance(out, dict):
            value = (out.get("structured_content") or {}).get("value")
            report = self.family.answer(self.agent, name, value, t, self.where[0]) if isinstance(value, str) else None
            if report is not None:
                report.offset, report.length = self.where[1], self.where[2]
                self.out.append(report)
        if tool in STOP_TOOLS:
            self.family.stopped(self.agent, name)

    # -- turns, titles, callbacks --------------------------------------------------

    def _session_info(self, info: vr.SessionInfo) -> None:
        title = info.title or ""
        if title and title != self.title and not self.is_child:
            self.title = title
            self.emit(
                ev.TITLE, self._t(info.updatedAt), text=title, detail="" if info.titleSource == "manual" else "ai"
            )

    def _turn(self, turn: vr.Turn) -> None:
        prev = self.latest
        if prev is not None and prev.id != turn.id:
            self._close_turn(prev.id, self._t(turn.startedAt))
        self.latest = turn
        status = _status(turn.status)
        if status not in TURN_OVER or turn.id in self.turns_done:
            return
        t = self._t(turn.completedAt)
        self.clock.saw(t)
        if status == "failed":
            err = turn.error or vr.Problem()
            self.emit(ev.ERROR, t, name=err.code or "turn_failed", text=one_line(err.message or "turn failed", 300))
        if status == "interrupted":
            self.turns_done.add(turn.id)
            self.emit(ev.INTERRUPT, t, text=turn.reason or "interrupted")
            self.callbacks.waits.clear()
            return
        self._close_turn(turn.id, t)

    def _close_turn(self, turn_id: str, t: float | None) -> None:
        if turn_id in self.turns_done:
            return
        self.turns_done.add(turn_id)
        self.emit(ev.TURN_END, t, id=turn_id)
        self.callbacks.waits.clear()
        if self.is_child:
            self.family.turn_done(self.agent, turn_id, self.last_say.get(turn_id, ""), t, self.where[0])


def _catalogue_model(raw: str | None) -> str:
    val = vt.decode(raw, 100_000) if raw else None
    return str(val.get("model") or "") if isinstance(val, dict) else ""
