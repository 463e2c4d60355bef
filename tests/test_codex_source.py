"""The Codex source on the real rollouts of Codex CLI 0.169.0, 0.144.3 and 0.96.0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import SAMPLES, fingerprint
from huddle.cli import main
from huddle.core import Huddle
from huddle.model import events as ev
from huddle.sources import Settings

CODEX = SAMPLES / "codex"
NOWHERE = "/nonexistent-huddle-test"
SCENARIOS = sorted(p.name for p in CODEX.iterdir() if (p / "codex_home").is_dir())


def codex_huddle(home: Path | str) -> Huddle:
    h = Huddle(
        Settings(folders={"claude": NOWHERE, "codex": str(home), "vibe": NOWHERE}, huddle_home=NOWHERE),
        sources=["codex"],
    )
    h.refresh()
    return h


def scenario(name: str) -> Huddle:
    return codex_huddle(CODEX / name / "codex_home")


def only(h: Huddle):
    (s,) = h.sessions()
    return s


def kinds(s, kind, agent=None):
    return [e for e in s.events if e.kind == kind and (agent is None or e.agent == agent)]


def rollouts(name: str) -> list[Path]:
    return sorted((CODEX / name / "codex_home" / "sessions").rglob("rollout-*.jsonl"))


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# -- threads and trees --------------------------------------------------------------------


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_scenario_reads_cleanly(name):
    h = scenario(name)
    assert h.sessions()
    for s in h.sessions():
        assert s.error is None and s.skipped_lines == 0, (s.error, s.problems)
        assert s.source == "codex" and s.lead_id == s.id
        # Agent ids are thread ids: every rollout's own id is an agent of some session.
    ids = {a for s in h.sessions() for a in s.agents}
    for p in rollouts(name):
        assert records(p)[0]["payload"]["id"] in ids


@pytest.mark.parametrize("name", ["subagents_v2", "subagents_v2__v0.144.3"])
def test_v2_children_form_one_tree_with_orders_and_reports(name):
    s = only(scenario(name))
    children = [a for a in s.agents.values() if a.id != s.id]
    assert len(children) == 2 and all(a.parent == s.id for a in children)
    by_path = {a.description: a for a in children}
    assert set(by_path) == {"/root/count_files", "/root/review_readme"}
    count, review = by_path["/root/count_files"], by_path["/root/review_readme"]
    assert count.order.startswith("[[plan:childa]] Count the files")
    assert count.report == "There are 2 files in the workspace."
    assert review.report == "README.md has the title '# demo'."
    orders = kinds(s, ev.ORDER, s.id)
    assert {o.target for o in orders} == {count.id, review.id}
    assert {o.detail for o in orders} == {"count_files", "review_readme"}
    reports = kinds(s, ev.REPORT, s.id)
    assert sorted((r.target, r.id) for r in reports) == sorted((a.id, a.tool_use_id) for a in children)
    assert all(a.finished for a in children)
    assert [a.parent for a in s.summary().agents] == [None, s.id, s.id]


@pytest.mark.parametrize("name", ["subagents_v1", "subagents_v1__v0.144.3", "subagents_collab_old__v0.96.0"])
def test_v1_and_collab_children(name):
    s = only(scenario(name))
    (child,) = [a for a in s.agents.values() if a.id != s.id]
    assert child.parent == s.id
    assert child.tool_use_id and child.order.startswith("[[plan:childv1]] Print the current date")
    assert child.report == "The current UTC year was printed."
    (order,) = kinds(s, ev.ORDER, s.id)
    assert order.target == child.id and order.id == child.tool_use_id
    (report,) = kinds(s, ev.REPORT)  # wait result, notification and close_agent tell it once
    assert report.agent == s.id and report.target == child.id and report.id == child.tool_use_id
    if name != "subagents_collab_old__v0.96.0":
        assert child.name in ("Boole", "Carver")  # the nickname Codex gave it


@pytest.mark.parametrize("name", ["guardian", "guardian_cfg", "guardian_cfg__v0.144.3"])
def test_guardian_is_a_quiet_child_never_a_session(name):
    h = scenario(name)
    s = only(h)
    (g,) = [a for a in s.agents.values() if a.id != s.id]
    assert g.quiet and g.kind == "guardian" and g.parent == s.id
    assert '"outcome": "deny"' in (g.report or "")  # its last verdict explains the refusal
    assert [a.quiet for a in s.summary().agents] == [False, True]
    refused = [e for e in kinds(s, ev.TOOL_RESULT, s.id) if not e.ok]
    assert len(refused) == 1 and "rejected due to unacceptable risk" in refused[0].text


def test_exec_fork_is_its_own_session_that_continues_the_parent():
    h = scenario("multiturn")
    a, b = sorted(h.sessions(), key=lambda s: s.started_at)
    assert b.continues == a.id and a.continues is None
    assert [e.text for e in kinds(a, ev.PROMPT)] == [
        "[[plan:mt1]] Write turn1.txt.",
        "[[plan:mt2]] Is turn1.txt still there?",
        "[[plan:mt3]] Anything else?",
    ]
    assert [e.text for e in kinds(b, ev.PROMPT)] == ["[[plan:fork2]] In this fork, list the files."]
    assert len(kinds(a, ev.TURN_END)) == 3 and len(kinds(b, ev.TURN_END)) == 1


def test_history_copied_into_a_forked_child_is_not_read_again():
    for name in ("subagents_v2", "subagents_v2__v0.144.3"):
        s = only(scenario(name))
        review = next(a for a in s.agents.values() if a.description == "/root/review_readme")
        own = [e for e in s.events if e.agent == review.id and not e.copied]
        assert [e.detail for e in own if e.kind == ev.TOOL_CALL] == ["head -1 README.md"]
        assert not [e for e in own if e.kind in (ev.ORDER, ev.PROMPT)]
        copied = [e for e in s.events if e.copied]
        assert len(copied) == 1 and copied[0].kind == ev.CONTEXT  # one note, counted nowhere
        assert len(kinds(s, ev.PROMPT)) == 1


# -- events -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["shell", "shell__v0.144.3", "shell__v0.96.0"])
def test_commands_with_exit_codes(name):
    s = only(scenario(name))
    calls = kinds(s, ev.TOOL_CALL)
    results = {e.id: e for e in kinds(s, ev.TOOL_RESULT)}
    got = [(c.detail, results[c.id].ok, results[c.id].text) for c in calls]
    assert got == [
        ("ls -la && echo hello-from-shell", True, "exit 0"),
        ("cat does_not_exist.txt", False, "exit 1"),
        ("python3 -c 'import sys; print(\"partial output\"); sys.exit(3)'", False, "exit 3"),
    ]
    assert len(results) == 3  # CommandExecution and function_call_output settle a call once


@pytest.mark.parametrize("name", ["apply_patch", "apply_patch__v0.144.3", "apply_patch__v0.96.0"])
def test_file_changes(name):
    s = only(scenario(name))
    calls = [e for e in kinds(s, ev.TOOL_CALL) if e.name == "apply_patch"]
    results = {e.id: e for e in kinds(s, ev.TOOL_RESULT)}
    assert [c.detail for c in calls] == ["A hello.py", "M README.md, D notes.txt", "M missing/nowhere.py"]
    assert [results[c.id].ok for c in calls] == [True, True, False]
    assert sorted(results[calls[1].id].text.split("\n")) == ["D notes.txt", "M README.md"]
    assert "verification failed" in results[calls[2].id].text


def test_mcp_web_search_code_mode_and_legacy_shell():
    s = only(scenario("mcp"))
    assert [(e.name, e.detail) for e in kinds(s, ev.TOOL_CALL)] == [
        ("tool_search", "fakemcp echo add"),
        ("mcp__fakemcp__echo", "hi there"),
        ("mcp__fakemcp__add", '{"a":2,"b":40}'),
    ]
    assert all(e.ok for e in kinds(s, ev.TOOL_RESULT))
    s = only(scenario("web_search__v0.144.3"))
    assert [(e.name, e.detail) for e in kinds(s, ev.TOOL_CALL)] == [("web_search", "codex rollout jsonl format")]
    s = only(scenario("code_mode"))
    inner = [e for e in kinds(s, ev.TOOL_CALL) if e.name == "exec_command"]
    assert [e.detail for e in inner] == ["echo from-code-mode && ls"]  # the command the JS ran
    s = only(scenario("legacy_local_shell"))
    assert [(e.name, e.detail) for e in kinds(s, ev.TOOL_CALL)] == [("local_shell", "echo legacy-shell")]


@pytest.mark.parametrize("name", ["tui_approval", "tui_approval__v0.144.3"])
def test_declined_approval_interrupts_the_turn(name):
    s = only(scenario(name))
    (interrupt,) = kinds(s, ev.INTERRUPT)
    assert interrupt.text == "aborted by user"
    ends = kinds(s, ev.TURN_END)
    assert [e.detail for e in ends] == ["aborted", ""]
    assert [e.text for e in kinds(s, ev.PROMPT)] == [
        "[[plan:appr]] Read /etc/hostname, then create a marker in /var/tmp.",
        "[[plan:tuiq]] Thanks, what did you do?",
    ]
    assert any(e.name == "turn_aborted" for e in kinds(s, ev.CONTEXT))  # the harness note is not a prompt


def test_thread_name_from_the_session_index():
    assert only(scenario("tui_approval")).title == "Read /etc/hostname, then create"


@pytest.mark.parametrize("name", ["qa", "qa__v0.96.0"])
def test_prompts_only_real_user_messages(name):
    s = only(scenario(name))
    assert [e.text for e in kinds(s, ev.PROMPT)] == ["[[plan:qa]] What is 2+2?"]
    names = {e.name for e in kinds(s, ev.CONTEXT)}
    assert "environment_context" in names
    assert [e.text for e in kinds(s, ev.SAY)] == ["2 + 2 = 4."]
    assert kinds(s, ev.THINK)


def test_turn_ends_inferred_for_0_96():
    s = only(scenario("multiturn__v0.96.0"))
    assert [e.kind for e in s.events if e.kind in (ev.PROMPT, ev.TURN_END)] == ["prompt", "turn_end"] * 3
    assert all(e.detail == "inferred" for e in kinds(s, ev.TURN_END))
    s = only(scenario("shell__v0.96.0"))
    assert len(kinds(s, ev.TURN_END)) == 1 and not s.lead.activity.turn_open


@pytest.mark.parametrize("name", ["compaction", "compaction__v0.144.3", "compaction__v0.96.0"])
def test_compaction_once(name):
    s = only(scenario(name))
    assert len(kinds(s, ev.COMPACTION)) == 1


# -- usage ----------------------------------------------------------------------------------


def own_totals(path: Path, since_ordinal: int | None = None) -> tuple[int, int, int]:
    """The thread's last cumulative total (input incl. cached, cached, output), straight
    from its token_count lines."""
    last = (0, 0, 0)
    for r in records(path):
        p = r["payload"]
        if r["type"] != "event_msg" or p.get("type") != "token_count" or not p.get("info"):
            continue
        if since_ordinal is not None and r.get("ordinal", 0) >= since_ordinal:
            break
        t = p["info"]["total_token_usage"]
        last = (t["input_tokens"], t["cached_input_tokens"], t["output_tokens"])
    return last


def inherited(path: Path, by_id: dict[str, Path]) -> tuple[int, int, int]:
    """What an `exec fork` thread's totals carry over from its parent at the fork point."""
    meta = records(path)[0]["payload"]
    parent = meta.get("forked_from_id")
    if not parent or meta.get("parent_thread_id") or parent not in by_id:
        return (0, 0, 0)
    return own_totals(by_id[parent], meta.get("forked_from_ordinal_exclusive"))


