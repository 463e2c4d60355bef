"""OpenCode's database is read without writing a byte or taking a write lock (every sample
home fingerprinted before and after, WAL and SHM included; the locks this process holds,
watched while it reads), and a live, locked, torn, replaced or odd database costs one
line or one session, never the board."""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SAMPLES, fingerprint
from huddle.core import Huddle
from huddle.sources import Settings
from huddle.views import api
from opencode_writer import Writer

OPENCODE = SAMPLES / "opencode"
HOMES = sorted(
    str(p.relative_to(OPENCODE))
    for p in OPENCODE.rglob("home")
    if (p / ".local" / "share" / "opencode" / "opencode.db").exists()
)


def core(data: Path, **more: str) -> Huddle:
    folders = {"opencode": str(data), **more}
    h = Huddle(Settings(folders=folders, huddle_home="/nonexistent-huddle-test"), sources=list(folders))
    h.refresh()
    return h


def copy_data(tmp: Path, name: str = "07-subagent") -> Path:
    data = tmp / "oc" / ".local" / "share" / "opencode"
    shutil.copytree(OPENCODE / name / "home" / ".local" / "share" / "opencode", data)
    return data


def my_locks(folder: Path | None = None) -> list[str]:
    """The kinds of lock (READ / WRITE) this process holds now on the files of OpenCode
    folders (all of them under the samples and the temporary folders), from /proc/locks."""
    me = str(os.getpid())
    inodes = set()
    for root in [folder] if folder else [OPENCODE, Path(tempfile.gettempdir())]:
        for dirpath, _dirs, files in os.walk(root):
            for n in files:
                if n.startswith("opencode.db"):
                    st = os.stat(os.path.join(dirpath, n))
                    inodes.add((os.major(st.st_dev), os.minor(st.st_dev), st.st_ino))
    out = []
    with open("/proc/locks") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 5 and parts[1] != "->" and parts[4] == me:
                maj, mino, ino = parts[5].split(":")
                if (int(maj, 16), int(mino, 16), int(ino)) in inodes:
                    out.append(parts[3])
    return out


@pytest.mark.parametrize("home", HOMES)
def test_every_sample_home_is_left_byte_for_byte(home):
    """In place, as on a user's machine (this suite runs as root, so file modes stop nothing)."""
    root = OPENCODE / home
    before = fingerprint(root)
    h = core(root / ".local" / "share" / "opencode")
    for s in h.sessions():
        assert s.error is None
        h.handle(s.key).live()
        for e in api.events(h, s.id)["events"]:
            if "ref" in e:
                api.content(h, s.id, e["ref"])
    h.refresh()
    assert fingerprint(root) == before
    assert my_locks(root) == []  # no connection is left open between refreshes


def test_reading_takes_read_locks_only(tmp_path):
    data = copy_data(tmp_path, "09-long")
    seen: set[str] = set()
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            seen.update(my_locks(data))

    t = threading.Thread(target=watch)
    t.start()
    try:
        for _ in range(5):
            core(data)
    finally:
        stop.set()
        t.join()
    assert seen <= {"READ"} and "WRITE" not in seen


def test_a_running_opencode_writing_while_huddle_reads(tmp_path):
    data = copy_data(tmp_path)
    db = data / "opencode.db"
    with Writer(db) as w:
        h = core(data)
        (s,) = h.sessions()
        n = len(s.events)
        before = {p: fingerprint(data)[p] for p in ("opencode.db", "opencode.db-shm")}
        w.add_text(s.id, "prt_zzzzlive", "written while huddle watched", 1796119400000)
        assert s.key in h.refresh()
        assert s.events[-1].text == "written while huddle watched" and len(s.events) == n + 1
        assert my_locks(data) == []
        # the writer's own files moved; huddle's reading never did: the db and shm are the writer's
        assert {p: fingerprint(data)[p] for p in ("opencode.db",)} == {"opencode.db": before["opencode.db"]}
    # the writer's last connection closed: it checkpointed and removed its WAL, as OpenCode
    # does at exit when no reader holds the database
    assert not (data / "opencode.db-wal").exists()
    h.refresh()  # now a database without a WAL: read as a whole file, nothing created
    (s2,) = h.sessions()
    assert s2.events[-1].text == "written while huddle watched"
    assert sorted(os.listdir(data)) == ["opencode.db"]


def test_a_wal_without_its_index_is_read_from_a_private_copy(tmp_path):
    data = copy_data(tmp_path)
    (data / "opencode.db-shm").unlink()
    before = fingerprint(data)
    h = core(data)
    (s,) = h.sessions()
    assert s.usage.input == 14053
    assert fingerprint(data) == before and sorted(os.listdir(data)) == ["opencode.db", "opencode.db-wal"]


def test_an_empty_database_file_is_no_session_and_no_error(tmp_path):
    data = tmp_path / "oc"
    data.mkdir()
    (data / "opencode.db").write_bytes(b"")
    h = core(data)
    assert h.sessions() == [] and not [n for n in h.notes if "opencode" in n]
    assert sorted(os.listdir(data)) == ["opencode.db"]


