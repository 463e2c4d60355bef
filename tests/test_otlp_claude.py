"""The real Claude Code CLI (from npm, pinned) exporting its telemetry to `huddle serve
--otlp`'s receiver, against a scripted model API on 127.0.0.1 (tests/
fake_anthropic.py): a turn with a Bash call, in OTLP JSON and in protobuf.

Seen from a machine without the transcript, the telemetry is the session: its
responses' tokens, to the token, are what the API said. Seen from the machine with the
transcript, the session is the transcript's, and the telemetry adds only the requests
it does not hold (Claude Code's side calls), each response counted once by its request
id; the board shows one row.

The CLI is the one tests/agent_clis.py installs (HUDDLE_TEST_CLAUDE names another binary)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest

import agent_clis
from fake_anthropic import FakeAnthropic
from huddle.core import Huddle
from huddle.otel.receiver import Receiver
from huddle.sources import Settings
from huddle.usage.report import collect, report
from huddle.views.board import board_json
from said import as_json
from test_otlp_receiver import api_request, claude_logs


@pytest.fixture(scope="session")
def claude_bin() -> str:
    named = os.environ.get("HUDDLE_TEST_CLAUDE")
    exe = named or agent_clis.installed(agent_clis.CLAUDE)
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    assert named or agent_clis.CLAUDE[1] in out.stdout, out
    return exe


SCRIPT = [
    [
        {"type": "text", "text": "Let me run that."},
        {"type": "tool_use", "name": "Bash", "input": {"command": "echo hello-from-tool", "description": "Say hello"}},
    ],
    [{"type": "text", "text": "Done: it said hello-from-tool."}],
]


def run_claude(claude_bin: str, tmp: Path, api: FakeAnthropic, otlp: str, protocol: str) -> Path:
    cfg, proj, home = tmp / "claude-config", tmp / "proj", tmp / "user-home"
    for d in (cfg, proj, home):
        d.mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(cfg),
        "ANTHROPIC_BASE_URL": api.url,
        "ANTHROPIC_API_KEY": "sk-ant-test-key",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
        "OTEL_LOGS_EXPORTER": "otlp",
        "OTEL_METRICS_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
        "OTEL_EXPORTER_OTLP_ENDPOINT": otlp,
        "OTEL_LOGS_EXPORT_INTERVAL": "500",
        "OTEL_METRIC_EXPORT_INTERVAL": "1000",
    }
    p = subprocess.run(
        [
            claude_bin,
            "-p",
            "Run echo hello-from-tool with Bash.",
            "--model",
            "claude-sonnet-4-5",
            "--allowedTools",
            "Bash",
            "--output-format",
            "json",
        ],
        cwd=proj,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    assert "hello-from-tool" in p.stdout
    return cfg


@pytest.mark.parametrize("protocol", ["http/json", "http/protobuf"])
def test_real_claude_code_telemetry_is_counted_once(claude_bin, tmp_path, protocol):
    home = tmp_path / "huddle-home"
    logs: list[str] = []
    with FakeAnthropic(SCRIPT) as api, Receiver(str(home), port=0, log=logs.append) as recv:
        cfg = run_claude(claude_bin, tmp_path, api, recv.url, protocol)
        (transcript,) = cfg.glob("projects/*/*.jsonl")
        sid = transcript.stem
        # a request Claude Code makes outside the transcript (a compaction's summary, as it sends it)
        side = claude_logs([api_request("req_side0001", inp=5, out=6, cr=7, cw=8)], sid=sid, seq0=900)
        side["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]["attributes"][-2]["value"] = {"stringValue": "compact"}
        r = httpx.post(recv.url + "/v1/logs", json=side)
        assert r.status_code == 200
    assert not logs, logs  # every request taken
    own_rids = {json.loads(x).get("requestId") for x in transcript.read_text().splitlines()} - {None}
    assert len(own_rids) == 2  # the turn's two responses

    # a machine without the transcript: the telemetry is the session
    alone = Settings.from_env(
        {"HUDDLE_HOME": str(home), "HUDDLE_SOURCES": "claude,telemetry", "CLAUDE_CONFIG_DIR": str(tmp_path / "none")}
    )
    h = Huddle(alone)
    h.refresh()
    (row,) = as_json(board_json(h))["sessions"]
    assert row["source"] == "telemetry" and row["id"] == sid
    (s,) = h.sessions()
    usage = [e for e in s.events if e.kind == "usage"]
    answered = {**dict(api.ids), "req_side0001": "-"}  # request id -> message id: every request, once
    assert {e.id for e in usage} == set(answered)  # every request, side calls too, once
    for e in usage:  # each to the token what the API said for it
        if e.id == "req_side0001":
            assert (e.usage.input, e.usage.output, e.usage.cache_read, e.usage.cache_write) == (5, 6, 7, 8)
            continue
        n = int(e.id[-4:])
        assert (e.usage.input, e.usage.output, e.usage.cache_read, e.usage.cache_write) == (
            100 + n,
            7 * n,
            1000 * n,
            50,
        )
    kinds = [e.kind for e in s.events]
    assert "prompt" in kinds and "tool_call" in kinds and "tool_result" in kinds
    assert row["state"] in ("your_turn", "idle")

    # the machine with the transcript: one row, each response once
    both = Settings.from_env(
        {"HUDDLE_HOME": str(home), "HUDDLE_SOURCES": "claude,telemetry", "CLAUDE_CONFIG_DIR": str(cfg)}
    )
    h = Huddle(both)
    h.refresh()
    rows = as_json(board_json(h))["sessions"]
    assert [(r["source"], r["id"]) for r in rows] == [("claude", sid)]
    counted = collect(h.sessions())
    by_source = {s["source"]: s for s in counted["sessions"]}
    assert len(by_source["claude"]["rows"]) == 2
    twin = next(s for s in h.sessions() if s.source == "telemetry")
    assert {e.id for e in twin.events if e.kind == "usage"} == set(answered) - own_rids == {"req_side0001"}
    assert len(by_source["telemetry"]["rows"]) == 1
    total = report(h)["totals"]
    assert total["responses"] == len(answered) == 3
    assert total["input"] == sum(100 + int(r[-4:]) for r in own_rids) + 5
