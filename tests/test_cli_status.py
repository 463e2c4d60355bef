"""`huddle status` and `huddle status --json`: the board's contract."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from conftest import SAMPLES

CLAUDE = SAMPLES / "claude"


def run(*args, env=None, **kw):
    return subprocess.run(
        [sys.executable, "-m", "huddle", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
        **kw,
    )


def test_json_fields_are_the_contract():
    out = run("status", "--json", env={"CLAUDE_CONFIG_DIR": str(CLAUDE / "12-nested-and-custom-agents" / "config")})
    assert out.returncode == 0, out.stderr
    (s,) = json.loads(out.stdout)["sessions"]
    for key in (
        "id",
        "source",
        "title",
        "cwd",
        "started_at",
        "updated_at",
        "usage",
        "agents",
        "events",
        "skipped_lines",
        "state",
        "state_since",
        "waiting_for",
        "tokens",
        "cost",
        "project",
        "background",
    ):
        assert key in s, key
    assert s["source"] == "claude"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", s["started_at"])
    assert set(s["usage"]) >= {"input", "output", "cache_read", "cache_write"}
    lead, *subs = s["agents"]
    assert lead["parent"] is None and lead["id"] == s["id"] and lead["tool_use_id"] is None
    assert all(a["parent"] and a["tool_use_id"].startswith("toolu_") for a in subs)
    for a in s["agents"]:
        assert set(a) >= {"id", "parent", "name", "tool_use_id", "usage", "state"}
    total = {k: sum(a["usage"][k] for a in s["agents"]) for k in s["usage"]}
    assert total == s["usage"]
    assert s["events"]["order"] == 3 and s["events"]["report"] == 3
    assert s["skipped_lines"] == 0


def test_needs_you_first():
    # Three snapshots' sessions in one config folder would collide by id, so build one
    # folder with one project per snapshot state and sessions renamed apart.
    import shutil
    import tempfile
    from pathlib import Path

    tmp = Path(tempfile.mkdtemp())
    for i, name in enumerate(["04-your-turn-finished", "09-needs-you-question", "03-working-bash-running"]):
        src = SAMPLES / "claude-live" / name / "config" / "projects"
        (f,) = src.glob("*/*.jsonl")
        proj = tmp / "projects" / f"-p{i}"
        proj.mkdir(parents=True)
        new_id = f"00000000-0000-4000-8000-00000000000{i}"
        shutil.copy(f, proj / f"{new_id}.jsonl")
    out = run("status", "--json", "--at", "2026-11-30T03:40:00Z", env={"CLAUDE_CONFIG_DIR": str(tmp)})
    states = [s["state"] for s in json.loads(out.stdout)["sessions"]]
    assert states[0] == "needs_you"
    assert states == sorted(states, key=["needs_you", "waiting", "working", "your_turn", "idle", "ended"].index)


def test_table_is_readable_and_escapes_nothing():
    out = run(
        "status", "--all", env={"CLAUDE_CONFIG_DIR": str(CLAUDE / "06-named-session" / "config"), "COLUMNS": "200"}
    )
    assert out.returncode == 0
    assert "Greeting app check" in out.stdout and "ended" in out.stdout
    out = run("status", "--all", env={"CLAUDE_CONFIG_DIR": str(CLAUDE / "07-errors" / "config"), "COLUMNS": "200"})
    assert "[[scn:errors]] Try a few things" in out.stdout  # brackets are text, not markup


def test_missing_folder_empty_and_one_line(tmp_path):
    out = run("status", "--json", env={"CLAUDE_CONFIG_DIR": str(tmp_path / "nope")})
    assert out.returncode == 0
    assert json.loads(out.stdout)["sessions"] == []
    assert out.stderr.count("\n") == 1 and str(tmp_path / "nope") in out.stderr


def test_bad_at_is_a_clear_message():
    out = run("status", "--at", "yesterday-ish")
    assert out.returncode == 2 and "not a time" in out.stderr and "Traceback" not in out.stderr


def test_second_run_uses_the_cache_and_gives_the_same_board(tmp_path):
    env = {"CLAUDE_CONFIG_DIR": str(CLAUDE / "02-subagents" / "config"), "HUDDLE_HOME": str(tmp_path / "hh")}
    first = run("status", "--json", env=env)
    assert (tmp_path / "hh" / "cache" / "handles.db").exists()
    second = run("status", "--json", env=env)
    strip = lambda d: [{k: v for k, v in s.items() if k != "state_since"} for s in json.loads(d)["sessions"]]  # noqa: E731
    assert strip(first.stdout) == strip(second.stdout)


def test_watch_keeps_the_table_live(tmp_path):
    import shutil
    import threading

    from hosting import wait_until

    cfg = tmp_path / "config"
    shutil.copytree(CLAUDE / "06-named-session" / "config", cfg)
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(cfg), "HUDDLE_HOME": str(tmp_path / "hh"), "COLUMNS": "200"}
    p = subprocess.Popen(
        [sys.executable, "-m", "huddle", "status", "--watch", "--all"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    seen: list[str] = []  # the tables printed so far (not a terminal: each change is printed again)
    reader = threading.Thread(target=lambda: seen.extend(iter(p.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        wait_until(lambda: any("Greeting app check" in line for line in seen), "the first table")
        (f,) = cfg.glob("projects/*/*.jsonl")
        with open(f, "a") as out:
            out.write(json.dumps({"type": "custom-title", "customTitle": "Renamed live", "sessionId": f.stem}) + "\n")
        wait_until(lambda: any("Renamed live" in line for line in seen), "the table to follow the new title")
    finally:
        p.terminate()
        p.communicate(timeout=20)
