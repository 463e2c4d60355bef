"""Copilot CLI states on the live snapshots of real 1.0.102 runs (a TUI session waiting for an
approval, running the tool, streaming, finished, exited; a `-p` run waiting on its
sub-agent), each against its truth through the board with its recorded processes (from
the files alone, and live reads of every sample: tests/test_conformance.py); a real
process holding a session's `inuse.<pid>.lock`; the TUI's `working` flag; the process log
growing beside the events."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import SAMPLES
from huddle.cli import main
from huddle.core import Huddle
from huddle.io.proctable import Proc, ProcTable
from huddle.model.signals import Live
from huddle.sources import Settings
from huddle.sources.copilot import CopilotSource
from huddle.views.board import board_json
from said import as_json

COPILOT = SAMPLES / "copilot"
SNAPSHOTS = sorted(str(p.parent.relative_to(COPILOT)) for p in COPILOT.glob("*/live/*/truth.json"))
STATE = {
    "needs-you-approval": "needs_you",
    "working-tool-running": "working",
    "working-streaming": "working",
    "your-turn-finished": "your_turn",
    "ended-after-exit": "ended",
    "waiting-on-subagent": "waiting",
}
CWD = "/home/dev/work/proj"


def truth_of(snap: str) -> dict:
    return json.loads((COPILOT / snap / "truth.json").read_text())


def recorded(home: Path, truth: dict) -> ProcTable:
    """The truth's processes: the CLI first (the pid its lock names), each next one below it."""
    pids = [int(p.name.split(".")[1]) for p in home.glob("session-state/*/inuse.*.lock")]
    procs = []
    for i, cmd in enumerate(truth["processes"]):
        pid = pids[0] if i == 0 and pids else 100_000 + i
        procs.append(Proc(pid, procs[-1].pid if procs else 1, cmd.split(" "), CWD))
    return ProcTable(procs)


def board(home: Path, view: ProcTable | None) -> dict:
    h = Huddle(Settings(folders={"copilot": str(home)}, huddle_home="/nonexistent-huddle-test"), sources=["copilot"])
    h.idle_after = 1e9  # (the snapshots are hours old by now: judged as at their moment)
    for src in h.sources:
        src.system.recorded = view
    h.refresh()
    (row,) = as_json(board_json(h))["sessions"]
    return row


@pytest.mark.parametrize("snap", SNAPSHOTS)
def test_every_snapshot_on_the_board_with_its_recorded_processes(snap):
    truth = truth_of(snap)
    home = COPILOT / snap / "home" / ".copilot"
    row = board(home, recorded(home, truth))
    assert row["id"] == truth["session_id"]
    assert row["state"] == STATE[truth["state"]], row
    if row["state"] == "needs_you":
        assert row["waiting_for"] == "approve bash: sleep 8; echo slept"
    if truth["state"] == "working-tool-running":
        assert row["doing"] == "running sleep 8; echo slept"
    if row["state"] == "waiting":
        assert row["waiting_for"] == "Count Python files"  # its sub-agent, working on it
        (sub,) = [a for a in row["agents"] if a["id"] == "call_subagent_0_0_1"]
        assert sub["state"] == "working"
    assert (row.get("pid") is not None) == (truth["state"] != "ended-after-exit")


def test_the_tui_says_working_and_idle():
    snap = "08-interactive-approval/live/04-your-turn-finished"
    home = COPILOT / snap / "home" / ".copilot"
    src = CopilotSource(Settings(folders={"copilot": str(home)}))
    src.system.recorded = recorded(home, truth_of(snap))
    (h,) = src.scan({}).values()
    h.refresh()
    live = h.live()
    assert live.status == "idle" and live.alive is True and live.status_since == 1796526801.9


# -- a real process holding the lock ------------------------------------------------------------


def lock(folder: Path, pid: int) -> Path:
    for old in folder.glob("inuse.*"):
        old.unlink()
    p = folder / f"inuse.{pid}.lock"
    p.write_text(str(pid))
    (folder / f"inuse.{pid}.hold").write_text("")
    return p


def test_a_real_process_holding_the_session_then_gone(tmp_path, monkeypatch):
    home = tmp_path / "user" / ".copilot"
    shutil.copytree(COPILOT / "08-interactive-approval" / "live" / "01-needs-you-approval" / "home" / ".copilot", home)
    (folder,) = [p for p in (home / "session-state").iterdir() if not p.name.startswith(".")]
    proc = subprocess.Popen(["sleep", "600"])
    try:
        lock(folder, proc.pid)
        monkeypatch.setenv("COPILOT_HOME", str(home))
        monkeypatch.setenv("HUDDLE_SOURCES", "copilot")
        r = CliRunner().invoke(main, ["status", "--json"])
        assert r.exit_code == 0, r.output
        (row,) = json.loads(r.output)["sessions"]
        assert row["state"] == "needs_you" and row["pid"] == proc.pid
    finally:
        proc.kill()
        proc.wait()
    r = CliRunner().invoke(main, ["status", "--json"])
    (row,) = json.loads(r.output)["sessions"]
    assert row["state"] == "ended" and row.get("pid") is None  # a crash left its lock: the pid is gone


