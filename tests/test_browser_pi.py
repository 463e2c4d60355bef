"""Pi sessions on the pages, in a real browser (Playwright driving Debian's Chromium): the
board, the tree with the example extension's sub-agent, the conversation with a branch
said where it happens, and a line Pi writes while the page is open."""

from __future__ import annotations

import json
import shutil
import time
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


def pi_home(root: Path, scenario: str) -> Path:
    home = root / "pi" / "agent"
    shutil.copytree(SAMPLES / "pi" / scenario / "home" / ".pi" / "agent", home, dirs_exist_ok=True)
    return home


def core(root: Path, home: Path) -> Huddle:
    h = Huddle(Settings(folders={"pi": str(home)}, huddle_home=str(root / "hh")), sources=["pi"])
    h.refresh()
    return h


def test_a_pi_session_with_its_extension_sub_agent(tmp_path, page):  # noqa: F811
    h = core(tmp_path, pi_home(tmp_path, "07-subagent-extension"))
    (s,) = h.sessions()
    with ServerThread(h, watch_options=FAST) as srv:
        page.goto(srv.url)
        row = page.locator("#rows tr")
        expect(row).to_have_count(1)
        expect(row).to_contain_text("Pi · 2 agents")
        expect(row).to_contain_text("Use a helper to count the Python files")
        page.goto(f"{srv.url}session/{s.id}#tree")
        expect(page.locator(".tree .node")).to_have_count(2)
        expect(page.locator(".tree")).to_contain_text("helper")
        expect(page.locator(".tree")).to_contain_text("There is 1 Python file: app.py.")
        page.goto(f"{srv.url}session/{s.id}#conversation")
        page.locator(".chat .msg", has_text="The sub-agent counted 1 Python file (app.py).").wait_for()


def test_a_branch_is_said_and_a_line_pi_writes_appears_live(tmp_path, page):  # noqa: F811
    home = pi_home(tmp_path, "12-tree-compact")
    (f,) = (home / "sessions").rglob("*.jsonl")
    h = core(tmp_path, home)
    (s,) = h.sessions()
    with ServerThread(h, watch_options=FAST) as srv:
        page.goto(f"{srv.url}session/{s.id}#conversation")
        page.locator(".chat", has_text="stay in the file on another branch").wait_for()
        page.locator(".chat .msg", has_text="Plan B: keep app.py and add a test instead.").wait_for()
        last = json.loads(f.read_text().splitlines()[-1])
        now = datetime.fromtimestamp(time.time(), UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        user = {
            "type": "message",
            "id": "0badcafe",
            "parentId": last["id"],
            "timestamp": now,
            "message": {"role": "user", "content": [{"type": "text", "text": "And plan C?"}], "timestamp": 1},
        }
        with open(f, "a") as out:
            out.write(json.dumps(user) + "\n")
        page.locator(".chat .msg", has_text="And plan C?").wait_for()
        page.goto(srv.url)
        expect(page.locator("#rows tr")).to_contain_text("Pi")
