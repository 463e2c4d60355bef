"""Qwen Code states on the live snapshots of a real 0.24.4 TUI session (each with its truth:
the state and the processes at that moment) and of a one-shot run waiting on its
sub-agent, on chat files growing as the CLI writes them, and on this machine's own /proc
with real processes (the reader given only its own)."""

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
from huddle.core import Huddle
from huddle.io.proctable import Proc, ProcTable
from huddle.model import events as ev
from huddle.model.signals import Live
from huddle.sources import Settings
from huddle.sources.qwen import QwenSource
from huddle.sources.qwen.live import (
    GUESS_ANSWER,
    GUESS_APPROVAL,
    GUESS_NO_TABLE,
    GUESS_QUIT,
    Entry,
    entry_alive,
    named_session,
)
from huddle.views import api
from huddle.views.states import classify
from said import as_json

QWEN = SAMPLES / "qwen"
LIVE = QWEN / "08-interactive-approval" / "live"
SNAPSHOTS = sorted(p.name for p in LIVE.iterdir() if (p / "truth.json").exists())
SID = "f8458de6-6cd9-48a7-8f8a-6853ec632dcc"
REGISTRY_PID = 3219  # the TUI's pid, as its sessions/<pid>.json names it
STATE = {
    "needs-you-approval": "needs_you",
    "working-tool-running": "working",
    "working-streaming": "working",
    "your-turn-finished": "your_turn",
    "ended-after-quit": "ended",
}
# Byte-identical to the streaming copy: the final answer was still in the CLI's write
# queue, and the processes were the same. Nothing can tell; said as a guess.
NOTHING_CAN_TELL = {"04-your-turn-finished"}
# The file is the same while an approval waits and while the approved command runs:
# without the process table a pending call reads as working.
FILES_CANNOT_TELL = {"01-needs-you-approval"} | NOTHING_CAN_TELL
CWD = "/home/dev/work/proj"


def home_of(snap: str) -> Path:
    d = LIVE / snap / "home" / ".qwen"
    if not d.exists():  # stored once: SAME_AS.txt names the byte-identical copy before it
        prev = SNAPSHOTS[SNAPSHOTS.index(snap) - 1]
        return home_of(prev)
    return d


def recorded(truth: dict) -> ProcTable:
    """The truth's processes: the TUI (the pid its registry names) and its relaunched self,
    then each next one below the one before; an empty one is a zombie."""
    procs = []
    for i, cmd in enumerate(truth["processes"]):
        argv = (cmd.split(" ", 2) if " -c " in cmd else cmd.split(" ")) if cmd else []
        pid = REGISTRY_PID + i
        procs.append(Proc(pid, pid - 1 if i else 1, argv, CWD))
    return ProcTable(procs)


def read(home: Path, view: ProcTable | None = None):
    src = QwenSource(Settings(folders={"qwen": str(home)}))
    src.system.recorded = view
    (h,) = src.scan({}).values()
    h.refresh()
    return src, h


@pytest.mark.parametrize("snap", SNAPSHOTS)
def test_snapshot_with_its_recorded_processes(snap):
    truth = json.loads((LIVE / snap / "truth.json").read_text())
    _, h = read(home_of(snap), recorded(truth))
    live = h.live()
    st, per = classify(h.session, live, now=truth["at"])
    assert live.alive is (truth["state"] != "ended-after-quit")
    if snap in NOTHING_CAN_TELL:
        assert st.state == "working" and live.guess == GUESS_ANSWER
        return
    assert st.state == STATE[truth["state"]] and per[SID].state == st.state
    if st.state == "needs_you":  # nothing on disk says so: the process table, said as a guess
        assert live.guess == GUESS_APPROVAL and live.status == "waiting"
        assert st.waiting_for.startswith("permission: run_shell_command: Sleep a while: python3 -c")
    if truth["state"] == "working-tool-running":
        assert live.status == "busy" and not live.guess
        assert st.doing.startswith("running python3 -c")
    if truth["state"] == "working-streaming":
        assert live.guess == GUESS_ANSWER and not live.status