@pytest.mark.parametrize("name", SCENARIOS)
def test_usage_sums_to_each_threads_own_total(name):
    h = scenario(name)
    by_id = {records(p)[0]["payload"]["id"]: p for p in rollouts(name)}
    agents = {a.id: a for s in h.sessions() for a in s.agents.values()}
    for tid, path in by_id.items():
        u = agents[tid].usage
        final, base = own_totals(path), inherited(path, by_id)
        want = tuple(f - b for f, b in zip(final, base))
        assert (u.input + u.cache_read + u.cache_write, u.cache_read, u.output) == want, tid
    for s in h.sessions():
        total = {k: sum(a.usage.to_dict()[k] for a in s.agents.values()) for k in s.usage.to_dict()}
        assert total == s.usage.to_dict()


@pytest.mark.parametrize("name", [n for n in SCENARIOS if "__v" not in n])
def test_usage_is_one_event_per_response_record(name):
    """0.160+ writes one token_usage_record per model response: each is one usage event."""
    h = scenario(name)
    for p in rollouts(name):
        recs = records(p)
        tid = recs[0]["payload"]["id"]
        start = recs[0]["payload"].get("subagent_history_start_ordinal") or 0
        want = [
            r["payload"]["response_id"]
            for r in recs
            if r["type"] == "token_usage_record" and r.get("ordinal", 0) >= start
        ]
        s = next(s for s in h.sessions() if tid in s.agents)
        got = [e.id for e in kinds(s, ev.USAGE, tid) if e.id]
        assert got == want


