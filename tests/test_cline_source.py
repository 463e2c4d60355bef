"""The Cline CLI source on the real files of Cline CLI 3.0.65: what is Cline's own (sub-agents
counted though the record's totals leave them out, errors without a flag, every live snapshot
with its recorded process through the board, documents rewritten in place read incrementally
equal to a fresh read (an unchanged one never read again), hostile documents costing their
session only, and a write-free proof of a full read and a server run). Sessions, trees,
tokens against a count of their own and live snapshots from the files alone (Cline's status
word tells every one) over every sample: tests/test_conformance.py."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import faults
from conftest import SAMPLES, fingerprint
from huddle.cli import main
from huddle.core import Huddle
from huddle.io.proctable import Proc, ProcTable
from huddle.model import events as ev
from huddle.server import ServerThread
from huddle.sources import Settings
from huddle.sources.cline import ClineSource
from huddle.sources.cline.parser import DocParser
from huddle.views import api
from live_agents import WITHIN, api_row, wait_until
from said import as_json

CLINE = SAMPLES / "cline"
SCENARIOS = sorted(p.name for p in CLINE.iterdir() if (p / "truth.json").exists())
SNAPSHOTS = sorted(str(p.relative_to(CLINE)) for p in CLINE.glob("*/live/*") if (p / "truth.json").exists())
STATE = {
    "working-model-streaming": "working",
    "needs-you-approval": "needs_you",
    "needs-you-question": "needs_you",
    "working-tool-running": "working",
    "your-turn-finished": "your_turn",
    "ended-after-exit": "ended",
}


def data_dir(where: str) -> Path:
    return CLINE / where / "home" / ".cline" / "data"


def cline_huddle(data: Path | str, procs: ProcTable | None = None) -> Huddle:
    h = Huddle(Settings(folders={"cline": str(data)}, huddle_home="/nonexistent-huddle-test"), sources=["cline"])
    if procs is not None:
        h.sources[0].system.recorded = procs
    h.refresh()
    return h


def truth(name: str) -> dict:
    return json.loads((CLINE / name / "truth.json").read_text())["sessions"][0]


def only(h: Huddle):
    (s,) = h.sessions()
    return s


def kinds(s, kind, agent=None):
    return [e for e in s.events if e.kind == kind and (agent is None or e.agent == agent)]


@pytest.mark.parametrize("name", SCENARIOS)
def test_keys_titles_and_prompts_as_cline_says_them(name):
    """(Sessions, trees, tokens against a count of their own, tool calls, live snapshots from
    the files alone: tests/test_conformance.py.) Cline makes no title: the first prompt; a
    prompt comes out of its <user_input> wrapper; every call has its result."""
    t = truth(name)
    s = only(cline_huddle(data_dir(name)))
    assert s.source == "cline" and s.id == t["session_id"]
    assert s.title == t["expected_title"] and s.custom_title == s.ai_title == ""
    for turn, p in zip(t["turns"], [e.text for e in kinds(s, ev.PROMPT)], strict=False):
        assert p.startswith(f"[[scn:{turn['marker']}]]")
    calls = {e.id for e in s.events if e.kind in (ev.TOOL_CALL, ev.ORDER)}
    assert {e.id for e in kinds(s, ev.TOOL_RESULT)} == calls


def test_the_records_own_totals_leave_the_sub_agent_out_and_huddle_counts_it():
    (record,) = data_dir("07-subagent").glob("sessions/*/[0-9]*_?????.json")
    own = json.loads(record.read_text())["metadata"]["usage"]
    s = only(cline_huddle(data_dir("07-subagent")))
    lead = s.agents[s.id].usage
    assert own["inputTokens"] == lead.input + lead.cache_read  # Cline counts the cached part as input
    assert own["outputTokens"] == lead.output and own["cacheReadTokens"] == lead.cache_read
    assert s.usage.total > lead.total  # the sub-agent's responses too


def test_tool_errors_carry_no_flag_but_are_told():
    s = only(cline_huddle(data_dir("05-errors")))
    assert [r.ok for r in kinds(s, ev.TOOL_RESULT)] == [False, False, False]  # a missing file, exit 2, no match
    assert [c.detail for c in kinds(s, ev.TOOL_CALL)][:2] == [
        "/home/dev/work/proj/does/not/exist.txt",
        "ls missing-dir",
    ]
    s = only(cline_huddle(data_dir("02-shell")))
    assert all(r.ok for r in kinds(s, ev.TOOL_RESULT))
    assert kinds(s, ev.TURN_END)[-1].agent == s.id and len(kinds(s, ev.TURN_END)) == 1


def test_a_sub_agent_has_its_order_report_and_parent():
    s = only(cline_huddle(data_dir("07-subagent")))
    (child,) = [a for a in s.agents.values() if a.id != s.id]
    (order,) = kinds(s, ev.ORDER)
    (report,) = kinds(s, ev.REPORT)
    assert order.agent == s.id and order.target == child.id == f"{s.id}__agent_1796526949590_4xsvui"
    assert child.tool_use_id == order.id and child.parent == s.id
    assert child.order.startswith("[[scn:sub_gen]]") and child.description.startswith("[[scn:sub_gen]]")
    assert report.id == order.id and report.target == child.id and child.report == "There is 1 Python file: app.py."
    assert [e.name for e in kinds(s, ev.TOOL_CALL, child.id)] == ["run_commands"]


def test_content_read_back_of_a_call_its_output_and_a_text():
    h = cline_huddle(data_dir("02-shell"))
    s = only(h)
    out = api.events(h, s.id)["events"]
    call = next(e for e in out if e["kind"] == "tool_call")
    res = next(e for e in out if e["kind"] == "tool_result")
    say = next(e for e in out if e["kind"] == "say")
    assert api.content(h, s.id, call["ref"])["input"] == {"commands": ["ls -la"]}
    assert "README.md" in api.content(h, s.id, res["ref"])["text"]
    assert api.content(h, s.id, say["ref"])["text"] == say["text"]


# -- folders ----------------------------------------------------------------------------------


def test_folder_rules_of_the_cli(tmp_path, monkeypatch):
    env = {"HOME": str(tmp_path)}
    assert Settings.from_env(env).folder("cline") == str(tmp_path / ".cline" / "data")
    env["CLINE_DIR"] = str(tmp_path / "cl")
    assert Settings.from_env(env).folder("cline") == str(tmp_path / "cl" / "data")
    env["CLINE_DATA_DIR"] = str(tmp_path / "d")
    assert Settings.from_env(env).folder("cline") == str(tmp_path / "d")
    env["HUDDLE_CLINE_DIR"] = str(tmp_path / "mine")
    assert Settings.from_env(env).folder("cline") == str(tmp_path / "mine")
    assert ClineSource(Settings(folders={"cline": str(tmp_path / "d")})).roots() == [str(tmp_path / "d" / "sessions")]
    monkeypatch.setenv("CLINE_SESSION_DATA_DIR", str(tmp_path / "s"))
    assert ClineSource(Settings(folders={"cline": str(tmp_path / "d")})).roots() == [str(tmp_path / "s")]


def test_every_entry_looked_at_is_accounted_for(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(data_dir("07-subagent") / "sessions", data / "sessions")
    (data / "sessions" / "stray.txt").write_text("x")
    (data / "sessions" / "empty").mkdir()
    folder = next(p for p in (data / "sessions").iterdir() if p.is_dir() and p.name != "empty")
    (folder / "notes.md").write_text("x")
    src = ClineSource(Settings(folders={"cline": str(data)}))
    assert list(src.scan({})) == [f"cline:{folder.name}"]
    assert {Path(p).name: v for p, (v, _why) in src.accounts.items()} == {
        "stray.txt": "not a session",
        "empty": "not a session",
        "notes.md": "not a session",
    }


# -- live ---------------------------------------------------------------------------------------


def record_of(data: Path) -> dict:
    (p,) = [p for p in data.glob("sessions/*/*.json") if not p.name.endswith(".messages.json")]
    return json.loads(p.read_text())


def hub(pid: int) -> ProcTable:
    """The process the record names, a Cline hub daemon, and nothing else of this machine."""
    return ProcTable([Proc(pid, 1, ["/opt/cline/bin/cline", "--cline-hub-daemon", "--port", "18599"], "/")])


@pytest.mark.parametrize("snap", SNAPSHOTS)
def test_every_live_snapshot_on_the_board_with_its_recorded_process(snap):
    t = json.loads((CLINE / snap / "truth.json").read_text())
    data = data_dir(snap)
    h = cline_huddle(data, hub(record_of(data)["pid"]))
    (row,) = as_json(api.sessions(h, at=t["at"]))["sessions"]
    assert row["state"] == STATE[t["state"]], row
    if t["state"] == "needs-you-approval":
        assert row["waiting_for"] == "tool approval: run_commands: sleep 8; echo slept"
    if t["state"] == "needs-you-question":
        assert row["waiting_for"] == "Which greeting should app.py print?"
    live = h.handle(f"cline:{row['id']}").live(t["at"])
    assert "state" not in json.dumps(live.json())  # signals only: the attention rules decide
    if row["state"] != "ended":
        assert live.alive is True and "hub daemon" in live.guess  # a TUI's pid outlives it


def test_a_streaming_first_reply_shows_the_records_prompt_once(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(data_dir("08-interactive-approval/live/01-working-model-streaming"), data)
    h = cline_huddle(data)
    s = only(h)
    assert [e.text for e in kinds(s, ev.PROMPT)] == ["[[scn:approve]] Sleep a while please."]
    later = data_dir("08-interactive-approval/live/04-your-turn-finished")
    for p in later.glob("sessions/*/*"):
        _rewrite_in_place(data / p.relative_to(later), p.read_bytes())
    h.refresh()
    s = only(h)
    assert [e.kind for e in s.events][:2] == [ev.PROMPT, ev.THINK] and len(kinds(s, ev.PROMPT)) == 1


def test_a_status_cline_did_not_make_final_with_its_process_gone_is_ended():
    data = data_dir("08-interactive-approval/live/03-working-tool-running")
    pid = record_of(data)["pid"]
    for procs in (ProcTable([]), ProcTable([Proc(pid, 1, ["/usr/bin/vim"], "/")])):  # gone, or reused
        h = cline_huddle(data, procs)
        assert only(h).key and as_json(api.sessions(h))["sessions"][0]["state"] == "ended"


def test_a_server_follows_a_tui_session_as_cline_rewrites_its_files(tmp_path):
    """Waiting for approval, then the command running, then your turn, then ended: each the
    moment Cline rewrites its record (and documents) in place, through the watcher."""
    live = "08-interactive-approval/live"
    data = tmp_path / "data"
    shutil.copytree(data_dir(f"{live}/02-needs-you-approval"), data)
    h = cline_huddle(data, hub(record_of(data)["pid"]))
    (s,) = h.sessions()
    with ServerThread(h, watch_options={"poll_watched": 600.0, "full_every": 600.0}) as srv:
        for snap, states in [
            ("02-needs-you-approval", {"needs_you"}),
            ("03-working-tool-running", {"working"}),
            ("04-your-turn-finished", {"your_turn", "idle"}),  # idle once its files are half an hour old
            ("05-ended-after-exit", {"ended"}),
        ]:
            src = data_dir(f"{live}/{snap}")
            for p in sorted(src.glob("sessions/*/*")):
                if (data / p.relative_to(src)).read_bytes() != p.read_bytes():
                    _rewrite_in_place(data / p.relative_to(src), p.read_bytes())
            wait_until(lambda states=states: api_row(srv.url, s.key)["state"] in states, time.time() + WITHIN, snap)


# -- documents rewritten in place ------------------------------------------------------------


def _rewrite_in_place(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab+") as f:  # in place, as Cline writes: same inode
        f.truncate(0)
        f.write(data)


def _doc_with(doc: dict, n: int) -> bytes:
    return json.dumps({**doc, "messages": doc["messages"][:n]}, indent=2).encode()


def test_documents_growing_in_place_read_as_a_fresh_read_and_unchanged_ones_never(tmp_path, monkeypatch):
    src = data_dir("07-subagent") / "sessions"
    (folder,) = list(src.iterdir())
    data = tmp_path / "data"
    out = data / "sessions" / folder.name
    out.mkdir(parents=True)
    fresh = only(cline_huddle(data_dir("07-subagent")))
    want = sorted(((e.kind, e.agent, e.id, e.text, e.ok, e.target) for e in fresh.events), key=repr)
    feeds: list[str] = []
    orig = DocParser.feed
    monkeypatch.setattr(DocParser, "feed", lambda self, d: feeds.append(self.path) or orig(self, d))
    record = folder / f"{folder.name}.json"
    lead = json.loads((folder / f"{folder.name}.messages.json").read_text())
    (sub_path,) = folder.glob("agent_*.messages.json")
    sub = json.loads(sub_path.read_text())
    h = Huddle(Settings(folders={"cline": str(data)}, huddle_home=str(tmp_path / "hh")), sources=["cline"])
    _rewrite_in_place(out / record.name, record.read_bytes())
    # the lead's order, the sub-agent working message by message, then the lead's report and answer
    steps = [(lead, out / f"{folder.name}.messages.json", n) for n in range(3)]
    steps += [(sub, out / sub_path.name, n) for n in range(len(sub["messages"]) + 1)]
    steps += [(lead, out / f"{folder.name}.messages.json", n) for n in range(3, len(lead["messages"]) + 1)]
    for doc, path, n in steps:
        _rewrite_in_place(path, _doc_with(doc, n))
        h.refresh()
        before = len(feeds)
        h.refresh()
        assert len(feeds) == before  # nothing moved: no document read again
    s = only(h)
    assert sorted(((e.kind, e.agent, e.id, e.text, e.ok, e.target) for e in s.events), key=repr) == want
    assert s.usage.to_dict() == fresh.usage.to_dict() and s.skipped_lines == 0


def test_a_document_rewritten_before_its_end_is_read_again_from_the_start(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(data_dir("04-resume"), data)
    h = cline_huddle(data)
    (path,) = data.glob("sessions/*/*.messages.json")
    doc = json.loads(path.read_text())
    doc["messages"] = doc["messages"][2:]  # as a compaction would
    _rewrite_in_place(path, json.dumps(doc, indent=2).encode())
    h.refresh()
    cold = cline_huddle(data)
    got, want = only(h), only(cold)
    assert [(e.kind, e.text) for e in got.events] == [(e.kind, e.text) for e in want.events]
    assert got.epoch == 1 and got.usage.to_dict() == want.usage.to_dict()


def test_a_message_of_an_odd_shape_costs_that_message(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(data_dir("02-shell"), data)
    clean = len(only(cline_huddle(data)).events)
    (path,) = data.glob("sessions/*/*.messages.json")
    doc = json.loads(path.read_text())
    doc["messages"][1] = {"role": "assistant", "content": 7, "metrics": "x"}
    path.write_text(json.dumps(doc, indent=2))
    s = only(cline_huddle(data))
    assert s.error is None and s.skipped_lines == 1 and str(path) in s.problems[0]
    assert clean - 6 <= len(s.events) < clean


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(rnd=st.randoms(use_true_random=False), which=st.sampled_from(["record", "lead", "sub"]))
def test_a_hostile_document_costs_its_session_only(tmp_path_factory, rnd, which):
    data = tmp_path_factory.mktemp("hostile") / "data"
    for name in ("07-subagent", "02-shell"):
        shutil.copytree(data_dir(name) / "sessions", data / "sessions", dirs_exist_ok=True)
    base = {s.key: len(s.events) for s in cline_huddle(data).sessions()}
    folder = data / "sessions" / truth("07-subagent")["session_id"]
    path = {
        "record": folder / f"{folder.name}.json",
        "lead": folder / f"{folder.name}.messages.json",
        "sub": next(folder.glob("agent_*")),
    }[which]
    bad = faults.mutate(path.read_bytes().replace(b"\n", b" "), rnd)
    path.write_bytes(bad)
    os.utime(path, (1, 1))  # it stood still: not one Cline is writing
    h = cline_huddle(data)
    got = {s.key: s for s in h.sessions()}
    assert set(got) == set(base)
    other = f"cline:{truth('02-shell')['session_id']}"
    assert len(got[other].events) == base[other] and got[other].skipped_lines == 0
    mine = got[f"cline:{folder.name}"]
    assert mine.error is None and all(str(path) in p for p in mine.problems) and mine.skipped_lines <= 1


# -- the views, read-only -------------------------------------------------------------------------


def test_cli_twins_views_and_a_server_write_nothing(tmp_path, monkeypatch):
    home = tmp_path / "user"
    for name in ("07-subagent", "05-errors"):
        shutil.copytree(CLINE / name / "home", home, dirs_exist_ok=True)
    before = fingerprint(home)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HUDDLE_SOURCES", "cline")
    r = CliRunner().invoke(main, ["status", "--json"])
    assert r.exit_code == 0, r.output
    rows = {row["id"]: row for row in json.loads(r.output)["sessions"]}
    sub = truth("07-subagent")["session_id"]
    assert set(rows) == {sub, truth("05-errors")["session_id"]}
    assert rows[sub]["resume"] == f"cline --id {sub}" and len(rows[sub]["agents"]) == 2
    for args in (["show", sub, "--json"], ["usage", "--json"], ["search", "Python", "--json"], ["export", sub]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 0, (args, r.output)
    h = Huddle(Settings.from_env(), sources=["cline"])
    with ServerThread(h, watch_options={"poll_watched": 600.0, "full_every": 600.0}) as srv:
        got = httpx.get(srv.url + "api/sessions", timeout=20).json()
        assert {r["id"] for r in got["sessions"]} == set(rows)
        assert httpx.get(f"{srv.url}api/sessions/{sub}/events", timeout=20).status_code == 200
        assert httpx.get(f"{srv.url}session/{sub}", timeout=20).status_code == 200
    assert fingerprint(home) == before
