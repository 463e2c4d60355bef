"""Hostile and broken Vibe input: a bad line costs that line, a broken store costs
that session (listed with a one-line error naming the file), never the others."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from huddle.model import events as ev
from huddle.sources.vibe.locks import Locks
from huddle.views.board import board_json
from said import as_json
from test_vibe_incremental import signature, store_of, write_atomic
from test_vibe_source import VIBE, kinds, vibe_huddle

ASK = "2.26.1-unified-ask"
JOURNAL = (store_of(VIBE / ASK) / "journal" / "0000000000000001.jsonl").read_bytes().splitlines()


def two_sessions(tmp: Path) -> tuple[Path, Path]:
    """A VIBE_HOME with two unified sessions; returns it and the first store."""
    home = tmp / "home"
    shutil.copytree(VIBE / ASK / "logs", home / "logs")
    other = store_of(VIBE / "3.0.3-unified-bash")
    shutil.copytree(other, home / "logs" / "session" / "unified" / other.name)
    return home, store_of_id(home, "35c53005-9980-b4cf-a4e8-6bb0aa241132")


def store_of_id(home: Path, sid: str) -> Path:
    return home / "logs" / "session" / "unified" / sid


def sessions(home: Path) -> dict:
    return {s.id: s for s in vibe_huddle(home).sessions()}


def current_of(store: Path) -> dict:
    return json.loads((store / "CURRENT").read_text())


def check_contained(home: Path, broken: str, *words: str) -> None:
    by_id = sessions(home)
    s = by_id[broken]
    assert s.error is not None and "\n" not in s.error
    for w in words:
        assert w in s.error, s.error
    others = [o for o in by_id.values() if o.id != broken]
    assert others and all(o.error is None and o.events for o in others)


def test_a_missing_chunk_costs_that_session(tmp_path):
    home, store = two_sessions(tmp_path)
    man = json.loads((store / "generations" / current_of(store)["generation"] / "manifest.json").read_text())
    chunk = store / "chunks" / (man["projection_state"]["chunks"][0] + ".json")
    chunk.unlink()
    check_contained(home, store.name, str(chunk), "is missing")


def test_current_pointing_nowhere(tmp_path):
    home, store = two_sessions(tmp_path)
    cur = current_of(store)
    cur["generation"] = "0000000000009999"
    write_atomic(store / "CURRENT", json.dumps(cur).encode())
    check_contained(home, store.name, "CURRENT names generation 0000000000009999", "manifest.json is missing")


def test_garbage_current_and_manifest(tmp_path):
    home, store = two_sessions(tmp_path)
    write_atomic(store / "CURRENT", b'{"generation": "00000')
    check_contained(home, store.name, "CURRENT: not valid JSON")
    shutil.copy(store_of(VIBE / ASK) / "CURRENT", store / "CURRENT")
    (store / "generations" / current_of(store)["generation"] / "manifest.json").write_bytes(b"\x00\xff garbage")
    check_contained(home, store.name, "manifest.json: not valid JSON")


def test_a_newer_store_format_is_refused_with_a_clear_error(tmp_path):
    home, store = two_sessions(tmp_path)
    cur = current_of(store)
    cur["store_format_minor"] = 11
    write_atomic(store / "CURRENT", json.dumps(cur).encode())
    check_contained(home, store.name, "store format minor 11 is newer than huddle understands (up to 10)")


def test_an_odd_path_in_a_manifest_is_refused(tmp_path):
    home, store = two_sessions(tmp_path)
    mpath = store / "generations" / current_of(store)["generation"] / "manifest.json"
    man = json.loads(mpath.read_text())
    man["recovery_journal_segment"]["path"] = "../../../../etc/passwd"
    mpath.write_text(json.dumps(man))
    check_contained(home, store.name, "odd journal path")


def test_a_sub_agent_store_that_breaks_costs_its_session_only(tmp_path):
    home = tmp_path / "home"
    shutil.copytree(VIBE / "3.0.3-unified-subagent" / "logs", home / "logs")
    child = home / "logs" / "session" / "unified" / "child-4aefbc8c334dc816492696f0"
    (child / "CURRENT").write_bytes(b"not json")
    (s,) = sessions(home).values()
    assert "child-4aefbc8c334dc816492696f0/CURRENT: not valid JSON" in s.error
    assert kinds(s, ev.PROMPT)  # what the lead's store said is still there


# -- hostile journal lines ---------------------------------------------------------------

line_ops = st.lists(
    st.tuples(
        st.integers(0, len(JOURNAL) - 1), st.sampled_from(["keep", "cut", "garbage", "twice"]), st.integers(0, 400)
    ),
    max_size=len(JOURNAL) + 6,
)


def hostile_journal(ops) -> tuple[bytes, int]:
    out, garbage = [], 0
    for i, op, k in ops:
        line = JOURNAL[i]
        if op == "cut":
            line = line[: k % max(1, len(line))]
        elif op == "garbage":
            line = bytes((b * 7 + k) % 256 for b in line[: k % 64]).replace(b"\n", b" ")
            garbage += 1
        elif op == "twice":
            out.append(line)
        out.append(line)
    return b"\n".join(out) + b"\n", garbage


def fresh_home(tmp: str) -> Path:
    home = Path(tmp) / "home"
    shutil.copytree(VIBE / f"{ASK}-waiting" / "logs", home / "logs")
    return home


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=line_ops)
def test_hostile_journal_lines_cost_only_lines(ops):
    data, _ = hostile_journal(ops)
    with tempfile.TemporaryDirectory() as tmp:
        home = fresh_home(tmp)
        (store_of(home) / "journal" / "0000000000000001.jsonl").write_bytes(data)
        h = vibe_huddle(home)
        (s,) = h.sessions()
        assert s.error is None, s.error
        assert {e.kind for e in s.events} <= set(ev.KINDS)
        for kind in (ev.TOOL_CALL, ev.TOOL_RESULT, ev.WAITING, ev.RESOLVED, ev.USAGE, ev.PROMPT):
            ids = [e.id for e in kinds(s, kind)]
            assert len(ids) == len(set(ids)), kind
        assert all(p.split(":")[0].endswith(".jsonl") for p in s.problems)
        as_json(board_json(h, at=1796010000.0))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=line_ops, cuts=st.lists(st.integers(0, 1 << 20), max_size=8))
def test_reading_a_journal_in_pieces_gives_what_one_read_gives(ops, cuts):
    data, _ = hostile_journal(ops)
    with tempfile.TemporaryDirectory() as tmp:
        whole = fresh_home(tmp + "/a")
        (store_of(whole) / "journal" / "0000000000000001.jsonl").write_bytes(data)
        at_once = next(iter(vibe_huddle(whole).sessions()))
        home = fresh_home(tmp + "/b")
        journal = store_of(home) / "journal" / "0000000000000001.jsonl"
        journal.write_bytes(b"")
        h = vibe_huddle(home)
        written = 0
        for cut in sorted(c % (len(data) + 1) for c in cuts) + [len(data)]:
            with open(journal, "ab") as f:
                f.write(data[written:cut])
            written = max(written, cut)
            h.refresh()
        (s,) = h.sessions()
        assert s.error is None and at_once.error is None
        assert signature(s) == signature(at_once)
        assert s.usage.to_dict() == at_once.usage.to_dict()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=st.lists(
        st.tuples(st.integers(0, 5), st.sampled_from(["keep", "cut", "garbage"]), st.integers(0, 300)), max_size=12
    )
)
def test_hostile_legacy_messages(ops):
    src = next((VIBE / "2.26.1-legacy-bash" / "logs" / "session").glob("session_*"))
    lines = (src / "messages.jsonl").read_bytes().splitlines()
    out = []
    for i, op, k in ops:
        line = lines[i % len(lines)]
        out.append(
            line[: k % max(1, len(line))]
            if op == "cut"
            else bytes((b + k) % 256 for b in line[:40]).replace(b"\n", b" ")
            if op == "garbage"
            else line
        )
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        shutil.copytree(VIBE / "2.26.1-legacy-bash" / "logs", home / "logs")
        msgs = next((home / "logs" / "session").glob("session_*/messages.jsonl"))
        msgs.write_bytes(b"\n".join(out) + b"\n")
        (s,) = vibe_huddle(home).sessions()
        assert s.error is None
        assert {e.kind for e in s.events} <= set(ev.KINDS)
        assert s.usage.input == 13647  # the totals come from meta.json, whatever the lines


def test_a_broken_legacy_meta_costs_its_usage_not_its_messages(tmp_path):
    home = tmp_path / "home"
    shutil.copytree(VIBE / "2.26.1-legacy-bash" / "logs", home / "logs")
    folder = next((home / "logs" / "session").glob("session_*"))
    head = (folder / "meta.json").read_bytes()[:200]
    (folder / "meta.json").write_bytes(head)  # cut short: still names its session
    (s,) = vibe_huddle(home).sessions()
    assert s.error is None and s.id == "ba007ba3-2410-07af-47f0-d31b57a9465a"
    assert kinds(s, ev.PROMPT) and not kinds(s, ev.USAGE)


def test_bad_config_toml_falls_back_to_the_default_folder(tmp_path):
    home = tmp_path / "vibe-home"
    shutil.copytree(VIBE / "3.0.3-unified-qa" / "logs", home / "logs")
    (home / "config.toml").write_text("[session_logging\nsave_dir = ")
    (s,) = vibe_huddle(home).sessions()
    assert s.id == "e4b6d9e3-c399-3cf5-4a8a-131143e6e769"
    shutil.rmtree(home / "logs")
    h = vibe_huddle(home)
    assert not h.sessions()
    assert any("config.toml: not valid TOML" in n for n in h.notes)


# -- locks -------------------------------------------------------------------------------


def test_locks_tell_a_live_process_from_a_dead_one(tmp_path):
    active = tmp_path / "active"
    active.mkdir()
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(done.stdout)
    for sid, pid in (("live", os.getpid()), ("dead", dead)):
        (active / f"{sid}.lock").write_bytes(b"")
        (active / f"{sid}.lock.json").write_text(
            json.dumps({"acquired_at": "2099-01-01T00:00:00.000Z", "process_id": pid, "session_id": sid})
        )
    (active / "stale.lock.json").write_text(json.dumps({"process_id": os.getpid(), "session_id": "stale"}))
    locks = Locks(str(active))
    locks.refresh()
    assert locks.alive("live") is True and locks.alive("dead") is False
    assert locks.alive("dead", at=0.0) is True  # as of a past time the files are trusted
    assert locks.alive("stale") is False  # no lock file: not held
    assert locks.alive("unknown") is False
    assert Locks(str(tmp_path / "none")).alive("x") is None  # no lock folder: cannot tell


def test_a_first_turn_session_follows_its_lock_when_it_is_rewritten(tmp_path):
    """A session that is only its lock (a legacy first turn waiting for approval) shows
    what the lock says now. The fault matrix once read the lock in the instant between
    its truncation and its write (the session went), then met it with a time that is no
    time (the session came back with no start, off the board), then put right: the board
    kept the session off for good, as its event had been made from the first lock seen."""
    home = tmp_path / "home"
    shutil.copytree(VIBE / "2.26.1-legacy-approval-waiting" / "logs", home / "logs")
    (lock,) = (home / "logs" / "session" / "active").glob("*.lock.json")
    key = "vibe:" + lock.name.split(".")[0]
    good = lock.read_bytes()
    future = json.dumps({**json.loads(good), "acquired_at": "9999-12-31T23:59:59.999Z"}).encode()

    def listed(h) -> dict:
        return {f"vibe:{r['id']}": r for r in as_json(board_json(h))["sessions"]}

    h = vibe_huddle(home)
    before = listed(h)[key]
    assert before["started_at"] == json.loads(good)["acquired_at"]
    for data in (b"", future, good):  # caught half-written, then far-future, then undone
        lock.write_bytes(data)
        h.refresh()
    row = listed(h).get(key)
    assert row is not None, "the session stayed off the board after its lock was put right"
    assert row["started_at"] == before["started_at"]
    cold = vibe_huddle(home)
    assert [(e.kind, e.t, e.text) for e in h.session(key).events] == [
        (e.kind, e.t, e.text) for e in cold.session(key).events
    ]

    lock.write_bytes(json.dumps({**json.loads(good), "acquired_at": "2026-11-30T04:00:00.000Z"}).encode())
    h.refresh()  # taken again (a new acquired_at): the row's start follows, as a cold read says
    assert listed(h)[key]["started_at"] == "2026-11-30T04:00:00.000Z" == listed(vibe_huddle(home))[key]["started_at"]
