"""Kilo CLI and Cline CLI sessions on the pages, in a real browser (Playwright driving Debian's
Chromium): the board, the tree, the conversation, and what the CLI writes while a page is
open (a Kilo row added, a Cline document rewritten in place with one more message)."""

from __future__ import annotations

import json
import shutil
import time

import pytest
from playwright.sync_api import expect

from conftest import SAMPLES
from huddle.core import Huddle
from huddle.server import ServerThread
from huddle.sources import Settings
from opencode_writer import Writer
from test_browser import FAST, browser, page  # noqa: F401 (the fixtures)

pytestmark = pytest.mark.browser


def core(root, **folders: str) -> Huddle:
    h = Huddle(Settings(folders=folders, huddle_home=str(root / "hh")), sources=list(folders))
    h.refresh()
    return h


def test_a_kilo_session_with_its_sub_agent_and_a_live_write(tmp_path, page):  # noqa: F811
    data = tmp_path / "kilo"
    shutil.copytree(SAMPLES / "kilo" / "07-subagent" / "home" / ".local" / "share" / "kilo", data)
    h = core(tmp_path, kilo=str(data))
    (s,) = h.sessions()
    with ServerThread(h, watch_options=FAST) as srv:
        page.goto(srv.url)
        row = page.locator("#rows tr")
        expect(row).to_have_count(1)
        expect(row).to_contain_text("Kilo CLI · 2 agents")
        expect(row).to_contain_text("Count Python files with helper")
        page.goto(f"{srv.url}session/{s.id}#tree")
        expect(page.locator(".tree .node")).to_have_count(2)
        page.goto(f"{srv.url}session/{s.id}#conversation")
        page.locator(".chat .msg", has_text="1 Python file").first.wait_for()
        with Writer(data / "kilo.db") as w:  # Kilo, still running, answers once more
            (msg,) = w.run("SELECT id FROM message WHERE session_id = ? ORDER BY time_created DESC LIMIT 1", s.id)
            now = int(time.time() * 1000)
            text = {"type": "text", "text": "Written by Kilo just now.", "time": {"start": now, "end": now}}
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
            page.locator(".chat .msg", has_text="Written by Kilo just now.").wait_for()


def test_a_cline_session_with_its_sub_agent_and_a_document_rewritten_live(tmp_path, page):  # noqa: F811
    data = tmp_path / "cline"
    shutil.copytree(SAMPLES / "cline" / "07-subagent" / "home" / ".cline" / "data", data)
    h = core(tmp_path, cline=str(data))
    (s,) = h.sessions()
    (lead,) = data.glob(f"sessions/{s.id}/{s.id}.messages.json")
    with ServerThread(h, watch_options=FAST) as srv:
        page.goto(srv.url)
        row = page.locator("#rows tr")
        expect(row).to_have_count(1)
        expect(row).to_contain_text("Cline CLI · 2 agents")
        expect(row).to_contain_text("Use a helper to count the Python files")
        page.goto(f"{srv.url}session/{s.id}#tree")
        expect(page.locator(".tree .node")).to_have_count(2)
        expect(page.locator(".tree")).to_contain_text("There is 1 Python file: app.py.")
        page.goto(f"{srv.url}session/{s.id}#conversation")
        page.locator(".chat .msg", has_text="The sub-agent counted 1 Python file (app.py).").wait_for()
        doc = json.loads(lead.read_text())
        doc["messages"].append(
            {
                "id": "msg_browser",
                "role": "assistant",
                "content": [{"type": "text", "text": "Written by Cline just now."}],
                "ts": int(time.time() * 1000),
            }
        )
        with open(lead, "r+b") as f:  # in place, as Cline rewrites it
            f.truncate(0)
            f.write(json.dumps(doc, indent=2).encode())
        page.locator(".chat .msg", has_text="Written by Cline just now.").wait_for()