@pytest.mark.parametrize("snap", sorted(FILES_CANNOT_TELL | {"05-ended-after-quit"}))
def test_what_the_files_alone_cannot_tell_is_said(snap):
    """(Each snapshot's state from its files alone: tests/test_conformance.py.) Where they
    cannot tell, the guess says why; a quit TUI leaves its runtime note, not its registry
    entry."""
    truth = json.loads((LIVE / snap / "truth.json").read_text())
    _, h = read(home_of(snap))
    live = h.live(at=truth["at"])
    if truth["state"] == "ended-after-quit":
        assert live == Live(alive=False, guess=GUESS_QUIT)
    else:
        assert live.guess in (GUESS_NO_TABLE, GUESS_ANSWER)


@pytest.mark.parametrize("snap", SNAPSHOTS)
def test_the_board_says_each_snapshot_s_state(snap):
    """Through the board's own JSON (`huddle status --json` == GET /api/sessions)."""
    truth = json.loads((LIVE / snap / "truth.json").read_text())
    h = Huddle(Settings(folders={"qwen": str(home_of(snap))}, huddle_home="/nonexistent-huddle"), sources=["qwen"])
    h.sources[0].system.recorded = recorded(truth)
    h.refresh()
    (row,) = as_json(api.sessions(h))["sessions"]
    want = "working" if snap in NOTHING_CAN_TELL else STATE[truth["state"]]
    assert row["state"] == want and row["title"] == "Slow shell command with approval"


def test_a_one_shot_run_waiting_on_its_sub_agent():
    snap = QWEN / "07-subagent" / "live" / "01-waiting-on-subagent"
    truth = json.loads((snap / "truth.json").read_text())
    procs = [Proc(500 + i, 499 + i if i else 1, c.split(" "), CWD) for i, c in enumerate(truth["processes"])]
    _, h = read(snap / "home" / ".qwen", ProcTable(procs))
    live = h.live()
    assert live.alive is True and live.pid == 501  # found by the --session-id it was given
    assert live.status == "busy"  # the sub-agent's command runs below the CLI
    st, per = classify(h.session, live, now=truth["at"])
    assert st.state == "waiting" and st.waiting_for == "Count Python files"
    sub = per[truth["subagent_tool_call_id"]]
    assert sub.state == "working" and "time.sleep(5)" in sub.doing
    assert h.session.agents[truth["subagent_tool_call_id"]].finished is False  # its meta: running


def test_a_headless_or_yolo_run_never_waits_for_approval():
    truth = json.loads((LIVE / "01-needs-you-approval" / "truth.json").read_text())
    tui = truth["processes"][0].split(" ")
    for extra in (["--yolo"], ["-y"], ["--approval-mode", "yolo"]):
        view = ProcTable([Proc(REGISTRY_PID, 1, tui + extra, CWD)])
        _, h = read(home_of("01-needs-you-approval"), view)
        st, _ = classify(h.session, h.live(), now=truth["at"])
        assert st.state == "working", extra
    # no registry entry: a one-shot run (found by its argv), which denies what needs approval
    home = home_of("01-needs-you-approval")
    src = QwenSource(Settings(folders={"qwen": str(home)}))
    src.system.recorded = ProcTable([Proc(77, 1, tui, CWD)])
    (h,) = src.scan({}).values()
    h.refresh()
    src.registry.by_session.clear()
    live = h.live()
    assert live.alive is True and live.pid == 77 and not live.status


def test_named_sessions():
    assert named_session(["qwen", "--resume", SID]) == SID
    assert named_session(["qwen", f"--session-id={SID}"]) == SID
    assert named_session(["qwen", "-r", "latest"]) is None
    assert named_session(["qwen", "--continue"]) is None


# -- a file growing as the CLI writes it ----------------------------------------------------


