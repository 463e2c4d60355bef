"""OTLP/HTTP request bodies as plain records: logs and metric data points.

JSON (`application/json`, the OTLP JSON mapping: camelCase keys, 64-bit integers as
strings, ids as hex) is read with the standard library; protobuf
(`application/x-protobuf`) with the official opentelemetry-proto messages when the
extra `huddle[otel]` is installed, turned into the same mapping. Anything else, or a
body that is not what the mapping says, is `BadRequest` (a 400 and one log line, never
a stopped receiver). Every value is checked for its type where it is read: an exporter
is another program, and one bad record costs that record.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

from huddle.errors import BadRequest

JSON = "application/json"
PROTOBUF = "application/x-protobuf"
DEPTH_MAX = 64  # an AnyValue nested deeper than this is said as None


class Record:
    """One log record, or one metric data point (`metric` named), with its resource's
    attributes and its own, flattened to plain Python values."""

    __slots__ = ("attrs", "body", "metric", "resource", "scope", "t", "value")

    def __init__(self, resource: dict[str, Any], scope: str, t: float | None, attrs: dict[str, Any]) -> None:
        self.resource = resource
        self.scope = scope
        self.t = t
        self.attrs = attrs
        self.body: Any = None
        self.metric = ""
        self.value: float | None = None

    def get(self, *names: str) -> Any:
        """The first of these attributes present (the record's own, then its resource's)."""
        for n in names:
            if n in self.attrs:
                return self.attrs[n]
        for n in names:
            if n in self.resource:
                return self.resource[n]
        return None


def value_of(v: Any, depth: int = 0) -> Any:
    """An OTLP AnyValue (JSON mapping) as Python: str, bool, int, float, list, dict or None."""
    if not isinstance(v, dict) or depth > DEPTH_MAX:
        return None
    for key, raw in v.items():
        if key == "stringValue":
            return raw if isinstance(raw, str) else None
        if key == "boolValue":
            return raw if isinstance(raw, bool) else None
        if key == "intValue":
            return _int(raw)
        if key == "doubleValue":
            return _float(raw)
        if key == "arrayValue":
            vals = raw.get("values") if isinstance(raw, dict) else None
            return [value_of(x, depth + 1) for x in vals] if isinstance(vals, list) else []
        if key == "kvlistValue":
            vals = raw.get("values") if isinstance(raw, dict) else None
            return attributes(vals, depth + 1)
        if key == "bytesValue":
            return raw if isinstance(raw, str) else None
    return None


def attributes(kvs: Any, depth: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if not isinstance(kvs, list):
        return out
    for kv in kvs:
        if isinstance(kv, dict) and isinstance(kv.get("key"), str):
            out[kv["key"]] = value_of(kv.get("value"), depth)
    return out


def _int(raw: Any) -> int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str) and len(raw) <= 20:
        try:
            return int(raw)
        except ValueError:
            return None
    return None


def _float(raw: Any) -> float | None:
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        return None
    try:
        f = float(raw)  # (the JSON mapping may say "NaN", "Infinity")
    except (ValueError, OverflowError):
        return None
    return f if math.isfinite(f) else None


def _time(raw: Any) -> float | None:
    ns = _int(raw)
    if ns is None or ns <= 0:
        return None
    return ns / 1e9


def parse(body: bytes, content_type: str, kind: str) -> dict[str, Any]:
    """The request (logs or metrics) in the OTLP JSON mapping."""
    ct = content_type.split(";", 1)[0].strip().lower()
    if ct == JSON:
        try:
            val = json.loads(body)
        except RecursionError:
            raise BadRequest("OTLP JSON nested too deep") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise BadRequest(f"not OTLP JSON: {str(exc)[:120]}") from None
    elif ct == PROTOBUF:
        val = _from_protobuf(body, kind)
    else:
        raise BadRequest(f"content type {ct[:60]!r} is not OTLP (application/json or application/x-protobuf)")
    if not isinstance(val, dict):
        raise BadRequest(f"an OTLP request is a JSON object, not {type(val).__name__}")
    return val


def _from_protobuf(body: bytes, kind: str) -> dict[str, Any]:
    import importlib

    module, name = (
        ("opentelemetry.proto.collector.logs.v1.logs_service_pb2", "ExportLogsServiceRequest")
        if kind == "logs"
        else ("opentelemetry.proto.collector.metrics.v1.metrics_service_pb2", "ExportMetricsServiceRequest")
    )
    try:  # (by name: the extra's modules, untyped, loaded only when protobuf comes)
        fmt = importlib.import_module("google.protobuf.json_format")
        DecodeError = importlib.import_module("google.protobuf.message").DecodeError
        Request = getattr(importlib.import_module(module), name)
    except ImportError:
        raise BadRequest("OTLP protobuf needs the extra: pip install 'huddle[otel]' (or send http/json)") from None
    msg = Request()
    try:
        msg.ParseFromString(body)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise BadRequest(f"not OTLP protobuf: {str(exc)[:120]}") from None
    # (the JSON mapping, but for ids, which protobuf's own mapping says in base64: huddle reads none)
    out: dict[str, Any] = fmt.MessageToDict(msg, preserving_proto_field_name=False)
    return out


def logs(req: dict[str, Any]) -> Iterator[Record]:
    """Every log record of an ExportLogsServiceRequest (JSON mapping)."""
    for rl in _list(req.get("resourceLogs")):
        resource = attributes(_dict(rl.get("resource")).get("attributes"))
        for sl in _list(rl.get("scopeLogs")):
            scope = _dict(sl.get("scope")).get("name")
            for lr in _list(sl.get("logRecords")):
                t = _time(lr.get("timeUnixNano")) or _time(lr.get("observedTimeUnixNano"))
                r = Record(resource, scope if isinstance(scope, str) else "", t, attributes(lr.get("attributes")))
                r.body = value_of(lr.get("body"))
                yield r


def metrics(req: dict[str, Any]) -> Iterator[Record]:
    """Every data point of a sum or gauge of an ExportMetricsServiceRequest (JSON mapping)."""
    for rm in _list(req.get("resourceMetrics")):
        resource = attributes(_dict(rm.get("resource")).get("attributes"))
        for sm in _list(rm.get("scopeMetrics")):
            scope = _dict(sm.get("scope")).get("name")
            for m in _list(sm.get("metrics")):
                name = m.get("name")
                data = _dict(m.get("sum")) or _dict(m.get("gauge"))
                if not isinstance(name, str) or not data:
                    continue
                for dp in _list(data.get("dataPoints")):
                    r = Record(resource, scope if isinstance(scope, str) else "", _time(dp.get("timeUnixNano")), {})
                    r.attrs = attributes(dp.get("attributes"))
                    r.metric = name
                    v = _float(dp["asDouble"]) if "asDouble" in dp else _int(dp.get("asInt"))
                    r.value = None if v is None else float(v)
                    yield r


def _list(v: Any) -> list[Any]:
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}
