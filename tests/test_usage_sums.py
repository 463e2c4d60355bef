"""`huddle usage`'s report by day kept summed beside the index (usage.sums): after
each move (a response appended, on a new day, for a model without a price; a session
new, one gone; other prices) what the kept sums say is what adding every row up says,
and what a fresh count in an empty home says; a run takes out and puts in only the rows
that moved; damaged or stale sums are added up again (damage said in one line)."""

from __future__ import annotations

import json
import marshal
import os
import shutil
import sqlite3
import time
import zlib

import pytest

from huddle import oneshot
from huddle.cost import pricing
from huddle.cost.pricing import USER_FILE, current
from huddle.sources import Settings
from huddle.usage import sums as usage_sums
from huddle.usage.index import counted_from_index
from huddle.usage.own import with_own
from huddle.usage.report import aggregate
from test_usage_packed import folders  # noqa: F401  (the fixture: every history home and Codex sample)


@pytest.fixture
def home(folders, tmp_path):  # noqa: F811
    """Every sample but 2.0.77's 05-compact: its empty session file, once it grows, takes
    agent files from another session, and its source is read again whole then
    (tests/test_regrouped.py), which is not the move these tests count."""
    out = {}
    for name, path in folders.items():
        if os.path.exists(path):
            shutil.copytree(path, tmp_path / name, ignore=lambda d, names: [n for n in names if "05-compact" in n])
        out[name] = str(tmp_path / name)
    # written an hour ago: what moved under a second before a read (a folder just copied)
    # is looked at again by the next, which on a fast machine is every run these tests make
    then = time.time() - 3600
    for d, dirs, names in os.walk(tmp_path):
        for n in names + dirs:
            os.utime(os.path.join(d, n), (then, then))
    return out


NEW = "a-model-without-a-price"
PRICE = {"input": 1, "output": 2, "cache_read": 0.5, "cache_write": 1}


def new_prices(hh) -> None:
    (hh / USER_FILE).write_text(json.dumps({"as_of": "2026-12-01", "models": {NEW: PRICE}}))
    pricing._cache.clear()  # (looked at again at most once a second in one process)


def kept_report(where, hh) -> dict:
    """`huddle usage --json`'s report (said from the kept sums when they answer)."""
    settings = Settings(folders=where, huddle_home=str(hh))
    return oneshot.usage(settings, current(str(hh)), "day", None, None)


def every_row(where, hh) -> dict:
    """The report added up from every row, as `--by day` with no sums would."""
    settings = Settings(folders=where, huddle_home=str(hh))
    table = current(str(hh))
    counted, notes = counted_from_index(settings, table)
    counted.pop("sums", None)
    # (huddle's own tokens beside the report, as `huddle usage` says them: usage.own)
    return with_own(aggregate(counted, by="day", table=table, notes=notes), str(hh), table)


def fresh(where, tmp_path, hh) -> dict:
    """A first count in an empty home (the prices the same)."""
    new = tmp_path / f"fresh{len(list(tmp_path.glob('fresh*')))}"
    new.mkdir()
    if os.path.exists(os.path.join(hh, USER_FILE)):
        shutil.copy(os.path.join(hh, USER_FILE), new / USER_FILE)
    return kept_report(where, new)


def _sessions(where) -> list[str]:
    return sorted(
        os.path.join(d, f)
        for d, _, fs in os.walk(os.path.join(where["claude"], "projects"))
        for f in fs
        if f.endswith(".jsonl") and "subagents" not in d and not f.startswith("agent-")
    )


def claude_file(where) -> str:
    files = _sessions(where)
    return files[len(files) // 2]


def append_response(path: str, n: int, model: str, when: str) -> None:
    rec = {
        "type": "assistant",
        "sessionId": os.path.basename(path)[:-6],
        "uuid": f"00000000-0000-4000-8000-{n:012d}",
        "timestamp": when,
        "message": {
            "id": f"msg_sums_{n}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": "appended"}],
            "usage": {"input_tokens": 3 + n, "output_tokens": 5, "cache_read_input_tokens": 7},
        },
    }
    with open(path, "a") as f:
        f.write(json.dumps(rec, separators=(",", ":")) + "\n")


def test_kept_sums_say_what_every_row_and_a_fresh_count_say(home, tmp_path, monkeypatch):
    hh = tmp_path / "hh"
    first = kept_report(home, hh)
    assert first["rows"] and first == fresh(home, tmp_path, hh)
    path = claude_file(home)
    copy = os.path.join(os.path.dirname(path), "0000aaaa-0000-4000-8000-000000000001.jsonl")
    other = claude_file(home)
    # (move, whether a first read is compared too)
    moves = [
        (lambda: append_response(path, 1, "claude-sonnet-4-5", "2026-11-30T12:00:00.000Z"), True),
        (lambda: append_response(path, 2, NEW, "2027-01-02T08:00:00.000Z"), True),
        (lambda: shutil.copy(path, copy), True),
        (lambda: os.unlink(copy), True),
        (lambda: os.unlink(sorted(p for p in _sessions(home) if p not in (path, copy))[0]), True),
        (lambda: new_prices(hh), False),
    ]
    assert other == path
    for i, (move, also_fresh) in enumerate(moves):
        move()
        said = kept_report(home, hh)
        again = kept_report(home, hh)  # (the move read; the next said from what was kept)
        assert said == again, i
        assert said == every_row(home, hh), i
        if also_fresh:
            assert said == fresh(home, tmp_path, hh), i
    day = [r for r in said["rows"] if r["key"] == "2027-01-02"]
    assert day and day[0]["models"] == [NEW] and day[0]["cost_usd"] == round((3 + 2 + 2 * 5 + 0.5 * 7) / 1e6, 6)


