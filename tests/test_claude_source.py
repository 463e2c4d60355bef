"""The Claude Code source on the real sample sessions (Claude Code 2.1.332)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SAMPLES, fingerprint
from helpers import claude_huddle
from huddle.model import events as ev
from said import as_json

CLAUDE = SAMPLES / "claude"


def scenario(name: str):
    return claude_huddle(CLAUDE / name / "config")


def only(h):
    (s,) = h.sessions()
    return s


def kinds(s, kind, agent=None):
    return [e for e in s.events if e.kind == kind and (agent is None or e.agent == agent)]


def test_usage_matches_claude_codes_own_cost_state():
    # Without compaction or aborts, Claude Code's cumulative cost-state equals the records.
    s = only(scenario("12-nested-and-custom-agents"))
    assert s.usage.to_dict() == {"input": 55, "output": 479, "cache_read": 33067, "cache_write": 35139}


def test_nested_and_custom_agents_tree():
    s = only(scenario("12-nested-and-custom-agents"))
    agents = {a.id: a for a in s.agents.values()}
    lead = s.lead
    assert lead.id == s.id and lead.parent is None
    gp, explore, reviewer = agents["a29986b1cdfde2380"], agents["a8e5e4e8f7fc26ae4"], agents["a4af011ebc7ceaf5e"]
    assert (gp.parent, gp.kind, gp.description) == (s.id, "general-purpose", "Investigate with helper")
    assert (explore.parent, explore.kind) == (gp.id, "Explore")  # depth 2, from meta.json parentAgentId
    assert (reviewer.parent, reviewer.kind) == (s.id, "reviewer")  # a custom agent type
    assert explore.tool_use_id == "toolu_01VPITFfOE9yvlrBUXd2rckC"
    # orders: the lead's two Agent calls and the general-purpose agent's own
    orders = kinds(s, ev.ORDER)
    assert {(o.agent, o.target) for o in orders} == {(s.id, gp.id), (s.id, reviewer.id), (gp.id, explore.id)}
    assert explore.order.startswith("[[scn:sub_nest_inner]]") or explore.order
    # reports are what each lead received, with the hand-back frame stripped
    assert reviewer.report == "One issue: greet() does not handle an empty name (see the TODO on line 5)."
    assert gp.report.startswith("Project: a tiny greeter demo. Helper said:")
    assert "Subagent hand-back" not in gp.report and "agentId:" not in gp.report
    assert explore.report and "README" in explore.report
    assert [a.id for a in s.tree_order()] == [s.id, gp.id, explore.id, reviewer.id]
    # each sub-agent's usage shown apart and included in the total
    assert all(a.usage.total > 0 for a in s.agents.values())


def test_parallel_foreground_subagents_reports():
    h = scenario("02-subagents")
    for s in h.sessions():
        subs = [a for a in s.agents.values() if a.parent]
        assert len(subs) == 2
        assert {a.kind for a in subs} == {"general-purpose", "Explore"}
        for a in subs:
            assert a.report and not a.report.startswith("<tools-used") and "[Subagent hand-back]" not in a.report
            assert a.order


def test_background_agent_report_from_task_notification():
    s = only(scenario("03-background-agent"))
    (sub,) = [a for a in s.agents.values() if a.parent]
    assert sub.background
    launched = [e for e in kinds(s, ev.TOOL_RESULT) if e.detail == "background"]
    assert [e.id for e in launched] == [sub.tool_use_id]
    (report,) = kinds(s, ev.REPORT)
    assert report.target == sub.id and report.name == "task-notification"
    assert sub.report == "Python line counts: 15 src/app.py 7 src/util.py 7 tests/test_app.py 29 total"
    # the notification is harness text, never a prompt
    assert [e.text for e in kinds(s, ev.PROMPT)] == [
        "[[scn:bg_agent]] Count the lines of Python in the background and show me the git log."
    ]


def test_fork_copies_are_shown_but_not_counted():
    h = scenario("04-resume-continue-fork")
    orig = h.session("4ca800ee-fc00-4bfc-aeab-426576b25ac2")
    fork = h.session("dc76988d-8232-412a-a35d-7f14774c557b")
    assert len(kinds(orig, ev.PROMPT)) == 3  # resume and continue append to the same file
    copied_usage = [e for e in fork.events if e.kind == ev.USAGE]
    assert len(copied_usage) == 1  # only the fork's own response
    assert fork.usage.to_dict() == {"input": 5, "output": 24, "cache_read": 14501, "cache_write": 54}
    assert any(e.copied for e in fork.events if e.kind == ev.SAY)
    # together they equal Claude Code's cumulative cost-state of the fork (which carries the parent's)
    both = orig.usage.cache_read + fork.usage.cache_read
    assert both == 85061


def test_titles():
    assert only(scenario("06-named-session")).title == "Greeting app check"
    assert only(scenario("10-interactive-tmux")).title == "Interactive demo session"
    # no custom title: the first real prompt
    assert only(scenario("07-errors")).title == "[[scn:errors]] Try a few things that fail."


def test_interrupts_compaction_and_harness_text():
    s = only(scenario("10-interactive-tmux"))
    assert len(kinds(s, ev.INTERRUPT)) == 2
    assert len(kinds(s, ev.COMPACTION)) == 1
    prompts = [e.text for e in kinds(s, ev.PROMPT)]
    for p in prompts:
        assert not p.startswith(("<", "This session is being continued")), p
    assert prompts[0] == "[[scn:resume1]] Run the app."
    ctx = {e.name for e in kinds(s, ev.CONTEXT)}
    assert {"compact_summary", "command", "meta"} <= ctx
    assert s.cwd == "/home/dev/work/10-interactive-tmux/proj"


def test_slash_commands_are_what_the_person_typed():
    """A slash command is the command and its arguments as typed (`/rename Interactive demo
    session`), whether Claude Code wrote it as a user record or a local_command system
    record; what the command printed is harness output, never the person's."""
    s = only(scenario("10-interactive-tmux"))
    typed = [e.text for e in kinds(s, ev.CONTEXT) if e.name == "command"]
    assert typed == ["/rename Interactive demo session", "/compact"]
    stdout = [e for e in kinds(s, ev.CONTEXT) if "Session renamed to" in e.text]
    assert stdout and all(e.name != "command" for e in stdout)


