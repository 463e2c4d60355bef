"""A small OTLP/HTTP traces receiver on 127.0.0.1 for the tests and the bench: it decodes
each request with the official opentelemetry-proto messages and keeps the spans."""

from __future__ import annotations

import gzip
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def value_of(v):
    """An OTLP AnyValue as Python."""
    which = v.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [value_of(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: value_of(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, which)


class Span(dict):
    """One received span, flattened: ids as hex, attributes as a dict."""


class Receiver:
    def __init__(self, status: int = 200, keep: bool = True) -> None:
        self.status = status  # answer this (e.g. 400) to test failures
        self.keep = keep  # False: only count spans and sum their tokens (the bench's millions)
        self.count = 0
        self.tokens: dict[str, int] = {}  # GenAI usage attribute -> sum over every span
        self.spans: list[Span] = []
        self.requests = 0
        self.headers: list[dict[str, str]] = []
        self.changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(n)
                enc = (self.headers.get("content-encoding") or "").lower()
                if enc == "gzip":
                    body = gzip.decompress(body)
                elif enc == "deflate":
                    body = zlib.decompress(body)
                if self.path != "/v1/traces" or receiver.status != 200:
                    self.send_response(404 if self.path != "/v1/traces" else receiver.status)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                req = ExportTraceServiceRequest()
                req.ParseFromString(body)
                got = []
                for rs in req.resource_spans:
                    resource = {kv.key: value_of(kv.value) for kv in rs.resource.attributes}
                    for ss in rs.scope_spans:
                        for sp in ss.spans:
                            got.append(
                                Span(
                                    trace_id=sp.trace_id.hex(),
                                    span_id=sp.span_id.hex(),
                                    parent_id=sp.parent_span_id.hex() or None,
                                    name=sp.name,
                                    kind=sp.kind,
                                    start=sp.start_time_unix_nano,
                                    end=sp.end_time_unix_nano,
                                    status=sp.status.code,
                                    status_message=sp.status.message,
                                    attrs={kv.key: value_of(kv.value) for kv in sp.attributes},
                                    resource=resource,
                                    scope=ss.scope.name,
                                    schema_url=ss.schema_url,
                                )
                            )
                # kept before the answer: a sender that got its answer finds its spans here
                with receiver.changed:
                    receiver.count += len(got)
                    for sp in got:
                        for k, v in sp["attrs"].items():
                            if k.startswith(("gen_ai.usage.", "huddle.usage.")) and isinstance(v, int):
                                receiver.tokens[k] = receiver.tokens.get(k, 0) + v
                    if receiver.keep:
                        receiver.spans.extend(got)
                    receiver.requests += 1
                    receiver.headers.append({k.lower(): v for k, v in self.headers.items()})
                    receiver.changed.notify_all()
                out = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def wait_for(self, predicate, timeout: float = 20.0) -> bool:
        """Block until predicate(spans) is true (or the timeout passes)."""
        with self.changed:
            return self.changed.wait_for(lambda: predicate(self.spans), timeout=timeout)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
