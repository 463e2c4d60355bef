"""Gemini CLI and OpenCode sessions on the pages, in a real browser (Playwright driving
Debian's Chromium): the board, the call, the tree, the conversation, and a line the CLI
writes while the page is open."""

from __future__ import annotations

import json
import shutil
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from playwright.sync_api import expect

from conftest import SAMPLES
from huddle.core import Huddle
from huddle.server import ServerThread
from huddle.sources import Settings
from test_browser import FAST, browser, page  # noqa: F401 (the fixtures)

pytestmark = pytest.mark.browser


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def gemini_home(root: Path, scenario: str) -> Path:
    home = root / "gemini" / ".gemini"
    shutil.copytree(SAMPLES / "gemini" / scenario / "home" / ".gemini", home, dirs_exist_ok=True)
    return home


def core(root: Path, **folders: str) -> Huddle:
    h = Huddle(Settings(folders=folders, huddle_home=str(root / "hh")), sources=list(folders))
    h.refresh()
    return h


def test_a_gemini_session_with_its_sub_agent(tmp_path, page):  # noqa: F811
    home = gemini_home(tmp_path, "07-subagent")
    h = core(tmp_path, gemini=str(home))
    (s,) = h.sessions()
    with ServerThread(h, watch_options=FAST) as srv:
        page.goto(srv.url)
        row = page.locator("#rows tr")
        expect(row).to_have_count(1)
        expect(row).to_contain_text("Gemini CLI · 2 agents")
        expect(row).to_contain_text("Use a helper to count the Python files")
        page.goto(f"{srv.url}session/{s.id}#tree")
        expect(page.locator(".tree .node")).to_have_count(2)
        expect(page.locator(".tree")).to_contain_text("generalist")
        expect(page.locator(".tree")).to_contain_text("There is 1 Python file: app.py.")
        page.goto(f"{srv.url}session/{s.id}#call")
        expect(page.locator(".tile.lead")).to_have_count(1)
        page.goto(f"{srv.url}session/{s.id}#conversation")
        page.locator(".chat .msg", has_text="The generalist counted 1 Python file (app.py).").wait_for()


def test_a_line_the_gemini_cli_writes_appears_live(tmp_path, page):  # noqa: F811
    home = gemini_home(tmp_path, "01-qa")
    (chat,) = (home / "tmp").rglob("session-*.jsonl")
    h = core(tmp_path, gemini=str(home))
    (s,) = h.sessions()
    with ServerThread(h, watch_options=FAST) as srv:
        page.goto(f"{srv.url}session/{s.id}#conversation")
        page.locator(".chat .msg", has_text="A Python list is mutable").wait_for()
        now = time.time()
        lines = [
            {"id": str(uuid.uuid4()), "timestamp": _iso(now), "type": "user", "content": [{"text": "And a set?"}]},
            {"$set": {"lastUpdated": _iso(now)}},
            {
                "id": str(uuid.uuid4()),
                "timestamp": _iso(now + 0.5),
                "type": "gemini",
                "content": "A set holds unique items, unordered.",
                "thoughts": [],
                "tokens": {"input": 12300, "output": 9, "cached": 12000, "thoughts": 0, "tool": 0, "total": 12309},
                "model": "gemini-2.5-flash",
            },
        ]
        with open(chat, "a") as f:
            f.write("".join(json.dumps(x) + "\n" for x in lines))
        page.locator(".chat .msg", has_text="A set holds unique items, unordered.").wait_for()
        page.goto(srv.url)
        expect(page.locator("#rows tr")).to_contain_text("Gemini CLI")


def opencode_data(root: Path, scenario: str) -> Path:
    data = root / "oc" / ".local" / "share" / "opencode"
    shutil.copytree(SAMPLES / "opencode" / scenario / "home" / ".local" / "share" / "opencode", data)
    return data


def test_an_opencode_session_with_its_sub_agent_and_a_live_write(tmp_path, page):  # noqa: F811
    from opencode_writer import Writer

    data = opencode_data(tmp_path, "07-subagent")
    h = core(tmp_path, opencode=str(data))
    (s,) = h.sessions()
    with ServerThread(h, watch_options=FAST) as srv:
        page.goto(srv.url)
        row = page.locator("#rows tr")
        expect(row).to_have_count(1)
        expect(row).to_contain_text("OpenCode · 2 agents")
        expect(row).to_contain_text("Count Python files with helper")
        page.goto(f"{srv.url}session/{s.id}#tree")
        expect(page.locator(".tree .node")).to_have_count(2)
        expect(page.locator(".tree")).to_contain_text("There is 1 Python file: app.py.")
        page.goto(f"{srv.url}session/{s.id}#conversation")
        page.locator(".chat .msg", has_text="The sub-agent counted 1 Python file (app.py).").wait_for()
        with Writer(data / "opencode.db") as w:  # OpenCode, still running, answers once more
            (msg,) = w.run("SELECT id FROM message WHERE session_id = ? ORDER BY time_created DESC LIMIT 1", s.id)
            now = int(time.time() * 1000)
            text = {"type": "text", "text": "Written by OpenCode just now.", "time": {"start": now, "end": now}}
            w.run(
                "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?, ?)",
                "prt_zzzzbrowser",
                msg[0],
                s.id,
                now,
                now,
                json.dumps(text),
            )
            w.run("UPDATE event_sequence SET seq = seq + 1 WHERE aggregate_id = ?", s.id)
            page.locator(".chat .msg", has_text="Written by OpenCode just now.").wait_for()
