"""Sending sessions as OTLP/HTTP traces, through the official OpenTelemetry SDK exporter.

The spans are made after the fact (times from the files, ids from spans.py), so they
are handed to the SDK's OTLPSpanExporter as finished `ReadableSpan`s rather than
started on a tracer: the exporter encodes them (protobuf) and sends them with its own
retries, headers (OTEL_EXPORTER_OTLP_HEADERS) and endpoint rules
(OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces, or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from huddle import __version__
from huddle.core.coldread import FirstRead
from huddle.errors import HostingError, HuddleError

from . import semconv as sc
from .cursor import Cursor
from .plan import CLIENT, Redact, SessionSpans, SpanPlan
from .spans import Owners, session_spans

BATCH = 512  # spans per request, as the SDK's batch processor sends them
AT_REST = frozenset({"your_turn", "idle", "ended"})  # states in which a session's agents' spans are final
EXTRA_MISSING = "huddle otel needs the OpenTelemetry extra: pip install 'huddle[otel]'"


class ExportFailed(HostingError):
    """The OTLP endpoint did not take the spans; the message says why."""


def shown(url: str) -> str:
    """An endpoint as it may be printed: without any user or password in it."""
    try:
        p = urlsplit(url)
    except ValueError:
        return "(an endpoint that is not a URL)"
    host = p.hostname or ""
    if p.port:
        host = f"{host}:{p.port}"
    return urlunsplit((p.scheme, host, p.path, "", ""))


def traces_endpoint(url: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """The OTLP/HTTP traces URL: `--endpoint` (a base URL, /v1/traces added unless it
    is there), else OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else
    OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces, as the OTLP exporter specification says."""
    env = os.environ if env is None else env
    if url:
        u = url.rstrip("/")
        return u if u.endswith("/v1/traces") else u + "/v1/traces"
    if env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if base:
        return base.rstrip("/") + "/v1/traces"
    return None


def check_sdk() -> None:
    """One clear line when the extra is not installed."""
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError:
        raise HuddleError(EXTRA_MISSING) from None


class Sender:
    """Finished spans to one endpoint, in batches; a batch that fails raises ExportFailed
    (after the exporter's own retries), and what was sent before it stays sent."""

    def __init__(self, endpoint: str, machine: str, timeout: float | None = None, batch: int = BATCH) -> None:
        check_sdk()
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope

        # The exporter's own log lines may repeat the server's answer at length; huddle
        # says what failed in one line of its own.
        logging.getLogger("opentelemetry.exporter").setLevel(logging.CRITICAL)
        self.endpoint = endpoint
        # timeout None: OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT, else the exporter's 10 s
        self.exporter = OTLPSpanExporter(endpoint=endpoint, timeout=timeout)
        self.resource = Resource.create(
            {"service.name": "huddle", "service.version": __version__, "host.name": machine}
        )
        self.scope = InstrumentationScope("huddle", __version__, sc.SCHEMA_URL)
        self.batch = batch
        self.pending: list[tuple[str, int, SpanPlan]] = []
        self.sent = 0
        self.on_sent: Callable[[list[tuple[str, int, SpanPlan]]], None] | None = None

    def add(self, trace: SessionSpans, spans: Iterable[SpanPlan]) -> None:
        for p in spans:
            self.pending.append((trace.session_key, trace.trace_id, p))
            if len(self.pending) >= self.batch:
                self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        from opentelemetry.sdk.trace.export import SpanExportResult

        batch, self.pending = self.pending, []
        result = self.exporter.export([self._readable(tid, p) for _, tid, p in batch])
        if result != SpanExportResult.SUCCESS:
            self.pending = batch + self.pending  # kept: a later flush may send them
            raise ExportFailed(
                f"could not send {len(batch)} spans to {shown(self.endpoint)} (is a collector listening?)"
            )
        self.sent += len(batch)
        if self.on_sent is not None:
            self.on_sent(batch)

    def close(self) -> None:
        self.exporter.shutdown()

    def _readable(self, trace_id: int, p: SpanPlan) -> Any:
        from opentelemetry.sdk.trace import ReadableSpan
        from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

        flags = TraceFlags(TraceFlags.SAMPLED)
        ctx = SpanContext(trace_id, p.span_id, is_remote=False, trace_flags=flags)
        parent = SpanContext(trace_id, p.parent_id, is_remote=False, trace_flags=flags) if p.parent_id else None
        # Messages and arguments go as JSON strings: the conventions allow it, and every
        # backend shows a string, where structured values are read unevenly.
        attrs = {k: json.dumps(v, ensure_ascii=False) if isinstance(v, (list, dict)) else v for k, v in p.attrs.items()}
        return ReadableSpan(
            name=p.name,
            context=ctx,
            parent=parent,
            resource=self.resource,
            attributes=attrs,
            kind=SpanKind.CLIENT if p.kind == CLIENT else SpanKind.INTERNAL,
            status=Status(StatusCode.ERROR, p.error) if p.error else Status(StatusCode.UNSET),
            start_time=p.start,
            end_time=p.end,
            instrumentation_scope=self.scope,
        )


class Exporter:
    """Sessions of a core (`Huddle`) to a Sender: once (`run`) or as they grow (`follow`)."""

    def __init__(
        self,
        h: Any,
        sender: Sender,
        redact: Redact | None = None,
        since: float | None = None,
        cursor: Cursor | None = None,
    ) -> None:
        self.h = h
        self.sender = sender
        self.redact = redact
        self.since = since
        self.cursor = cursor
        self.sessions = 0
        self.skipped = 0  # spans already sent with the same end (--follow, the cursor)
        self.stop = threading.Event()
        if cursor is not None:
            sender.on_sent = self._record

    def _record(self, batch: list[tuple[str, int, SpanPlan]]) -> None:
        assert self.cursor is not None
        by: dict[str, list[SpanPlan]] = {}
        for key, _, p in batch:
            by.setdefault(key, []).append(p)
        for key, plans in by.items():
            self.cursor.record(key, plans)
        self.cursor.commit()

    def select(self, ids: list[str]) -> list[str]:
        """Session keys for the ids asked (all when none); an unknown id is an error."""
        if not ids:
            return [s.key for s in self.h.sessions()]
        keys = []
        for i in ids:
            hd = self.h.handle(i)
            if hd is None:
                raise HuddleError(f"no session {i!r} (see huddle status)")
            keys.append(hd.key)
        return keys

    def states(self, keys: list[str]) -> dict[str, str]:
        from huddle.views.board import session_entry

        out = {}
        for key in keys:
            s = self.h.session(key)
            if s is not None:
                out[key] = session_entry(self.h, s).state
        return out

    def send(self, keys: list[str], only_new: bool, kept: bool = False) -> None:
        """Build and send these sessions' spans. `only_new`: what the cursor has not seen
        with the same end, and of agent spans only final ones. `kept`: read sessions
        whole and keep them so (follow), else one at a time (a history in little memory)."""
        owners = Owners(self.h.sessions())
        states = self.states(keys)
        whole = (self.h.complete(k) for k in keys) if kept else self.h.read_whole(keys)
        for s in whole:
            if s is None:
                continue
            at_rest = states.get(s.key, "ended") in AT_REST
            trace = session_spans(s, owners.counted_in, redact=self.redact, ended=at_rest, since=self.since)
            spans = trace.spans
            if only_new:
                sent = self.cursor.sent(s.key) if self.cursor is not None else {}
                todo = [p for p in spans if p.closed and sent.get(p.span_id) != p.end]
                self.skipped += sum(1 for p in spans if p.closed) - len(todo)
                spans = todo
            if spans:
                self.sessions += 1
                self.sender.add(trace, spans)
        self.sender.flush()

    def run(self, ids: list[str]) -> None:
        self.h.refresh(FirstRead())
        self.send(self.select(ids), only_new=False)

    def follow(
        self,
        ids: list[str],
        every: float = 2.0,
        on_error: Callable[[str], None] | None = None,
        on_cycle: Callable[[], None] | None = None,
    ) -> None:
        """Send what is new now, then again whenever the files move, until `stop` is set.
        A failed send is tried again with back-off: nothing counts as sent before the
        endpoint took it, and the cursor keeps what it took across restarts."""
        self.h.refresh(FirstRead())
        keys = self.select(ids)
        wanted = set(keys) if ids else None
        todo = set(keys)
        first = True
        delay = every
        while not self.stop.is_set():
            if not first:
                changed = self.h.refresh()
                todo |= changed & wanted if wanted is not None else changed
            todo = {k for k in todo if self.h.handle(k) is not None}
            try:
                if todo:
                    self.send(sorted(todo), only_new=True, kept=not first)
                todo = set()
                first = False
                delay = every
            except ExportFailed as exc:
                self.sender.pending.clear()  # rebuilt from the files and the cursor next time
                if on_error is not None:
                    on_error(str(exc))
                delay = min(delay * 2, 60.0)
            if on_cycle is not None:
                on_cycle()
            self.stop.wait(delay)
