"""The Kilo CLI source on the real databases of Kilo CLI 7.7.7 (OpenCode's schema, read by the
OpenCode reader under Kilo's names): what is Kilo's own (its names, folders and titles, forks
counted once, every live snapshot with its recorded processes through the board, a fork read
row by row equal to a fresh read, hostile rows, and a write-free proof of a full read and a
server run). Sessions, trees, tokens against a count of their own and live snapshots from the
files alone over every sample: tests/test_conformance.py."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from conftest import SAMPLES, fingerprint
from huddle.cli import main
from huddle.core import Huddle
from huddle.io.proctable import Proc, ProcTable
from huddle.model import events as ev
from huddle.server import ServerThread
from huddle.sources import Settings
from huddle.sources.kilo import KiloSource
from huddle.sources.kilo.live import NO_TABLE
from huddle.views import api
from huddle.views.states import classify
from opencode_writer import Writer
from said import as_json

KILO = SAMPLES / "kilo"
SCENARIOS = sorted(p.name for p in KILO.iterdir() if (p / "home" / ".local" / "share" / "kilo").is_dir())
CASES = [
    (name, t["session_id"])
    for name in SCENARIOS
    for t in json.loads((KILO / name / "truth.json").read_text())["sessions"]
]
LIVE = KILO / "08-interactive-approval" / "live"
SNAPSHOTS = sorted(p.name for p in LIVE.iterdir() if (p / "truth.json").exists())
STATE = {
    "working-model-streaming": "working",
    "needs-you-approval": "needs_you",
    "working-tool-running": "working",
    "your-turn-finished": "your_turn",
    "ended-after-exit": "ended",
}
CWD = "/home/dev/work/proj"
LIVE_SID = "ses_db69da9f1ffenQRdOqQxy1Zqgl"
A, B = "ses_db6a6b685ffePC8wI98xcsy9v4", "ses_db6a6353effehApOZfzC5Z3wHD"  # 10-fork-title: B is A's fork


def data_dir(name: str) -> Path:
    return KILO / name / "home" / ".local" / "share" / "kilo"


def kilo_huddle(data: Path | str, home: str = "/nonexistent-huddle-test") -> Huddle:
    h = Huddle(Settings(folders={"kilo": str(data)}, huddle_home=home), sources=["kilo"])
    h.refresh()
    return h


def truth(name: str, sid: str) -> dict:
    return next(t for t in json.loads((KILO / name / "truth.json").read_text())["sessions"] if t["session_id"] == sid)


def session(h: Huddle, sid: str):
    return next(s for s in h.sessions() if s.id == sid)


def kinds(s, kind, agent=None):
    return [e for e in s.events if e.kind == kind and (agent is None or e.agent == agent)]


@pytest.mark.parametrize(("name", "sid"), CASES)
def test_keys_titles_and_prompts_as_kilo_says_them(name, sid):
    """(Sessions, trees, tokens against a count of their own, tool calls, live snapshots from
    the files alone: tests/test_conformance.py.) "New session - <time>" is no title, `run
    --title` is the user's; each prompt is its own turn's."""
    t = truth(name, sid)
    s = session(kilo_huddle(data_dir(name)), sid)
    assert s.source == "kilo" and s.key == f"kilo:{sid}"
    assert (s.custom_title or s.ai_title or None) == t["expected_title"]
    assert bool(s.custom_title) == bool(t["title_set_by_user"])
    prompts = [e.text for e in kinds(s, ev.PROMPT) if not e.copied]
    for turn, p in zip(t["turns"], prompts, strict=True):
        assert f"[[scn:{turn['marker']}]]" in p


def test_a_fork_shows_its_copied_history_and_counts_only_its_own():
    h = kilo_huddle(data_dir("10-fork-title"))
    a, b = session(h, A), session(h, B)
    copied = [e for e in b.events if e.copied]
    assert {e.kind for e in copied} >= {ev.PROMPT, ev.TOOL_CALL, ev.USAGE, ev.SAY}
    assert [e.text for e in kinds(b, ev.PROMPT)] == [e.text for e in kinds(a, ev.PROMPT)] + [
        next(e.text for e in kinds(b, ev.PROMPT) if not e.copied)
    ]
    assert all(e.copied for e in b.events[: len(copied)])  # the copies come first, as Kilo wrote them
    assert b.ai_title == b.custom_title == ""  # "Line count (fork #1)" is A's title, copied
    assert a.custom_title == "Line count"
    usage = api.usage(h)  # every response once: A's two in A, B's own two in B
    want = sum(truth("10-fork-title", sid)["usage_session_total"]["total_tokens"] for sid in (A, B))
    assert usage["totals"]["total_tokens"] == want and usage["totals"]["responses"] == 4


def test_events_of_a_plain_question_a_continued_session_and_errors():
    s = session(kilo_huddle(data_dir("01-qa")), truth_id("01-qa"))
    assert [e.kind for e in s.events] == [ev.PROMPT, ev.THINK, ev.SAY, ev.USAGE, ev.TURN_END]
    s = session(kilo_huddle(data_dir("04-continue")), truth_id("04-continue"))
    assert len(kinds(s, ev.PROMPT)) == 3 and len(kinds(s, ev.TURN_END)) == 3
    s = session(kilo_huddle(data_dir("05-errors")), truth_id("05-errors"))
    assert [r.ok for r in kinds(s, ev.TOOL_RESULT)] == [False, False, True]


def test_a_sub_agent_has_its_order_and_report():
    s = session(kilo_huddle(data_dir("07-subagent")), truth_id("07-subagent"))
    (child,) = [a for a in s.agents.values() if a.id != s.id]
    (order,) = kinds(s, ev.ORDER)
    (report,) = kinds(s, ev.REPORT)
    assert order.target == child.id and child.tool_use_id == order.id and child.kind == "general"
    assert report.id == order.id and report.ok and child.report
    assert [e.name for e in kinds(s, ev.TOOL_CALL, child.id)] == ["bash"]


def truth_id(name: str) -> str:
    return json.loads((KILO / name / "truth.json").read_text())["sessions"][0]["session_id"]


# -- folders ----------------------------------------------------------------------------------


def test_folder_rules_of_the_cli(tmp_path, monkeypatch):
    env = {"HOME": str(tmp_path)}
    assert Settings.from_env(env).folder("kilo") == str(tmp_path / ".local" / "share" / "kilo")
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    assert Settings.from_env(env).folder("kilo") == str(tmp_path / "data" / "kilo")
    env["HUDDLE_KILO_DIR"] = str(tmp_path / "mine")
    assert Settings.from_env(env).folder("kilo") == str(tmp_path / "mine")
    data = tmp_path / "d"
    data.mkdir()
    for n in ("kilo.db", "kilo-dev.db", "opencode-beta.db", "opencode.db", "other.db"):
        (data / n).write_bytes(b"")
    src = KiloSource(Settings(folders={"kilo": str(data)}))
    # the default channel first, then other channels' (an older build's opencode-<channel>.db too)
    assert [Path(p).name for p in src.db_paths()] == ["kilo.db", "kilo-dev.db", "opencode-beta.db"]
    src.scan({})
    assert src.accounts[str(data / "opencode.db")][0] == "not a session"  # OpenCode's own name: not Kilo's
    assert src.accounts[str(data / "kilo.db")] == ("not a session", "an empty database: nothing written yet")
    monkeypatch.setenv("KILO_DB", "custom.db")
    assert src.db_paths() == [str(data / "custom.db")]
    src = KiloSource(Settings(folders={"kilo": str(tmp_path / "h" / ".local" / "share" / "kilo")}))
    assert src.state_dir == str(tmp_path / "h" / ".local" / "state" / "kilo")


def test_every_file_looked_at_is_accounted_for(tmp_path):
    data = tmp_path / "kilo"
    shutil.copytree(data_dir("01-qa"), data)
    (data / "log").mkdir()
    (data / "storage").mkdir()
    (data / "telemetry-id").write_text("x")
    src = KiloSource(Settings(folders={"kilo": str(data)}))
    assert list(src.scan({})) == [f"kilo:{truth_id('01-qa')}"]
    assert {Path(p).name: v for p, (v, _why) in src.accounts.items()} == {
        "kilo.db-wal": "not a session",
        "kilo.db-shm": "not a session",
        "log": "not a session",
        "storage": "not a session",
        "telemetry-id": "not a session",
    }


# -- live ---------------------------------------------------------------------------------------


def snapshot_data(snap: str) -> Path:
    d = LIVE / snap / "home" / ".local" / "share" / "kilo"
    return d if d.exists() else LIVE / "04-your-turn-finished" / "home" / ".local" / "share" / "kilo"


def recorded(t: dict) -> ProcTable:
    """Kilo's TUI (unless it had exited) and, below it, the processes the truth lists."""
    procs = []
    for i, cmd in enumerate(t["processes"]):
        argv = cmd.split(" ", 2) if " -c " in cmd else cmd.split(" ")
        procs.append(Proc(100 + i, 99 + i if i else 1, argv, CWD))
    return ProcTable(procs)


