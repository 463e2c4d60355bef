"""The Mistral Vibe source on the real samples: Vibe 2.26.1 (legacy and unified
engines) and 3.0.3 (unified), one folder per scenario, each a copy of $VIBE_HOME/logs."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from conftest import SAMPLES, fingerprint
from huddle.core import Huddle
from huddle.model import events as ev
from huddle.sources import Settings
from huddle.views.board import board_json
from said import as_json

VIBE = SAMPLES / "vibe"
NOWHERE = "/nonexistent-huddle-test"
CASES = sorted(p.name for p in VIBE.iterdir() if p.is_dir())
UNIFIED = [c for c in CASES if "-unified-" in c]


def vibe_huddle(vibe_home: Path | str) -> Huddle:
    """A Huddle reading only one VIBE_HOME."""
    s = Settings(folders={"claude": NOWHERE, "codex": NOWHERE, "vibe": str(vibe_home)}, huddle_home=NOWHERE)
    h = Huddle(s, sources=["vibe"])
    h.refresh()
    return h


def case(name: str) -> Huddle:
    return vibe_huddle(VIBE / name)


def only(h: Huddle):
    (s,) = h.sessions()
    return s


def kinds(s, kind, agent=None):
    return [e for e in s.events if e.kind == kind and (agent is None or e.agent == agent)]


def journal_usage(store: Path) -> dict:
    """Model usage straight from a store's journal files: once per completion."""
    seen, tot = set(), dict(input=0, output=0, cache_read=0, cache_write=0)
    for j in sorted(store.glob("journal/*.jsonl")):
        for line in j.read_text().splitlines():
            r = json.loads(line)
            res = r["payload"].get("result") if r["type"] == "action_result" else None
            if not res or res.get("type") != "completion_succeeded" or r["payload"]["action_id"] in seen:
                continue
            seen.add(r["payload"]["action_id"])
            u = res["result"]["usage"]
            tot["input"] += u["input_tokens"] - u["cached_input_tokens"]
            tot["output"] += u["output_tokens"]
            tot["cache_read"] += u["cached_input_tokens"]
    return tot


def snapshot_totals(store: Path) -> dict:
    cur = json.loads((store / "CURRENT").read_text())
    ps = json.loads((store / "generations" / cur["generation"] / "projection-state.json").read_text())
    tu = ps["snapshot"]["session"]["tokenUsage"] or {}
    cached = tu.get("cachedInputTokens", 0)
    return dict(
        input=tu.get("inputTokens", 0) - cached, output=tu.get("outputTokens", 0), cache_read=cached, cache_write=0
    )


def at_end(s) -> float:
    """A time at the end of a snapshot: locks are trusted as they are."""
    return s.updated_at


# -- every sample ------------------------------------------------------------------------


@pytest.mark.parametrize("name", CASES)
def test_every_sample_reads_cleanly(name):
    h = case(name)
    assert h.sessions(), name
    for s in h.sessions():
        assert s.error is None and s.skipped_lines == 0, (s.error, s.problems)
        assert s.source == "vibe" and s.lead_id == s.id
        assert {e.kind for e in s.events} <= set(ev.KINDS)
        calls = [e.id for e in s.events if e.kind in (ev.TOOL_CALL, ev.ORDER) and e.id]
        results = [e.id for e in s.events if e.kind == ev.TOOL_RESULT]
        assert len(calls) == len(set(calls)) and len(results) == len(set(results)), "an event given twice"
        usage_ids = [e.id for e in s.events if e.kind == ev.USAGE]
        assert len(usage_ids) == len(set(usage_ids))
        total = {k: sum(a.usage.to_dict()[k] for a in s.agents.values()) for k in s.usage.to_dict()}
        assert total == s.usage.to_dict()


