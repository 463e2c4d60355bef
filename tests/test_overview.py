"""The overview (`huddle overview --json` == GET /api/overview) on a home of every agent:
its totals are `huddle usage --json`'s for the same range and filters, its counts are
what the sessions' events say (a whole read counted by hand), what moved is added as a
fresh read would say it, hours follow the time zone asked for, and every table is CSV."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import httpx
import pytest

from conftest import SAMPLES
from huddle.core import Huddle
from huddle.model import events as ev
from huddle.model.times import project_name
from huddle.server import ServerThread
from huddle.sources import Settings
from huddle.views.overview_index import SPAWN
from huddle.views.overview_tables import TABLES
from web_corpus import say_line

HOMES = {  # agent -> (sample, the folder under it that is the agent's)
    "codex": ("codex/apply_patch", "codex_home"),
    "vibe": ("vibe/2.26.1-legacy-approval", "logs/.."),
    "gemini": ("gemini/02-shell", "home/.gemini"),
    "opencode": ("opencode/02-shell", "home/.local/share/opencode"),
    "copilot": ("copilot/02-shell", "home/.copilot"),
    "qwen": ("qwen/02-shell", "home/.qwen"),
    "pi": ("pi/02-shell", "home/.pi/agent"),
    "kilo": ("kilo/02-shell", "home/.local/share/kilo"),
    "cline": ("cline/02-shell", "home/.cline/data"),
}


def every_agent(root: Path) -> Settings:
    """Claude's samples (tools, sub-agents, errors) and one sample of each other agent."""
    folders = {}
    claude = root / "claude"
    for name in ("01-basic-tools", "02-subagents", "07-errors"):
        shutil.copytree(SAMPLES / "claude" / name / "config" / "projects", claude / "projects", dirs_exist_ok=True)
    folders["claude"] = str(claude)
    for agent, (sample, inside) in HOMES.items():
        src = (SAMPLES / sample / inside).resolve()
        shutil.copytree(src, root / agent)
        folders[agent] = str(root / agent)
    return Settings(folders=folders, huddle_home=str(root / "hh"))


def env_of(settings: Settings, **more: str) -> dict[str, str]:
    return {**os.environ, **settings.env(), **more}


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "huddle", *args], capture_output=True, text=True, env=env, timeout=120)


