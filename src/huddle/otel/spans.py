"""A session as OpenTelemetry GenAI spans: plain data, no OpenTelemetry import.

One trace per session. The lead is the root `invoke_agent` span; each model response
(a `usage` event) is a `chat` span under its agent; each tool call is an
`execute_tool` span from the call to its result; a sub-agent is an `invoke_agent`
span under the call that started it. Times are the events' own (`huddle.time.estimated`
marks spans whose times the source spread between known times or huddle inferred).

Ids are derived, never random: the trace id from the session (source and id), a span
id from the trace and the span's identity inside it (agent, response or call id and
which occurrence). Sending a session twice, from this machine or from a copy of its
files, gives the same ids, so a backend keeps one of each.

Tokens (the trap): `gen_ai.usage.input_tokens` includes cached input; huddle's `input`
excludes it. A chat span carries input + cache read + cache write as input_tokens,
with the cache parts beside it, so that over a trace
  input_tokens - cache_read - cache_creation == `huddle usage` input,
and the other fields match as they are. A response counted in another session (a
copy huddle recognised across sessions) keeps its span, without tokens.
"""

from __future__ import annotations

from collections.abc import Callable

from huddle.model import events as ev
from huddle.model.events import Event
from huddle.model.identity import Occurrences
from huddle.model.session import Agent, Session

from . import semconv as sc
from .plan import (
    CLIENT,
    INTERNAL,
    Attrs,
    Redact,
    SessionSpans,
    SpanPlan,
    span_id_of,
    to_ns,
    trace_id_of,
    usage_attributes,
)

# Events after which an agent's next model request starts (its input arrived).
_INPUT_KINDS = frozenset({ev.PROMPT, ev.TOOL_RESULT, ev.REPORT, ev.INTERRUPT, ev.COMPACTION, ev.RESOLVED})
_OUTPUT_KINDS = frozenset({ev.SAY, ev.THINK, ev.TOOL_CALL, ev.ORDER})


