"""One OpenCode row costs one row (issue 34): a row the reader cannot decode (invalid
UTF-8 such as a cut emoji, nesting too deep, a number past a float) is that row's
problem, never the session's (the fuzz lost 1,000 of 1,000 sessions); a row past the
size cap is read without its heavy fields (a 100 MB part cost 672 MB); a database
symlinked out of its folder is not followed; rows OpenCode deletes (a revert) leave the
live view as they leave a cold read. Real SQLite, a second process writing as OpenCode."""

from __future__ import annotations

import json
import shutil
import tracemalloc
from collections import Counter
from pathlib import Path

import pytest

from conftest import SAMPLES
from huddle.sources import Settings
from huddle.sources.opencode import OpenCodeSource
from opencode_writer import Writer

DATA = SAMPLES / "opencode" / "07-subagent" / "home" / ".local" / "share" / "opencode"
LEAD = "ses_dcef11228ffevdKRyWu2TMsXEk"


def _source(data: Path) -> OpenCodeSource:
    return OpenCodeSource(Settings(folders={"opencode": str(data), "opencode-state": "/nonexistent"}))


def _read(data: Path, src: OpenCodeSource | None = None, handles: dict | None = None):
    src = src or _source(data)
    handles = src.scan(handles or {})
    for h in handles.values():
        h.refresh()
    return src, handles


def _sig(handles: dict) -> dict:
    return {k: [(e.kind, e.agent, e.text[:60], e.id) for e in h.session.events] for k, h in sorted(handles.items())}


@pytest.fixture
def data(tmp_path) -> Path:
    d = tmp_path / "opencode"
    shutil.copytree(DATA, d)
    return d


def _last_message(w: Writer, sid: str = LEAD) -> str:
    ((mid,),) = w.run("SELECT id FROM message WHERE session_id = ? ORDER BY time_created DESC LIMIT 1", sid)
    return mid


def _add_part(w: Writer, data_sql: str, *args, pid: str = "prt_zzzzhostile", sid: str = LEAD) -> None:
    mid = _last_message(w, sid)
    w.run(
        "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) "
        f"VALUES (?, ?, ?, 1796119393999, 1796119393999, {data_sql})",
        pid,
        mid,
        sid,
        *args,
    )
    w.run("UPDATE event_sequence SET seq = seq + 1 WHERE aggregate_id = ?", sid)
    w.run("UPDATE session SET time_updated = time_updated + 1 WHERE id = ?", sid)


CUT_EMOJI = "CAST(X'" + b'{"type":"text","text":"a cut emoji \xf0\x9f","time":{"start":1,"end":2}}'.hex() + "' AS TEXT)"
DEEP = (
    "'"
    + '{"type":"tool","tool":"bash","callID":"call_deep","state":{"status":"completed","input":'
    + "[" * 5000
    + "]" * 5000
    + ',"output":"ok","time":{"start":1796119393000,"end":1796119393999}}}'
    + "'"
)
PAST_FLOAT = "'" + '{"type":"text","text":"x","time":{"start":1e400,"end":1e400}}' + "'"


@pytest.mark.parametrize("bad", [CUT_EMOJI, DEEP, PAST_FLOAT], ids=["cut-emoji", "deep", "past-a-float"])
def test_a_row_that_does_not_decode_costs_that_row(data, bad):
    src, live = _read(data)
    before = _sig(live)
    with Writer(data / "opencode.db") as w:
        _add_part(w, bad)
        _add_part(
            w, "?", json.dumps({"type": "text", "text": "the canary", "time": {"start": 1, "end": 2}}), pid="prt_zzzzz"
        )
    _src, live = _read(data, src, live)
    _cold_src, cold = _read(data)
    for where, handles in (("live", live), ("cold", cold)):
        (h,) = handles.values()
        s = h.session
        assert s.error is None, f"{where}: {s.error}"
        now = Counter(_sig(handles)[h.key])
        assert now >= Counter(before[h.key]), f"{where}: events lost"
        assert any(e.text == "the canary" for e in s.events), where
        said = [p for p in s.problems if str(data / "opencode.db") in p]
        assert len(said) <= 1, said
    # (a part added to a finished message: a cold read places it before the message's end)
    assert {k: sorted(v) for k, v in _sig(live).items()} == {k: sorted(v) for k, v in _sig(cold).items()}


def test_a_title_that_is_not_utf8_costs_nothing_else(data):
    _src, before = _read(data)
    with Writer(data / "opencode.db") as w:
        w.run(
            "UPDATE session SET title = CAST(X'"
            + "Count \U0001f40d files".encode()[:9].hex()
            + "' AS TEXT) WHERE id = ?",
            LEAD,
        )
    _src, after = _read(data)
    assert set(after) == set(before)
    (h,) = after.values()
    assert h.session.error is None and len(h.session.events) == len(next(iter(before.values())).session.events)


