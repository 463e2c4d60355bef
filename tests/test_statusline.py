"""`huddle statusline`: standard library only, always a line, right about who needs you."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SAMPLES

LIVE = SAMPLES / "claude-live"
INPUT = {
    "session_id": "11111111-2222-3333-4444-555555555555",
    "transcript_path": "/nowhere.jsonl",
    "cwd": "/home/dev/proj",
    "model": {"id": "claude-opus-5-5", "display_name": "Opus"},
    "workspace": {"current_dir": "/home/dev/proj", "project_dir": "/home/dev/proj"},
    "cost": {"total_cost_usd": 4.2},
    "context_window": {"context_window_size": 200000, "used_percentage": 37.5},
}


def own_proc_start() -> str:
    stat = Path("/proc/self/stat").read_text()
    return stat[stat.rfind(")") + 2 :].split()[19]


def live_copy(tmp_path: Path, name: str, pid: int, proc_start: str) -> Path:
    """A snapshot's config dir whose registry file names a live process (the truth's
    pid is long dead), so the status line sees it as running."""
    dst = tmp_path / name
    shutil.copytree(LIVE / name / "config", dst)
    for f in (dst / "sessions").glob("*.json"):
        d = json.loads(f.read_text())
        d["pid"], d["procStart"] = pid, proc_start
        f.unlink()
        (dst / "sessions" / f"{pid}.json").write_text(json.dumps(d))
    return dst


def statusline(env: dict, stdin: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "huddle", "statusline", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=60,
    )


@pytest.fixture
def alive_pid():
    """A real process to stand for a running Claude Code."""
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    stat = Path(f"/proc/{p.pid}/stat").read_text()
    yield p.pid, stat[stat.rfind(")") + 2 :].split()[19]
    p.kill()
    p.wait()


def test_imports_only_the_standard_library():
    code = (
        "import sys, io; before = set(sys.modules); sys.argv = ['huddle', 'statusline'];"
        "sys.stdin = io.StringIO('{}');"
        "from huddle import entry\n"
        "try:\n    entry.main()\nexcept SystemExit:\n    pass\n"
        "extra = sorted(m for m in set(sys.modules) - before if m.split('.')[0] not in sys.stdlib_module_names);"
        "print(sorted(m for m in ('typing', 're') if m in sys.modules and m not in before), file=sys.stderr);"
        "print(extra, file=sys.stderr)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    *_, heavy, last = out.stderr.strip().splitlines()
    extra = eval(last)
    assert heavy == "[]"  # (typing and re: ~10 ms of a ~23 ms run, before quota.py left them)
    # huddle's own modules it may use: the standard-library-only ones (io/, model/'s rule tables)
    allowed = ("huddle", "huddle.entry", "huddle.statusline", "huddle.io", "huddle.model", "huddle.model.attention")
    assert extra and all(m in allowed or m.startswith("huddle.io.") for m in extra), extra
    assert "huddle.io.boardfile" in extra and "huddle.io.procs" in extra


def test_the_stored_answers_path_imports_no_typing():
    # typing (with re) costs ~5 ms, a tenth of a `status --json` said from its stored
    # answer and a quarter of the status line: the modules they read skip it
    # (what the interpreter had before, a coverage run's own start among it, is not counted)
    code = (
        "import sys; before = set(sys.modules); import huddle.entry, huddle.oneshot, huddle.io.answers,"
        " huddle.io.served, huddle.io.boardfile, huddle.io.quota, huddle.statusline; huddle.oneshot.stored_name('status');"
        "print(sorted(m for m in ('typing', 're') if m in sys.modules and m not in before))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


def test_missing_cache_waits_for_the_refresher_and_shows_who_needs_you(tmp_path, alive_pid):
    cfg = live_copy(tmp_path, "05-needs-you-bash-permission", *alive_pid)
    env = {"CLAUDE_CONFIG_DIR": str(cfg), "HUDDLE_HOME": str(tmp_path / "hh"), "HUDDLE_STATUSLINE_BUDGET": "20"}
    r = statusline(env, json.dumps(INPUT))
    assert r.returncode == 0
    board = subprocess.run(
        [sys.executable, "-m", "huddle", "status", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=60,
        check=True,
    )
    (row,) = json.loads(board.stdout)["sessions"]
    # the hint is the board's own title, cut to 24 characters
    assert r.stdout.strip() == f"$4.20 · ctx 38% │ ✋ 1 needs you ({row['title'][:24]})"
    assert (tmp_path / "hh" / "cache" / "board.bin").exists()


def test_registry_overlay_is_live_even_on_a_stale_board(tmp_path, alive_pid):
    cfg = live_copy(tmp_path, "04-your-turn-finished", *alive_pid)
    env = {"CLAUDE_CONFIG_DIR": str(cfg), "HUDDLE_HOME": str(tmp_path / "hh"), "HUDDLE_STATUSLINE_BUDGET": "20"}
    assert "need" not in statusline(env, json.dumps(INPUT)).stdout
    # The process now shows a permission prompt: the pid file says so before any refresh.
    (reg,) = (cfg / "sessions").glob("*.json")
    d = json.loads(reg.read_text())
    d["status"], d["waitingFor"] = "waiting", "permission prompt"
    reg.write_text(json.dumps(d))
    # A budget too short for the refresher: the answer comes from the registry overlay.
    out = json.loads(statusline({**env, "HUDDLE_STATUSLINE_BUDGET": "0.05"}, json.dumps(INPUT), "--json").stdout)
    assert [n["waiting_for"] for n in out["needs_you"]] == ["permission prompt"]


@pytest.mark.parametrize("stdin", ["", "not json at all", "[1, 2]", json.dumps({"session_id": None, "cost": "free"})])
def test_any_input_still_prints_the_board_line(tmp_path, stdin):
    env = {
        "CLAUDE_CONFIG_DIR": str(tmp_path / "none"),
        "HUDDLE_HOME": str(tmp_path / "hh"),
        "HUDDLE_STATUSLINE_BUDGET": "0.1",
    }
    r = statusline(env, stdin)
    assert r.returncode == 0 and r.stdout.strip() and "Traceback" not in r.stderr


def test_missing_fields_are_tolerated(tmp_path):
    env = {
        "CLAUDE_CONFIG_DIR": str(tmp_path / "none"),
        "HUDDLE_HOME": str(tmp_path / "hh"),
        "HUDDLE_STATUSLINE_BUDGET": "0.1",
    }
    r = statusline(
        env, json.dumps({"session_id": "x", "context_window": {"context_window_size": 1000, "total_input_tokens": 250}})
    )
    assert "ctx 25%" in r.stdout


def test_corrupt_cache_is_rebuilt(tmp_path, alive_pid):
    cfg = live_copy(tmp_path, "09-needs-you-question", *alive_pid)
    hh = tmp_path / "hh"
    (hh / "cache").mkdir(parents=True)
    (hh / "cache" / "board.bin").write_bytes(b"\x00{not a board")
    (hh / "cache" / "handles.db").write_bytes(b"garbage")
    env = {"CLAUDE_CONFIG_DIR": str(cfg), "HUDDLE_HOME": str(hh), "HUDDLE_STATUSLINE_BUDGET": "20"}
    r = statusline(env, json.dumps(INPUT), "--json")
    out = json.loads(r.stdout)
    assert [n["waiting_for"] for n in out["needs_you"]] == [
        "question: AskUserQuestion: Which greeting style should the app use?"
    ]
    from huddle.io.boardfile import read_board

    assert read_board(str(hh / "cache" / "board.bin"))["sessions"]  # rewritten whole


def test_thousands_of_sessions(tmp_path):
    from huddle.statusline import summarise

    rows = [
        {
            "id": f"s{i}",
            "source": "claude",
            "state": ("needs_you" if i % 1000 == 0 else "working" if i % 3 == 0 else "ended"),
        }
        for i in range(3000)
    ]
    from huddle.io.boardfile import write_rows

    write_rows(str(tmp_path / "hh"), rows, [])
    env = {
        "CLAUDE_CONFIG_DIR": str(tmp_path / "none"),
        "HUDDLE_HOME": str(tmp_path / "hh"),
        "HUDDLE_STATUSLINE_BUDGET": "5",
    }
    out = json.loads(statusline(env, json.dumps(INPUT), "--json").stdout)
    assert len(out["needs_you"]) == 3
    assert out["working"] == sum(1 for i in range(3000) if i % 3 == 0 and i % 1000 != 0)
    assert out["sessions"] == 3000 and out["stale"] is False
    line = statusline(env, json.dumps(INPUT)).stdout.strip()
    assert line.startswith("$4.20 · ctx 38% │ ✋ 3 need you · ⚙ ")
    assert summarise({}, None, True)["stale"] is True


def test_the_status_line_reads_a_head_that_does_not_grow_with_history(tmp_path, alive_pid):
    """Two years of settled sessions stay out of what every call reads: the head holds
    the lively rows and the newest few; a session the live registry names that is not
    in it (a Claude opened again on an old session) is found in the whole board."""
    from huddle.io.boardfile import RECENT, board_path, read_board, write_rows

    old = [
        {"id": f"old{i}", "source": "claude", "title": f"old {i}", "state": "idle", "files": [["/x", 1, i]]}
        for i in range(5000)
    ]
    lively = [{"id": "now", "source": "claude", "title": "now", "state": "working", "files": []}]
    claude = tmp_path / "claude"
    (claude / "sessions").mkdir(parents=True)
    write_rows(str(tmp_path / "hh"), old + lively, [], {"claude": str(claude)})
    head = read_board(board_path(str(tmp_path / "hh")), whole=False)
    assert head is not None and head["count"] == 5001
    assert [r["id"] for r in head["sessions"]][:1] == ["now"] and len(head["sessions"]) == 1 + RECENT
    assert head["sessions"][1]["id"] == "old4999"  # the newest settled ones next
    # the registry names the oldest one, asking for approval
    reg = {"pid": alive_pid[0], "procStart": alive_pid[1], "sessionId": "old0", "status": "waiting"}
    (claude / "sessions" / f"{alive_pid[0]}.json").write_text(json.dumps(reg))
    env = {"CLAUDE_CONFIG_DIR": str(claude), "HUDDLE_HOME": str(tmp_path / "hh"), "HUDDLE_STATUSLINE_BUDGET": "5"}
    out = json.loads(statusline(env, json.dumps(INPUT), "--json").stdout)
    assert [(n["id"], n["title"]) for n in out["needs_you"]] == [("old0", "old 0")]
    assert out["working"] == 1 and out["sessions"] == 5001


@pytest.mark.parametrize(
    "text", ['{"a": [1, 2.5, -3e2, true, false, null, "\\u00e9\\n"], "b": {"c": NaN}}', " [ ] ", '"x"']
)
def test_the_import_free_json_reader_agrees_with_json(text):
    import math

    from huddle.statusline import parse_json

    got, want = parse_json(text), json.loads(text)
    if isinstance(want, dict):
        assert math.isnan(got["b"]["c"]) and got["a"] == want["a"]
    else:
        assert got == want


@pytest.mark.parametrize("text", ["{", '{"a": 1} x', "nul", "{'a': 1}", ""])
def test_the_import_free_json_reader_refuses_what_json_refuses(text):
    from huddle.statusline import parse_json

    with pytest.raises(ValueError):
        parse_json(text)


def test_status_lines_asking_at_once_start_one_refresher(tmp_path, monkeypatch):
    """The lock is held across the spawn and handed to the refresher: probing it and
    letting go first let a dozen status lines start a dozen refreshers."""
    import fcntl
    import threading

    from hosting import wait_until
    from huddle import statusline

    home = tmp_path / "hh"
    shutil.copytree(SAMPLES / "claude" / "02-subagents" / "config", tmp_path / "config")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("HUDDLE_HOME", str(home))
    spawned: list[int] = []
    real_spawn = os.posix_spawn

    def counting_spawn(*args, **kw):  # the real spawn, counted
        pid = real_spawn(*args, **kw)
        spawned.append(pid)
        return pid

    monkeypatch.setattr(os, "posix_spawn", counting_spawn)
    go = threading.Barrier(16)

    def ask() -> None:
        go.wait()
        statusline.kick_refresh(str(home))

    askers = [threading.Thread(target=ask) for _ in range(16)]
    for t in askers:
        t.start()
    for t in askers:
        t.join(timeout=30)
    assert len(spawned) == 1
    fd = os.open(home / "cache" / "refresh.lock", os.O_RDWR)
    try:

        def free() -> bool:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return False
            return True

        # held by the refresher it was handed to, until it has written the board
        wait_until(free, "the refresher to finish")
        assert (home / "cache" / "board.bin").exists()
        os.waitpid(spawned[0], 0)
    finally:
        os.close(fd)


def test_a_board_past_a_rows_next_change_is_stale(tmp_path):
    """Time alone moved a row's state since the board was written (a turn gone idle): the
    status line reads the board as stale and asks for a refresh."""
    import time

    from huddle.io.boardfile import board_row
    from huddle.model.times import iso
    from huddle.statusline import is_stale

    now = time.time()
    soon = board_row({"id": "a", "source": "claude", "state": "your_turn", "next_change": iso(now + 60)}, None)
    assert soon["next_change"] == pytest.approx(now + 60, abs=0.01)
    board = {"written_at": now, "dirs": [], "sessions": [soon]}
    assert not is_stale(board, time.monotonic() + 5)
    past = board_row({"id": "a", "source": "claude", "state": "your_turn", "next_change": iso(now - 1)}, None)
    assert is_stale({**board, "sessions": [past]}, time.monotonic() + 5)


def test_a_board_patched_from_its_kept_bytes_is_the_board_written_whole(tmp_path):
    """stored.patching rewrites the rows that moved and keeps every other one as its bytes
    stand: the file it leaves, head and rows, is the one the whole path writes, even where
    a moved row leaves the head's newest few and an older one takes its place."""
    from huddle.io.boardfile import RECENT, board_path, entry_of, read_board, read_kept, write_kept, write_rows

    def row(i: int, state: str = "idle", t: int | None = None) -> dict:
        return {
            "id": f"s{i}",
            "source": "claude",
            "title": f"s {i}",
            "state": state,
            "files": [["/x", 1, i if t is None else t]],
        }

    rows = [row(i) for i in range(RECENT * 3)] + [row(-1, "working")]
    a, b = tmp_path / "a", tmp_path / "b"
    write_rows(str(a), rows, [])
    moved = {  # the newest settled one goes old, an old one comes alive, one gets newer
        f"claude:s{RECENT * 3 - 1}": row(RECENT * 3 - 1, t=-5),
        "claude:s3": row(3, "needs_you"),
        "claude:s10": row(10, t=10**9),
    }
    after = [moved.get(f"claude:{r['id']}", r) for r in rows]
    _head, kept, index = read_kept(board_path(str(a)))
    order = {f"claude:{r['id']}": moved.get(f"claude:{r['id']}") for r in rows}
    write_kept(str(a), order, kept, {k: entry_of(moved[k]) if k in moved else index[k] for k in order}, [])
    write_rows(str(b), after, [])
    patched, whole = read_board(board_path(str(a))), read_board(board_path(str(b)))
    for d in (patched, whole):
        d.pop("written_at")
    assert patched == whole
    assert (
        read_board(board_path(str(a)), whole=False)["sessions"]
        == read_board(board_path(str(b)), whole=False)["sessions"]
    )
