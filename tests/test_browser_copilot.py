"""GitHub Copilot CLI sessions on the pages, in a real browser (Playwright driving Debian's
Chromium): the board, the tree and the conversation of a session with its sub-agent; a TUI
session waiting for an approval while a real process holds its lock, then answered."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from playwright.sync_api import expect

from conftest import SAMPLES
from huddle.core import Huddle
from huddle.server import ServerThread
from huddle.sources import Settings
from test_browser import FAST, browser, page  # noqa: F401 (the fixtures)

pytestmark = pytest.mark.browser
COPILOT = SAMPLES / "copilot"


def core(root: Path, home: Path) -> Huddle:
    h = Huddle(Settings(folders={"copilot": str(home)}, huddle_home=str(root / "hh")), sources=["copilot"])
    h.refresh()
    return h


def test_a_copilot_session_with_its_sub_agent(tmp_path, page):  # noqa: F811
    home = tmp_path / ".copilot"
    shutil.copytree(COPILOT / "07-subagent" / "home" / ".copilot", home)
    h = core(tmp_path, home)
    (s,) = h.sessions()
    with ServerThread(h, watch_options=FAST) as srv:
        page.goto(srv.url)
        row = page.locator("#rows tr")
        expect(row).to_have_count(1)
        expect(row).to_contain_text("Copilot CLI · 2 agents")
        expect(row).to_contain_text("Use a helper to count the Python files")
        page.goto(f"{srv.url}session/{s.id}#tree")
        expect(page.locator(".tree .node")).to_have_count(2)
        expect(page.locator(".tree")).to_contain_text("Count Python files")
        expect(page.locator(".tree")).to_contain_text("There is 1 Python file: app.py.")
        page.goto(f"{srv.url}session/{s.id}#conversation")
        page.locator(".chat .msg", has_text="The sub-agent counted 1 Python file (app.py).").wait_for()


def test_an_approval_waits_on_the_board_then_is_answered(tmp_path, page):  # noqa: F811
    live = COPILOT / "08-interactive-approval" / "live"
    home = tmp_path / ".copilot"
    shutil.copytree(live / "01-needs-you-approval" / "home" / ".copilot", home)
    (folder,) = [p for p in (home / "session-state").iterdir() if not p.name.startswith(".")]
    for old in folder.glob("inuse.*"):
        old.unlink()
    proc = subprocess.Popen(["sleep", "600"])  # the CLI's stand-in: a live process holding the lock
    try:
        (folder / f"inuse.{proc.pid}.lock").write_text(str(proc.pid))
        h = core(tmp_path, home)
        with ServerThread(h, watch_options=FAST) as srv:
            page.goto(srv.url)
            row = page.locator("#rows tr")
            expect(row).to_contain_text("needs you")
            expect(row).to_contain_text("approve bash: sleep 8; echo slept")
            answered = (
                live / "02-working-tool-running" / "home" / ".copilot" / "session-state" / folder.name
            ).joinpath("events.jsonl")
            mine = folder / "events.jsonl"
            with open(mine, "ab") as f:  # the CLI appends the answer
                f.write(answered.read_bytes()[mine.stat().st_size :])
            expect(row).to_contain_text("working", timeout=15_000)
            expect(row).to_contain_text("running sleep 8; echo slept")
    finally:
        proc.kill()
        proc.wait()