def test_compaction_in_print_mode():
    s = only(scenario("05-compact"))
    (c,) = kinds(s, ev.COMPACTION)
    assert "manual" in c.detail
    assert all("/compact" not in e.text for e in kinds(s, ev.PROMPT))


def test_errors_and_tool_failures():
    s = only(scenario("07-errors"))
    results = kinds(s, ev.TOOL_RESULT)
    assert [r.ok for r in results].count(False) == 2  # missing file, exit code 3
    assert len(kinds(s, ev.ERROR)) >= 1  # the 529 overload, retried
    calls = {c.id: c for c in kinds(s, ev.TOOL_CALL)}
    assert all(r.id in calls for r in results)


def test_events_point_back_to_their_bytes():
    s = only(scenario("01-basic-tools"))
    for e in s.events:
        with open(e.file, "rb") as f:
            f.seek(e.offset)
            line = f.read(e.length)
        rec = json.loads(line)
        assert isinstance(rec, dict)
        if e.kind == ev.TOOL_RESULT:
            assert rec["type"] == "user"
            assert e.size > 0


def test_tool_calls_are_summarised():
    s = only(scenario("01-basic-tools"))
    calls = kinds(s, ev.TOOL_CALL)
    bash = next(c for c in calls if c.name == "Bash")
    assert "ls -la" in bash.detail
    write = next(c for c in calls if c.name == "Write")
    assert write.detail.endswith("NOTES.md")


def test_source_never_writes_in_the_agent_folder():
    before = fingerprint(CLAUDE)
    for d in CLAUDE.iterdir():
        if d.is_dir():
            h = claude_huddle(d / "config")
            from huddle.views.board import board_json

            as_json(board_json(h))
    assert fingerprint(CLAUDE) == before


def test_bad_lines_cost_one_line(tmp_path):
    src = CLAUDE / "01-basic-tools" / "config"
    dst = tmp_path / "config"
    import shutil

    shutil.copytree(src, dst)
    (f,) = dst.glob("projects/*/*.jsonl")
    lines = f.read_bytes().splitlines(keepends=True)
    good = claude_huddle(src)
    lines.insert(5, b"{this is not json\n")
    lines.insert(9, b'{"type": "assistant", "message": {"content": 42}}\n')
    f.write_bytes(b"".join(lines))
    h = claude_huddle(dst)
    s = only(h)
    assert s.skipped_lines == 2
    assert [p.split(": ", 1)[1].split(" (")[0] for p in s.problems] == ["not JSON", "unexpected shape"]
    assert all(p.startswith(f"{f}:") for p in s.problems)
    assert [e.kind for e in s.events] == [e.kind for e in only(good).events]
    assert s.usage.to_dict() == only(good).usage.to_dict()


