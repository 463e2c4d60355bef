"""Lines of a rollout read by their head as Codex writes it
(`{"timestamp":"2025-10-20T12:34:56.789Z",` then `"ordinal":N,` from 0.160, then
`"type":"event_msg","payload":{"type":"token_count"`), for a full read and a usage-only one:

- token counts and turn contexts, the commonest lines (a third of a full read's, nearly all
  a usage-only read keeps), are decoded into structs of the few fields read: the general
  Payload builds some forty fields and looks up each unread key among them;
- the model's words and reasoning as UI events (`agent_message`, `agent_reasoning`: an
  eighth of the lines, told again by the response items) are passed over undecoded, as a
  full read passed them over once decoded (records.SKIP_EVENTS).

A line in another hand (spaces, keys in another order, a time of another length) takes
the general path, and so does one the narrow decode cannot judge alone (an odd time, a
decoding error, a copy of a parent's history): read whole, it says the same. A base of
ThreadParser (thread.py)."""

from __future__ import annotations

from datetime import datetime

import msgspec

from huddle.model.events import Event, Usage
from huddle.model.session import Session

from . import records as rec
from .usage import Ledger

TYPE_AT = len(b'{"timestamp":"2025-10-20T12:34:56.789Z"')  # just past the time, where the type is told
COUNT = b',"type":"event_msg","payload":{"type":"token_count"'
CONTEXT = b',"type":"turn_context","payload":{'
PASSED_EVENTS = ("agent_message", "agent_reasoning")  # (of records.SKIP_EVENTS)
PASSED = tuple(b',"type":"event_msg","payload":{"type":"%s"' % t.encode() for t in PASSED_EVENTS)
ORDINAL = b',"ordinal":'
HEADS = (COUNT, CONTEXT, *PASSED)
KNOWN = (*HEADS, ORDINAL)  # (one look for all, where the line is none of them)
_AFTER_ORDINAL = TYPE_AT + len(ORDINAL)


class CountPayload(msgspec.Struct, gc=False):
    type: str = ""
    info: rec.TokenInfo | None = None


class CountLine(msgspec.Struct, gc=False):
    type: str = ""
    timestamp: datetime | None = None
    payload: CountPayload | None = None


class ContextPayload(msgspec.Struct, gc=False):
    type: str = ""
    model: str | None = None


class ContextLine(msgspec.Struct, gc=False):
    type: str = ""
    timestamp: datetime | None = None
    payload: ContextPayload | None = None


_decode_count = msgspec.json.Decoder(CountLine).decode
_decode_context = msgspec.json.Decoder(ContextLine).decode


class HeadLines:
    session: Session
    info: rec.ThreadInfo
    path: str
    out: list[Event]
    ledger: Ledger
    model: str
    lines: int
    copying: bool
    _ts: datetime | str | None

    def _usage(self, off: int, n: int, mid: str, u: Usage) -> None: ...

    def _response_done(self, off: int, n: int) -> None: ...

    def head_read(self, off: int, line: bytes) -> bool:
        """Read a line whose head is one of KNOWN at TYPE_AT (feed_kept looks); False
        when it is left to the general path, which reads it whole."""
        at = TYPE_AT
        if line.startswith(ORDINAL, at):  # 0.160+: `"ordinal":N,` comes first
            at = line.find(b",", _AFTER_ORDINAL, _AFTER_ORDINAL + 21)
            if at < 0 or not line[_AFTER_ORDINAL:at].isdigit() or not line.startswith(HEADS, at):
                return False
        if line.startswith(PASSED, at):
            return True
        if self.copying or self.info.history_start is not None:
            return False  # a parent's history may be copied here (fork.py)
        # (a decoding error is said by the general path, as it says it; no payload is passed
        # over there and an odd or missing time noted there; a key given twice: the last counts)
        if line.startswith(COUNT, at):
            try:
                count = _decode_count(line)
            except msgspec.DecodeError:
                return False
            p = count.payload
            ts = count.timestamp
            if p is None or count.type != "event_msg" or p.type != "token_count":
                return False
            if not (isinstance(ts, datetime) and 1970 < ts.year < 2199):
                return False
            self.lines += 1
            self._ts = ts
            if p.info is not None:
                self.token_count(p.info, off, len(line))
            return True
        try:
            context = _decode_context(line)
        except msgspec.DecodeError:
            return False
        q = context.payload
        ts = context.timestamp
        if q is None or context.type != "turn_context" or not (isinstance(ts, datetime) and 1970 < ts.year < 2199):
            return False
        self.lines += 1
        self._ts = ts
        self.model = q.model or self.model
        return True

    def token_count(self, info: rec.TokenInfo, off: int, n: int) -> None:
        """A thread's cumulative totals: a usage for what they add, and a response ended."""
        mark = len(self.out)
        try:
            u = self.ledger.totals(info.total_token_usage, info.last_token_usage)
            if u is not None:
                self._usage(off, n, "", u)
            if self.ledger.moved:
                self._response_done(off, n)
        except Exception as exc:  # (as feed_kept says it: a line costs its own events only)
            del self.out[mark:]
            self.session.problem(self.path, off, f"unexpected event_msg: {type(exc).__name__}: {exc}")
