"""The board off its default view: archived sessions (Codex's archived_sessions/), in a
real browser (Debian's Chromium through Playwright)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from huddle.core import Huddle
from huddle.server import ServerThread
from huddle.sources import Settings
from test_browser import browser, page  # noqa: F401 (the shared browser fixtures)
from test_codex_history import CHILD, PARENT, small_thread, write

pytestmark = pytest.mark.browser
FAST = {"poll_watched": 0.5, "poll_unwatched": 0.2}


def test_archived_sessions_are_off_the_default_board_and_on_with_the_filter(tmp_path, page):  # noqa: F811
    home = tmp_path / "codex"
    write(home / f"archived_sessions/rollout-2026-11-30T03-00-00-{PARENT}.jsonl", small_thread(PARENT, "put away"))
    write(home / f"sessions/2026/11/30/rollout-2026-11-30T03-00-01-{CHILD}.jsonl", small_thread(CHILD, "still here"))
    h = Huddle(Settings(folders={"codex": str(home)}, huddle_home=str(tmp_path / "hh")), sources=["codex"])
    h.refresh()
    with ServerThread(h, watch_options=FAST) as srv:
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(srv.url)
        rows = page.locator("#rows tr:not(.group-row)")
        expect(rows).to_have_count(1)
        expect(rows.first).to_contain_text("still here")
        page.check("#show-archived")
        expect(rows).to_have_count(2)
        assert "archived=1" in page.url
        page.goto(srv.url + "?archived=1")  # a bookmarked view keeps them
        expect(rows).to_have_count(2)
        page.uncheck("#show-archived")
        expect(rows).to_have_count(1)
        assert not errors, errors


def test_a_board_of_archived_sessions_only_says_why_it_is_empty(tmp_path, page):  # noqa: F811
    home = tmp_path / "codex"
    write(home / f"archived_sessions/rollout-2026-11-30T03-00-00-{PARENT}.jsonl", small_thread(PARENT, "put away"))
    h = Huddle(Settings(folders={"codex": str(home)}, huddle_home=str(tmp_path / "hh")), sources=["codex"])
    h.refresh()
    with ServerThread(h, watch_options=FAST) as srv:
        page.goto(srv.url)
        expect(page.locator("#none-match")).to_be_visible()
        expect(page.locator("#empty")).to_be_hidden()
        page.check("#show-archived")
        expect(page.locator("#rows tr:not(.group-row)")).to_have_count(1)
        expect(page.locator("#none-match")).to_be_hidden()