def test_unreadable_session_is_listed_with_an_error_others_untouched():
    """A session file the user cannot read (mode 000). Root reads anything, so as root
    the board is asked for by an unprivileged user, the way a person would run it."""
    import os
    import shutil
    import subprocess
    import sys
    import tempfile

    top = tempfile.mkdtemp(prefix="huddle-unreadable-")
    try:
        dst = os.path.join(top, "config")
        shutil.copytree(CLAUDE / "02-subagents" / "config", dst)
        for root, _dirs, files in os.walk(top):
            os.chmod(root, 0o755)
            for f in files:
                os.chmod(os.path.join(root, f), 0o644)
        a, b = sorted(str(p) for p in Path(dst).glob("projects/*/*.jsonl"))
        os.chmod(a, 0)
        env = {**os.environ, "CLAUDE_CONFIG_DIR": dst, "HUDDLE_HOME": os.path.join(top, "hh"), "HOME": top}
        # Load everything first, then become an ordinary user (the interpreter itself may
        # live where only root can read), then read the board.
        code = (
            "import os, sys, json\n"
            "from huddle.core import Huddle\nfrom huddle.views.board import board_json\n"
            "h = Huddle(sources=['claude'])\n"
            "import huddle.cost.pricing; huddle.cost.pricing.current(h.settings.huddle_home)\n"
            "import shlex, huddle.sources.claude.parser\n"  # what the board loads when it needs it
            "if os.geteuid() == 0:\n    os.setgid(65534); os.setuid(65534)\n"
            "import msgspec; h.refresh(); print(msgspec.json.encode(board_json(h)).decode())\n"
        )
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, cwd=top)
        assert out.returncode == 0, out.stderr
        rows = {r["id"]: r for r in json.loads(out.stdout)["sessions"]}
        bad, good = rows[Path(a).stem], rows[Path(b).stem]
        assert "Permission denied" in bad["error"] and Path(a).name in bad["error"]
        assert "error" not in good and good["tokens"] > 0
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_missing_folder_gives_an_empty_board_and_one_line():
    h = claude_huddle("/nonexistent-claude-dir")
    assert h.sessions() == []
    assert len(h.notes) == 1 and "/nonexistent-claude-dir" in h.notes[0]


def test_a_symlinked_sub_agent_file_pointing_out_is_not_read(tmp_path):
    import shutil

    dst = tmp_path / "config"
    shutil.copytree(CLAUDE / "03-background-agent" / "config", dst)
    (main,) = dst.glob("projects/*/*.jsonl")
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text(
        '{"type":"user","message":{"role":"user","content":"secret"},"timestamp":"2026-11-30T03:04:20.000Z"}\n'
    )
    (main.parent / main.stem / "subagents" / "agent-a1111111111111111.jsonl").symlink_to(outside)
    s = only(claude_huddle(dst))
    assert "a1111111111111111" not in s.agents
    assert all(e.file != str(outside) and "secret" not in e.text for e in s.events)


@pytest.mark.parametrize("name", sorted(p.name for p in CLAUDE.iterdir() if p.is_dir()))
def test_usage_only_reading_counts_and_names_the_same(name):
    """`huddle usage` reads only model responses, prompts and titles: same tokens, same
    agents, same titles as reading everything."""
    from helpers import NOWHERE
    from huddle.core import Huddle
    from huddle.sources import Settings

    full = scenario(name)
    quick = Huddle(
        Settings(
            folders={"claude": str(CLAUDE / name / "config"), "codex": NOWHERE, "vibe": NOWHERE},
            huddle_home=NOWHERE,
            usage_only=True,
        ),
        sources=["claude"],
    )
    quick.refresh()
    for s in full.sessions():
        q = quick.session(s.id)
        assert q.usage.to_dict() == s.usage.to_dict() and q.title == s.title and q.cwd == s.cwd
        assert {a.id: (a.kind, a.usage.to_dict()) for a in q.agents.values()} == {
            a.id: (a.kind, a.usage.to_dict()) for a in s.agents.values()
        }
        assert [(e.id, e.t) for e in q.events if e.kind == "usage"] == [
            (e.id, e.t) for e in s.events if e.kind == "usage"
        ]