def test_fork_counts_only_its_own_responses():
    h = scenario("multiturn")
    a, b = sorted(h.sessions(), key=lambda s: s.started_at)
    # The fork's first cumulative total (61658) carries the parent's 51049: not its own.
    assert b.usage.total == 61658 + (72379 - 61658) - 51049
    assert a.usage.total == 51049


# -- reading promises -------------------------------------------------------------------------


def test_reading_every_sample_writes_nothing():
    before = fingerprint(CODEX)
    live_before = fingerprint(SAMPLES / "codex-live")
    for name in SCENARIOS:
        for s in scenario(name).sessions():
            s.summary()
    assert fingerprint(CODEX) == before
    assert fingerprint(SAMPLES / "codex-live") == live_before


def test_status_json_lists_codex_like_claude(monkeypatch):
    monkeypatch.setenv("CODEX_HOME", str(CODEX / "subagents_v2" / "codex_home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(SAMPLES / "claude" / "02-subagents" / "config"))
    out = CliRunner().invoke(main, ["status", "--json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)["sessions"]
    codex = [r for r in rows if r["source"] == "codex"]
    claude = [r for r in rows if r["source"] == "claude"]
    assert len(codex) == 1 and claude
    assert set(codex[0]) >= set(claude[0]) - {"pid", "continues", "times_estimated"}
    assert set(codex[0]["usage"]) == set(claude[0]["usage"]) == {"input", "output", "cache_read", "cache_write"}
    assert set(codex[0]["agents"][0]) == set(claude[0]["agents"][0])
    assert len(codex[0]["agents"]) == 3
    # The corpus kept no thread-writer-locks folder: liveness unknown, last activity long ago.
    assert codex[0]["state"] == "idle" and all(a["state"] for a in codex[0]["agents"])


def test_codex_home_is_honoured(monkeypatch):
    monkeypatch.setenv("CODEX_HOME", str(CODEX / "qa" / "codex_home"))
    h = Huddle(sources=["codex"])
    h.refresh()
    assert [s.title for s in h.sessions()] == ["[[plan:qa]] What is 2+2?"]
