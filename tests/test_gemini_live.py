"""Gemini CLI states on the live snapshots of a real 0.61.0 TUI session (each with its truth:
the state and the processes at that moment), on chat files growing as the CLI writes them,
and on this machine's own /proc with a real process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import SAMPLES
from huddle.io.proctable import Proc, ProcTable
from huddle.model import events as ev
from huddle.model.attention.session import classify
from huddle.model.signals import Live
from huddle.sources import Settings
from huddle.sources.gemini import GeminiSource
from huddle.sources.gemini.live import named_session, running_command

LIVE = SAMPLES / "gemini" / "08-interactive-approval" / "live"
SNAPSHOTS = sorted(p.name for p in LIVE.iterdir() if (p / "truth.json").exists())
STATE = {
    "needs-you-approval": "needs_you",
    "working-tool-running": "working",
    "your-turn-finished": "your_turn",
    "ended-after-quit": "ended",
}
CWD = "/home/dev/work/proj"


def recorded(truth: dict) -> ProcTable:
    """The truth's processes: the CLI's node process first, each next one below the one before
    (a shell wrapper, its subshell, the command)."""
    procs = []
    for i, cmd in enumerate(truth["processes"]):
        argv = cmd.split(" ", 2) if " -c " in cmd else cmd.split(" ")
        procs.append(Proc(100 + i, 99 + i if i else 1, argv, CWD))
    return ProcTable(procs)


def read(home: Path, view: ProcTable | None = None):
    src = GeminiSource(Settings(folders={"gemini": str(home)}))
    src.system.recorded = view
    (h,) = src.scan({}).values()
    h.refresh()
    return src, h


@pytest.mark.parametrize("snap", SNAPSHOTS)
def test_snapshot_with_its_recorded_processes(snap):
    truth = json.loads((LIVE / snap / "truth.json").read_text())
    _, h = read(LIVE / snap / "home" / ".gemini", recorded(truth))
    live = h.live()
    st, per = classify(h.session, live, now=truth["at"])
    assert st.state == STATE[truth["state"]]
    assert per[truth["session_id"]].state == st.state
    assert live.alive is (truth["state"] != "ended-after-quit")
    if st.state == "needs_you":
        assert st.waiting_for == "approve a tool call"
    if st.state == "working":
        assert st.doing == "running sleep 8; echo slept"


def test_a_headless_or_yolo_run_never_waits_for_approval():
    truth = json.loads((LIVE / "01-needs-you-approval" / "truth.json").read_text())
    for extra in (["-p", "x"], ["--yolo"], ["--approval-mode", "yolo"]):
        view = ProcTable([Proc(100, 1, truth["processes"][0].split(" ") + extra, CWD)])
        _, h = read(LIVE / "01-needs-you-approval" / "home" / ".gemini", view)
        st, _ = classify(h.session, h.live(), now=truth["at"])
        assert st.state == "working", extra


def test_a_process_without_session_id_is_matched_by_its_folder():
    view = ProcTable([Proc(7, 1, ["node", "/usr/lib/node_modules/@google/gemini-cli/dist/index.js"], CWD)])
    src, h = read(LIVE / "03-your-turn-finished" / "home" / ".gemini", view)
    assert src.latest(CWD) == h.lead
    assert h.live().alive is True
    elsewhere = ProcTable([Proc(7, 1, ["gemini"], "/somewhere/else")])
    src.system.recorded = elsewhere
    assert h.live().alive is False


def test_named_sessions_and_the_wrapped_command():
    sid = "189ab50c-da9c-43fd-8d4c-4e6ecdeb6a33"
    assert named_session(["gemini", "--resume", sid]) == sid
    assert named_session(["gemini", f"--session-id={sid}"]) == sid
    assert named_session(["gemini", "-r", "latest"]) is None
    truth = json.loads((LIVE / "02-working-tool-running" / "truth.json").read_text())
    assert running_command(recorded(truth), 100) == "sleep 8; echo slept"


# -- a file growing as the CLI writes it ----------------------------------------------------


def grow(tmp: Path, scenario: str):
    """A copy of a scenario's home whose chat files are empty, and their full lines."""
    home = tmp / "g" / ".gemini"
    shutil.copytree(SAMPLES / "gemini" / scenario / "home" / ".gemini", home)
    files = {}
    for f in sorted((home / "tmp").rglob("*.jsonl")):
        files[f] = f.read_bytes().splitlines(keepends=True)
        f.write_bytes(files[f][0])  # the header, as the CLI writes it first
    return home, files