@pytest.mark.parametrize("snap", SNAPSHOTS)
def test_every_live_snapshot_on_the_board_with_its_recorded_processes(snap):
    t = json.loads((LIVE / snap / "truth.json").read_text())
    h = Huddle(Settings(folders={"kilo": str(snapshot_data(snap))}, huddle_home="/nonexistent"), sources=["kilo"])
    h.sources[0].system.recorded = recorded(t)
    h.refresh()
    (row,) = as_json(api.sessions(h, at=t["at"]))["sessions"]
    assert row["state"] == STATE[t["state"]], row
    assert row["id"] == LIVE_SID
    if row["state"] == "needs_you":
        assert row["waiting_for"] == "approve bash: sleep 8; echo slept"  # in OpenCode's words
    live = h.handle(f"kilo:{LIVE_SID}").live(t["at"])
    assert live.alive is (t["state"] != "ended-after-exit")
    assert "state" not in json.dumps(live.json())  # signals only: the attention rules decide


def test_without_a_process_table_it_says_what_it_cannot_know():
    """(Each snapshot's state from its files alone: tests/test_conformance.py.)"""
    for snap in SNAPSHOTS:
        t = json.loads((LIVE / snap / "truth.json").read_text())
        h = kilo_huddle(snapshot_data(snap))
        (s,) = h.sessions()
        live = h.handle(s.key).live(t["at"])
        assert live.alive is None and live.guess == NO_TABLE, snap


