"""OpenCode states on the live snapshots of a real 1.18.33 TUI session (each with its truth:
the state and the processes below OpenCode at that moment), its lock folders, sessions
changing while huddle reads (only the changed ones are read, nothing at all when nothing
changed), and a real process on this machine."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SAMPLES
from huddle.io.proctable import Proc, ProcTable
from huddle.model import events as ev
from huddle.model.attention.session import classify
from huddle.sources import Settings
from huddle.sources.opencode import OpenCodeSource
from huddle.sources.opencode.live import Processes, lock_pids
from opencode_writer import Writer

OPENCODE = SAMPLES / "opencode"
LIVE = OPENCODE / "08-interactive-approval" / "live"
SNAPSHOTS = sorted(p.name for p in LIVE.iterdir() if (p / "truth.json").exists())
STATE = {
    "needs-you-approval": "needs_you",
    "working-tool-running": "working",
    "your-turn-finished": "your_turn",
    "ended-after-exit": "ended",
}
CWD = "/home/dev/work/proj"
SID = "ses_dcef0f2aeffeV1elxP0UOfZR2z"


def snapshot_data(snap: str) -> Path:
    d = LIVE / snap / "home" / ".local" / "share" / "opencode"
    if not d.exists():  # stored once: SAME_AS.txt names the identical snapshot
        d = LIVE / "03-your-turn-finished" / "home" / ".local" / "share" / "opencode"
    return d


def recorded(truth: dict) -> ProcTable:
    """The OpenCode TUI (unless it had exited) and, below it, the processes the truth lists."""
    if truth.get("process_exited"):
        return ProcTable([])
    procs = [Proc(100, 1, ["opencode"], CWD)]
    for i, cmd in enumerate(truth["processes"]):
        argv = cmd.split(" ", 2) if " -c " in cmd else cmd.split(" ")
        procs.append(Proc(101 + i, 100 + i, argv, CWD))
    return ProcTable(procs)


def read(data: Path, view: ProcTable | None = None, state_dir: str = "/nonexistent"):
    src = OpenCodeSource(Settings(folders={"opencode": str(data), "opencode-state": state_dir}))
    src.system.recorded = view
    (h,) = src.scan({}).values()
    h.refresh()
    return src, h


@pytest.mark.parametrize("snap", SNAPSHOTS)
def test_snapshot_with_its_recorded_processes(snap):
    truth = json.loads((LIVE / snap / "truth.json").read_text())
    _, h = read(snapshot_data(snap), recorded(truth))
    live = h.live()
    st, per = classify(h.session, live, now=truth["at"])
    assert st.state == STATE[truth["state"]]
    assert per[SID].state == st.state
    assert live.alive is (truth["state"] != "ended-after-exit")
    if st.state == "needs_you":
        assert st.waiting_for == "approve bash: sleep 8; echo slept"
    if st.state == "working":
        assert st.doing == "running sleep 8; echo slept"


def test_approved_and_running_even_before_its_output_starts():
    """A bash part with no metadata yet, but its command runs below OpenCode: working."""
    truth = json.loads((LIVE / "01-needs-you-approval" / "truth.json").read_text())
    view = ProcTable([Proc(100, 1, ["opencode"], CWD), Proc(101, 100, ["/usr/bin/bash", "-c", "sleep 8; echo slept"])])
    _, h = read(snapshot_data("01-needs-you-approval"), view)
    st, _ = classify(h.session, h.live(), now=truth["at"])
    assert st.state == "working"


def test_which_process_works_on_which_session():
    newest = {CWD: "ses_b"}
    view = ProcTable(
        [
            Proc(10, 1, ["opencode", "run", "--session", "ses_a", "hi"], "/elsewhere"),
            Proc(11, 1, ["node", "/usr/lib/node_modules/opencode-ai/bin/opencode"], CWD),
            Proc(12, 11, ["/usr/lib/node_modules/opencode-ai/bin/.opencode"], CWD),  # the binary below its wrapper
            Proc(13, 1, ["/opt/oc/opencode-renamed"], "/x"),  # named by a lock
        ]
    )
    p = Processes(view, [13], newest)
    assert p.by_session["ses_a"].pid == 10 and p.by_session["ses_b"].pid == 12 and not p.daemon
    assert Processes(ProcTable([Proc(20, 1, ["opencode", "serve"], CWD)]), [], newest).daemon


def test_the_lock_folders_name_their_pid(tmp_path):
    state = OPENCODE / "02-shell" / "home" / ".local" / "state" / "opencode"
    assert lock_pids(str(state)) == [13558]
    (tmp_path / "locks" / "x.lock").mkdir(parents=True)
    (tmp_path / "locks" / "x.lock" / "meta.json").write_text("{not json")
    assert lock_pids(str(tmp_path)) == []


def test_a_daemon_that_may_hold_any_session_leaves_liveness_unknown():
    view = ProcTable([Proc(20, 1, ["opencode", "serve", "--port", "4096"], CWD)])
    _, h = read(snapshot_data("03-your-turn-finished"), view)
    assert h.live().alive is None


# -- change detection ---------------------------------------------------------------------------


class Counting:
    """Every statement the source sends SQLite, by the session it names."""

    def __init__(self, src: OpenCodeSource):
        self.sql: list[tuple[str, tuple]] = []
        orig = src.database

        def database(path):
            db = orig(path)
            if not getattr(db, "_counted", False):
                q = db.query

                def query(sql, args=()):
                    self.sql.append((sql, args))
                    return q(sql, args)

                db.query = query
                db._counted = True
            return db

        src.database = database


def test_nothing_changed_asks_sqlite_nothing_and_one_change_reads_one_session(tmp_path):
    data = tmp_path / "oc"
    shutil.copytree(OPENCODE / "07-subagent" / "home" / ".local" / "share" / "opencode", data)
    src = OpenCodeSource(Settings(folders={"opencode": str(data)}))
    spy = Counting(src)
    handles = src.scan({})
    for h in handles.values():
        h.refresh()
    db = src.database(str(data / "opencode.db"))
    opens = db.opens
    spy.sql.clear()
    for _ in range(3):
        handles = src.scan(handles)
        assert not any(h.refresh() for h in handles.values())
    assert spy.sql == [] and db.opens == opens  # stats only
    (h,) = handles.values()
    child = next(m for m in h.members if m != h.root)
    with Writer(data / "opencode.db") as w:
        w.add_text(child, "prt_zzzznew", "one more word")
    handles = src.scan(handles)
    for hd in handles.values():
        hd.refresh()
    read_for = {args[0] for sql, args in spy.sql if "session_id = ?" in sql}
    assert read_for == {child}  # the lead's rows were not read again
    assert h.session.events[-1].text == "one more word" and h.session.events[-1].agent == child
    assert src.lists == 2  # the session list: once at the start, once after the change


def test_a_commit_listed_halfway_is_read_once_its_index_moves(tmp_path):
    """SQLite commits in two steps: the frames go to the WAL (and an fsync), then the
    wal-index header in `-shm` makes them visible. A list between the two reads the rows
    before the commit under the WAL's final size and mtime; only the index header moves
    after it (a CI run once missed a part this way, for good)."""
    data = tmp_path / "oc"
    shutil.copytree(OPENCODE / "07-subagent" / "home" / ".local" / "share" / "opencode", data)
    db = data / "opencode.db"
    shm = Path(str(db) + "-shm")
    src = OpenCodeSource(Settings(folders={"opencode": str(data)}))
    handles = src.scan({})
    (h,) = handles.values()
    h.refresh()
    with Writer(db) as w:
        before = shm.read_bytes()[:136]  # the index's header and its read marks, before the commit
        w.add_text(h.root, "prt_zzzzhalf", "the last word")
        after = shm.read_bytes()[:136]
        assert before != after
        with open(shm, "r+b") as f:  # the moment between: the frames written, the index not yet
            f.write(before)
        lists = src.lists
        handles = src.scan(handles)
        assert src.lists == lists + 1 and not h.refresh()  # listed: the rows as they were
        with open(shm, "r+b") as f:  # the index moves: the commit is done (no file's size or mtime moved)
            f.write(after)
        handles = src.scan(handles)
        assert h.refresh() and h.session.events[-1].text == "the last word"


def test_a_session_streaming_row_by_row_equals_a_fresh_read(tmp_path):
    """Rows appear and change in place (a tool part running, then completed; a message
    completing with its last step) the way OpenCode writes them; reading after every
    write gives each event once, the same as one read of the finished session."""
    data, f = _copy_and_read(tmp_path, "02-shell")
    want = sorted(((e.kind, e.id, e.text, e.ok) for e in f.session.events), key=repr)
    sid = f.root
    with Writer(data / "opencode.db") as w:
        parts = w.run("SELECT id, message_id, time_updated, data FROM part WHERE session_id = ? ORDER BY id", sid)
        msgs = {m[0]: m for m in w.run("SELECT id, time_updated, data FROM message WHERE session_id = ?", sid)}
        w.run("DELETE FROM part WHERE session_id = ?", sid)
        w.run("DELETE FROM message WHERE session_id = ?", sid)
        src = OpenCodeSource(Settings(folders={"opencode": str(data)}))
        handles: dict = {}
        _bump_and_read(w, src, handles, sid)
        for pid, mid, tu, raw in parts:
            if not w.run("SELECT 1 FROM message WHERE id = ?", mid):
                m = json.loads(msgs[mid][2])
                m.get("time", {}).pop("completed", None)
                m.pop("finish", None)
                w.run(
                    "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?)",
                    mid,
                    sid,
                    msgs[mid][1] - 10,
                    tu - 2,
                    json.dumps(m),
                )
                _bump_and_read(w, src, handles, sid)
            d = json.loads(raw)
            if d.get("type") == "tool":
                running = json.loads(raw)
                running["state"] = {"status": "running", "input": d["state"]["input"], "time": d["state"]["time"]}
                _put_part(w, pid, mid, sid, tu - 1, running)
                _bump_and_read(w, src, handles, sid)
            _put_part(w, pid, mid, sid, tu, d)
            if d.get("type") == "step-finish":
                w.run("UPDATE message SET data = ?, time_updated = ? WHERE id = ?", msgs[mid][2], msgs[mid][1], mid)
            _bump_and_read(w, src, handles, sid)
    (h,) = handles.values()
    got = sorted(((e.kind, e.id, e.text, e.ok) for e in h.session.events), key=repr)
    assert got == want
    assert h.session.usage.to_dict() == f.session.usage.to_dict()


def _put_part(w: Writer, pid: str, mid: str, sid: str, tu: int, d: dict) -> None:
    w.run(
        "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT(id) DO UPDATE SET data = excluded.data, time_updated = excluded.time_updated",
        pid,
        mid,
        sid,
        tu,
        tu,
        json.dumps(d),
    )


def _bump_and_read(w: Writer, src, handles: dict, sid: str) -> None:
    w.run("UPDATE event_sequence SET seq = seq + 1 WHERE aggregate_id = ?", sid)
    _read_all(src, handles)


def _copy_and_read(tmp_path: Path, sample: str):
    """A sample's database copied, and its one session read whole (fresh)."""
    data = tmp_path / "oc"
    shutil.copytree(OPENCODE / sample / "home" / ".local" / "share" / "opencode", data)
    fresh = OpenCodeSource(Settings(folders={"opencode": str(data)}))
    (f,) = fresh.scan({}).values()
    f.refresh()
    return data, f