def test_a_huge_row_is_read_without_its_heavy_fields(data):
    big = 40 << 20
    with Writer(data / "opencode.db") as w:
        ((raw,),) = w.run("SELECT data FROM part WHERE session_id = ? AND data LIKE '%\"tool\"%' LIMIT 1", LEAD)
        part = json.loads(raw)
        part["callID"] = "call_huge"
        part["state"]["output"] = "y" * big
        _add_part(w, "?", json.dumps(part), pid="prt_zzzzbig")
    tracemalloc.start()
    try:
        _src, handles = _read(data)
        _cur, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    (h,) = handles.values()
    assert h.session.error is None
    calls = [e for e in h.session.events if e.id == "call_huge"]
    assert {e.kind for e in calls} >= {"order"} or {e.kind for e in calls} >= {"tool_call"}, calls
    assert any(str(data / "opencode.db") in p and "MB" in p for p in h.session.problems), h.session.problems
    assert peak < big // 2, f"{peak / 1e6:.0f} MB held to read a {big >> 20} MB row"
    e = next(e for e in calls if e.length)
    back = h.read_record(e.file, e.offset, e.length)  # read back without its output too
    assert len(back) < 1 << 20 and b"call_huge" in back


def test_a_database_symlinked_out_of_its_folder_is_not_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(DATA, elsewhere)
    data = tmp_path / "opencode"
    data.mkdir()
    for name in ("opencode.db", "opencode.db-wal", "opencode.db-shm"):
        if (elsewhere / name).exists():
            (data / name).symlink_to(elsewhere / name)
    _src, handles = _read(data)
    assert all(not h.session.events for h in handles.values())
    said = [h.session.error for h in handles.values() if h.session.error]
    assert len(said) == 1 and "symlink" in said[0] and str(data / "opencode.db") in said[0], said


def test_a_database_symlinked_inside_its_folder_is_read(tmp_path):
    data = tmp_path / "opencode"
    shutil.copytree(DATA, data)
    for name in ("opencode.db", "opencode.db-wal", "opencode.db-shm"):
        if (data / name).exists():
            (data / name).rename(data / ("real-" + name))
            (data / name).symlink_to("real-" + name)
    _src, handles = _read(data)
    (h,) = [x for x in handles.values() if x.session.events]
    assert h.session.error is None


def test_rows_the_agent_deletes_leave_the_live_view(data):
    """A revert: OpenCode deletes the messages after a point, with their parts."""
    src, live = _read(data)
    with Writer(data / "opencode.db") as w:
        mid = _last_message(w)
        w.run("DELETE FROM part WHERE message_id = ?", mid)
        w.run("DELETE FROM message WHERE id = ?", mid)
        w.run("UPDATE event_sequence SET seq = seq + 1 WHERE aggregate_id = ?", LEAD)
        w.run("UPDATE session SET time_updated = time_updated + 1 WHERE id = ?", LEAD)
    _src, live = _read(data, src, live)
    _cold_src, cold = _read(data)
    assert _sig(live) == _sig(cold)
    (h,) = live.values()
    (c,) = cold.values()
    assert h.session.usage.to_tuple() == c.session.usage.to_tuple()


def test_a_huge_row_that_is_no_json_costs_that_row(data):
    """SQLite's json_remove refuses malformed JSON for the whole query: asked again, that
    row alone comes without its data."""
    _src, before = _read(data)
    with Writer(data / "opencode.db") as w:
        _add_part(w, "?", '{"type":"text","text":"' + "z" * (9 << 20), pid="prt_zzzzbroken")
        _add_part(
            w, "?", json.dumps({"type": "text", "text": "the canary", "time": {"start": 1, "end": 2}}), pid="prt_zzzzz"
        )
    _src, after = _read(data)
    (h,) = after.values()
    assert h.session.error is None
    assert any(e.text == "the canary" for e in h.session.events)
    said = [p for p in h.session.problems if "no JSON" in p]
    assert len(said) == 1, h.session.problems
    assert Counter(_sig(after)[h.key]) >= Counter(_sig(before)[h.key])


def test_an_empty_database_file_with_no_wal_is_nothing_yet(tmp_path):
    """(The stamp's WAL part stands at [4]: an empty file and no WAL is passed over.)"""
    data = tmp_path / "opencode"
    data.mkdir()
    (data / "opencode.db").write_bytes(b"")
    src, handles = _read(data)
    assert handles == {} and not src.notes
