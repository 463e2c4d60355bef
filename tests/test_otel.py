"""`huddle otel` end to end: real sample sessions sent through the official OTLP/HTTP
exporter to a real receiver on 127.0.0.1 that decodes the opentelemetry-proto
messages. One trace per session, GenAI names, nesting, the files' times, tokens equal
to `huddle usage` field by field, stable ids, and --follow with its cursor."""

from __future__ import annotations

import json
import shutil
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers import claude_huddle
from huddle.cli import main
from huddle.core import Huddle, Keeper, WholeMode
from huddle.model import events as ev
from huddle.otel.cursor import Cursor
from huddle.otel.export import Exporter, Sender, traces_endpoint
from huddle.otel.plan import huddle_usage, trace_id_of
from huddle.otel.semconv import provider_of
from huddle.otel.spans import Owners, session_spans
from huddle.sources import Settings
from huddle.usage.report import report
from otlp_receiver import Receiver

SAMPLES = Path(__file__).parent / "fixtures" / "samples"
CLAUDE = SAMPLES / "claude"
SCENARIOS = sorted(p.name for p in CLAUDE.iterdir() if (p / "config").is_dir())
FIELDS = ("input", "output", "cache_read", "cache_write")
INTERNAL, CLIENT = 1, 3  # opentelemetry-proto Span.SpanKind
ERROR = 2  # Status.StatusCode


def received_usage(spans) -> dict[str, dict[str, int]]:
    """Per trace: huddle's fields from the spans' GenAI token attributes."""
    out: dict[str, dict[str, int]] = {}
    for sp in spans:
        u = huddle_usage([sp["attrs"]])
        d = out.setdefault(sp["trace_id"], dict.fromkeys(FIELDS, 0))
        for f in FIELDS:
            d[f] += getattr(u, f)
    return out


def usage_by_session(runner, env) -> dict[str, dict]:
    r = runner.invoke(main, ["usage", "--json", "--by", "session"], env=env)
    assert r.exit_code == 0, r.output
    return {row["key"]: row for row in json.loads(r.stdout)["rows"]}


def claude_env(config: Path) -> dict[str, str]:
    return {"CLAUDE_CONFIG_DIR": str(config), "HUDDLE_SOURCES": "claude"}


def by_id(spans) -> dict[str, dict]:
    return {sp["span_id"]: sp for sp in spans}


# -- the span model, on every Claude scenario -----------------------------------------


@pytest.mark.parametrize("name", SCENARIOS)
def test_a_trace_sums_to_huddle_usage_for_its_session(name):
    h = claude_huddle(CLAUDE / name / "config")
    rows = {r["key"]: r for r in report(h, by="session")["rows"]}
    owners = Owners(h.sessions())
    for s in h.sessions():
        trace = session_spans(s, owners.counted_in)
        got = huddle_usage(p.attrs for p in trace.spans)
        want = rows.get(s.key, dict.fromkeys(FIELDS, 0))
        assert {f: getattr(got, f) for f in FIELDS} == {f: want[f] for f in FIELDS}, s.key
        chats = [p for p in trace.spans if p.attrs.get("gen_ai.operation.name") == "chat"]
        assert len(chats) == sum(1 for e in s.events if e.kind == ev.USAGE and not e.copied)
        for p in chats:  # the trap: input_tokens includes the cached parts
            a = p.attrs
            if "gen_ai.usage.input_tokens" in a:
                assert (
                    a["gen_ai.usage.input_tokens"]
                    >= a["gen_ai.usage.cache_read.input_tokens"] + a["gen_ai.usage.cache_creation.input_tokens"]
                )


def test_ids_are_derived_from_the_session_not_drawn():
    h1 = claude_huddle(CLAUDE / "02-subagents" / "config")
    h2 = claude_huddle(CLAUDE / "02-subagents" / "config")
    for s1 in h1.sessions():
        s2 = h2.session(s1.key)
        a = session_spans(s1)
        b = session_spans(s2)
        assert a.trace_id == b.trace_id == trace_id_of(s1.key)
        assert [(p.span_id, p.parent_id, p.start, p.end) for p in a.spans] == [
            (p.span_id, p.parent_id, p.start, p.end) for p in b.spans
        ]
        ids = [p.span_id for p in a.spans]
        assert len(set(ids)) == len(ids)


