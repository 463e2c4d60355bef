"""The plain data of a trace (spans, their ids) and how huddle's usage maps to GenAI token
attributes. No OpenTelemetry import; spans.py builds these from a session.

Ids are derived, never random: the trace id from the session key, a span id from the
trace and the span's identity inside it, so sending a session twice gives the same ids.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import Any

from huddle.model.events import Usage

from . import semconv as sc

Attrs = dict[str, Any]
# text -> text fit to leave the machine (the exports' redaction); None: no content at all
Redact = Callable[[str], str]

INTERNAL = "internal"
CLIENT = "client"


class SpanPlan:
    """One span to send. Times are unix nanoseconds."""

    __slots__ = ("agent", "attrs", "closed", "end", "error", "key", "kind", "name", "parent_id", "span_id", "start")

    def __init__(self, key: str, span_id: int, name: str, kind: str, agent: str, start: int, attrs: Attrs) -> None:
        self.key = key
        self.span_id = span_id
        self.parent_id: int | None = None
        self.name = name
        self.kind = kind
        self.agent = agent
        self.start = start
        self.end = start
        self.attrs = attrs
        self.error: str | None = None  # error.type; the span's status is ERROR when set
        self.closed = True  # its end is known (a call with its result, a finished agent)

    def __repr__(self) -> str:
        return f"SpanPlan({self.name!r}, {self.key!r})"


class SessionSpans:
    """A session's trace: its id and spans, root first."""

    __slots__ = ("root", "session_key", "spans", "trace_id")

    def __init__(self, session_key: str, trace_id: int, spans: list[SpanPlan]) -> None:
        self.session_key = session_key
        self.trace_id = trace_id
        self.spans = spans
        self.root = spans[0] if spans else None


def trace_id_of(session_key: str) -> int:
    d = hashlib.blake2b(b"huddle-trace\0" + session_key.encode(), digest_size=16).digest()
    return int.from_bytes(d, "big") or 1


def span_id_of(trace_id: int, key: str) -> int:
    d = hashlib.blake2b(key.encode(), digest_size=8, key=trace_id.to_bytes(16, "big")).digest()
    return int.from_bytes(d, "big") or 1


def usage_attributes(u: Usage) -> Attrs:
    """The GenAI token attributes of one response, from huddle's net-of-cache usage."""
    d: Attrs = {
        sc.INPUT_TOKENS: u.input + u.cache_read + u.cache_write,
        sc.OUTPUT_TOKENS: u.output,
        sc.CACHE_READ: u.cache_read,
        sc.CACHE_CREATION: u.cache_write,
    }
    if u.cache_write_1h:
        d[sc.CACHE_CREATION_1H] = u.cache_write_1h
    return d


def huddle_usage(attrs_list: Iterable[Attrs]) -> Usage:
    """The inverse of usage_attributes, summed: what `huddle usage` says of these spans."""
    total = Usage()
    for a in attrs_list:
        if sc.INPUT_TOKENS not in a:
            continue
        cr, cw = a.get(sc.CACHE_READ, 0), a.get(sc.CACHE_CREATION, 0)
        total.add(
            Usage(a[sc.INPUT_TOKENS] - cr - cw, a.get(sc.OUTPUT_TOKENS, 0), cr, cw, a.get(sc.CACHE_CREATION_1H, 0))
        )
    return total


def to_ns(t: float) -> int:
    return round(t * 1e9)