class _Builder:
    def __init__(
        self,
        s: Session,
        counted_in: Callable[[Session, Event], str | None],
        redact: Redact | None,
        ended: bool,
    ) -> None:
        self.s = s
        self.counted_in = counted_in
        self.redact = redact
        self.ended = ended
        self.trace_id = trace_id_of(s.key)
        self.spans: list[SpanPlan] = []
        self.agent_spans: dict[str, SpanPlan] = {}
        self.calls: dict[str, SpanPlan] = {}  # call id -> its open execute_tool span
        self.call_spans: dict[str, SpanPlan] = {}  # call id -> its span, open or closed
        self.names = Occurrences()
        self.last_t: dict[str, float] = {}  # agent -> its latest known time
        self.input_t: dict[str, tuple[float, bool]] = {}  # agent -> when its next request began
        self.last_chat: dict[str, SpanPlan] = {}  # agent -> its latest chat span (content)
        self.pending_input: dict[str, list[dict]] = {}  # agent -> input messages for its next response
        self.pending_output: dict[str, list[dict]] = {}  # agent -> outputs before any response
        self.default_model = ""

    def span(self, key: str, name: str, kind: str, agent: str, start: int, attrs: Attrs) -> SpanPlan:
        p = SpanPlan(key, span_id_of(self.trace_id, key), name, kind, agent, start, attrs)
        self.spans.append(p)
        return p

    def when(self, e: Event) -> tuple[float | None, bool]:
        """The event's time, else its agent's latest known one (estimated)."""
        if e.t is not None:
            self.last_t[e.agent] = e.t
            return e.t, e.estimated
        t = self.last_t.get(e.agent)
        if t is None:
            t = self.s.started_at
        return t, True

    def text(self, text: str) -> str:
        assert self.redact is not None
        return self.redact(text)

    # -- the timeline ----------------------------------------------------------------

    def walk(self) -> None:
        for e in self.s.events:
            if e.copied:
                continue  # history copied from another session: that session's trace holds it
            k = e.kind
            t, est = self.when(e)
            if t is None:
                continue
            if k == ev.USAGE:
                self.chat(e, t, est)
            elif k == ev.TOOL_CALL or (k == ev.ORDER and e.id and e.target != e.agent):
                self.call(e, t, est)
            elif k in (ev.TOOL_RESULT, ev.REPORT) and e.id:
                self.result(e, t, est)
            elif k in (ev.TURN_END, ev.INTERRUPT):
                self.stop_calls(e.agent, t, interrupted=k == ev.INTERRUPT)
            self.input_at(e, t, est)
            if self.redact is not None:
                self.content(e)

    def input_at(self, e: Event, t: float, est: bool) -> None:
        """When an agent's next request was sent from: its last input (a prompt, a result;
        a sub-agent's first request, its order)."""
        k = e.kind
        if k in _INPUT_KINDS or (k == ev.ORDER and e.target == e.agent):
            self.input_t[e.agent] = (t, est)
        elif k == ev.ORDER and e.target:
            self.input_t.setdefault(e.target, (t, est))

    def chat(self, e: Event, t: float, est: bool) -> None:
        model = e.name or self.default_model
        start, start_est = self.input_t.get(e.agent, (t, True))
        start = min(start, t)
        attrs: Attrs = {
            sc.OPERATION: sc.CHAT,
            sc.PROVIDER: sc.provider_of(model, self.s.source),
            sc.CONVERSATION: self.s.id,
        }
        if model:
            attrs[sc.REQUEST_MODEL] = model
            attrs[sc.RESPONSE_MODEL] = model
        if e.id:
            attrs[sc.RESPONSE_ID] = e.id
        elsewhere = self.counted_in(self.s, e)
        if e.usage is not None:
            if elsewhere is None:
                attrs.update(usage_attributes(e.usage))
            else:
                attrs["huddle.usage.counted_in"] = elsewhere
        if est or start_est:
            attrs["huddle.time.estimated"] = True
        p = self.span(
            self.names.key("chat", e.agent, e.id),
            f"chat {model}" if model else "chat",
            CLIENT,
            e.agent,
            to_ns(start),
            attrs,
        )
        p.end = to_ns(t)
        # the next request of this agent starts when this response was recorded at the earliest
        self.input_t[e.agent] = (t, est)
        self.last_chat[e.agent] = p
        if self.redact is not None:
            inputs = self.pending_input.pop(e.agent, [])
            if inputs:
                attrs[sc.INPUT_MESSAGES] = inputs
            outputs = self.pending_output.pop(e.agent, [])
            if outputs:
                attrs[sc.OUTPUT_MESSAGES] = [{"role": "assistant", "parts": outputs}]

    def call(self, e: Event, t: float, est: bool) -> None:
        spawn = e.kind == ev.ORDER
        tool = "agent" if spawn else (e.name or "tool")
        attrs: Attrs = {sc.OPERATION: sc.EXECUTE_TOOL, sc.TOOL_NAME: tool, sc.TOOL_TYPE: "function"}
        if tool.startswith(("mcp__", "mcp:")):
            attrs[sc.TOOL_TYPE] = "extension"
        if e.id:
            attrs[sc.TOOL_CALL_ID] = e.id
        if spawn:
            attrs["huddle.agent.type"] = e.name
            if e.target:
                attrs["huddle.agent.id"] = e.target
        if est:
            attrs["huddle.time.estimated"] = True
        if self.redact is not None and (e.detail or (spawn and e.text)):
            args = {"description": e.detail, "prompt": e.text} if spawn else {"summary": e.detail}
            attrs[sc.TOOL_ARGUMENTS] = {k: self.text(v) for k, v in args.items() if v}
        p = self.span(self.names.key("tool", e.agent, e.id), f"execute_tool {tool}", INTERNAL, e.agent, to_ns(t), attrs)
        if e.id:
            p.closed = False
            self.calls[e.id] = p
            self.call_spans.setdefault(e.id, p)

    def result(self, e: Event, t: float, est: bool) -> None:
        p = self.calls.pop(e.id, None)
        if p is None:
            return  # a second word on a call already closed (a notification after the result)
        if e.kind == ev.TOOL_RESULT and e.name and p.attrs.get("huddle.agent.type") is not None:
            p.attrs[sc.TOOL_NAME] = e.name  # the spawning tool's own name, where the result says it
            p.name = f"execute_tool {e.name}"
        p.end = max(p.start, to_ns(t))
        p.closed = True
        if est:
            p.attrs["huddle.time.estimated"] = True
        if e.ok is False:
            p.error = "tool_error"
            p.attrs[sc.ERROR_TYPE] = "tool_error"
        if e.detail == "background":
            p.attrs["huddle.tool.background"] = True
        if e.size:
            p.attrs["huddle.tool.result_bytes"] = e.size
        if self.redact is not None and e.kind == ev.REPORT and e.text:
            p.attrs[sc.TOOL_RESULT] = self.text(e.text)

    def stop_calls(self, agent: str, t: float, interrupted: bool) -> None:
        """A turn's end closes the calls its agent left open (Activity does the same)."""
        for cid, p in list(self.calls.items()):
            if p.agent != agent:
                continue
            del self.calls[cid]
            p.end = max(p.start, to_ns(t))
            p.attrs["huddle.span.unfinished"] = True
            if interrupted:
                p.error = "interrupted"
                p.attrs[sc.ERROR_TYPE] = "interrupted"

    def content(self, e: Event) -> None:
        """Prompt and output text (redacted), on the chat span that read or wrote it."""
        k = e.kind
        own_prompt = k == ev.PROMPT or (k == ev.ORDER and e.target in ("", e.agent))
        if own_prompt or (k == ev.ORDER and e.text):
            to = e.agent if own_prompt else e.target  # a lead's order is its sub-agent's prompt
            if e.text:
                msg = {"role": "user", "parts": [{"type": "text", "content": self.text(e.text)}]}
                self.pending_input.setdefault(to, []).append(msg)
            if own_prompt:
                return
        if k in (ev.TOOL_RESULT, ev.REPORT) and e.id:
            part: dict = {"type": "tool_call_response", "id": e.id}
            if k == ev.REPORT and e.text:
                part["response"] = self.text(e.text)
            self.pending_input.setdefault(e.agent, []).append({"role": "tool", "parts": [part]})
            return
        if k in _OUTPUT_KINDS:
            self.output(e)

    def output(self, e: Event) -> None:
        """A text, a thought or a call, on the response that wrote it."""
        k = e.kind
        part: dict
        if k == ev.SAY:
            part = {"type": "text", "content": self.text(e.text)}
        elif k == ev.THINK:
            part = {"type": "reasoning", "content": self.text(e.text)}
        else:
            part = {"type": "tool_call", "id": e.id, "name": e.name if k == ev.TOOL_CALL else "agent"}
            if e.detail:
                part["arguments"] = {"summary": self.text(e.detail)}
        # Claude writes a response's usage before its blocks, Codex after: a block goes to
        # the agent's latest response since its last input, else to its next response.
        last = self.last_chat.get(e.agent)
        started = self.input_t.get(e.agent)
        if last is not None and started is not None and last.end >= to_ns(started[0]):
            msgs = last.attrs.setdefault(sc.OUTPUT_MESSAGES, [{"role": "assistant", "parts": []}])
            msgs[0]["parts"].append(part)
        else:
            self.pending_output.setdefault(e.agent, []).append(part)

    # -- agents ----------------------------------------------------------------------

    def agents(self) -> None:
        s = self.s
        lead = s.lead_id or s.id
        order = s.tree_order() or [Agent(lead)]
        first: list[SpanPlan] = []
        for a in order:
            p = self.agent_span(a, a.id == lead)
            if p is not None:
                self.agent_spans[a.id] = p
                first.append(p)
        root = self.agent_spans.get(lead)
        for a in order:
            sub = self.agent_spans.get(a.id)
            if sub is None or sub is root:
                continue
            spawn = self.call_spans.get(a.tool_use_id or "")
            parent = spawn or self.agent_spans.get(a.parent or lead) or root
            sub.parent_id = parent.span_id if parent is not None and parent is not sub else None
        self.spans[:0] = first

    def agent_span(self, a: Agent, is_lead: bool) -> SpanPlan | None:
        """An agent's invoke_agent span, over its first and last times (None: it has none)."""
        s = self.s
        start = a.started_at if a.started_at is not None else (s.started_at if is_lead else None)
        end = a.updated_at if a.updated_at is not None else (s.updated_at if is_lead else None)
        if start is None or end is None:
            return None
        name = sc.product_of(s.source) if is_lead else (a.kind or a.name or "sub-agent")
        attrs = self.agent_attrs(a, is_lead, name)
        p = SpanPlan(
            f"agent:{a.id}",
            span_id_of(self.trace_id, f"agent:{a.id}"),
            f"invoke_agent {name}",
            INTERNAL,
            a.id,
            to_ns(start),
            attrs,
        )
        p.end = max(p.start, to_ns(end))
        p.closed = self.ended if is_lead else (self.ended or a.report is not None or a.finished is True)
        if not is_lead and self.redact is not None:
            if a.order:
                attrs[sc.INPUT_MESSAGES] = [
                    {"role": "user", "parts": [{"type": "text", "content": self.text(a.order)}]}
                ]
            if a.report:
                attrs[sc.OUTPUT_MESSAGES] = [
                    {"role": "assistant", "parts": [{"type": "text", "content": self.text(a.report)}]}
                ]
        return p

    def agent_attrs(self, a: Agent, is_lead: bool, name: str) -> Attrs:
        s = self.s
        model = a.model or self.default_model
        attrs: Attrs = {
            sc.OPERATION: sc.INVOKE_AGENT,
            sc.PROVIDER: sc.provider_of(model, s.source),
            sc.AGENT_NAME: name,
            sc.AGENT_ID: a.id,
            sc.CONVERSATION: s.id,
            "huddle.source": s.source,
        }
        if model:
            attrs[sc.REQUEST_MODEL] = model
        if is_lead:
            attrs.update(self.session_attrs())
        elif self.redact is not None and a.description:
            attrs[sc.AGENT_DESCRIPTION] = self.text(a.description)
        if s.time_estimated:
            attrs["huddle.time.estimated"] = True
        return attrs

    def session_attrs(self) -> Attrs:
        """What the lead's span says of its session: its key, project, the session it
        continues, its title (redacted, when text is included)."""
        s = self.s
        attrs: Attrs = {"huddle.session.key": s.key}
        if s.cwd:
            attrs["huddle.session.project"] = s.cwd.rstrip("/").rsplit("/", 1)[-1]
        if s.continues:
            attrs["huddle.session.continues"] = s.continues
        title = (s.custom_title or s.ai_title) if self.redact is None else s.title
        if title:
            attrs["huddle.session.title"] = title if self.redact is None else self.text(title)
        return attrs

    def finish(self) -> list[SpanPlan]:
        lead = self.s.lead_id or self.s.id
        root = self.agent_spans.get(lead)
        for p in self.calls.values():  # calls still open when the files end
            a = self.agent_spans.get(p.agent)
            p.end = max(p.start, a.end if a is not None else p.start)
            p.closed = self.ended
            p.attrs["huddle.span.unfinished"] = True
        for p in self.spans:
            if p.parent_id is None and p is not root and p.key.split(":", 1)[0] != "agent":
                parent = self.agent_spans.get(p.agent) or root
                p.parent_id = parent.span_id if parent is not None else None
        if root is not None:
            # the root covers every span of its trace (sub-agents can outlive a turn's files)
            root.start = min(p.start for p in self.spans)
            root.end = max(p.end for p in self.spans)
        return self.spans