def test_providers_follow_the_model():
    assert provider_of("claude-opus-5-5", "claude") == "anthropic"
    assert provider_of("gpt-5.5-codex", "codex") == "openai"
    assert provider_of("devstral-medium-2607", "vibe") == "mistral_ai"
    assert provider_of("mistral-medium-latest", "vibe") == "mistral_ai"
    assert provider_of("gemini-3-pro", "gemini") == "gcp.gemini"
    assert provider_of("anthropic/claude-sonnet-4-5", "opencode") == "anthropic"
    assert provider_of("google/gemini-3-flash", "opencode") == "gcp.gemini"
    assert provider_of("", "codex") == "openai"
    assert provider_of("some-local-model", "opencode") == "opencode"


def test_endpoint_rules(monkeypatch):
    assert traces_endpoint("http://h:4318") == "http://h:4318/v1/traces"
    assert traces_endpoint("http://h:4318/v1/traces") == "http://h:4318/v1/traces"
    assert traces_endpoint(None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}) == "http://c:4318/v1/traces"
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t/x"}
    assert traces_endpoint(None, env) == "http://t/x"
    assert traces_endpoint(None, {}) is None


# -- end to end through the CLI ---------------------------------------------------------


def test_cli_sends_genai_traces_with_the_files_times_and_usage_totals():
    config = CLAUDE / "12-nested-and-custom-agents" / "config"
    runner = CliRunner()
    env = claude_env(config)
    with Receiver() as rx:
        r = runner.invoke(main, ["otel", "--endpoint", rx.url, "--machine", "laptop"], env=env)
        assert r.exit_code == 0, r.output
        assert "spans of" in r.stderr
        spans = list(rx.spans)
    h = claude_huddle(config)
    [s] = h.sessions()
    ids = by_id(spans)
    assert {sp["trace_id"] for sp in spans} == {f"{trace_id_of(s.key):032x}"}
    [root] = [sp for sp in spans if sp["parent_id"] is None]
    assert root["name"] == "invoke_agent Claude Code"
    assert root["attrs"]["gen_ai.operation.name"] == "invoke_agent"
    assert root["attrs"]["gen_ai.conversation.id"] == s.id
    assert root["attrs"]["gen_ai.provider.name"] == "anthropic"
    assert root["resource"]["host.name"] == "laptop"
    assert root["resource"]["service.name"] == "huddle"
    assert root["schema_url"].startswith("https://opentelemetry.io/schemas/")
    # every span hangs off one that was sent
    for sp in spans:
        assert sp["parent_id"] is None or sp["parent_id"] in ids
        assert sp["start"] <= sp["end"]
    # chat spans: one per response, with its id, model, provider
    chats = [sp for sp in spans if sp["attrs"]["gen_ai.operation.name"] == "chat"]
    responses = [e for e in s.events if e.kind == ev.USAGE]
    assert sorted(sp["attrs"]["gen_ai.response.id"] for sp in chats) == sorted(e.id for e in responses)
    for sp in chats:
        assert sp["kind"] == CLIENT
        assert sp["name"] == "chat " + sp["attrs"]["gen_ai.request.model"]
        assert sp["attrs"]["gen_ai.provider.name"] == "anthropic"
    # execute_tool spans run from the call's time to the result's, as the files say
    calls = {e.id: e for e in s.events if e.kind in (ev.TOOL_CALL, ev.ORDER) and e.id}
    results = {}
    for e in s.events:
        if e.kind == ev.TOOL_RESULT and e.id:
            results.setdefault(e.id, e)
    tools = [sp for sp in spans if sp["attrs"]["gen_ai.operation.name"] == "execute_tool"]
    assert tools
    for sp in tools:
        cid = sp["attrs"]["gen_ai.tool.call.id"]
        assert sp["name"] == "execute_tool " + sp["attrs"]["gen_ai.tool.name"]
        assert sp["start"] == round(calls[cid].t * 1e9)
        assert sp["end"] == round(results[cid].t * 1e9)
    # each sub-agent is an invoke_agent under the call that started it, nested ones too
    subs = [sp for sp in spans if sp["name"].startswith("invoke_agent ") and sp is not root]
    assert len(subs) == len(s.agents) - 1
    for sp in subs:
        agent = s.agents[sp["attrs"]["gen_ai.agent.id"]]
        parent = ids[sp["parent_id"]]
        assert parent["attrs"]["gen_ai.operation.name"] == "execute_tool"
        assert parent["attrs"]["gen_ai.tool.call.id"] == agent.tool_use_id
    depth = {}
    for sp in subs:
        d, p = 0, sp
        while p["parent_id"]:
            p = ids[p["parent_id"]]
            d += 1
        depth[sp["attrs"]["gen_ai.agent.name"]] = d
    assert max(depth.values()) >= 4  # root > call > sub-agent > call > its sub-agent
    # no text unless asked
    for sp in spans:
        assert "gen_ai.input.messages" not in sp["attrs"] and "gen_ai.output.messages" not in sp["attrs"]
    # the token totals equal `huddle usage` for the session, field by field
    want = usage_by_session(runner, env)[s.key]
    assert received_usage(spans)[f"{trace_id_of(s.key):032x}"] == {f: want[f] for f in FIELDS}