def test_a_lock_older_than_its_process_names_another_process(tmp_path):
    """A pid reused: the process running under it started after the lock was made."""
    home = tmp_path / ".copilot"
    shutil.copytree(COPILOT / "07-subagent" / "live" / "01-waiting-on-subagent" / "home" / ".copilot", home)
    (folder,) = [p for p in (home / "session-state").iterdir() if not p.name.startswith(".")]
    proc = subprocess.Popen(["sleep", "600"])
    try:
        p = lock(folder, proc.pid)
        src = CopilotSource(Settings(folders={"copilot": str(home)}))
        (h,) = src.scan({}).values()
        h.refresh()
        assert h.live().alive is True
        made = time.time() - 3600
        os.utime(p, (made, made))
        (h,) = src.scan({}).values()
        assert h.live() == Live(alive=False)
    finally:
        proc.kill()
        proc.wait()


def test_the_open_sessions_file_moving_is_a_live_change(tmp_path):
    home = tmp_path / ".copilot"
    snap = COPILOT / "08-interactive-approval" / "live" / "03-working-streaming" / "home" / ".copilot"
    shutil.copytree(snap, home)
    src = CopilotSource(Settings(folders={"copilot": str(home)}))
    src.scan({})
    assert src.live_changed() == {"copilot:df8521fe-2abe-4488-85e9-c32b72d26544"}  # first seen
    assert src.between_scans({}) == set()
    state = home / "open-sessions-state.json"
    doc = json.loads(state.read_text())
    doc["df8521fe-2abe-4488-85e9-c32b72d26544"]["working"] = False
    state.write_text(json.dumps(doc))
    assert src.between_scans({}) == {"copilot:df8521fe-2abe-4488-85e9-c32b72d26544"}
    assert src.live_inputs() == [str(state)]


# -- a file growing as the CLI writes it ---------------------------------------------------------


def test_failed_requests_from_the_process_log_as_both_files_grow(tmp_path):
    """The CLI writes a failed model request (retried) to its process log only: read there,
    live as the log and events.jsonl grow together, in its place as a cold read has it."""
    home = tmp_path / ".copilot"
    shutil.copytree(COPILOT / "06-http-retry" / "home" / ".copilot", home)
    (events,) = home.glob("session-state/*/events.jsonl")
    (log,) = home.glob("logs/process-*.log")
    lines = events.read_bytes().splitlines(keepends=True)
    said = log.read_bytes().splitlines(keepends=True)
    events.write_bytes(b"")
    log.write_bytes(b"")
    src = CopilotSource(Settings(folders={"copilot": str(home)}))
    (h,) = src.scan({}).values()
    h.refresh()
    for line in lines:  # each file as it was when this line was written
        t = json.loads(line)["timestamp"]
        while said and said[0][:24].decode() <= t:
            with open(log, "ab") as f:
                f.write(said.pop(0))
            h.refresh()
        with open(events, "ab") as f:
            f.write(line)
        h.refresh()
    cold = CopilotSource(Settings(folders={"copilot": str(home)}))
    (c,) = cold.scan({}).values()
    c.refresh()
    got = [(e.kind, e.name, e.text, e.file) for e in h.session.events]
    assert got == [(e.kind, e.name, e.text, e.file) for e in c.session.events]
    retries = [e for e in c.session.events if e.kind == "error"]
    assert [e.text for e in retries] == [
        "model request failed: HTTP 429 (http_error)",
        "model request failed: HTTP 500 (http_error)",
    ]
    assert all(e.file == str(log) and e.name == "retry" for e in retries)
    kinds = [e.kind for e in c.session.events]
    assert kinds.index("error") < kinds.index("usage")  # the first request failed, then one was answered
    assert c.files() == [str(events), str(log)]


def test_the_lock_holder_s_log_is_followed_before_it_names_the_session(tmp_path):
    home = tmp_path / ".copilot"
    shutil.copytree(COPILOT / "06-http-retry" / "home" / ".copilot", home)
    (folder,) = [p for p in (home / "session-state").iterdir() if not p.name.startswith(".")]
    (log,) = home.glob("logs/process-*.log")
    said = log.read_bytes()
    log.write_bytes(said[: said.index(b"Workspace initialized")])  # the process just started
    pid = int(log.name.split("-")[2].split(".")[0])
    (folder / f"inuse.{pid}.lock").write_text(str(pid))
    src = CopilotSource(Settings(folders={"copilot": str(home)}))
    src.system.recorded = ProcTable([Proc(pid, 1, ["copilot"], CWD)])
    (h,) = src.scan({}).values()
    h.refresh()
    assert str(log) in h.files() and not [e for e in h.session.events if e.kind == "error"]
    log.write_bytes(said)
    h.refresh()
    assert [e.name for e in h.session.events if e.kind == "error"] == ["retry", "retry"]
