"""Pi states on the live snapshots of real TUI sessions (1.6.0 and 0.73.1, each with its
truth: the state and the processes at that moment) with their recorded processes, through
the board (from the files alone: tests/test_conformance.py); and on this machine's own
/proc with real processes named `pi`, given only the test's own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import SAMPLES
from huddle.core import Huddle
from huddle.io import procs
from huddle.io.proctable import Proc, ProcTable
from huddle.model.attention import NEEDS_YOU, WORKING, YOUR_TURN
from huddle.sources import Settings
from huddle.sources.pi import PiSource
from huddle.sources.pi.live import ASKS_AFTER, DIALOG, FAILED, named
from huddle.views.board import board_json
from huddle.views.states import classify
from said import as_json

PI = SAMPLES / "pi"
CWD = "/home/dev/work/proj"
SNAPSHOTS = sorted(
    (scn, snap.name)
    for scn in (
        "08-interactive-approval",
        "08-interactive-approval__v0.73.1",
        "12-tree-compact",
        "12-tree-compact__v0.73.1",
    )
    for snap in (PI / scn / "live").iterdir()
    if (snap / "truth.json").exists()
)
STATE = {
    "working-model-streaming": "working",
    "needs-you-approval": "needs_you",
    "working-tool-running": "working",
    "your-turn-finished": "your_turn",
    "your-turn-after-branch": "your_turn",
    "ended-after-exit": "ended",
}
# 0.73.1 writes a session's file at its first response: while the first one streams there
# is no file, so no session to show.
NO_FILE_YET = {("08-interactive-approval__v0.73.1", "01-working-model-streaming")}


def recorded(truth: dict) -> ProcTable:
    """The truth's processes: `pi` (its title hides its command line), each next one below
    the one before (the tool's shell, its command)."""
    out = []
    for i, cmd in enumerate(truth["processes"]):
        argv = cmd.split(" ", 2) if " -c " in cmd else cmd.split(" ")
        out.append(Proc(100 + i, 99 + i if i else 1, argv, CWD))
    return ProcTable(out)


def board(home: Path, view: ProcTable | None, at: float) -> list[dict]:
    h = Huddle(Settings(folders={"pi": str(home)}, huddle_home="/nonexistent-huddle-test"), sources=["pi"])
    (src,) = h.sources
    src.system.recorded = view
    h.refresh()
    return as_json(board_json(h, at=at))["sessions"]


@pytest.mark.parametrize("scn,snap", SNAPSHOTS, ids=[f"{a[:5]}{a[-7:] if 'v0' in a else ''}:{b}" for a, b in SNAPSHOTS])
def test_snapshot_with_its_recorded_processes(scn, snap):
    truth = json.loads((PI / scn / "live" / snap / "truth.json").read_text())
    rows = board(PI / scn / "live" / snap / "home" / ".pi" / "agent", recorded(truth), truth["at"])
    if (scn, snap) in NO_FILE_YET:
        assert rows == []
        return
    (row,) = rows
    assert row["state"] == STATE[truth["state"]], row
    if row["state"] == NEEDS_YOU:
        assert row["waiting_for"] == "approve: bash: rm -rf tmp-cache; sleep 8; echo slept"
    if truth["state"] == "working-tool-running":
        assert row["doing"] == "running rm -rf tmp-cache; sleep 8; echo slept"


def read(home: Path, view: ProcTable | None):
    src = PiSource(Settings(folders={"pi": str(home)}))
    src.system.recorded = view
    handles = src.scan({})
    for h in handles.values():
        h.refresh()
    return src, handles


def test_a_dialog_is_a_guess_said_so_and_needs_an_extension(tmp_path):
    snap = PI / "08-interactive-approval" / "live" / "02-needs-you-approval"
    truth = json.loads((snap / "truth.json").read_text())
    _, handles = read(snap / "home" / ".pi" / "agent", recorded(truth))
    (h,) = handles.values()
    live = h.live()
    (call,) = [e for e in h.session.events if e.kind == "tool_call"]
    (asks,) = live.agents[h.session.id].calls  # a call, not a state: the rules decide when it asks
    assert (asks.id, asks.since, asks.asks_after, asks.guess, live.pid) == (call.id, call.t, ASKS_AFTER, DIALOG, 100)
    st, _ = classify(h.session, live, now=call.t + 0.5)  # its program may not have started yet
    assert st.state == WORKING and st.doing == "running rm -rf tmp-cache; sleep 8; echo slept"
    assert st.next_change == call.t + ASKS_AFTER  # time alone moves it, and the rules know when
    st, _ = classify(h.session, live, now=call.t + 2)
    assert st.state == NEEDS_YOU and st.guess == DIALOG
    assert st.waiting_for == "approve: bash: rm -rf tmp-cache; sleep 8; echo slept"
    home = tmp_path / "agent"
    shutil.copytree(snap / "home" / ".pi" / "agent", home)
    shutil.rmtree(home / "extensions")  # Pi itself never asks: the call runs (or starts)
    _, handles = read(home, recorded(truth))
    (h,) = handles.values()
    assert not h.live().agents
    st, _ = classify(h.session, h.live(), now=truth["at"])
    assert st.state == WORKING


def test_a_failed_request_with_no_retry_ends_the_turn(tmp_path):
    home = tmp_path / "agent"
    shutil.copytree(PI / "06-http-retry" / "home" / ".pi" / "agent", home)
    (f,) = (home / "sessions").rglob("*.jsonl")
    lines = f.read_bytes().splitlines(keepends=True)
    f.write_bytes(b"".join(lines[:6]))  # the 429, before Pi wrote its retry
    view = ProcTable([Proc(7, 1, ["pi"], CWD)])
    _, handles = read(home, view)
    (h,) = handles.values()
    live = h.live()
    assert live.status == "idle" and FAILED in live.guess
    st, _ = classify(h.session, live, now=h.session.updated_at + 5)
    assert st.state == YOUR_TURN
    with open(f, "ab") as out:
        out.write(lines[6])  # the context_edit: Pi retries
    h.refresh()
    assert not h.live().status
    st, _ = classify(h.session, h.live(), now=h.session.updated_at + 5)
    assert st.state == WORKING


def test_processes_are_matched_by_name_then_by_folder(tmp_path):
    home = tmp_path / "agent"
    shutil.copytree(PI / "11-fork" / "home" / ".pi" / "agent", home)
    fork = "01a2494b-a7db-72d6-845d-edcf6dcbb43c"
    parent = "01a2494b-a156-7192-b21b-5bf0f13975ca"
    for i, f in enumerate(sorted((home / "sessions").rglob("*.jsonl"))):  # the fork written last
        os.utime(f, (1796526000 + i, 1796526000 + i))
    assert named(["node", "/x/pi-coding-agent/dist/cli.js", "--session", "01a2494b-a156"]) == "01a2494b-a156"
    cases = [
        ([Proc(7, 1, ["pi"], CWD)], {fork: True, parent: False}),  # the newest in its folder
        ([Proc(7, 1, ["pi"], CWD), Proc(8, 1, ["pi"], CWD)], {fork: True, parent: True}),
        (
            [Proc(7, 1, ["node", "/u/@earendil-works/pi-coding-agent/dist/cli.js", "--session", parent[:13]], CWD)],
            {fork: False, parent: True},
        ),
        ([Proc(7, 1, ["pi"], "/elsewhere")], {fork: False, parent: False}),
        (
            [Proc(7, 1, ["pi"], "/elsewhere"), Proc(8, 7, ["pi", "--mode", "json", "-p", "--no-session"], CWD)],
            {fork: False, parent: False},
        ),
    ]
    for view, want in cases:
        _, handles = read(home, ProcTable(view))
        got = {h.session.id: h.live().alive for h in handles.values()}
        assert got == want, view


def own(pid: int) -> ProcTable:
    """This machine's /proc, the test's own processes only (other suites run fake agents)."""
    table = procs.table()
    mine = [pid]
    for p in list(mine):
        mine.extend(k for k, st in table.items() if st.ppid == p and k not in mine)
    for k in list(mine):
        mine.extend(c for c, st in table.items() if st.ppid == k and c not in mine)
    return ProcTable([Proc(k, table[k].ppid, procs.argv(k) or [], procs.cwd(k)) for k in mine if k in table])


def test_real_processes_on_this_machine(tmp_path):
    """A process titled `pi` in the session's folder: alive while it runs; its pending shell
    call waits in a dialog while nothing runs below it, runs while something does."""
    home = tmp_path / "agent"
    snap = PI / "08-interactive-approval" / "live" / "02-needs-you-approval" / "home" / ".pi" / "agent"
    shutil.copytree(snap, home)
    work = tmp_path / "work"
    work.mkdir()
    (f,) = (home / "sessions").rglob("*.jsonl")
    f.write_text(f.read_text().replace(CWD, str(work)))
    for script, want in (("exec -a pi sleep 60", NEEDS_YOU), ("exec -a pi bash -c 'sleep 60; true'", WORKING)):
        p = subprocess.Popen(["bash", "-c", script], cwd=work)
        try:
            deadline = time.monotonic() + 120  # a loaded machine: the table may show the child late
            while True:
                _, handles = read(home, own(p.pid))
                (h,) = handles.values()
                live = h.live()
                st, _ = classify(h.session, live)
                if (live.alive, live.pid, st.state) == (True, p.pid, want):
                    break
                assert time.monotonic() < deadline, (live, st)
                time.sleep(0.05)
        finally:
            p.kill()
            p.wait()
    _, handles = read(home, own(p.pid))
    (h,) = handles.values()
    assert h.live().alive is False