def test_a_fork_does_not_count_its_copied_history_twice():
    config = CLAUDE / "04-resume-continue-fork" / "config"
    runner = CliRunner()
    env = claude_env(config)
    with Receiver() as rx:
        r = runner.invoke(main, ["otel", "--endpoint", rx.url], env=env)
        assert r.exit_code == 0, r.output
        spans = list(rx.spans)
    want = usage_by_session(runner, env)
    got = received_usage(spans)
    assert len(got) == len(claude_huddle(config).sessions())
    for key, row in want.items():
        assert got[f"{trace_id_of(key):032x}"] == {f: row[f] for f in FIELDS}
    total = {f: sum(d[f] for d in got.values()) for f in FIELDS}
    r = runner.invoke(main, ["usage", "--json"], env=env)
    totals = json.loads(r.stdout)["totals"]
    assert total == {f: totals[f] for f in FIELDS}


def test_sending_twice_gives_the_same_ids_and_content():
    config = CLAUDE / "02-subagents" / "config"
    runner = CliRunner()
    with Receiver() as rx:
        for _ in range(2):
            r = runner.invoke(main, ["otel", "--endpoint", rx.url], env=claude_env(config))
            assert r.exit_code == 0, r.output
        spans = list(rx.spans)
    half = len(spans) // 2
    assert half and len(spans) == 2 * half
    key = lambda sp: (sp["trace_id"], sp["span_id"])  # noqa: E731
    first = sorted(spans[:half], key=key)
    second = sorted(spans[half:], key=key)
    assert [(key(a), a["start"], a["end"], a["attrs"]) for a in first] == [
        (key(b), b["start"], b["end"], b["attrs"]) for b in second
    ]