def as_json(env: dict[str, str], *args: str) -> dict:
    out = cli(env, *args, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return every_agent(tmp_path_factory.mktemp("overview"))


def test_the_route_is_the_command_cold_and_warm(home):
    env = env_of(home)
    with ServerThread(Huddle(home), host="127.0.0.1") as srv:
        for q in ({}, {"agent": "claude", "tz": "Asia/Kolkata"}, {"days": "3650", "project": "proj"}):
            # (the first ask finds no cache: a child process builds it; the next read what moved)
            route = httpx.get(f"{srv.url}api/overview", params=q, timeout=60)
            assert route.status_code == 200, route.text
            args = [a for k, v in q.items() for a in (f"--{k}", v)]
            assert as_json(env, "overview", *args) == route.json(), q
        for q in ({"agent": "claude"}, {"project": "proj"}, {"agent": "codex", "by": "model"}):
            usage = httpx.get(f"{srv.url}api/usage", params=q, timeout=60).json()  # (the server's own core)
            assert usage == as_json(env, "usage", *[a for k, v in q.items() for a in (f"--{k}", v)]), q


def test_totals_are_usage_totals_for_the_same_range_and_filters(home):
    env = env_of(home)
    data = as_json(env, "overview")
    assert set(data["choices"]["agents"]) == {"claude", *HOMES}  # every agent's sessions are there
    days = sorted(r["key"] for r in data["cost_days"] if r["key"] != "unknown")
    project = next(p for p in data["choices"]["projects"] if p != "(no project)")
    for args in (
        [],
        ["--agent", "claude"],
        ["--agent", "codex"],
        ["--project", project],
        ["--since", days[0], "--until", days[-1]],
    ):
        over = as_json(env, "overview", *args)
        usage = as_json(env, "usage", *args)
        assert over["totals"] == usage["totals"], args
        assert over["stats"]["cost_usd"] == usage["totals"]["cost_usd"]
        assert over["stats"]["tokens"] == usage["totals"]["total_tokens"]
    assert data["totals"]["total_tokens"] > 0


def by_hand(settings: Settings) -> dict:
    """What the sessions' events say, counted from a whole read."""
    h = Huddle(settings)
    h.refresh()
    tools: Counter = Counter()
    errors: Counter = Counter()
    prompts = replies = 0
    for s in h.sessions():
        names, t = {}, None
        for e in s.events:
            t = e.t if e.t is not None else t
            if e.copied or t is None or e.kind in (ev.USAGE, ev.TITLE):
                continue
            prompts += e.kind == ev.PROMPT
            replies += e.kind == ev.SAY
            if e.kind in (ev.TOOL_CALL, ev.ORDER):
                name = e.name if e.kind == ev.TOOL_CALL else SPAWN
                tools[(name or "?", s.source)] += 1
                names[e.id] = name
            if e.kind == ev.TOOL_RESULT and e.ok is False:
                errors[(names.get(e.id) or "?", s.source)] += 1
    return {"prompts": prompts, "replies": replies, "tools": tools, "errors": errors}


def test_every_agent_is_counted_as_its_events_say(home):
    data = as_json(env_of(home), "overview")
    want = by_hand(home)
    assert data["stats"]["prompts"] == want["prompts"] and data["stats"]["replies"] == want["replies"]
    assert data["stats"]["messages"] == want["prompts"] + want["replies"]
    got = {(r["tool"], r["agent"]): r["calls"] for r in data["tools"]}
    assert got == dict(want["tools"])
    assert {(r["tool"], r["agent"]): r["errors"] for r in data["tools"] if r["errors"]} == dict(want["errors"])
    assert {a for _, a in got} >= {"claude", "codex", "gemini", "opencode", "copilot", "qwen", "pi", "kilo", "cline"}
    assert data["stats"]["tool_errors"] > 0
    assert sum(d["activity"] for d in data["heatmap"]) == sum(h["activity"] for h in data["hours"])
    assert sum(d["activity"] for d in data["weekdays"]) == sum(map(sum, data["week_hours"]))
    assert data["stats"]["active_days"] == len(data["heatmap"])
    tops = data["top_sessions"]
    assert tops["tokens"] and tops["cost"] and tops["duration"]
    assert [r["tokens"] for r in tops["tokens"]] == sorted((r["tokens"] for r in tops["tokens"]), reverse=True)


def test_what_moved_is_added_as_a_fresh_read_says_it(tmp_path):
    settings = every_agent(tmp_path / "a")
    env = env_of(settings)
    as_json(env, "overview")  # the caches written
    main = next(Path(settings.folders["claude"]).glob("projects/*/*.jsonl"))
    with open(main, "ab") as f:
        f.write(say_line(main, "one more thing, said later"))
    grown = as_json(env, "overview")
    fresh = as_json(env_of(settings, HUDDLE_HOME=str(tmp_path / "fresh-home")), "overview")
    grown.pop("notes"), fresh.pop("notes")
    assert grown == fresh
    assert grown["stats"]["replies"] == by_hand(settings)["replies"]


def one_session_at(root: Path, stamp: str) -> Settings:
    src = next((SAMPLES / "claude" / "01-basic-tools" / "config" / "projects").glob("*/*.jsonl"))
    folder = root / "claude" / "projects" / src.parent.name
    folder.mkdir(parents=True)
    (folder / src.name).write_text(re.sub(r'"timestamp":"[^"]+"', f'"timestamp":"{stamp}"', src.read_text()))
    none = str(root / "none")
    return Settings(folders={"claude": str(root / "claude"), "codex": none, "vibe": none}, huddle_home=str(root / "hh"))


@pytest.mark.parametrize(
    "tz, hour, weekday",
    [("UTC", 22, "Tue"), ("Asia/Kolkata", 3, "Wed"), ("America/New_York", 18, "Tue"), ("Asia/Kathmandu", 4, "Wed")],
)
def test_hours_and_weekdays_are_the_time_zones(tmp_path, tz, hour, weekday):
    env = env_of(one_session_at(tmp_path, "2026-03-10T22:20:00.000Z"))  # a Tuesday, after New York's DST began
    data = as_json(env, "overview", "--tz", tz)
    assert [h["hour"] for h in data["hours"] if h["activity"]] == [hour]
    assert [d["name"] for d in data["weekdays"] if d["activity"]] == [weekday]
    assert data["filters"]["tz"] == tz
    assert [d["day"] for d in data["heatmap"]] == ["2026-03-10" if weekday == "Tue" else "2026-03-11"]


@pytest.mark.parametrize(
    "q, words",
    [
        ({"since": "2h"}, "whole UTC days"),
        ({"since": "2026-13-01"}, "bad since"),
        ({"days": "0"}, "bad days"),
        ({"days": "3", "since": "2026-01-01"}, "days or since"),
        ({"since": "2026-02-01", "until": "2026-01-01"}, "until must come after since"),
        ({"tz": "Mars/Olympus"}, "unknown time zone"),
        ({"tz": "../../etc/passwd"}, "bad tz"),
        ({"agent": "Claude Code"}, "bad agent"),
    ],
)
def test_a_bad_parameter_is_said_in_one_line(home, q, words):
    with ServerThread(Huddle(home)) as srv:
        r = httpx.get(f"{srv.url}api/overview", params=q, timeout=60)
        assert r.status_code == 400 and words in r.json()["error"], r.text
    out = cli(env_of(home), "overview", *[a for k, v in q.items() for a in (f"--{k}", v)])
    assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_every_table_is_csv_from_the_route_and_the_command(home):
    env = env_of(home)
    with ServerThread(Huddle(home)) as srv:
        for name in TABLES:
            r = httpx.get(f"{srv.url}api/overview.csv", params={"table": name}, timeout=60)
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
            assert "attachment" in r.headers["content-disposition"]
            out = cli(env, "overview", "--csv", name)
            assert out.returncode == 0 and out.stdout.replace("\r\n", "\n") == r.text.replace("\r\n", "\n"), name
            rows = list(csv.reader(io.StringIO(r.text)))
            assert rows and all(len(x) == len(rows[0]) for x in rows), name
        assert httpx.get(f"{srv.url}api/overview.csv", params={"table": "x"}).status_code == 400
    tools = list(csv.DictReader(io.StringIO(cli(env, "overview", "--csv", "tools").stdout)))
    assert {"tool", "agent", "calls", "errors"} <= set(tools[0])


def test_a_cell_a_spreadsheet_would_run_is_text(tmp_path):
    from huddle.views.overview_tables import to_csv

    data = {"tools": [{"tool": "=HYPERLINK(1)", "agent": "claude", "calls": 1, "errors": 0, "sessions": 1}]}
    assert "'=HYPERLINK(1)" in to_csv(data, "tools")


def test_projects_are_named_as_usage_names_them(home):
    h = Huddle(home)
    h.refresh()
    named = {project_name(s.cwd) or "(no project)" for s in h.sessions() if s.has_conversation}
    assert named <= set(as_json(env_of(home), "overview")["choices"]["projects"])


def test_a_file_naming_thousands_of_tools_costs_its_row_no_more(tmp_path):
    from huddle.views.overview_index import NAME_MAX, OTHER, TOOLS_MAX, summaries

    settings = one_session_at(tmp_path, "2026-03-10T22:20:00.000Z")
    main = next(Path(settings.folders["claude"]).glob("projects/*/*.jsonl"))
    call = next(json.loads(x) for x in main.read_text().splitlines() if '"type":"tool_use"' in x)
    lines = []
    for i in range(TOOLS_MAX + 200):
        rec = json.loads(json.dumps(call))
        block = rec["message"]["content"][0]
        block["id"] = f"toolu_{i:08d}"
        block["name"] = ("x" * 100_000) if i == 0 else f"tool_{i}"
        rec["message"]["id"] = f"msg_many{i}"
        rec["uuid"] = f"00000000-0000-4000-8000-{i:012d}"
        lines.append(json.dumps(rec))
    with open(main, "a") as f:
        f.write("\n".join(lines) + "\n")
    rows, _ = summaries(settings)
    (row,) = rows.values()
    (tools,) = row["tools"].values()
    assert len(tools) <= TOOLS_MAX + 1 and tools[OTHER][0] >= 200
    assert max(map(len, tools)) <= NAME_MAX
    assert sum(c for c, _ in tools.values()) == sum(e.kind == "tool_call" for e in by_hand_events(settings))


def by_hand_events(settings: Settings) -> list:
    h = Huddle(settings)
    h.refresh()
    return [e for s in h.sessions() for e in s.events if not e.copied]
