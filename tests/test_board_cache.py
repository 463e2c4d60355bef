"""A cached board: sessions nothing moved in stay unread (their rows are kept), and the
board is the one a fresh read gives, whatever moved, came, went or was damaged."""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from conftest import SAMPLES
from huddle.core import Huddle, Keeper
from huddle.sources import Settings
from huddle.views.board import board_json, leave_board
from said import as_json, row

SCENARIOS = ("01-basic-tools", "02-subagents", "03-background-agent", "06-named-session", "07-errors")


@pytest.fixture
def home(tmp_path):
    claude = tmp_path / "claude"
    for name in SCENARIOS:
        shutil.copytree(SAMPLES / "claude" / name / "config" / "projects", claude / "projects", dirs_exist_ok=True)
    codex = tmp_path / "codex"
    shutil.copytree(SAMPLES / "codex" / "shell" / "codex_home" / "sessions", codex / "sessions")
    settle(tmp_path)
    return tmp_path


def settle(root) -> None:
    """Files last written a while ago, as a history is (a file that moved around a read is
    always read again)."""
    then = time.time() - 3600
    for dirpath, dirs, files in os.walk(root):
        for n in files + dirs:
            os.utime(os.path.join(dirpath, n), (then, then))
        os.utime(dirpath, (then, then))


def settings(home) -> Settings:
    folders = {"claude": str(home / "claude"), "codex": str(home / "codex"), "vibe": str(home / "none")}
    return Settings(folders=folders, huddle_home=str(home / "hh"))


def fresh_board(home) -> dict:
    h = Huddle(settings(home))
    h.refresh()
    return as_json(board_json(h))


def cached_board(home) -> tuple[dict, Huddle]:
    h = Huddle(settings(home), keep=Keeper())
    h.refresh()
    built: dict = {}
    b = as_json(board_json(h, built=built))
    leave_board(h, b, built)
    h.cache.store.close()  # as at the end of a command
    return b, h


def same(a: dict, b: dict) -> None:
    assert json.dumps(a["sessions"], sort_keys=True) == json.dumps(b["sessions"], sort_keys=True)


def append(path, record: dict) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")


def prompt(f, text: str) -> None:
    """One more prompt at the end of a Claude session."""
    record = {"type": "user", "message": {"role": "user", "content": text}, "sessionId": f.stem}
    append(f, {**record, "timestamp": "2026-11-30T12:00:00.000Z", "uuid": f"u-{text}", "parentUuid": None})


def test_a_second_run_reads_no_session_and_gives_the_same_board(home):
    first, h1 = cached_board(home)
    assert len(h1.handles) > 5 and not h1.dormant
    second, h2 = cached_board(home)
    same(first, second)
    same(fresh_board(home), second)
    assert not h2.handles, "nothing moved: every session stays unread"
    assert len(h2.dormant) == len(h1.handles)


def test_an_append_reads_that_session_only(home):
    cached_board(home)
    f = next((home / "claude" / "projects").glob("*01-basic-tools*/*.jsonl"))
    prompt(f, "one more thing")
    b, h = cached_board(home)
    assert set(h.handles) == {f"claude:{f.stem}"}
    same(fresh_board(home), b)
    row = next(r for r in b["sessions"] if r["id"] == f.stem)
    assert row["events"].get("prompt", 0) >= 1


def test_a_new_session_and_a_removed_one_give_a_fresh_board(home):
    cached_board(home)
    src = SAMPLES / "claude" / "04-resume-continue-fork" / "config" / "projects"
    shutil.copytree(src, home / "claude" / "projects", dirs_exist_ok=True)  # a resume and a fork of it
    b, _ = cached_board(home)
    same(fresh_board(home), b)
    gone = next((home / "claude" / "projects").glob("*02-subagents*/*.jsonl"))
    gone.unlink()
    shutil.rmtree(gone.with_suffix(""))  # (its sub-agents' folder left alone is a session still)
    b, _ = cached_board(home)
    same(fresh_board(home), b)
    assert gone.stem not in {r["id"] for r in b["sessions"]}