def test_a_run_takes_out_and_puts_in_only_what_moved(home, tmp_path, monkeypatch):
    hh = tmp_path / "hh"
    kept_report(home, hh)
    kept_report(home, hh)

    def added_up(rows):
        raise AssertionError("added up from every row")

    applied: list[str] = []
    real = usage_sums.apply
    monkeypatch.setattr(usage_sums, "total_of", added_up)
    monkeypatch.setattr(
        usage_sums, "apply", lambda sums, row, sign: (applied.append(row["key"]), real(sums, row, sign))
    )
    from huddle.core import cache as cache_mod

    decoded: list[bytes | None] = []  # the rows read back from the index: the replaced ones only
    real_loads = cache_mod.loads
    monkeypatch.setattr(cache_mod, "loads", lambda raw: (decoded.append(raw), real_loads(raw))[1])
    path = claude_file(home)
    append_response(path, 3, "claude-sonnet-4-5", "2026-11-30T13:00:00.000Z")
    said = kept_report(home, hh)
    assert len(set(applied)) <= 3 and len(applied) <= 6  # (that session, and any sharing its folder's count)
    assert 1 <= len(decoded) <= 3
    monkeypatch.undo()
    assert said == every_row(home, hh) == fresh(home, tmp_path, hh)


def _meta(hh, key: str):
    db = sqlite3.connect(os.path.join(hh, "cache", "usage.db"))
    try:
        (v,) = db.execute("SELECT v FROM meta WHERE k=?", (key,)).fetchone()
        return db, marshal.loads(v)
    except BaseException:
        db.close()
        raise


@pytest.mark.parametrize("damage", ["flipped byte", "not a list", "torn payload"])
def test_damaged_sums_are_said_in_one_line_and_added_up_again(home, tmp_path, capsys, damage):
    hh = tmp_path / "hh"
    good = kept_report(home, hh)
    db, kept = _meta(hh, usage_sums.KEY)
    payload = kept[3]
    bad = {
        "flipped byte": [*kept[:3], payload[:10] + bytes([payload[10] ^ 1]) + payload[11:]],
        "not a list": "sums",
        "torn payload": [*kept[:3], payload[: len(payload) // 2]],
    }[damage]
    with db:
        db.execute("UPDATE meta SET v=? WHERE k=?", (marshal.dumps(bad), usage_sums.KEY))
    db.close()
    capsys.readouterr()
    said = kept_report(home, hh)
    err = capsys.readouterr().err
    assert said["rows"] == good["rows"] and said["totals"] == good["totals"]
    assert [n for n in said["notes"] if "kept sums" in n] == [
        f"{hh}/cache/usage.db: the report's kept sums are damaged; added up again from the rows"
    ]
    assert err.count("kept sums") == 1
    again = kept_report(home, hh)
    assert not any("kept sums" in n for n in again["notes"]) and again == every_row(home, hh)


def test_sums_from_before_a_write_they_were_not_part_of_are_added_up_again(home, tmp_path):
    hh = tmp_path / "hh"
    kept_report(home, hh)
    path = claude_file(home)
    append_response(path, 4, "claude-sonnet-4-5", "2026-11-30T14:00:00.000Z")
    # another command's write of the rows (a report inside a day keeps no sums)
    settings = Settings(folders=home, huddle_home=str(hh))
    counted_from_index(settings, current(str(hh)), since=1764500000.5)
    said = kept_report(home, hh)
    assert not any("kept sums" in n for n in said["notes"])
    assert said == every_row(home, hh) == fresh(home, tmp_path, hh)
    # a row changed behind the index's back (its checksum with it): not trusted either
    db = sqlite3.connect(os.path.join(hh, "cache", "usage.db"))
    with db:
        for key, row in db.execute("SELECT key, row FROM entries WHERE row IS NOT NULL").fetchall():
            r = marshal.loads(row)
            for g in r.get("groups", ()):
                g[3] += 1000
            rb = marshal.dumps(r)
            db.execute("UPDATE entries SET row=?, row_crc=? WHERE key=?", (rb, zlib.crc32(rb), key))
    db.close()
    inflated = kept_report(home, hh)
    assert inflated == every_row(home, hh) and inflated["totals"]["input"] > said["totals"]["input"]