def test_a_command_running_below_kilo_is_approved_though_its_part_has_no_output_yet():
    t = json.loads((LIVE / "02-needs-you-approval" / "truth.json").read_text())
    h = kilo_huddle(snapshot_data("02-needs-you-approval"))
    h.sources[0].system.recorded = ProcTable(
        [Proc(100, 1, ["kilo"], CWD), Proc(101, 100, ["/usr/bin/bash", "-c", "sleep 8; echo slept"])]
    )
    (s,) = h.sessions()
    live = h.handle(s.key).live()
    assert live.status == "busy" and live.alive is True and live.pid == 100
    assert classify(s, live, now=t["at"])[0].state == "working"


def test_a_kilo_daemon_leaves_liveness_unknown_and_says_why():
    h = kilo_huddle(snapshot_data("04-your-turn-finished"))
    h.sources[0].system.recorded = ProcTable([Proc(20, 1, ["kilo", "serve", "--port", "4096"], CWD)])
    (s,) = h.sessions()
    live = h.handle(s.key).live()
    assert live.alive is None and "daemon" in live.guess


def test_a_fork_written_row_by_row_equals_a_fresh_read(tmp_path):
    """Kilo's `run --fork` as it happens: the session row, the copies of A's messages and parts
    (their own old times), then the fork's new turn streaming in, read after every write."""
    data = tmp_path / "kilo"
    shutil.copytree(data_dir("10-fork-title"), data)
    fresh = kilo_huddle(data)
    want = sorted(((e.kind, e.id, e.text, e.ok, e.copied) for e in session(fresh, B).events), key=repr)
    with Writer(data / "kilo.db") as w:
        parts = w.run("SELECT id, message_id, time_created, time_updated, data FROM part WHERE session_id = ?", B)
        msgs = w.run("SELECT id, time_created, time_updated, data FROM message WHERE session_id = ?", B)
        w.run("DELETE FROM part WHERE session_id = ?", B)
        w.run("DELETE FROM message WHERE session_id = ?", B)
        h = Huddle(Settings(folders={"kilo": str(data)}, huddle_home=str(tmp_path / "hh")), sources=["kilo"])
        h.refresh()
        for mid, tc, tu, raw in sorted(msgs, key=lambda m: (m[1], m[0])):
            w.run(
                "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?)",
                mid,
                B,
                tc,
                tu,
                raw,
            )
            _logged(w, "message.updated.1", {"info": {"id": mid}})
            for pid, _m, ptc, ptu, praw in sorted(p for p in parts if p[1] == mid):
                w.run(
                    "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    pid,
                    mid,
                    B,
                    ptc,
                    ptu,
                    praw,
                )
                _logged(w, "message.part.updated.1", {"part": {"id": pid, "messageID": mid}})
                h.refresh()
    got = sorted(((e.kind, e.id, e.text, e.ok, e.copied) for e in session(h, B).events), key=repr)
    assert got == want
    assert session(h, B).usage.to_dict() == session(fresh, B).usage.to_dict()


