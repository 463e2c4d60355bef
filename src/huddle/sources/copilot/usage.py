"""Tokens of a Copilot CLI session, counted once per model response.

Since `session.usage_record` (after 1.0.81; 1.0.102 writes it just before each
`assistant.message`): one record per response, keyed by the provider's response id
(`apiCallId`). `inputTokens` includes the cached part (OpenAI's convention, for every
provider): the input counted is net of cache reads and writes.

Before it (1.0.x up to about 1.0.81): each `assistant.message` carries its response's
`outputTokens` (a response split in chunks repeats its `apiCallId`: the largest counts),
and input and cache counts exist only in `session.shutdown`, written at every exit and
cumulative over the whole session (a resume carries on the counts). Summing shutdowns
would count every earlier run again: each one gives the difference from the one before,
per agent and model, less the output its responses already gave. What ran since the last
exit has its output only, and the session says so (`usage_note`).

`session.shutdown` is never counted in a file that has usage records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from huddle.model import events as ev
from huddle.model.events import Usage

from . import records as rec

if TYPE_CHECKING:
    from .parser import EventsParser

Tally = tuple[int, int, int, int]  # input (with the cached part), output, cache read, cache write
BEFORE_RECORDS = "before Copilot CLI wrote one usage record per response, input tokens were written only at each exit"


def net(inp: int, out: int, cr: int, cw: int) -> Usage:
    """Usage from Copilot's counts: input net of what the cache read and wrote, never below
    0 (a count that is no count is kept for the session to reject)."""
    if min(inp, out, cr, cw) >= 0:
        inp = max(0, inp - cr - cw)
    return Usage(input=inp, output=out, cache_read=cr, cache_write=cw)


class Responses:
    """The usage events of one session by response id, and the shutdowns' running totals."""

    def __init__(self) -> None:
        self.by_id: dict[str, ev.Event] = {}
        self.records = False  # this file has `session.usage_record`s: the only count
        self.last: dict[tuple[str, str], Tally] = {}  # (agent key, model) -> the last shutdown's totals
        self.given: dict[tuple[str, str], int] = {}  # output the responses gave since that shutdown
        self.open_output = False  # responses counted (output only) since the last shutdown

    def record(self, p: EventsParser, agent: str, t: float | None, off: int, n: int, u: rec.UsageData) -> None:
        self.records = True
        acc = u.accounting
        rid = u.apiCallId or (acc.usageId if acc is not None else None) or f"{p.path}:{off}"
        usage = net(rec.count(u.inputTokens), rec.count(u.outputTokens), *_cache(u))
        origin = ""
        src = acc.sourceSessionId if acc is not None else None
        if agent == p.lead and src and src != p.lead:
            origin = src  # a lead's record naming another session: a copy (the ledger decides)
        self._one(p, agent, t, off, n, rid, u.model or p.model, usage, origin)

    def message(self, p: EventsParser, agent: str, t: float | None, off: int, n: int, m: rec.AssistantMessage) -> None:
        """An older CLI's per-response output (ignored once usage records are seen)."""
        if m.outputTokens is None or self.records:
            return
        rid = m.apiCallId or m.requestId or m.messageId or f"{p.path}:{off}"
        out = rec.count(m.outputTokens)
        model = m.model or p.model
        e = self.by_id.get(rid)
        if e is None and out >= 0:
            key = (_metric_key(p, agent), model)
            self.given[key] = self.given.get(key, 0) + out
            self.open_output = True
        self._one(p, agent, t, off, n, rid, model, Usage(output=out), "")

    def _one(
        self,
        p: EventsParser,
        agent: str,
        t: float | None,
        off: int,
        n: int,
        rid: str,
        model: str,
        usage: Usage,
        origin: str,
    ) -> None:
        e = self.by_id.get(rid)
        if e is not None:
            p.session.raise_usage(e, usage)  # the same response again: its largest counts
            return
        self.by_id[rid] = p.emit(ev.USAGE, agent, t, off, n, id=rid, name=model, usage=usage, origin=origin)

    def shutdown(self, p: EventsParser, t: float | None, off: int, n: int, s: rec.Shutdown) -> None:
        """A shutdown's totals, as the difference from the one before (older CLIs only)."""
        if self.records:
            return
        totals: dict[tuple[str, str], Tally] = {}
        for key, am in (s.agentMetrics or {}).items():
            for model, mm in ((am.modelMetrics if am is not None else None) or {}).items():
                totals[(key, model)] = _tally(mm)
        if not totals:
            for model, mm in (s.modelMetrics or {}).items():
                totals[("main", model)] = _tally(mm)
        for (key, model), now in totals.items():
            was = self.last.get((key, model), (0, 0, 0, 0))
            d = [max(0, a - b) for a, b in zip(now, was, strict=True)]
            d[1] = max(0, d[1] - self.given.get((key, model), 0))
            if any(d):
                agent = p.lead if key == "main" else p.agents.sub_of_aid.get(key, p.lead)
                rid = f"{p.lead}:shutdown:{off}:{key}:{model}"
                p.emit(ev.USAGE, agent, t, off, n, id=rid, name=model, usage=net(*d))
        self.last.update(totals)
        self.given.clear()
        self.open_output = False

    def __getstate__(self) -> dict[str, Any]:
        # The cache keeps a session's usage events apart (Session.__getstate__): keep only
        # their place here, and find them again on load (`relink`).
        d = self.__dict__.copy()
        d["by_id"] = {rid: e.seq for rid, e in self.by_id.items()}
        return d

    def relink(self, events: list[ev.Event]) -> None:
        """After a load from the cache: the usage events again, by their place."""
        by_seq = {e.seq: e for e in events if e.kind == ev.USAGE}
        places: dict[str, Any] = self.by_id  # seq numbers, as the cache kept them
        self.by_id = {rid: by_seq[seq] for rid, seq in places.items() if seq in by_seq}

    def note(self) -> str:
        """What the files cannot tell about this session's usage ("" when they tell all)."""
        if self.records or not self.open_output:
            return ""
        return f"{BEFORE_RECORDS}: the responses since the last exit count their output only"


def _cache(u: rec.UsageData) -> tuple[int, int]:
    return rec.count(u.cacheReadTokens), rec.count(u.cacheWriteTokens)


def _tally(mm: rec.ModelMetric | None) -> Tally:
    u = mm.usage if mm is not None else None
    if u is None:
        return (0, 0, 0, 0)
    vals = (
        rec.count(u.inputTokens),
        rec.count(u.outputTokens),
        rec.count(u.cacheReadTokens),
        rec.count(u.cacheWriteTokens),
    )
    return tuple(max(0, v) for v in vals)  # type: ignore[return-value]


def _metric_key(p: EventsParser, agent: str) -> str:
    """How a shutdown's `agentMetrics` names an agent: `main` for the lead, else its agentId."""
    if agent == p.lead:
        return "main"
    return p.agents.aid_of.get(agent, agent)