def grow(tmp: Path, scenario: str) -> tuple[Path, list[tuple[Path, bytes]]]:
    """A copy of a scenario's home with its chat files empty, and every line of them in the
    order of their own timestamps (the lead and its sub-agents interleaved, as written)."""
    home = tmp / "q" / ".qwen"
    shutil.copytree(QWEN / scenario / "home" / ".qwen", home)
    lines = []
    for f in sorted((home / "projects").rglob("*.jsonl")):
        for i, line in enumerate(f.read_bytes().splitlines(keepends=True)):
            lines.append((json.loads(line)["timestamp"], str(f), i, line))
        f.write_bytes(b"")
    lines.sort()
    return home, [(Path(f), line) for _, f, _, line in lines]


@pytest.mark.parametrize("scenario", ["08-interactive-approval", "07-subagent", "10-background-subagent"])
def test_appended_lines_are_read_once_and_equal_a_fresh_read(tmp_path, scenario):
    home, lines = grow(tmp_path, scenario)
    src = QwenSource(Settings(folders={"qwen": str(home)}))
    known = src.scan({})
    (h,) = known.values()
    h.refresh()
    states = []
    for path, line in lines:
        with open(path, "ab") as f:
            f.write(line[: len(line) // 2])  # a half-written line waits for its newline
        h.refresh()
        with open(path, "ab") as f:
            f.write(line[len(line) // 2 :])
        known = src.scan(known)
        (h,) = known.values()
        h.refresh()
        states.append(classify(h.session, {}, now=(h.session.updated_at or 0) + 1)[0].state)
    fresh = QwenSource(Settings(folders={"qwen": str(home)}))
    (f2,) = fresh.scan({}).values()
    f2.refresh()
    got = sorted((e.kind, e.agent, e.id, e.text) for e in h.session.events)
    assert got == sorted((e.kind, e.agent, e.id, e.text) for e in f2.session.events)
    assert h.session.usage.to_dict() == f2.session.usage.to_dict()
    assert h.session.skipped_lines == 0 and states[-1] == "your_turn"
    if scenario == "07-subagent":
        assert "waiting" in states  # the lead waited on its sub-agent


# -- this machine's /proc ------------------------------------------------------------------------


def boot_id() -> str:
    with open("/proc/sys/kernel/random/boot_id") as f:
        return f.read().strip()


def proc_start(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as f:
        stat = f.read().decode()
    return stat[stat.rfind(")") + 2 :].split()[19]


def own(pid: int) -> ProcTable:
    """This machine's process table, but only `pid` and what runs below it."""
    now = ProcTable.current()
    assert now is not None
    keep = {pid} | {p.pid for p in now.below(pid)}
    return ProcTable([p for p in now if p.pid in keep])


def test_a_real_tui_process_on_this_machine(tmp_path):
    """A process standing in for the TUI, with the registry entry a TUI keeps; then the
    same with a command running below it; then gone."""
    home = tmp_path / "q" / ".qwen"
    shutil.copytree(home_of("01-needs-you-approval"), home)
    (home / "sessions" / f"{REGISTRY_PID}.json").unlink()
    exe = tmp_path / "bin" / "qwen"
    exe.parent.mkdir()
    exe.write_text(
        "import subprocess, sys, time\n"
        "kid = subprocess.Popen(['sleep', '60']) if '--with-child' in sys.argv else None\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    src = QwenSource(Settings(folders={"qwen": str(home)}))
    (h,) = src.scan({}).values()
    h.refresh()
    for extra, want in (([], "needs_you"), (["--with-child"], "working")):
        p = subprocess.Popen([sys.executable, str(exe), "--approval-mode", "default", *extra], stdout=subprocess.PIPE)
        entry = home / "sessions" / f"{p.pid}.json"
        try:
            assert p.stdout.readline() == b"ready\n"
            start = proc_start(p.pid)
            entry.write_text(
                json.dumps({"pid": p.pid, "procStart": f"{boot_id()}:{start}", "sessionId": SID, "kind": "tui"})
            )
            assert entry_alive(Entry(pid=p.pid, procStart=f"{boot_id()}:{start}")) is True
            assert entry_alive(Entry(pid=p.pid, procStart=f"{boot_id()}:{int(start) + 1}")) is False  # another process
            src.registry.refresh()
            deadline = time.monotonic() + 120  # a loaded machine: the table may show the child late
            while True:
                src.system.recorded = own(p.pid)
                live = h.live()
                st, _ = classify(h.session, live)
                seen = (live.alive, live.pid, st.state)
                if seen == (True, p.pid, want):
                    break
                assert time.monotonic() < deadline, seen
                time.sleep(0.05)
            if want == "working":
                assert st.doing.startswith("running python3") and live.status == "busy"
        finally:
            for k in ProcTable.current().below(p.pid):
                os.kill(k.pid, 9)
            p.kill()
            p.communicate()
        src.system.recorded = ProcTable([])
        assert h.live().alive is False  # the entry names a process that is gone
        assert entry_alive(Entry(pid=p.pid, procStart=f"{boot_id()}:{start}")) is False
        entry.unlink()
    src.registry.refresh()
    assert not src.registry.by_session


def test_background_sub_agents_are_counted_while_they_run(tmp_path):
    home = tmp_path / "q" / ".qwen"
    shutil.copytree(QWEN / "10-background-subagent" / "home" / ".qwen", home)
    (meta,) = (home / "projects").rglob("*.meta.json")
    d = json.loads(meta.read_text())
    d["status"] = "running"
    meta.write_text(json.dumps(d))
    sid = "79357424-6518-458a-82ae-445711262f74"
    view = ProcTable([Proc(9, 1, ["qwen", "--session-id", sid], CWD)])
    _, h = read(home, view)
    assert len(h.live().background) == 1
    assert h.session.agents["call_bgsub_0_0_1"].finished is False
    d["status"] = "completed"
    meta.write_text(json.dumps(d) + " ")  # rewritten in place: its stamp moves
    h.refresh()
    assert not h.live().background and h.session.agents["call_bgsub_0_0_1"].finished
    assert [e.kind for e in h.session.events if e.agent != sid].count(ev.USAGE) == 2


def test_the_status_line_counts_a_tui_waiting_for_approval(tmp_path):
    """As tests/test_statusline_agents.py for the others: a real process stands for the TUI,
    with the registry entry a TUI keeps."""
    from test_statusline import INPUT, statusline

    home = tmp_path / "user"
    shutil.copytree(home_of("01-needs-you-approval").parent, home)
    (home / ".qwen" / "sessions" / f"{REGISTRY_PID}.json").unlink()
    exe = tmp_path / "bin" / "qwen"
    exe.parent.mkdir()
    exe.write_text("import time\nprint('ready', flush=True)\ntime.sleep(120)\n")
    p = subprocess.Popen([sys.executable, str(exe), "--session-id", SID], stdout=subprocess.PIPE)
    try:
        assert p.stdout.readline() == b"ready\n"
        entry = {"pid": p.pid, "procStart": f"{boot_id()}:{proc_start(p.pid)}", "sessionId": SID, "kind": "tui"}
        (home / ".qwen" / "sessions" / f"{p.pid}.json").write_text(json.dumps(entry))
        env = {
            "HOME": str(home),
            "HUDDLE_HOME": str(tmp_path / "hh"),
            "HUDDLE_SOURCES": "qwen",
            "HUDDLE_STATUSLINE_BUDGET": "20",
        }
        r = statusline(env, json.dumps(INPUT), "--json")
        assert r.returncode == 0, r.stderr
        text = r.stdout
        assert "qwen" in text and "Slow shell command with approval" in text, text
        r = statusline(env, json.dumps(INPUT))
        assert "✋ 1 needs you" in r.stdout, r.stdout
    finally:
        p.kill()
        p.communicate()