def test_ids_and_since_select_what_is_sent():
    config = CLAUDE / "04-resume-continue-fork" / "config"
    h = claude_huddle(config)
    s = sorted(h.sessions(), key=lambda s: s.started_at)[-1]
    runner = CliRunner()
    with Receiver() as rx:
        r = runner.invoke(main, ["otel", s.id, "--endpoint", rx.url], env=claude_env(config))
        assert r.exit_code == 0, r.output
        assert {sp["trace_id"] for sp in rx.spans} == {f"{trace_id_of(s.key):032x}"}
        r = runner.invoke(main, ["otel", "no-such-session", "--endpoint", rx.url], env=claude_env(config))
        assert r.exit_code == 1 and "no session 'no-such-session'" in r.output
        assert "Traceback" not in r.output
    later = [e.t for e in s.events if e.kind == ev.USAGE and e.t]
    cut = sorted(later)[len(later) // 2]
    from huddle.model.times import iso

    since = iso(cut)
    env = claude_env(config)
    with Receiver() as rx:
        r = runner.invoke(main, ["otel", "--since", since, "--endpoint", rx.url], env=env)
        assert r.exit_code == 0, r.output
        spans = list(rx.spans)
    assert spans and all(sp["end"] >= round(cut * 1e9) - 10**6 for sp in spans)
    r = runner.invoke(main, ["usage", "--json", "--by", "session", "--since", since], env=env)
    want = {row["key"]: row for row in json.loads(r.stdout)["rows"]}
    got = received_usage(spans)
    for key, row in want.items():
        assert got[f"{trace_id_of(key):032x}"] == {f: row[f] for f in FIELDS}


def test_environment_endpoint_and_headers_are_honoured_and_never_printed():
    config = CLAUDE / "01-basic-tools" / "config"
    with Receiver() as rx:
        env = {
            **claude_env(config),
            "OTEL_EXPORTER_OTLP_ENDPOINT": rx.url,
            "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=s3cret-value,x-team=core",
        }
        r = CliRunner().invoke(main, ["otel"], env=env)
        assert r.exit_code == 0, r.output
        assert rx.spans
        assert all(hd.get("x-api-key") == "s3cret-value" and hd.get("x-team") == "core" for hd in rx.headers)
        assert "s3cret" not in r.output


def test_a_refused_export_is_one_line_and_no_endpoint_is_one_line():
    config = CLAUDE / "01-basic-tools" / "config"
    runner = CliRunner()
    with Receiver(status=400) as rx:
        r = runner.invoke(main, ["otel", "--endpoint", rx.url.replace("://", "://user:pw@")], env=claude_env(config))
    assert r.exit_code == 1
    assert "could not send" in r.output and "pw" not in r.output
    assert len(r.output.strip().splitlines()) == 1
    r = runner.invoke(main, ["otel"], env={**claude_env(config), "OTEL_EXPORTER_OTLP_ENDPOINT": ""})
    assert r.exit_code == 1 and "no endpoint" in r.output


def test_without_the_extra_the_message_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    r = CliRunner().invoke(main, ["otel", "--endpoint", "http://127.0.0.1:9"])
    assert r.exit_code == 1
    assert r.output.strip() == "Error: huddle otel needs the OpenTelemetry extra: pip install 'huddle[otel]'"


@pytest.mark.parametrize(
    "sample, source, provider",
    [
        ("codex/multiturn/codex_home", "codex", "openai"),
        ("codex/shell/codex_home", "codex", "openai"),
    ],
)
def test_other_sources_export_through_the_same_model(sample, source, provider):
    folder = SAMPLES / sample
    env = {"CODEX_HOME": str(folder), "HUDDLE_SOURCES": source}
    runner = CliRunner()
    with Receiver() as rx:
        r = runner.invoke(main, ["otel", "--endpoint", rx.url], env=env)
        assert r.exit_code == 0, r.output
        spans = list(rx.spans)
    assert spans
    roots = [sp for sp in spans if sp["parent_id"] is None]
    assert all(sp["name"] == "invoke_agent Codex" for sp in roots)
    chats = [sp for sp in spans if sp["attrs"]["gen_ai.operation.name"] == "chat"]
    assert chats and all(sp["attrs"]["gen_ai.provider.name"] == provider for sp in chats)
    want = usage_by_session(runner, env)
    got = received_usage(spans)
    for key, row in want.items():
        assert got[f"{trace_id_of(key):032x}"] == {f: row[f] for f in FIELDS}


def test_vibe_sessions_are_mistral_ai():
    root = next(p for p in (SAMPLES / "vibe").iterdir() if p.is_dir() and (p / "logs").is_dir())
    env = {"VIBE_HOME": str(root), "HUDDLE_SOURCES": "vibe"}
    runner = CliRunner()
    with Receiver() as rx:
        r = runner.invoke(main, ["otel", "--endpoint", rx.url], env=env)
        assert r.exit_code == 0, r.output
        spans = list(rx.spans)
    assert any(sp["name"] == "invoke_agent Mistral Vibe" for sp in spans)
    chats = [sp for sp in spans if sp["attrs"]["gen_ai.operation.name"] == "chat"]
    assert chats and all(sp["attrs"]["gen_ai.provider.name"] == "mistral_ai" for sp in chats)
    want = usage_by_session(runner, env)
    got = received_usage(spans)
    for key, row in want.items():
        assert got[f"{trace_id_of(key):032x}"] == {f: row[f] for f in FIELDS}


def test_a_failed_tool_is_an_error_span():
    config = CLAUDE / "07-errors" / "config"
    h = claude_huddle(config)
    failed = {e.id for s in h.sessions() for e in s.events if e.kind == ev.TOOL_RESULT and e.ok is False}
    assert failed
    with Receiver() as rx:
        r = CliRunner().invoke(main, ["otel", "--endpoint", rx.url], env=claude_env(config))
        assert r.exit_code == 0, r.output
        tools = [sp for sp in rx.spans if sp["attrs"]["gen_ai.operation.name"] == "execute_tool"]
    bad = [sp for sp in tools if sp["attrs"]["gen_ai.tool.call.id"] in failed]
    assert bad and all(sp["status"] == ERROR and sp["attrs"]["error.type"] == "tool_error" for sp in bad)


# -- --follow -------------------------------------------------------------------------


def _copy_growing(tmp_path: Path, name: str) -> tuple[Path, Path, list[bytes]]:
    """A sample copied with its lead transcript cut in half: returns the config, the
    transcript and the lines still to append."""
    src = CLAUDE / name / "config"
    dst = tmp_path / "config"
    shutil.copytree(src, dst)
    lead = max((p for p in dst.glob("projects/*/*.jsonl")), key=lambda p: p.stat().st_size)
    lines = lead.read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    lead.write_bytes(b"".join(lines[:half]))
    return dst, lead, lines[half:]


def _follow(h, rx, stop_after):
    sender = Sender(rx.url + "/v1/traces", "m")
    cursor = Cursor(h.settings.huddle_home, sender.endpoint)
    ex = Exporter(h, sender, cursor=cursor)
    cycles = threading.Semaphore(0)
    t = threading.Thread(target=ex.follow, args=([],), kwargs={"every": 0.05, "on_cycle": cycles.release}, daemon=True)
    t.start()
    return ex, cycles, t, cursor, sender


def test_follow_sends_what_is_new_and_resumes_from_its_cursor(tmp_path):
    config, lead, rest = _copy_growing(tmp_path, "01-basic-tools")
    settings = Settings(
        folders={"claude": str(config), "codex": "/nonexistent", "vibe": "/nonexistent"},
        huddle_home=str(tmp_path / "hh"),
    )
    with Receiver() as rx:
        h = Huddle(settings, sources=["claude"], keep=Keeper(WholeMode()))
        ex, cycles, t, cursor, sender = _follow(h, rx, None)
        assert cycles.acquire(timeout=20)
        first = {sp["span_id"] for sp in rx.spans}
        assert first
        with lead.open("ab") as f:
            f.writelines(rest)
        full = claude_huddle(config)
        [s] = full.sessions()
        n_chat = sum(1 for e in s.events if e.kind == ev.USAGE)
        assert rx.wait_for(
            lambda spans: sum(1 for sp in spans if sp["attrs"]["gen_ai.operation.name"] == "chat") >= n_chat
        )
        ex.stop.set()
        t.join(10)
        sender.close()
        cursor.close()
        ids = [sp["span_id"] for sp in rx.spans if not sp["name"].startswith("invoke_agent")]
        assert len(ids) == len(set(ids))  # a closed span is sent once
        sent = len(rx.spans)
        # a restart sends nothing new: the cursor remembers
        h2 = Huddle(settings, sources=["claude"], keep=Keeper(WholeMode()))
        ex2, cycles2, t2, cursor2, sender2 = _follow(h2, rx, None)
        assert cycles2.acquire(timeout=20) and cycles2.acquire(timeout=20)
        ex2.stop.set()
        t2.join(10)
        sender2.close()
        cursor2.close()
        assert len(rx.spans) == sent
        assert ex2.skipped > 0
    want = {r["key"]: r for r in report(full, by="session")["rows"]}[s.key]
    latest = {}
    for sp in rx.spans:
        latest[sp["span_id"]] = sp
    got = received_usage(latest.values())[f"{trace_id_of(s.key):032x}"]
    assert got == {f: want[f] for f in FIELDS}


def test_follow_keeps_trying_when_the_endpoint_is_down(tmp_path):
    config = CLAUDE / "01-basic-tools" / "config"
    settings = Settings(
        folders={"claude": str(config), "codex": "/nonexistent", "vibe": "/nonexistent"},
        huddle_home=str(tmp_path / "hh"),
    )
    with Receiver(status=400) as rx:
        h = Huddle(settings, sources=["claude"], keep=Keeper(WholeMode()))
        sender = Sender(rx.url + "/v1/traces", "m")
        ex = Exporter(h, sender, cursor=Cursor(settings.huddle_home, sender.endpoint))
        errors: list[str] = []
        came_back = threading.Event()

        def on_error(msg):
            errors.append(msg)
            if len(errors) == 2:
                rx.status = 200  # the collector is back
                came_back.set()

        t = threading.Thread(target=ex.follow, args=([],), kwargs={"every": 0.01, "on_error": on_error}, daemon=True)
        t.start()
        assert came_back.wait(30)
        assert rx.wait_for(lambda spans: len(spans) > 0, timeout=30)
        ex.stop.set()
        t.join(10)
        sender.close()
    assert all("could not send" in m for m in errors)


SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _with_secret(tmp_path: Path) -> Path:
    """01-basic-tools with a GitHub token pasted into its first prompt."""
    dst = tmp_path / "config"
    shutil.copytree(CLAUDE / "01-basic-tools" / "config", dst)
    for f in dst.glob("projects/*/*.jsonl"):
        out = []
        for line in f.read_text().splitlines():
            d = json.loads(line)
            if d.get("type") == "user" and isinstance(d["message"]["content"], str):
                d["message"]["content"] = f"Token {SECRET}. " + d["message"]["content"]
            out.append(json.dumps(d))
        f.write_text("\n".join(out) + "\n")
    return dst


def test_with_content_sends_text_redacted_as_the_exports_do(tmp_path):
    config = _with_secret(tmp_path)
    runner = CliRunner()
    with Receiver() as rx:
        r = runner.invoke(main, ["otel", "--endpoint", rx.url, "--with-content"], env=claude_env(config))
        assert r.exit_code == 0, r.output
        assert "secrets redacted" in r.stderr
        spans = list(rx.spans)
    text = json.dumps([sp["attrs"] for sp in spans])
    assert SECRET not in text and "[REDACTED:" in text
    inputs = [
        json.loads(sp["attrs"]["gen_ai.input.messages"]) for sp in spans if "gen_ai.input.messages" in sp["attrs"]
    ]
    assert any("NOTES.md" in p["content"] for m in inputs for msg in m for p in msg["parts"] if "content" in p)
    outputs = [sp for sp in spans if "gen_ai.output.messages" in sp["attrs"]]
    assert outputs
    tools = [sp for sp in spans if sp["attrs"]["gen_ai.operation.name"] == "execute_tool"]
    assert any("gen_ai.tool.call.arguments" in sp["attrs"] for sp in tools)
