"""Plan quotas as the agents say them (huddle.io.quota): Claude Code's status-line
`rate_limits`, Codex's `token_count` `rate_limits`; kept under $HUDDLE_HOME, shown on
the status line, by `huddle usage --limits` (--json == GET /api/limits) and the board's
header, with a pace that says it is an estimate; an agent that said none is estimated
from its history, and marked so."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from huddle.cli import main
from huddle.io import quota
from test_statusline import INPUT, statusline

NOW = 1_796_000_000.0
HOUR = 3600.0


def claude_input(five: float, seven: float, resets5: float, resets7: float) -> dict:
    return {
        **INPUT,
        "rate_limits": {
            "five_hour": {"used_percentage": five, "resets_at": resets5},
            "seven_day": {"used_percentage": seven, "resets_at": resets7},
        },
    }


def test_readings_as_each_agent_says_them():
    got = quota.from_claude(claude_input(42.5, 61, NOW + HOUR, NOW + 3 * 86400), NOW)
    assert [(r["window"], r["used"], r["resets_at"], r["length"]) for r in got] == [
        ("five_hour", 42.5, NOW + HOUR, 18000),
        ("seven_day", 61.0, NOW + 3 * 86400, 604800),
    ]
    assert quota.from_claude({"rate_limits": None}, NOW) == []
    assert quota.from_claude({"rate_limits": {"five_hour": {"used_percentage": "lots"}}}, NOW) == []
    codex = {
        "limit_id": "codex",
        "primary": {"used_percent": 15.0, "window_minutes": 300, "resets_at": NOW + 2 * HOUR},
        "secondary": {"used_percent": 5.0, "window_minutes": 10080, "resets_in_seconds": 86400},
        "credits": None,
    }
    got = quota.from_codex(codex, NOW)
    assert [(r["window"], r["used"], r["resets_at"]) for r in got] == [
        ("five_hour", 15.0, NOW + 2 * HOUR),
        ("seven_day", 5.0, NOW + 86400),
    ]
    assert quota.from_codex({"primary": None, "secondary": None}, NOW) == []


def test_the_pace():
    r1 = {"window": "five_hour", "used": 20.0, "resets_at": NOW + 3 * HOUR, "seen_at": NOW - HOUR, "length": 18000}
    r2 = {**r1, "used": 50.0, "seen_at": NOW}
    p = quota.pace([r1, r2], NOW)  # 30 points an hour from 50: out in 1h40, before the reset
    assert p["runs_out_at"] == pytest.approx(NOW + 100 * 60)
    assert "runs out at" in quota.sentence("five_hour", p) and "estimate" in quota.sentence("five_hour", p)
    slow = quota.pace([{**r2, "used": 10.0}], NOW)  # one reading: 10 points in the 2 hours since it began
    assert "runs_out_at" not in slow and slow["at_reset"] == pytest.approx(25.0)
    assert quota.pace([{**r2, "resets_at": NOW - 1}], NOW)["reset"] is True
    assert quota.short("five_hour", p).startswith("5h 50% →")


def test_the_status_line_shows_and_keeps_claude_codes_quota(tmp_path):
    env = {"HUDDLE_HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "none")}
    now = time.time()
    out = statusline(env, json.dumps(claude_input(42.5, 61, now + HOUR, now + 3 * 86400)))
    assert out.returncode == 0
    assert "5h 42%" in out.stdout and "7d 61%" in out.stdout, out.stdout
    kept = json.loads((tmp_path / "home" / "limits.json").read_text())
    assert kept["claude"]["five_hour"][-1]["used"] == 42.5
    again = statusline(env, json.dumps(INPUT), "--json")  # an input without them: the kept reading
    assert json.loads(again.stdout)["limits"]["claude"]["five_hour"]["used"] == 42.5
    bad = statusline(env, json.dumps({**INPUT, "rate_limits": {"five_hour": {"used_percentage": 1e400}}}))
    assert bad.returncode == 0 and bad.stdout.strip()


def _rollout(codex_home: Path, used: float, resets: float, when: str) -> None:
    day = codex_home / "sessions" / "2026" / "11" / "30"
    day.mkdir(parents=True, exist_ok=True)
    line = {
        "timestamp": when,
        "type": "event_msg",
        "payload": {
            "type": "token_count",
            "info": None,
            "rate_limits": {
                "limit_id": "codex",
                "primary": {"used_percent": used, "window_minutes": 300, "resets_at": resets},
                "secondary": {"used_percent": 9.0, "window_minutes": 10080, "resets_at": resets + 5 * 86400},
            },
        },
    }
    (day / "rollout-2026-11-30T03-00-30-01a22a65-96d9-72f0-ad22-06c58159ab97.jsonl").write_text(
        json.dumps({"timestamp": when, "type": "session_meta", "payload": {}}) + "\n" + json.dumps(line) + "\n"
    )


def test_usage_limits_says_codexs_and_claudes_and_the_route_the_same(tmp_path):
    from huddle.core import Huddle
    from huddle.server import ServerThread
    from huddle.sources import Settings

    home, codex = tmp_path / "home", tmp_path / "codex"
    now = time.time()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(now - 60))
    _rollout(codex, 33.0, now + 2 * HOUR, stamp)
    quota.record(str(home), "claude", quota.from_claude(claude_input(90, 20, now + HOUR, now + 86400), now))
    env = {"HUDDLE_HOME": str(home), "CODEX_HOME": str(codex), "CLAUDE_CONFIG_DIR": str(tmp_path / "none")}
    r = CliRunner().invoke(main, ["usage", "--limits", "--json"], env=env)
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    by = {a["agent"]: {w["window"]: w for w in a["windows"]} for a in got["agents"]}
    assert (
        by["codex"]["five_hour"]["used_percent"] == 33.0 and by["codex"]["five_hour"]["said_by"] == "Codex's rollouts"
    )
    assert by["claude"]["five_hour"]["used_percent"] == 90.0 and not by["claude"]["five_hour"]["estimate"]
    assert by["claude"]["five_hour"]["pace"]["estimate"] is True
    # 90% in the 4 hours since the window began: it runs out before the reset
    assert by["claude"]["five_hour"]["pace"]["runs_out_at"] is not None
    text = CliRunner().invoke(main, ["usage", "--limits"], env=env)
    assert "Claude Code" in text.output and "at this rate the 5-hour window runs out" in text.output
    h = Huddle(Settings.from_env(env))
    with ServerThread(h) as srv:
        api = httpx.get(srv.url + "api/limits", timeout=30).json()
    api.pop("at"), got.pop("at")
    assert api == got


def test_an_agent_that_said_none_is_estimated_and_marked(tmp_path):
    from conftest import SAMPLES

    home = tmp_path / "home"
    env = {
        "HUDDLE_HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(SAMPLES / "claude" / "02-subagents" / "config"),
        "CODEX_HOME": str(tmp_path / "none"),
        "HUDDLE_SOURCES": "claude",
    }
    r = CliRunner().invoke(main, ["usage", "--limits", "--json"], env=env)
    assert r.exit_code == 0, r.output
    (claude,) = json.loads(r.stdout)["agents"]
    (w,) = claude["windows"]
    assert w["estimate"] is True and "estimate" in w["said_by"]
    assert any("estimated" in n for n in json.loads(r.stdout)["notes"])


@pytest.mark.browser
def test_the_board_header_shows_the_quotas(tmp_path):
    """The board's header (static/js/limits.js) in Debian's Chromium."""
    from playwright.sync_api import expect, sync_playwright

    from huddle.core import Huddle
    from huddle.server import ServerThread
    from huddle.sources import Settings
    from test_browser import ARGS, CHROMIUM

    home = tmp_path / "home"
    now = time.time()
    quota.record(str(home), "claude", quota.from_claude(claude_input(90, 20, now + HOUR, now + 86400), now))
    env = {"HUDDLE_HOME": str(home), "CLAUDE_CONFIG_DIR": str(tmp_path / "none"), "CODEX_HOME": str(tmp_path / "x")}
    with ServerThread(Huddle(Settings.from_env(env))) as srv, sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = b.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(srv.url)
            chip = page.locator("#limits .limit").first
            expect(chip).to_have_text(re.compile(r"Claude Code 5h 90% · runs out"), timeout=15_000)
            assert "estimate" in (chip.get_attribute("title") or "")
            assert not errors
        finally:
            b.close()
