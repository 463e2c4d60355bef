"""Vibe sub-agent trees and waiting-for-you states on the real samples, per version
and engine: finished and mid-run (`*-running`, `*-waiting`) copies."""

from __future__ import annotations

import json

import pytest

from huddle.model import events as ev
from huddle.views.board import board_json
from said import as_json
from test_vibe_source import VIBE, at_end, case, kinds, only

# -- sub-agent trees ---------------------------------------------------------------------


def tree(s):
    return [(a.id, a.parent, a.name, a.kind) for a in s.tree_order()]


@pytest.mark.parametrize("version", ["2.26.1", "3.0.3"])
def test_unified_sub_agent_tree(version):
    s = only(case(f"{version}-unified-subagent"))
    child = {"2.26.1": "child-a16b99a6480812cf2880adf0", "3.0.3": "child-4aefbc8c334dc816492696f0"}[version]
    assert tree(s) == [(s.id, None, "main", "main"), (child, s.id, "helper", "generic")]
    sub = s.agents[child]
    orders = kinds(s, ev.ORDER, agent=s.id)
    reports = kinds(s, ev.REPORT)
    assert [o.target for o in orders] == [child, child] and [r.target for r in reports] == [child, child]
    assert [r.id for r in reports] == [o.id for o in orders]  # each order answered once, in order
    assert orders[0].text.startswith("{{sub:alpha}}") and orders[1].text.startswith("{{sub:beta}}")
    assert sub.tool_use_id == orders[0].id and sub.order == orders[0].text
    assert reports[0].text == "Child report: files are notes.txt and src/app.py; notes.txt has 3 lines."
    assert (
        sub.report == reports[1].text == "src/app.py is the entry point (it has an `if __name__ == '__main__'` guard)."
    )
    # the spawn only launches it: the order runs in the background until the report
    spawn_result = next(e for e in kinds(s, ev.TOOL_RESULT) if e.id == orders[0].id)
    assert spawn_result.detail == "background" and not s.lead.activity.background


def test_2_26_closed_sub_agent_has_only_the_lead_s_effects():
    s = only(case("2.26.1-unified-subagent"))
    sub = s.agents["child-a16b99a6480812cf2880adf0"]
    assert sub.event_count == 0 and sub.finished  # the store went with `close`
    assert [e.name for e in kinds(s, ev.TOOL_CALL)] == [
        "subagent.wait",
        "subagent.wait",
        "subagent.stop",
        "subagent.list",
    ]


def test_3_0_sub_agent_has_its_own_history():
    s = only(case("3.0.3-unified-subagent"))
    cid = "child-4aefbc8c334dc816492696f0"
    mine = [e.kind for e in s.events if e.agent == cid and e.kind != ev.USAGE]
    assert mine == ["say", "tool_call", "tool_result", "say", "turn_end", "order", "think", "say", "turn_end"]
    (bash,) = kinds(s, ev.TOOL_RESULT, agent=cid)
    assert bash.detail == "exit 0"
    assert s.agents[cid].model == "fake-model"


@pytest.mark.parametrize("version", ["2.26.1", "3.0.3"])
def test_unified_sub_agent_running(version):
    h = case(f"{version}-unified-subagent-running")
    s = only(h)
    (child,) = [a for a in s.agents.values() if a.id != s.id]
    assert child.id.startswith("child-") and child.parent == s.id and child.name == "helper"
    assert child.order.startswith("{{sub:alpha}}") and child.report is None
    (order,) = kinds(s, ev.ORDER, agent=s.id)
    assert order.target == child.id and not kinds(s, ev.REPORT)
    row = as_json(board_json(h, at=at_end(s)))["sessions"][0]
    states = {a["id"]: a["state"] for a in row["agents"]}
    assert states == {s.id: "waiting", child.id: "working"} and row["state"] == "waiting"