@pytest.mark.parametrize("damage", ["garbage", "truncated", "emptied"])
def test_a_damaged_cache_is_said_in_one_line_and_built_again(home, damage):
    cached_board(home)
    db = home / "hh" / "cache" / "handles.db"
    for extra in ("-wal", "-shm"):
        (home / "hh" / "cache" / f"handles.db{extra}").unlink(missing_ok=True)
    data = db.read_bytes()
    if damage == "garbage":
        db.write_bytes(data[:100] + os.urandom(4096) + data[4196:])
    elif damage == "truncated":
        db.write_bytes(data[: len(data) // 3])
    else:
        db.write_bytes(b"")
    b, h = cached_board(home)
    same(fresh_board(home), b)
    said = [n for n in h.notes if "handles.db" in n]
    assert len(said) <= 1 and all("\n" not in n for n in said)
    if damage != "emptied":
        assert said, h.notes
    again, h2 = cached_board(home)
    same(b, again)
    assert not [n for n in h2.notes if "handles.db" in n]


@pytest.mark.parametrize("keep", [0.0, 0.1, 0.5, 0.9, 0.99])
def test_a_cache_whose_last_writes_were_lost_reads_as_a_fresh_board(home, keep):
    """The store does not sync (core.store): a machine's crash may lose the tail of what
    was written, here the write-ahead log of the last run cut short."""
    import sqlite3

    cached_board(home)
    db = home / "hh" / "cache" / "handles.db"
    hold = sqlite3.connect(db, isolation_level=None)  # another reader, in a read: the WAL is left as it is
    hold.execute("BEGIN")
    hold.execute("SELECT count(*) FROM entries").fetchone()
    f = next((home / "claude" / "projects").glob("*01-basic-tools*/*.jsonl"))
    prompt(f, "one more thing")
    cached_board(home)
    wal = home / "hh" / "cache" / "handles.db-wal"
    files = {p: p.read_bytes() for p in (db, wal) if p.exists()}
    assert len(files.get(wal, b"")) > 4096, "the last run's writes are in the WAL"
    hold.close()
    for p, data in files.items():
        p.write_bytes(data[: int(len(data) * keep)] if p == wal else data)
    (home / "hh" / "cache" / "handles.db-shm").unlink(missing_ok=True)
    b, h = cached_board(home)
    same(fresh_board(home), b)
    said = [n for n in h.notes if "handles.db" in n]
    assert len(said) <= 1 and all("\n" not in n for n in said)
    store = h.cache.store
    store.open()
    assert store.db.execute("PRAGMA synchronous").fetchone() == (0,)
    assert store.db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    store.close()


def test_a_cache_from_an_older_version_is_said_and_replaced(home):
    cache = home / "hh" / "cache"
    cache.mkdir(parents=True)
    (cache / "handles.pickle").write_bytes(b"\x80\x05old")
    b, h = cached_board(home)
    same(fresh_board(home), b)
    assert any("handles.pickle" in n and "older version" in n for n in h.notes)
    assert not (cache / "handles.pickle").exists()


def test_a_store_of_another_format_is_said_and_rebuilt(home):
    from huddle.core import cache as cache_mod

    cached_board(home)
    old = cache_mod.FORMAT
    cache_mod.FORMAT = old + 1
    try:
        b, h = cached_board(home)
    finally:
        cache_mod.FORMAT = old
    same(fresh_board(home), b)
    assert any("another version" in n for n in h.notes)


def test_a_store_of_the_layout_before_rows_apart_is_said_and_rebuilt(home):
    """Format 7 kept each row inside its head, in an entries table of six columns: such a
    file is said in one line and built again in the new layout, never read."""
    import marshal
    import sqlite3

    from huddle import __version__
    from huddle.core.cache import BOARD

    _first, h1 = cached_board(home)
    db = home / "hh" / "cache" / BOARD
    for extra in ("-wal", "-shm"):
        (home / "hh" / "cache" / f"{BOARD}{extra}").unlink(missing_ok=True)
    db.unlink()
    old = sqlite3.connect(db)
    old.executescript(
        "CREATE TABLE meta(k TEXT PRIMARY KEY, v BLOB);"
        "CREATE TABLE entries(key TEXT PRIMARY KEY, version INTEGER, head BLOB, head_crc INTEGER,"
        " blob BLOB, blob_crc INTEGER);"
    )
    identity = ["handles", 7, __version__, list(h1.cache.store.identity)]
    old.execute("INSERT INTO meta VALUES ('identity', ?)", (marshal.dumps(identity),))
    head = marshal.dumps({"files": [], "dirs": [], "row": {"id": "x", "source": "claude"}, "at": 0})
    old.execute("INSERT INTO entries VALUES ('claude:x', 1, ?, 0, x'00', 0)", (head,))
    old.commit()
    old.close()
    b, h = cached_board(home)
    same(fresh_board(home), b)
    assert [n for n in h.notes if BOARD in n and "another version" in n]
    again, h2 = cached_board(home)
    same(b, again)
    assert not h2.handles and not [n for n in h2.notes if BOARD in n]


def test_a_row_whose_checksum_fails_has_its_session_read_again(home):
    """A row is kept beside its head with its own checksum, checked when the heads are
    read (before any row is decoded): a row that does not match is never shown, and its
    session, left out, is found by a scan (not spared: the store said something)."""
    import sqlite3

    cached_board(home)
    db = sqlite3.connect(home / "hh" / "cache" / "handles.db")
    key, row = db.execute("SELECT key, row FROM entries WHERE row IS NOT NULL LIMIT 1").fetchone()
    db.execute("UPDATE entries SET row=? WHERE key=?", (row[:-1] + bytes([row[-1] ^ 1]), key))
    db.commit()
    db.close()
    b, h = cached_board(home)
    same(fresh_board(home), b)
    assert key in h.handles  # (found by a scan: its source's others wake with it, as after a new session)
    assert [n for n in h.notes if "handles.db" in n and "damaged" in n]


def test_an_append_decodes_the_rows_of_what_it_shows_only_once(home, monkeypatch):
    """The rows stay as stored until a view asks for them: a sleeping session's is
    decoded once, for the board, and the moved session's not at all (built afresh)."""
    from huddle.core import Keeper
    from huddle.core import cache as cache_mod

    cached_board(home)
    f = next((home / "claude" / "projects").glob("*01-basic-tools*/*.jsonl"))
    prompt(f, "one more thing")
    decoded: list[bytes | None] = []
    real = cache_mod.loads
    monkeypatch.setattr(cache_mod, "loads", lambda raw: (decoded.append(raw), real(raw))[1])
    h = Huddle(settings(home), keep=Keeper())
    h.refresh()
    assert not decoded, "deciding what sleeps decodes no row"
    b = as_json(board_json(h))
    assert len(decoded) == len(h.dormant)
    monkeypatch.undo()
    same(fresh_board(home), b)


def test_your_turn_with_only_background_work_left_sleeps_once_its_files_stood_still(tmp_path):
    """Time alone moves such a row only while its files moved within the idle time (the
    background work nothing vouches for goes idle then: the attention rules say so, the
    row is idle): long untouched, it stays unread."""
    live = SAMPLES / "claude-live" / "11-your-turn-background-subagent-running" / "config" / "projects"
    shutil.copytree(live, tmp_path / "claude" / "projects")
    settle(tmp_path)
    then = time.time() - 3 * 3600
    for dirpath, dirs, files in os.walk(tmp_path):
        for n in files + dirs:
            os.utime(os.path.join(dirpath, n), (then, then))
    first, _ = cached_board(tmp_path)
    assert [(r["state"], bool(r["background"])) for r in first["sessions"]] == [("idle", False)]
    second, h2 = cached_board(tmp_path)
    assert not h2.handles and len(h2.dormant) == 1
    same(first, second)
    same(fresh_board(tmp_path), second)


def test_your_turn_with_background_work_touched_lately_is_read_again(tmp_path):
    live = SAMPLES / "claude-live" / "11-your-turn-background-subagent-running" / "config" / "projects"
    shutil.copytree(live, tmp_path / "claude" / "projects")
    then = time.time() - 600  # ten minutes ago: the background work may still go idle by time alone
    lately(tmp_path / "claude", then)
    for dirpath, dirs, files in os.walk(tmp_path):
        for n in files + dirs:
            os.utime(os.path.join(dirpath, n), (then, then))
    first, _ = cached_board(tmp_path)
    assert [(r["state"], bool(r["background"])) for r in first["sessions"]] == [("your_turn", True)]
    _second, h2 = cached_board(tmp_path)
    assert len(h2.handles) == 1 and not h2.dormant


def lately(root, last: float) -> None:
    """The sessions' records moved in time so that the newest was written at `last`."""
    import re
    from datetime import UTC, datetime

    stamp = re.compile(r'"timestamp":"([^"]+)"')
    files = list(root.rglob("*.jsonl"))
    times = [
        datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()
        for f in files
        for t in stamp.findall(f.read_text())
    ]
    shift = last - max(times)

    def moved(m: re.Match) -> str:
        t = datetime.fromisoformat(m.group(1).replace("Z", "+00:00")).timestamp() + shift
        return (
            f'"timestamp":"{datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")}"'
        )

    for f in files:
        f.write_text(stamp.sub(moved, f.read_text()))


@pytest.fixture
def scans(monkeypatch) -> list[str]:
    """The sources scanned, in order (the real scans run)."""
    from huddle.sources.claude.source import ClaudeSource
    from huddle.sources.codex.source import CodexSource

    seen: list[str] = []
    for cls in (ClaudeSource, CodexSource):
        real = cls.scan

        def spy(self, known, real=real):
            seen.append(self.name)
            return real(self, known)

        monkeypatch.setattr(cls, "scan", spy)
    return seen


def test_no_folder_moved_no_source_is_scanned_and_the_board_is_the_same(home, scans):
    first, _ = cached_board(home)
    assert sorted(scans) == ["claude", "codex"]  # (in the order the adapters were imported)
    scans.clear()
    second, h = cached_board(home)
    assert scans == [] and not h.handles
    same(first, second)
    # an append moves no folder: that session is read, still no scan
    f = next((home / "claude" / "projects").glob("*02-subagents*/*.jsonl"))
    prompt(f, "and?")
    third, h = cached_board(home)
    assert scans == [] and set(h.handles) == {f"claude:{f.stem}"}
    same(fresh_board(home), third)
    scans.clear()  # (the fresh board's)
    # a new session moves its folder: that source is scanned again
    shutil.copytree(
        SAMPLES / "claude" / "04-resume-continue-fork" / "config" / "projects",
        home / "claude" / "projects",
        dirs_exist_ok=True,
    )
    fourth, _ = cached_board(home)
    assert scans == ["claude"]
    same(fresh_board(home), fourth)


def test_a_registry_entry_rewritten_in_place_moves_its_row_without_a_scan(home, scans):
    from huddle.io import procs

    f = next((home / "claude" / "projects").glob("*01-basic-tools*/*.jsonl"))
    (home / "claude" / "sessions").mkdir()
    entry = home / "claude" / "sessions" / f"{os.getpid()}.json"

    def register(**fields) -> None:
        rec = {"sessionId": f.stem, "pid": os.getpid(), "procStart": str(procs.start_time(os.getpid())), **fields}
        with open(entry, "w") as out:  # in place, as Claude Code does: its folder does not move
            out.write(json.dumps(rec))

    register(status="idle", updatedAt=1)
    settle(home)
    cached_board(home)
    cached_board(home)
    scans.clear()
    register(status="waiting", waitingFor="permission prompt", updatedAt=2)
    b, _ = cached_board(home)
    assert scans == []
    row = next(r for r in b["sessions"] if r["id"] == f.stem)
    assert row["waiting_for"] == "permission prompt"
    same(fresh_board(home), b)


def test_a_session_folder_made_since_its_handle_was_kept_is_seen_without_a_scan(home, scans):
    f = next((home / "claude" / "projects").glob("*01-basic-tools*/*.jsonl"))
    cached_board(home)
    (f.parent / f.stem).mkdir()  # the session's own folder (tool results, later sub-agents)
    settle(home)
    cached_board(home)  # scanned (its project moved); the kept handle is not rewritten
    cached_board(home)
    scans.clear()
    sub = f.parent / f.stem / "subagents" / "agent-a1.jsonl"
    sub.parent.mkdir()
    sub.write_text(
        json.dumps(
            {
                "type": "user",
                "isSidechain": True,
                "agentId": "a1",
                "sessionId": f.stem,
                "message": {"role": "user", "content": "look"},
                "uuid": "s1",
                "timestamp": "2026-11-30T12:00:01.000Z",
                "parentUuid": None,
            }
        )
        + "\n"
    )
    prompt(f, "and?")
    b, _ = cached_board(home)
    assert scans == []
    row = next(r for r in b["sessions"] if r["id"] == f.stem)
    assert any(a.get("id") == "a1" for a in row["agents"]), row["agents"]
    same(fresh_board(home), b)


def test_a_source_folder_removed_takes_its_sessions_off_the_board(home):
    cached_board(home)
    cached_board(home)
    shutil.rmtree(home / "codex")
    b, _ = cached_board(home)
    assert {r["source"] for r in b["sessions"]} == {"claude"}
    same(fresh_board(home), b)


def test_a_held_codex_lock_sends_codex_to_its_scan_each_time(home, scans):
    rollout = next((home / "codex" / "sessions").rglob("rollout-*.jsonl"))
    tid = rollout.stem[-36:]
    cached_board(home)
    locks = home / "codex" / "thread-writer-locks"
    locks.mkdir()
    (locks / f"{tid}.lock").write_text("")
    settle(home)
    for _ in range(2):  # the first run after the lock appeared, and one with nothing moved
        scans.clear()
        b, _ = cached_board(home)
        assert "codex" in scans
        same(fresh_board(home), b)


def test_a_codex_thread_named_between_scans_shows_its_name(home, scans):
    """The TUI names a thread in session_index.jsonl a while after it starts: no folder
    moves, and the sleeping row must not keep the title it had."""
    rollout = next((home / "codex" / "sessions").rglob("rollout-*.jsonl"))
    tid = rollout.stem[-36:]
    (home / "codex" / "session_index.jsonl").write_text("")  # (made, it moves the home: a scan)
    settle(home)
    cached_board(home)
    cached_board(home)
    scans.clear()
    with open(home / "codex" / "session_index.jsonl", "a") as out:
        out.write(json.dumps({"id": tid, "thread_name": "Named later", "updated_at": "2026-11-30T12:00:00Z"}) + "\n")
    b, _ = cached_board(home)
    assert scans == []
    assert next(r for r in b["sessions"] if r["id"] == tid)["title"] == "Named later"
    same(fresh_board(home), b)


def test_rows_alike_in_state_and_time_come_in_one_order_whichever_were_kept():
    from huddle.views.board import sort_rows

    rows = [
        row(source=s, id=i, state=st, updated_at="2026-11-30T12:00:00.000Z")
        for s in ("codex", "claude")
        for i in ("b", "a")
        for st in ("idle", "needs_you")
    ]
    orders = {tuple((r.source, r.id, r.state) for r in sort_rows(list(p))) for p in (rows, rows[::-1])}
    assert len(orders) == 1
    (order,) = orders
    assert [o[2] for o in order] == ["needs_you"] * 4 + ["idle"] * 4
    assert [o[:2] for o in order[:4]] == [("claude", "a"), ("claude", "b"), ("codex", "a"), ("codex", "b")]


@examples(max_examples=200, deadline=None)
@given(
    st.lists(
        st.builds(
            row,
            source=st.sampled_from(["claude", "codex", ""]),
            id=st.sampled_from(["a", "b", "c", ""]),
            state=st.sampled_from(["needs_you", "your_turn", "working", "idle", "ended", "", "odd"]),
            updated_at=st.sampled_from(["2026-11-30T12:00:00.000Z", "2026-11-30T13:00:00.000Z", "", None]),
        ),
        max_size=30,
    )
)
def test_rows_sort_as_three_stable_sorts_by_id_then_time_then_urgency_do(rows):
    """sort_rows' two sorts put rows in the order its three used to (stability kept)."""
    from huddle.model.attention import urgency
    from huddle.views.board import sort_rows

    three = list(rows)
    three.sort(key=lambda r: (r.source, r.id))
    three.sort(key=lambda r: r.updated_at or "", reverse=True)
    three.sort(key=lambda r: urgency(r.state))
    assert [id(r) for r in sort_rows(list(rows))] == [id(r) for r in three]


def test_the_cache_is_one_whatever_order_the_adapters_were_imported_in(home):
    # (a process that imported huddle.host first listed "hosted" second, and its cache
    # was another's: each start read everything again and wrote over the other's)
    first = Huddle(settings(home), sources=["claude", "codex", "hosted"], keep=Keeper())
    first.refresh()
    built: dict = {}
    leave_board(first, board_json(first, built=built), built)
    first.cache.store.close()
    again = Huddle(settings(home), sources=["hosted", "codex", "claude"], keep=Keeper())
    assert again.dormant and set(again.dormant) == set(first.handles) | set(first.dormant)


def new_session(folder, sid: str) -> None:
    """A session started in a project folder the cache knows (its first prompt)."""
    record = {"type": "user", "message": {"role": "user", "content": "hello"}, "sessionId": sid}
    append(
        folder / f"{sid}.jsonl", {**record, "timestamp": "2026-11-30T12:00:00.000Z", "uuid": "u-1", "parentUuid": None}
    )


def test_a_new_session_beside_known_ones_is_placed_without_a_scan(home, scans):
    f = next((home / "claude" / "projects").glob("*01-basic-tools*/*.jsonl"))
    cached_board(home)
    scans.clear()
    sid = "5e0c1d2a-0000-4000-8000-00000000a001"
    new_session(f.parent, sid)
    then = time.time() - 60  # (written a while ago: stamped, not read again as one just written)
    for p in (f.parent / f"{sid}.jsonl", f.parent):
        os.utime(p, (then, then))
    b, h = cached_board(home)
    assert scans == [] and set(h.handles) == {f"claude:{sid}"}
    same(fresh_board(home), b)
    scans.clear()
    st = os.stat(f.parent)
    again, h = cached_board(home)  # (its folder stamped again as it was found)
    assert scans == [] and not h.handles
    assert [str(f.parent), st.st_mtime_ns, st.st_ctime_ns] in h.cache.meta()["scans"]["claude"]
    same(b, again)
    assert sid in {r["id"] for r in again["sessions"]}


def test_a_folder_that_moved_with_nothing_new_in_it_is_not_scanned(home, scans):
    f = next((home / "claude" / "projects").glob("*01-basic-tools*/*.jsonl"))
    first, _ = cached_board(home)
    scans.clear()
    temp = f.parent / "write.tmp"  # (a file written beside them and renamed away: the folder moved)
    temp.write_text("x")
    temp.rename(home / "elsewhere")
    second, h = cached_board(home)
    assert scans == [] and not h.handles
    same(first, second)


def test_what_only_a_scan_can_place_is_scanned_for(home, scans):
    f = next((home / "claude" / "projects").glob("*02-subagents*/*.jsonl"))
    cached_board(home)
    scans.clear()
    (f.parent / "agent-1a2b3c4d.jsonl").write_text("")  # (2.0.x: an agent file names its session inside)
    b, _ = cached_board(home)
    assert scans == ["claude"]
    same(fresh_board(home), b)
    scans.clear()
    other = next((home / "claude" / "projects").glob("*07-errors*/*.jsonl"))
    other.unlink()  # (a known session gone)
    b, _ = cached_board(home)
    assert scans == ["claude"]
    same(fresh_board(home), b)
    assert other.stem not in {r["id"] for r in b["sessions"]}