def _logged(w: Writer, kind: str, data: dict) -> None:
    """The event Kilo logs with each write (what finds a row whose clock is behind the window)."""
    ((seq,),) = w.run("UPDATE event_sequence SET seq = seq + 1 WHERE aggregate_id = ? RETURNING seq", B)
    w.run(
        "INSERT INTO event (id, aggregate_id, seq, type, data) VALUES (?, ?, ?, ?, ?)",
        f"evt_test{seq:06d}",
        B,
        seq,
        kind,
        json.dumps({"sessionID": B, **data}),
    )


@pytest.mark.parametrize("seed", range(6))
def test_a_hostile_row_costs_that_row_only(tmp_path, seed):
    rnd = random.Random(seed)
    data = tmp_path / "kilo"
    shutil.copytree(data_dir("07-subagent"), data)
    clean = sum(len(s.events) for s in kilo_huddle(data).sessions())
    table = rnd.choice(["message", "part"])
    with Writer(data / "kilo.db") as w:
        rowid, raw = rnd.choice(w.run(f"SELECT rowid, data FROM {table}"))
        # Kilo's indexes on json_extract() keep malformed JSON out of both tables: odd JSON it is
        odd = json.loads(raw)
        odd[rnd.choice(sorted(odd))] = rnd.choice(
            [None, -1, 1.5, "12", True, [], {}, 10**30, json.loads("[" * 500 + "]" * 500)]
        )
        bad = rnd.choice(
            [json.dumps(odd), '{"role": 5, "time": "x", "tokens": []}', '{"type": 7, "state": "x"}', "[1]"]
        )
        w.run(f"UPDATE {table} SET data = ? WHERE rowid = ?", bad, rowid)
    (s,) = kilo_huddle(data).sessions()
    assert s.error is None and s.skipped_lines <= 1
    assert all("kilo.db" in p for p in s.problems)
    assert len(s.events) >= clean - 6  # one row holds at most one response's events


# -- the views, read-only -------------------------------------------------------------------------


def test_cli_twins_views_and_a_server_write_nothing(tmp_path, monkeypatch):
    home = tmp_path / "user"
    shutil.copytree(KILO / "10-fork-title" / "home", home)
    # two homes' databases cannot merge: the other one goes in as another channel's
    kilo = home / ".local" / "share" / "kilo"
    for suffix in ("", "-wal", "-shm"):
        shutil.copyfile(data_dir("07-subagent") / f"kilo.db{suffix}", kilo / f"kilo-dev.db{suffix}")
    before = fingerprint(home)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HUDDLE_SOURCES", "kilo")
    r = CliRunner().invoke(main, ["status", "--json"])
    assert r.exit_code == 0, r.output
    rows = {row["id"]: row for row in json.loads(r.output)["sessions"]}
    sub = truth_id("07-subagent")
    assert set(rows) == {A, B, sub}
    assert rows[A]["title"] == "Line count" and rows[A]["resume"] == f"kilo --session {A}"
    assert len(rows[sub]["agents"]) == 2
    for args in (["show", B, "--json"], ["usage", "--json"], ["search", "README", "--json"], ["export", A]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 0, (args, r.output)
    h = Huddle(Settings.from_env(), sources=["kilo"])
    with ServerThread(h, watch_options={"poll_watched": 600.0, "full_every": 600.0}) as srv:
        got = httpx.get(srv.url + "api/sessions", timeout=20).json()
        assert {r["id"] for r in got["sessions"]} == set(rows)
        assert httpx.get(f"{srv.url}api/sessions/{sub}/events", timeout=20).status_code == 200
        assert httpx.get(f"{srv.url}session/{sub}", timeout=20).status_code == 200
    assert fingerprint(home) == before
