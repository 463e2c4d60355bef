"""The OTLP receiver (`huddle serve --otlp`) on a real uvicorn: Claude Code's and Codex's
telemetry in JSON and protobuf become sessions on the board and in `huddle usage`; a
retried batch counts once; bad input (not OTLP, a wrong type, a huge or a compressed
huge body, a browser's request, no token off loopback) gets a 4xx and a log line, and
the receiver goes on answering."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import httpx
import pytest

from huddle.core import Huddle
from huddle.otel.receiver import Receiver
from huddle.sources import Settings
from huddle.usage.report import report
from huddle.views.board import board_json
from said import as_json

SID = "5c1f3a8e-1d00-4ddb-8f47-1d0c8e909848"
T0 = 1_796_533_328_000_000_000  # ns


def _attrs(d: dict) -> list[dict]:
    out = []
    for k, v in d.items():
        if isinstance(v, bool):
            val = {"boolValue": v}
        elif isinstance(v, int):
            val = {"intValue": str(v)}
        elif isinstance(v, float):
            val = {"doubleValue": v}
        else:
            val = {"stringValue": v}
        out.append({"key": k, "value": val})
    return out


def claude_logs(events: list[tuple[str, dict]], sid: str = SID, seq0: int = 0) -> dict:
    records = []
    for i, (name, attrs) in enumerate(events):
        t = T0 + (seq0 + i) * 1_000_000_000
        a = {"session.id": sid, "event.name": name, "event.sequence": seq0 + i, "event.timestamp": str(t), **attrs}
        records.append(
            {"timeUnixNano": str(t), "body": {"stringValue": f"claude_code.{name}"}, "attributes": _attrs(a)}
        )
    return {
        "resourceLogs": [
            {
                "resource": {"attributes": _attrs({"service.name": "claude-code", "service.version": "2.1.332"})},
                "scopeLogs": [{"scope": {"name": "com.anthropic.claude_code.events"}, "logRecords": records}],
            }
        ]
    }


def api_request(rid: str, inp: int = 100, out: int = 20, cr: int = 1000, cw: int = 50) -> tuple[str, dict]:
    return (
        "api_request",
        {
            "model": "claude-sonnet-4-5",
            "input_tokens": inp,
            "output_tokens": out,
            "cache_read_tokens": cr,
            "cache_creation_tokens": cw,
            "request_id": rid,
            "query_source": "sdk",
            "cost_usd": 0.01,
        },
    )


TURN = [
    ("user_prompt", {"prompt": "<REDACTED>", "prompt.id": "p1", "prompt_length": "12"}),
    api_request("req_1"),
    ("tool_decision", {"tool_name": "Bash", "tool_use_id": "toolu_1", "decision": "accept", "source": "config"}),
    ("tool_result", {"tool_name": "Bash", "tool_use_id": "toolu_1", "success": "true", "duration_ms": "12"}),
    api_request("req_2", inp=3, out=40, cr=1200),
    ("assistant_response", {"request_id": "req_2", "query_source": "sdk", "response": "<REDACTED>"}),
]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def recv(home: Path):
    logs: list[str] = []
    with Receiver(str(home), port=0, log=logs.append) as r:
        r.logs = logs  # type: ignore[attr-defined]
        yield r


def settings(home: Path, tmp_path: Path) -> Settings:
    env = {"HUDDLE_HOME": str(home), "HUDDLE_SOURCES": "telemetry", "CLAUDE_CONFIG_DIR": str(tmp_path / "none")}
    return Settings.from_env(env)


def post(r: Receiver, path: str, body: bytes, **headers: str) -> httpx.Response:
    return httpx.post(r.url + path, content=body, headers={"content-type": "application/json", **headers}, timeout=20)


def board(h: Huddle, at: float | None = None) -> dict:
    """The board as `status --json` says it."""
    return as_json(board_json(h, at=at))


def test_claude_code_telemetry_is_a_session_with_its_usage_and_turns(recv, home, tmp_path):
    assert post(recv, "/v1/logs", json.dumps(claude_logs(TURN)).encode()).status_code == 200
    # the exporter retries the same batch: nothing is counted twice
    assert post(recv, "/v1/logs", json.dumps(claude_logs(TURN)).encode()).status_code == 200
    h = Huddle(settings(home, tmp_path))
    h.refresh()
    (row,) = board(h)["sessions"]
    assert row["source"] == "telemetry" and row["id"] == SID
    assert row["title"] == "Claude Code (telemetry)"
    assert row["usage"] == {"input": 103, "output": 60, "cache_read": 2200, "cache_write": 100}
    assert row["state"] in ("your_turn", "idle")  # the answer closed the turn
    (s,) = h.sessions()
    kinds = [e.kind for e in s.events]
    assert kinds.count("prompt") == 1 and kinds.count("tool_call") == 1 and kinds.count("tool_result") == 1
    assert kinds[-1] == "turn_end"
    got = report(h, by="model")
    assert got["totals"]["responses"] == 2 and got["totals"]["input"] == 103


def test_an_open_turn_is_working(recv, home, tmp_path):
    post(recv, "/v1/logs", json.dumps(claude_logs(TURN[:3])).encode())
    h = Huddle(settings(home, tmp_path))
    h.refresh()
    (row,) = board(h, at=T0 / 1e9 + 5)["sessions"]
    assert row["state"] == "working"


def test_protobuf_is_taken_as_json_is(recv, home, tmp_path):
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    msg = ParseDict(claude_logs(TURN), ExportLogsServiceRequest())
    resp = post(recv, "/v1/logs", msg.SerializeToString(), **{"content-type": "application/x-protobuf"})
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/x-protobuf"
    h = Huddle(settings(home, tmp_path))
    h.refresh()
    assert report(h)["totals"]["responses"] == 2


def test_codex_telemetry(recv, home, tmp_path):
    conv = "01a22a65-96d9-72f0-ad22-06c58159ab97"
    common = {"conversation.id": conv, "model": "gpt-6.2-sol", "app.version": "0.169.0"}
    recs = [
        {"event.name": "codex.user_prompt", "prompt": "[REDACTED]", "prompt_length": "5"},
        {"event.name": "codex.sse_event", "event.kind": "response.created"},
        {
            "event.name": "codex.sse_event",
            "event.kind": "response.completed",
            "input_token_count": "9934",
            "output_token_count": "47",
            "cached_token_count": 9664,
            "reasoning_token_count": 0,
            "tool_token_count": "0",
        },
    ]
    body = {
        "resourceLogs": [
            {
                "resource": {"attributes": _attrs({"service.name": "codex_cli_rs"})},
                "scopeLogs": [
                    {
                        "logRecords": [
                            {"timeUnixNano": str(T0 + i), "attributes": _attrs({**common, **r})}
                            for i, r in enumerate(recs)
                        ]
                    }
                ],
            }
        ]
    }
    assert post(recv, "/v1/logs", json.dumps(body).encode()).status_code == 200
    h = Huddle(settings(home, tmp_path))
    h.refresh()
    (row,) = board(h)["sessions"]
    assert row["title"] == "Codex (telemetry)"
    assert row["usage"] == {"input": 270, "output": 47, "cache_read": 9664, "cache_write": 0}


def test_metrics_count_a_session_whose_logs_were_not_sent(recv, home, tmp_path):
    def point(kind: str, v: int) -> dict:
        a = {"session.id": SID, "model": "claude-sonnet-4-5", "type": kind}
        return {"attributes": _attrs(a), "timeUnixNano": str(T0), "asDouble": float(v)}

    body = {
        "resourceMetrics": [
            {
                "resource": {"attributes": _attrs({"service.name": "claude-code"})},
                "scopeMetrics": [
                    {
                        "metrics": [
                            {
                                "name": "claude_code.token.usage",
                                "sum": {
                                    "aggregationTemporality": 2,
                                    "isMonotonic": True,
                                    "dataPoints": [point("input", 10), point("output", 5), point("cacheRead", 700)],
                                },
                            }
                        ]
                    }
                ],
            }
        ]
    }
    assert post(recv, "/v1/metrics", json.dumps(body).encode()).status_code == 200
    h = Huddle(settings(home, tmp_path))
    h.refresh()
    assert report(h)["totals"]["input"] == 10 and report(h)["totals"]["cache_read"] == 700


@pytest.mark.parametrize(
    "body, headers, status",
    [
        (b"{not json", {}, 400),
        (b"[1, 2]", {}, 400),
        (b'{"resourceLogs": "nope"}', {}, 200),  # a shape it does not know: nothing taken, nothing broken
        (b'{"resourceLogs": [{"scopeLogs": [{"logRecords": [{"attributes": 7}]}]}]}', {}, 200),
        (b"[" * 100_000 + b"]" * 100_000, {}, 400),
        (b"{}", {"content-type": "text/plain"}, 415),
        (b"\x00\x01garbage", {"content-type": "application/x-protobuf"}, 400),
        (b"x" * (17 << 20), {}, 413),
        (gzip.compress(b" " * (40 << 20)), {"content-encoding": "gzip"}, 413),  # small, and huge once unpacked
        (b"not gzip", {"content-encoding": "gzip"}, 400),
        (b"{}", {"content-encoding": "br"}, 400),
        (b"{}", {"origin": "http://evil.example"}, 403),
    ],
)
def test_bad_input_is_a_4xx_and_a_line_and_the_receiver_goes_on(recv, body, headers, status):
    resp = post(recv, "/v1/logs", body, **headers)
    assert resp.status_code == status
    if status >= 400:
        assert recv.logs and str(status) in recv.logs[-1] and "\n" not in recv.logs[-1]
    assert post(recv, "/v1/logs", json.dumps(claude_logs(TURN)).encode()).status_code == 200


def test_other_routes_and_methods_are_404(recv):
    assert httpx.get(recv.url + "/v1/logs").status_code == 404
    assert httpx.post(recv.url + "/api/sessions", content=b"{}").status_code == 404
    assert (
        httpx.post(recv.url + "/v1/traces", content=b"{}", headers={"content-type": "application/json"}).status_code
        == 200
    )


def test_off_loopback_a_token_is_needed(home):
    logs: list[str] = []
    with Receiver(str(home), host="127.0.0.1", port=0, token="s3cret-tok", log=logs.append) as r:
        body = json.dumps(claude_logs(TURN)).encode()
        assert post(r, "/v1/logs", body).status_code == 401
        assert post(r, "/v1/logs", body, authorization="Bearer wrong").status_code == 401
        assert post(r, "/v1/logs", body, authorization="Bearer s3cret-tok").status_code == 200
    assert all("s3cret-tok" not in line for line in logs)


def test_serve_otlp_says_where_and_how(tmp_path):
    """`huddle serve --otlp` starts the receiver beside the board and prints the exporter's settings."""
    import os
    import subprocess
    import sys
    import time

    from pg_server import free_port

    port, otlp = free_port(), free_port()
    env = {**os.environ, "HUDDLE_HOME": str(tmp_path / "h"), "HUDDLE_SOURCES": "telemetry"}
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "huddle",
            "serve",
            "--no-open",
            "--no-notify",
            "--port",
            str(port),
            "--otlp",
            "--otlp-port",
            str(otlp),
        ],
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                r = httpx.post(
                    f"http://127.0.0.1:{otlp}/v1/logs",
                    content=json.dumps(claude_logs(TURN)).encode(),
                    headers={"content-type": "application/json"},
                )
                break
            except httpx.TransportError:
                time.sleep(0.05)
        assert r.status_code == 200
        while time.monotonic() < deadline:
            rows = httpx.get(f"http://127.0.0.1:{port}/api/sessions").json()["sessions"]
            if rows:
                break
            time.sleep(0.1)
        assert rows and rows[0]["source"] == "telemetry"
    finally:
        p.terminate()
        _, err = p.communicate(timeout=20)
    assert f"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:{otlp}" in err