# -- this machine's /proc -------------------------------------------------------------------------


def test_a_real_process_on_this_machine(tmp_path):
    home = tmp_path / "h"
    shutil.copytree(LIVE / "01-needs-you-approval" / "home", home)
    data = home / ".local" / "share" / "opencode"
    proj = tmp_path / "proj"
    proj.mkdir()
    exe = tmp_path / "bin" / "opencode"
    exe.parent.mkdir()
    exe.write_text("import time\nprint('ready', flush=True)\ntime.sleep(60)\n")
    p = subprocess.Popen([sys.executable, str(exe), "--session", SID], stdout=subprocess.PIPE, cwd=proj)
    try:
        assert p.stdout.readline() == b"ready\n"
        src = OpenCodeSource(Settings(folders={"opencode": str(data)}))
        (h,) = src.scan({}).values()
        h.refresh()
        live = h.live()
        assert live.alive is True and live.pid == p.pid
        st, _ = classify(h.session, live)
        assert st.state == "needs_you"
    finally:
        p.kill()
        p.communicate()  # closes its pipe too
    src.system._view = None
    assert h.live().alive is False
    assert any(e.kind == ev.TOOL_CALL for e in h.session.events)


def test_a_row_written_with_an_old_clock_is_found_through_the_event_log(tmp_path):
    data = tmp_path / "oc"
    shutil.copytree(OPENCODE / "01-qa" / "home" / ".local" / "share" / "opencode", data)
    src = OpenCodeSource(Settings(folders={"opencode": str(data)}))
    handles = src.scan({})
    for hd in handles.values():
        hd.refresh()
    (h,) = handles.values()
    with Writer(data / "opencode.db") as w:
        (mid,) = w.run("SELECT id FROM message WHERE session_id = ? ORDER BY time_created DESC LIMIT 1", h.root)[0]
        part = {"type": "text", "text": "from a clock an hour behind", "time": {"start": 1, "end": 2}}
        _put_part(w, "prt_zzzzskew", mid, h.root, 1796119000000, part)  # before everything read so far
        ((seq,),) = w.run("UPDATE event_sequence SET seq = seq + 1 WHERE aggregate_id = ? RETURNING seq", h.root)
        ev_data = {"sessionID": h.root, "part": {"id": "prt_zzzzskew", "messageID": mid, **part}}
        w.run(
            "INSERT INTO event (id, aggregate_id, seq, type, data) VALUES (?, ?, ?, ?, ?)",
            "evt_zzzzskew",
            h.root,
            seq,
            "message.part.updated.1",
            json.dumps(ev_data),
        )
    handles = src.scan(handles)
    for hd in handles.values():
        hd.refresh()
    assert h.session.events[-1].text == "from a clock an hour behind"


