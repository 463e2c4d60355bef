"""Attention states on the real live snapshots of Claude Code (each with truth.json)."""

from __future__ import annotations

import json
import os

import pytest

import incli
from conftest import SAMPLES
from helpers import claude_huddle
from huddle.model.attention import debounce
from huddle.model.attention import session as states
from huddle.model.times import parse_time

LIVE = SAMPLES / "claude-live"
SNAPSHOTS = sorted(p.name for p in LIVE.iterdir() if p.is_dir())


def truth(name):
    return json.loads((LIVE / name / "truth.json").read_text())


def expected(state: str) -> str:
    return "waiting" if state == "waiting_on_subagent" else state


@pytest.mark.parametrize("name", SNAPSHOTS)
def test_status_at_snapshot_time_matches_truth(name):
    t = truth(name)
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(LIVE / name / "config")}
    out = incli.huddle("status", "--json", "--at", t["taken_at"], env=env)
    assert out.returncode == 0, out.stderr
    rows = {r["id"]: r for r in json.loads(out.stdout)["sessions"]}
    for s in t["sessions"]:
        row = rows[s["session_id"]]
        assert row["state"] == expected(s["state"]), (name, s["detail"])


DETAILS = {
    "05-needs-you-bash-permission": "permission prompt: Bash: Create a build marker file: touch build-marker.txt && echo created",
    "06-needs-you-edit-permission": "permission prompt: Edit: /home/dev/live/solo/proj/src/app.py",
    "09-needs-you-question": "question: AskUserQuestion: Which greeting style should the app use?",
    "15-waiting-on-subagent-foreground": "Long foreground check",
}


@pytest.mark.parametrize("name", sorted(DETAILS))
def test_what_it_waits_for(name):
    h = claude_huddle(LIVE / name / "config")
    at = parse_time(truth(name)["taken_at"])
    (s,) = h.sessions()
    st, _per = states.classify(s, h.handle(s.key).live(at=at), at=at)
    assert st.waiting_for == DETAILS[name]


def test_a_sub_agents_permission_prompt_is_the_sub_agents():
    name = "16-needs-you-subagent-permission"
    h = claude_huddle(LIVE / name / "config")
    at = parse_time(truth(name)["taken_at"])
    (s,) = h.sessions()
    _st, per = states.classify(s, h.handle(s.key).live(at=at), at=at)
    lead = per[s.id]
    asking = [aid for aid, x in per.items() if x.state == "needs_you"]
    assert lead.state == "waiting" and len(asking) == 1 and s.agents[asking[0]].parent == s.id


def test_background_work_is_shown_beside_your_turn():
    for name, words in (
        ("11-your-turn-background-subagent-running", "sub-agent: Long background check"),
        ("13-your-turn-background-shell-running", "Bash in background"),
    ):
        h = claude_huddle(LIVE / name / "config")
        at = parse_time(truth(name)["taken_at"])
        (s,) = h.sessions()
        st, _ = states.classify(s, h.handle(s.key).live(at=at), at=at)
        assert st.state == "your_turn" and any(b.startswith(words) for b in st.background)


def test_a_dead_pid_means_ended_now():
    # Every snapshot's pid is gone now: evaluated at the present, nothing is alive.
    h = claude_huddle(LIVE / "03-working-bash-running" / "config")
    (s,) = h.sessions()
    st, _ = states.classify(s, h.handle(s.key).live())
    assert st.state == "ended"


@pytest.mark.parametrize(
    "name,want",
    [
        ("01-working-streaming", "working"),
        ("04-your-turn-finished", "your_turn"),
        ("09-needs-you-question", "needs_you"),
        ("15-waiting-on-subagent-foreground", "waiting"),
        ("02-your-turn-after-escape-streaming", "your_turn"),
    ],
)
def test_transcript_alone_tells_what_it_can(name, want):
    # Without the registry (Claude Code before 2.1.139), the transcript rules still answer
    # where the notes say they can.
    h = claude_huddle(LIVE / name / "config")
    at = parse_time(truth(name)["taken_at"])
    (s,) = h.sessions()
    st, _ = states.classify(s, None, at=at)
    assert st.state == want


def test_states_over_a_replayed_session():
    """The interactive session, evaluated at each of its event times."""
    h = claude_huddle(SAMPLES / "claude" / "10-interactive-tmux" / "config")
    (s,) = h.sessions()
    seen = []
    for e in s.events:
        if e.t is None or e.kind not in ("prompt", "tool_call", "order", "turn_end", "interrupt", "tool_result"):
            continue
        st, _ = states.classify(s, None, at=e.t)
        if not seen or seen[-1][1] != st.state:
            seen.append((e.kind, st.state))
    flow = [x[1] for x in seen]
    assert flow[0] == "working"
    assert "needs_you" in flow  # the AskUserQuestion, before it was answered
    # its sub-agent ran in the background: once launched, the lead does not wait on it
    launched = next(e for e in s.events if e.kind == "tool_result" and e.detail == "background")
    assert states.classify(s, None, at=launched.t)[0].state == "working"
    assert flow.count("your_turn") >= 5  # after each finished or interrupted turn
    assert seen[-1][1] in ("your_turn", "ended")


def test_debounce_holds_a_short_flip():
    d = debounce.Debouncer(hold=0.5)
    w, y = states.State("working"), states.State("your_turn")
    assert d("k", w, now=0.0).state == "working"
    assert d("k", y, now=0.1).state == "working"  # 0.1 s: may be the pid file leading
    assert d("k", w, now=0.3).state == "working"
    assert d("k", y, now=1.0).state == "working"
    assert d("k", y, now=1.6).state == "your_turn"  # held for over 0.5 s