def test_a_database_emptied_while_opening_keeps_its_wal(tmp_path):
    """SQLite deletes a WAL beside a database file it finds empty at its first read, even
    read-only: the first read comes at once, and not on an emptied file."""
    import sqlite3

    from huddle.sources.opencode.db import Database, DbError

    data = copy_data(tmp_path)
    db = Database(str(data / "opencode.db"))
    old = (data / "opencode.db").read_bytes()
    c = sqlite3.connect(f"file:{data / 'opencode.db'}?mode=ro&readonly_shm=1", uri=True)
    os.truncate(data / "opencode.db", 0)  # between SQLite's open and its first read
    with pytest.raises(DbError, match="emptied while opening"):
        db._first_read(c)
    assert (data / "opencode.db-wal").exists()
    (data / "opencode.db").write_bytes(old)
    (s,) = core(data).sessions()
    assert s.usage.input == 14053


def test_not_a_database_costs_one_line(tmp_path):
    data = tmp_path / "oc"
    data.mkdir()
    (data / "opencode.db").write_bytes(b"this is not sqlite" * 500)
    h = core(data, gemini=str(SAMPLES / "gemini" / "01-qa" / "home" / ".gemini"))
    errors = [s for s in h.sessions() if s.error]
    assert len(errors) == 1 and "opencode.db" in errors[0].error
    assert [s.source for s in h.sessions() if not s.error] == ["gemini"]  # the board goes on


@pytest.mark.parametrize("cut", [1000, 50_000, 400_000])
def test_a_torn_wal_reads_what_was_committed(tmp_path, cut):
    data = copy_data(tmp_path, "09-long")
    wal = data / "opencode.db-wal"
    os.truncate(wal, wal.stat().st_size - cut)  # a crash in the middle of writing frames
    before = fingerprint(data)
    h = core(data)
    for s in h.sessions():
        assert s.error is None and s.skipped_lines == 0
    assert fingerprint(data) == before


def test_a_locked_database_keeps_what_was_read_and_says_so(tmp_path):
    data = copy_data(tmp_path)
    h = core(data)
    (s,) = h.sessions()
    with Writer(data / "opencode.db") as w:
        w.run("PRAGMA locking_mode = EXCLUSIVE")
        w.run("UPDATE session SET title = 'Renamed while locked' WHERE id = ?", s.id)  # holds the lock after
        h.refresh()
        (s1,) = h.sessions()
        assert s1.title == "Count Python files with helper"  # what was read before stays
        assert any("locked" in n for n in h.notes)
        w.run("PRAGMA locking_mode = NORMAL")
        w.run("SELECT count(*) FROM session")  # the next access releases the lock
        h.refresh()
        (s2,) = h.sessions()
        assert s2.title == "Renamed while locked" and not [n for n in h.notes if "locked" in n]


def test_a_database_replaced_while_read(tmp_path):
    data = copy_data(tmp_path)
    h = Huddle(Settings(folders={"opencode": str(data)}, huddle_home="/nonexistent"), sources=["opencode"])
    src = h.sources[0]
    handles = src.scan({})
    other = OPENCODE / "02-shell" / "home" / ".local" / "share" / "opencode"
    for suffix in ("-wal", "-shm", ""):  # a restore or a sync tool swaps the files mid-read
        shutil.copyfile(other / f"opencode.db{suffix}", data / f"new{suffix}")
        os.replace(data / f"new{suffix}", data / f"opencode.db{suffix}")
    for hd in handles.values():
        hd.refresh()  # the connection opened before keeps reading the old files, whole
    (old,) = handles.values()
    assert old.session.usage.input == 14053 and old.session.error is None
    h.refresh()
    (s,) = h.sessions()
    assert s.title == "Explore project and run app" and s.usage.input == 7972
    assert s.error is None and my_locks(data) == []


# -- odd rows ----------------------------------------------------------------------------------

ODD = [None, -1, 1.5, float("inf"), "12", True, [], {}, 10**30, "x" * 10]


def _poke(d, rnd):
    paths = []

    def walk(node, path):
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, (*path, k))
        elif isinstance(node, list):
            for k, v in enumerate(node):
                walk(v, (*path, k))
        else:
            paths.append(path)

    walk(d, ())
    if paths:
        path = rnd.choice(paths)
        node = d
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = rnd.choice(ODD)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), table=st.sampled_from(["message", "part"]), garbage=st.booleans())
def test_an_odd_row_costs_at_most_itself(tmp_path_factory, seed, table, garbage):
    rnd = random.Random(seed)
    data = copy_data(tmp_path_factory.mktemp("odd"), "05-errors")
    with Writer(data / "opencode.db") as w:
        rows = w.run(f"SELECT rowid, data FROM {table}")
        rowid, raw = rnd.choice(rows)
        if garbage:
            new = raw[: rnd.randrange(len(raw))]
        else:
            d = json.loads(raw)
            _poke(d, rnd)
            new = json.dumps(d, allow_nan=True)
        w.run(f"UPDATE {table} SET data = ? WHERE rowid = ?", new, rowid)
    h = core(data)
    (s,) = h.sessions()
    assert s.error is None and s.skipped_lines <= 1
    for p in s.problems:
        assert "opencode.db" in p
    assert len(s.events) >= CLEAN - 6  # one row holds at most one response's events


CLEAN = len(core(OPENCODE / "05-errors" / "home" / ".local" / "share" / "opencode").sessions()[0].events)