def test_a_database_put_back_to_an_earlier_moment_and_forward_again_reads_whole(tmp_path):
    """The database goes back to a moment before its sub-agent existed (a backup put back,
    or a reader that met a WAL cut short) and then forward again, to the very rows and marks
    it had: the sub-agent is read again, as a fresh read has it. (It once stayed empty: the
    lead's rereading rebuilt it from its old row, read nothing, and took that mark as read.)"""
    data, f = _copy_and_read(tmp_path, "07-subagent")
    want = sorted(((e.kind, e.agent, e.id, e.text) for e in f.session.events), key=repr)
    (child,) = [sid for sid in f.members if sid != f.root]
    src = OpenCodeSource(Settings(folders={"opencode": str(data)}))
    handles: dict = {}
    with Writer(data / "opencode.db") as w:
        _read_all(src, handles)
        ((last,),) = w.run("SELECT id FROM message WHERE session_id = ? ORDER BY time_created DESC LIMIT 1", f.root)
        kept = {
            t: w.run(f"SELECT * FROM {t} WHERE {where}", *args)
            for t, where, args in [
                ("session", "id = ?", [child]),
                ("message", "session_id = ? OR id = ?", [child, last]),
                ("part", "session_id = ? OR message_id = ?", [child, last]),
                ("event_sequence", "aggregate_id IN (?, ?)", [child, f.root]),
            ]
        }
        for t in ("part", "message", "session"):  # back: the last answer and the sub-agent not written yet
            w.run(f"DELETE FROM {t} WHERE id IN ({', '.join('?' * len(kept[t]))})", *[r[0] for r in kept[t]])
        w.run("DELETE FROM event_sequence WHERE aggregate_id = ?", child)
        w.run("UPDATE event_sequence SET seq = seq - 5 WHERE aggregate_id = ?", f.root)
        _read_all(src, handles)
        (h,) = handles.values()
        assert not [e for e in h.session.events if e.agent == child]
        w.run("DELETE FROM event_sequence WHERE aggregate_id = ?", f.root)
        for t in ("session", "message", "part", "event_sequence"):  # forward: the same rows, the same marks
            for row in kept[t]:
                w.run(f"INSERT INTO {t} VALUES ({', '.join('?' * len(row))})", *row)
        _read_all(src, handles)
    (h,) = handles.values()
    assert sorted(((e.kind, e.agent, e.id, e.text) for e in h.session.events), key=repr) == want


def _read_all(src, handles: dict) -> None:
    new = src.scan(handles)
    handles.clear()
    handles.update(new)
    for hd in handles.values():
        hd.refresh()
