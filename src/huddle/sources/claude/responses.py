"""A response's counts, as FileParser reads them (records.Response in a usage-only read,
records.Record in a full one): one owner for what a response adds to the usage."""

from __future__ import annotations

import msgspec

from huddle.model import events as ev
from huddle.model.events import Event
from huddle.model.session import Session
from huddle.model.times import parse_time
from huddle.model.tools import SPAWN_TOOLS

from .emitter import Emitter
from .records import Progress, Response, ResponseBlock, ResponseMessage, decode_progress, decode_response, usage_of
from .state import SessionState


class ResponseCounts(Emitter):
    """FileParser's part that counts responses (its other attributes are the parser's)."""

    session: Session
    shared: SessionState
    lead: str
    is_sub: bool
    file_is_sub: bool
    own_session: str
    inline_sidechains: bool

    def _tool_use(self, b: ResponseBlock, off: int, n: int, copied: bool) -> None:
        raise NotImplementedError

    def _response_of(self, line: bytes) -> Response | None:
        """A usage-only read's response, decoded for what it uses (records.Response); None
        for any other record, a sidechain's (its agent may be known by its order's text)
        or a line that does not decode (the full decode says why)."""
        try:
            r = decode_response(line)
        except msgspec.DecodeError:
            return None
        m = r.message
        if r.type != "assistant" and (r.type or m is None or m.role != "assistant"):
            return None
        if r.isSidechain and self.inline_sidechains:
            return None
        return r

    def _response(self, r: Response, off: int, n: int) -> None:
        """A response read for its counts alone (a usage-only read): of its blocks, only the
        Agent calls (they name the agents they start)."""
        if self.agent != self.lead:
            self.agent = self.lead
            self.is_sub = self.file_is_sub
        m = r.message
        if m is None:
            return
        copied = bool(r.requestSessionId) and r.requestSessionId != (r.sessionId or self.session.id)
        self._count(r, m, off, n, copied)
        if isinstance(m.content, list):
            for b in m.content:
                if b.type == "tool_use" and b.name in SPAWN_TOOLS:
                    self._tool_use(b, off, n, copied)

    def _progress(self, line: bytes, off: int, n: int) -> None:
        """A sub-agent's response as its caller's file mirrors it (records.Progress):
        counted once per message id like any other, as the sub-agent's (its own file, when
        there, repeats the same ids: the session's `counted` keeps one), and the sub-agent
        known to the tree even when its own file is gone."""
        p = decode_progress(line)
        d = p.data
        if d is None or d.type != "agent_progress" or not d.agentId or d.message is None:
            return
        rec, m = d.message, d.message.message
        if rec.type != "assistant" or m is None or m.usage is None:
            return
        sub, call, st = d.agentId, p.parentToolUseID or "", self.shared
        if call:
            st.agent_by_call.setdefault(call, sub)
        if sub not in self.session.agents:  # (a file of its own, read later, names itself as the file)
            caller = st.agent_calls.get(call) or self.lead
            self.session.agent(sub, parent=caller, name=sub, file=self.path)
        agent, t = self.agent, self.last_t
        self.agent = sub
        if rec.timestamp:
            self.last_t = parse_time(rec.timestamp) or t
        try:
            copied = bool(p.requestSessionId) and p.requestSessionId != (p.sessionId or self.session.id)
            self._count(p, m, off, n, copied)
        finally:
            self.agent, self.last_t = agent, t

    def _count(self, r: Response | Progress, m: ResponseMessage, off: int, n: int, copied: bool) -> bool:
        """Count a response's usage once per message id, with its largest counts; whether it had any."""
        mid = m.id or ""
        if m.usage is None or not mid or m.model == "<synthetic>":
            return False
        counted = self.shared.counted
        if mid not in counted:
            origin = r.sessionId if r.sessionId and r.sessionId != self.own_session and self.own_session else ""
            if copied:
                counted[mid] = None
            else:  # (emit's event, without a **kw)
                e = Event(
                    kind=ev.USAGE,
                    agent=self.agent,
                    t=self.last_t,
                    file=self.path,
                    offset=off,
                    length=n,
                    id=mid,
                    name=m.model or "",
                    usage=usage_of(m.usage),
                    origin=origin,
                )
                self.out.append(e)
                counted[mid] = e
        else:
            first = counted[mid]
            if first is not None:  # a later record of the response: its counts may be the final ones
                u, o = m.usage, first.usage  # (read as they are: most repeat the counts they follow)
                if o is not None and (
                    (u.output_tokens or 0) > o.output
                    or (u.input_tokens or 0) > o.input
                    or (u.cache_read_input_tokens or 0) > o.cache_read
                    or (u.cache_creation_input_tokens or 0) > o.cache_write
                    or (
                        u.cache_creation is not None
                        and (u.cache_creation.ephemeral_1h_input_tokens or 0) > o.cache_write_1h
                    )
                ):  # (a 1-hour count past its own is capped by usage_of: raise_usage keeps the largest)
                    self.session.raise_usage(first, usage_of(u))
        return True