def session_spans(
    s: Session,
    counted_in: Callable[[Session, Event], str | None] | None = None,
    redact: Redact | None = None,
    ended: bool = True,
    since: float | None = None,
) -> SessionSpans:
    """The spans of one session (its whole timeline: a session from the cache has only
    its usage events, so read it whole first). `counted_in(session, usage event)` names
    the session a response is counted in when not this one (`Owners.counted_in`).
    `redact`: include prompt and output text, passed through it; None leaves text out.
    `ended`: whether the session is at rest, so that its agents' spans are final.
    `since` (unix seconds): only spans that end then or later (a response when it was
    recorded, as `huddle usage --since` counts it), with their agents."""
    b = _Builder(s, counted_in or (lambda _s, _e: None), redact, ended)
    lead = s.agents.get(s.lead_id)
    b.default_model = lead.model if lead is not None else ""
    b.walk()
    b.agents()
    spans = b.finish()
    if since is not None:
        cut = to_ns(since)
        keep = [p for p in spans if p.end >= cut]  # a response counts when recorded, as in `huddle usage`
        spans = keep if any(not p.key.startswith("agent:") for p in keep) else []
    return SessionSpans(s.key, b.trace_id, spans)


class Owners:
    """Which session counts each response, exactly as `huddle usage` decides it
    (usage.report.counted_usage): the first session, oldest first, to hold its id."""

    def __init__(self, sessions: list[Session]) -> None:
        from huddle.usage.report import counted_usage

        self.owner: dict[tuple[str, str], str] = {}
        for s, e in counted_usage(sessions):
            if e.id:
                self.owner.setdefault((s.source, e.id), s.key)

    def counted_in(self, s: Session, e: Event) -> str | None:
        if not e.id:
            return None
        k = self.owner.get((s.source, e.id))
        return k if k is not None and k != s.key else None