def test_appended_lines_are_read_once_and_equal_a_fresh_read(tmp_path):
    home, files = grow(tmp_path, "02-shell")
    (path, lines) = next(iter(files.items()))
    src = GeminiSource(Settings(folders={"gemini": str(home)}))
    (h,) = src.scan({}).values()
    h.refresh()
    marks = []
    for line in lines[1:]:
        with open(path, "ab") as f:
            f.write(line[: len(line) // 2])  # a half-written line waits for its newline
        h.refresh()
        with open(path, "ab") as f:
            f.write(line[len(line) // 2 :])
        h.refresh()
        marks.append(h.lead_chat().parser.marks[-1][1] if h.lead_chat().parser.marks else "")
    fresh = GeminiSource(Settings(folders={"gemini": str(home)}))
    (f2,) = fresh.scan({}).values()
    f2.refresh()
    got = [(e.kind, e.id, e.text) for e in h.session.events]
    assert got == [(e.kind, e.id, e.text) for e in f2.session.events]
    assert h.session.usage.to_dict() == f2.session.usage.to_dict()
    assert "tools" in marks and marks[-1] == "answered"


def test_a_sub_agent_running_before_its_lead_writes_the_call(tmp_path):
    home, files = grow(tmp_path, "07-subagent")
    (lead, lead_lines), (child, child_lines) = sorted(files.items(), key=lambda kv: len(kv[0].parts))
    src = GeminiSource(Settings(folders={"gemini": str(home)}))
    call_line = next(i for i, x in enumerate(lead_lines) if b"toolCalls" in x)
    lead.write_bytes(b"".join(lead_lines[:call_line]))  # the lead's first write: no tool calls yet
    child.write_bytes(b"".join(child_lines[:4]))  # the sub-agent's prompt and first response
    (h,) = src.scan({}).values()
    h.refresh()
    s = h.session
    (order,) = [e for e in s.events if e.kind == ev.ORDER]
    assert order.agent == s.id and order.target == child.stem
    st, per = classify(s, None, now=s.updated_at + 1)
    assert per[s.id].state == "waiting" and st.state == "waiting"
    lead.write_bytes(b"".join(lead_lines))
    child.write_bytes(b"".join(child_lines))
    h.refresh()
    assert [e.kind for e in s.events].count(ev.ORDER) == 1
    (report,) = [e for e in s.events if e.kind == ev.REPORT]
    assert report.id == order.id and report.target == child.stem
    assert s.agents[child.stem].report == "There is 1 Python file: app.py."
    _, per = classify(s, Live(alive=True), now=s.updated_at + 1)
    assert per[child.stem].state == "ended"


# -- this machine's /proc ------------------------------------------------------------------------


def test_a_real_process_on_this_machine(tmp_path):
    """A process whose command line names the session; then one with a command below it."""
    home = tmp_path / "g" / ".gemini"
    shutil.copytree(LIVE / "01-needs-you-approval" / "home" / ".gemini", home)
    sid = "189ab50c-da9c-43fd-8d4c-4e6ecdeb6a33"
    exe = tmp_path / "bin" / "gemini"
    exe.parent.mkdir()
    exe.write_text(
        "import subprocess, sys, time\n"
        "kid = subprocess.Popen(['sleep', '60']) if '--with-child' in sys.argv else None\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    src = GeminiSource(Settings(folders={"gemini": str(home)}))
    (h,) = src.scan({}).values()
    h.refresh()
    for extra, want in (([], "needs_you"), (["--with-child"], "working")):
        p = subprocess.Popen([sys.executable, str(exe), "--session-id", sid, *extra], stdout=subprocess.PIPE)
        try:
            assert p.stdout.readline() == b"ready\n"
            deadline = time.monotonic() + 120  # a loaded machine: the table may show the child late
            while True:
                src.system._view = None
                live = h.live()
                st, _ = classify(h.session, live)
                seen = (live.alive, live.pid, st.state, st.doing if want == "working" else "")
                if seen == (True, p.pid, want, "running sleep 60" if want == "working" else ""):
                    break
                assert time.monotonic() < deadline, seen
                time.sleep(0.05)
        finally:
            for k in ProcTable.current().below(p.pid):
                os.kill(k.pid, 9)
            p.kill()
            p.communicate()
    src.system._view = None
    assert h.live().alive is False