def test_status_json_lists_vibe_sessions_like_claude(monkeypatch):
    runner = CliRunner()
    from huddle.cli import main

    monkeypatch.setenv("VIBE_HOME", str(VIBE / "3.0.3-unified-subagent"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(SAMPLES / "claude" / "02-subagents" / "config"))
    res = runner.invoke(main, ["status", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["sessions"]
    vibe = [r for r in rows if r["source"] == "vibe"]
    claude = [r for r in rows if r["source"] == "claude"]
    assert len(vibe) == 1 and claude
    assert set(vibe[0]) >= set(claude[0]) - {"pid"}
    assert set(vibe[0]["usage"]) == set(claude[0]["usage"]) == {"input", "output", "cache_read", "cache_write"}
    assert set(vibe[0]["agents"][0]) == set(claude[0]["agents"][0])
    assert [a["name"] for a in vibe[0]["agents"]] == ["main", "helper"]
    assert vibe[0]["agents"][1]["parent"] == vibe[0]["id"]


@pytest.mark.parametrize("name", CASES)
def test_every_event_reads_back_from_its_file(name):
    # The whole record behind an event (a long output, a capped text) is read back on
    # demand from `file` at `offset`/`length`: a journal line, a history entry inside a
    # chunk, a legacy message. Those files are the handle's files.
    from huddle.io.reader import read_span

    h = case(name)
    for s in h.sessions():
        files = set(h.handle(s.key).files())
        spans = [e for e in s.events if e.offset >= 0 and e.length > 0]
        assert spans or not s.events
        for e in spans:
            assert e.file in files, e
            rec = json.loads(read_span(e.file, e.offset, e.length))
            assert isinstance(rec, dict)
            if e.kind == ev.TOOL_CALL and "/chunks/" in e.file:
                assert rec["id"] == e.id  # the history entry itself


def test_reading_leaves_the_samples_untouched():
    before = fingerprint(VIBE)
    for name in CASES:
        h = case(name)
        for s in h.sessions():
            h.handle(s.key).live()
        as_json(board_json(h, at=1796010000.0))
    assert fingerprint(VIBE) == before


# -- shell commands and file changes -----------------------------------------------------


@pytest.mark.parametrize("name", ["2.26.1-legacy-bash", "2.26.1-unified-bash", "3.0.3-unified-bash"])
def test_commands_with_exit_codes(name):
    s = only(case(name))
    calls = kinds(s, ev.TOOL_CALL)
    results = {e.id: e for e in kinds(s, ev.TOOL_RESULT)}
    assert [c.name.rsplit(".", 1)[-1] for c in calls] == ["bash", "bash"]
    assert "echo 'hello from bash'" in calls[0].detail and "does-not-exist" in calls[1].detail
    first, second = results[calls[0].id], results[calls[1].id]
    assert (first.ok, first.detail) == (True, "exit 0")
    assert (second.ok, second.detail) == (False, "exit 2")
    assert first.size > 0
    assert [e.kind for e in s.events if e.kind in (ev.PROMPT, ev.THINK, ev.TURN_END)] == ["prompt", "think", "turn_end"]


@pytest.mark.parametrize(
    "name,tools",
    [
        ("2.26.1-legacy-files", ["write_file", "read_file", "edit", "todo"]),
        (
            "2.26.1-unified-files",
            ["file_system.write_file", "file_system.read_file", "file_system.search_replace", "vibe.todo"],
        ),
        ("3.0.3-unified-files", ["file_system.write_file", "file_system.read_file", "file_system.edit", "vibe.todo"]),
    ],
)
def test_file_changes(name, tools):
    s = only(case(name))
    calls = kinds(s, ev.TOOL_CALL)
    assert [c.name for c in calls] == tools
    assert all(c.detail.endswith("proj/docs/plan.md") for c in calls[:3])
    assert calls[3].detail == "3 todos"
    assert all(e.ok for e in kinds(s, ev.TOOL_RESULT))


@pytest.mark.parametrize("name", ["2.26.1-legacy-reject", "2.26.1-unified-reject", "3.0.3-unified-reject"])
def test_a_denied_command_fails(name):
    s = only(case(name))
    (result,) = kinds(s, ev.TOOL_RESULT)
    assert result.ok is False and result.detail in ("denied", "tool_denied")


@pytest.mark.parametrize("name", ["2.26.1-unified-error", "3.0.3-unified-error"])
def test_a_failed_turn_is_an_error(name):
    s = only(case(name))
    (err,) = kinds(s, ev.ERROR)
    assert err.name == "model_stream_failed" and "400" in err.text
    assert s.events[-1].kind == ev.TURN_END and s.events[-2] is err


@pytest.mark.parametrize("engine", ["2.26.1-legacy", "2.26.1-unified", "3.0.3-unified"])
def test_three_turns_and_a_reasoning_answer(engine):
    s = only(case(f"{engine}-multiturn"))
    assert [e.text[:9] for e in kinds(s, ev.PROMPT)] == ["[[turn1]]", "[[turn2]]", "[[turn3]]"]
    assert len(kinds(s, ev.TURN_END)) == 3
    qa = only(case(f"{engine}-qa"))
    assert [e.kind for e in qa.events if e.kind != ev.USAGE] == ["prompt", "think", "say", "turn_end"]


# -- token totals ------------------------------------------------------------------------


WHOLE_JOURNAL = [
    c
    for c in UNIFIED
    if c.split("-", 2)[2]
    in ("approval-waiting", "ask", "ask-waiting", "bash", "error", "files", "qa", "reject", "upgrade")
]


@pytest.mark.parametrize("name", WHOLE_JOURNAL)
def test_unified_usage_is_one_event_per_model_call(name):
    # Every journal segment since the start is still on disk: per-call usage only.
    h = case(name)
    s = next(s for s in h.sessions() if h.handle(s.key).__class__.__name__ == "UnifiedHandle")
    store = VIBE / name / "logs" / "session" / "unified" / s.id
    assert s.usage.to_dict() == journal_usage(store)
    assert all(not e.id.startswith("totals-") for e in kinds(s, ev.USAGE))
    if not name.endswith("waiting"):
        assert s.usage.to_dict() == snapshot_totals(store)  # Vibe's own cumulative totals agree


@pytest.mark.parametrize("name", ["2.26.1-unified-multiturn", "3.0.3-unified-multiturn", "2.26.1-unified-approval"])
def test_usage_of_deleted_segments_comes_from_the_totals(name):
    s = only(case(name))
    store = VIBE / name / "logs" / "session" / "unified" / s.id
    catch_up = [e for e in kinds(s, ev.USAGE) if e.id.startswith("totals-")]
    assert len(catch_up) == 1 and "cumulative totals" in catch_up[0].detail
    # the oldest snapshot on disk + the calls after it = Vibe's final total, nothing twice
    assert s.usage.to_dict() == snapshot_totals(store)
    per_call = [e for e in kinds(s, ev.USAGE) if not e.id.startswith("totals-")]
    assert sum(e.usage.input for e in per_call) == journal_usage(store)["input"]


def test_sub_agent_usage_is_its_own_and_counted_once():
    s = only(case("3.0.3-unified-subagent"))
    lead, child = s.lead, s.agents["child-4aefbc8c334dc816492696f0"]
    root = VIBE / "3.0.3-unified-subagent" / "logs" / "session" / "unified"
    assert child.usage.to_dict() == snapshot_totals(root / child.id)
    # Vibe's lead total leaves out calls that produced no text; the journal has them
    assert lead.usage.input >= snapshot_totals(root / s.id)["input"]
    assert s.usage.input == lead.usage.input + child.usage.input


@pytest.mark.parametrize("name", [c for c in CASES if "-legacy-" in c and not c.endswith("waiting")])
def test_legacy_usage_is_the_meta_stats(name):
    s = only(case(name))
    want = dict(input=0, output=0, cache_read=0, cache_write=0)
    for meta in (VIBE / name / "logs" / "session").glob("session_*/**/meta.json"):
        st = json.loads(meta.read_text())["stats"]
        want["input"] += st["session_prompt_tokens"] - st["session_cached_tokens"]
        want["output"] += st["session_completion_tokens"]
        want["cache_read"] += st["session_cached_tokens"]
    assert s.usage.to_dict() == want
    for e in kinds(s, ev.USAGE):
        assert "no per-call usage" in e.detail
    live = only_handle(case(name)).live()
    assert live.facts["cost_usd"] > 0


def only_handle(h):
    (s,) = h.sessions()
    return h.handle(s.key)


def test_legacy_times_are_estimated_between_start_and_end():
    s = only(case("2.26.1-legacy-multiturn"))
    meta = json.loads(
        next((VIBE / "2.26.1-legacy-multiturn" / "logs" / "session").glob("session_*/meta.json")).read_text()
    )
    from huddle.model.times import parse_time

    start, end = parse_time(meta["start_time"]), parse_time(meta["end_time"])
    times = [e.t for e in s.events]
    assert all(e.estimated for e in s.events)
    assert times == sorted(times) and times[0] == start and times[-1] == end
    assert s.summary().times_estimated is True
    assert only(case("2.26.1-unified-bash")).summary().times_estimated is msgspec.UNSET


# -- legacy to unified -------------------------------------------------------------------


def test_upgrade_continues_the_legacy_session():
    h = case("3.0.3-unified-upgrade")
    by_id = {s.id: s for s in h.sessions()}
    legacy = by_id["6d84457c-f30d-69db-4b37-d3d6987f934f"]
    new = by_id["a63d26ed-9c17-daaa-bc3e-f890819dff28"]
    assert new.continues == legacy.id and legacy.continues is None
    assert legacy.time_estimated and not new.time_estimated
    # the imported history is shown as copied context, the new turn is the prompt
    assert [e.text[:9] for e in kinds(new, ev.PROMPT)] == ["[[turn2]]"]
    imported = [e for e in new.events if e.copied]
    assert [e.kind for e in imported] == ["context", "say", "say"]
    assert new.summary().continues == legacy.id


# -- where Vibe keeps its sessions -------------------------------------------------------


def test_save_dir_from_config_toml(tmp_path):
    home = tmp_path / "vibe-home"
    home.mkdir()
    logs = VIBE / "2.26.1-unified-bash" / "logs" / "session"
    (home / "config.toml").write_text(f'active_model = "x"\n[session_logging]\nsave_dir = "{logs}"\nenabled = true\n')
    s = only(vibe_huddle(home))
    assert s.id == "5599513b-eb12-b2e7-4f42-707eafbbc681"


def test_default_save_dir_and_vibe_home(monkeypatch):
    monkeypatch.setenv("VIBE_HOME", str(VIBE / "3.0.3-unified-qa"))
    h = Huddle(sources=["vibe"])
    h.refresh()
    assert [s.id for s in h.sessions()] == ["e4b6d9e3-c399-3cf5-4a8a-131143e6e769"]