def test_legacy_sub_agent_tree():
    s = only(case("2.26.1-legacy-subagent"))
    kids = ["f8bd2fb5-a6c1-329c-fe15-6efa71732093", "58ed9ba8-1fa5-c9d8-f766-172d14db15d8"]
    assert tree(s) == [(s.id, None, "main", "main")] + [(k, s.id, "explore", "explore") for k in kids]
    orders, reports = kinds(s, ev.ORDER, agent=s.id), kinds(s, ev.REPORT)
    assert [o.target for o in orders] == kids == [r.target for r in reports]
    assert [s.agents[k].tool_use_id for k in kids] == [o.id for o in orders] == ["bsn4J2gVk", "y9Q3cjLs2"]
    assert s.agents[kids[1]].report.startswith("src/app.py is the entry point")
    assert s.agents[kids[0]].order.startswith("{{sub:alpha}}")
    for k in kids:  # a sub-agent's events fall within its own run
        assert s.agents[k].event_count > 0 and all(e.estimated for e in s.events if e.agent == k)


def test_legacy_sub_agent_running():
    h = case("2.26.1-legacy-subagent-running")
    s = only(h)
    kid = "f8bd2fb5-a6c1-329c-fe15-6efa71732093"
    assert tree(s) == [(s.id, None, "main", "main"), (kid, s.id, "explore", "explore")]
    (order,) = kinds(s, ev.ORDER)
    assert order.target == kid and not kinds(s, ev.REPORT)
    row = as_json(board_json(h, at=at_end(s)))["sessions"][0]
    assert {a["id"]: a["state"] for a in row["agents"]} == {s.id: "waiting", kid: "working"}
    assert len(h.sessions()) == 1  # the sub-agent's own lock is not a session of its own


# -- waiting for the human ---------------------------------------------------------------


@pytest.mark.parametrize("version", ["2.26.1", "3.0.3"])
@pytest.mark.parametrize("what", ["approval", "ask"])
def test_unified_waiting_snapshots(version, what):
    h = case(f"{version}-unified-{what}-waiting")
    s = only(h)
    (w,) = kinds(s, ev.WAITING)
    assert not kinds(s, ev.RESOLVED)
    if what == "approval":
        assert w.id.startswith("approval-") and w.name == "file_system.bash"
        assert w.detail.startswith("touch ") and w.detail.endswith("echo approved-command-ran")
    else:
        assert w.id.startswith("user-input-") and w.name == "ui.ask_user_question"
        assert w.detail == "Which colour should the banner use?"
    live = h.handle(s.key).live(at=at_end(s))
    (prompt,) = live.agents[s.id].calls  # the store's open callback, seen not running
    assert live.alive is True and prompt.runs is False and prompt.words == w.detail
    row = as_json(board_json(h, at=at_end(s)))["sessions"][0]
    assert row["state"] == "needs_you" and row["waiting_for"] == w.detail


@pytest.mark.parametrize("version", ["2.26.1", "3.0.3"])
@pytest.mark.parametrize("what", ["approval", "ask"])
def test_unified_answered_waits(version, what):
    h = case(f"{version}-unified-{what}")
    s = only(h)
    (w,), (r,) = kinds(s, ev.WAITING), kinds(s, ev.RESOLVED)
    assert r.id == w.id and r.text == ("approve" if what == "approval" else "Blue")
    assert w.seq < r.seq and w.t <= r.t
    row = as_json(board_json(h, at=at_end(s)))["sessions"][0]
    assert row["state"] == "ended"  # no lock: the session was closed


@pytest.mark.parametrize("what", ["approval", "ask"])
def test_legacy_waiting_shows_a_session_in_its_first_turn(what):
    # The legacy engine writes nothing until the first step ends: only the lock is there.
    h = case(f"2.26.1-legacy-{what}-waiting")
    s = only(h)
    lock = json.loads(
        next((VIBE / f"2.26.1-legacy-{what}-waiting" / "logs" / "session" / "active").glob("*.lock.json")).read_text()
    )
    assert s.id == lock["session_id"]
    live = h.handle(s.key).live(at=at_end(s))
    assert live.alive is True and live.pid == lock["process_id"]
    assert as_json(board_json(h, at=at_end(s)))["sessions"][0]["state"] == "working"
