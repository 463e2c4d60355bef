"""A long history on the board, in a real browser (Debian's Chromium through Playwright):
its first rows drawn at once and the rest as the list's end comes into view (two years'
2,900 rows drawn whole took the page 4 s), every session still found by the filter, the
keyboard and a live change."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, timedelta
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from conftest import SAMPLES
from huddle.core import Huddle
from huddle.server import ServerThread
from huddle.sources import Settings
from test_browser import FAST, browser, page  # noqa: F401 (the shared browser fixtures)

pytestmark = pytest.mark.browser
N = 300  # sessions: more than a page (board.js PAGE, 250)
SAMPLE = next((SAMPLES / "claude" / "01-basic-tools" / "config" / "projects").glob("*/*.jsonl"))


def sid(n: int) -> str:
    return f"5e550000-0000-4000-8000-{n:012d}"


def long_history(tmp_path) -> tuple[Settings, dict[int, str]]:
    """N copies of a real session, session n a day older than n - 1, its prompt naming
    it ("project 007"); their files by n."""
    text = SAMPLE.read_text()
    folder = tmp_path / "claude" / "projects" / SAMPLE.parent.name
    folder.mkdir(parents=True)
    files = {}
    for n in range(N):
        day = (date(2026, 11, 30) - timedelta(days=n)).isoformat()
        body = text.replace(SAMPLE.stem, sid(n)).replace("2026-11-30T", f"{day}T")
        body = body.replace("Look around this project", f"Look around project {n:03d}")
        path = folder / f"{sid(n)}.jsonl"
        path.write_text(body)
        files[n] = str(path)
    none = str(tmp_path / "none")
    folders = {"claude": str(tmp_path / "claude"), "codex": none, "vibe": none, "gemini": none, "opencode": none}
    return Settings(folders=folders, huddle_home=str(tmp_path / "hh")), files


@contextmanager
def board_of(tmp_path, pg: Page) -> Iterator[tuple[str, Locator, dict[int, str]]]:
    """The long history served, its board open with its first page drawn: (the
    server's URL, the board's session rows, the session files)."""
    settings, files = long_history(tmp_path)
    h = Huddle(settings)
    h.refresh()
    with ServerThread(h, watch_options=FAST) as srv:
        pg.goto(srv.url)
        rows = pg.locator("#rows tr[data-key]")
        expect(rows).to_have_count(250)
        yield srv.url, rows, files


def test_a_long_history_draws_a_page_and_the_rest_as_it_is_scrolled_to(tmp_path, page):  # noqa: F811
    with board_of(tmp_path, page) as (url, rows, _):
        assert rows.first.get_attribute("data-id") == sid(0)  # the newest first
        more = page.locator("#rows tr.more-row button")
        expect(more).to_have_text("Show 50 more (50 not shown)")
        expect(page.locator("#summary")).to_contain_text(f"{N} sessions")  # (said of every one)
        more.scroll_into_view_if_needed()  # within a screen of the view: the next page drawn
        expect(rows).to_have_count(N)
        expect(page.locator("#rows tr.more-row")).to_have_count(0)
        assert rows.last.get_attribute("data-id") == sid(N - 1)

        page.goto(url)
        expect(rows).to_have_count(250)
        page.fill("#filter", "project 299")  # the filter looks at every session, drawn or not
        expect(rows).to_have_count(1)
        expect(rows.first).to_have_attribute("data-id", sid(299))
        page.fill("#filter", "")
        expect(rows).to_have_count(250)


def test_the_keyboard_goes_on_past_the_drawn_rows(tmp_path, page):  # noqa: F811
    with board_of(tmp_path, page) as (_, rows, _files):
        page.locator("body").click(position={"x": 5, "y": 5})
        for _ in range(250):
            page.keyboard.press("j")
        expect(rows).to_have_count(N)  # the 251st selected: drawn
        expect(page.locator("#rows tr.sel")).to_have_attribute("data-id", sid(250))


def test_a_session_beyond_the_drawn_rows_that_moves_comes_to_the_top(tmp_path, page):  # noqa: F811
    with board_of(tmp_path, page) as (_, rows, files):
        expect(page.locator(f'#rows tr[data-id="{sid(299)}"]')).to_have_count(0)
        lines = Path(files[299]).read_text().splitlines()
        prompt = next(json.loads(x) for x in lines if '"type":"user"' in x)
        prompt.update(
            uuid="5e550000-0000-4000-8000-ffffffffffff",
            parentUuid=None,
            timestamp=time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
        )
        prompt["message"]["content"] = "one more thing, project 299"
        with open(files[299], "a") as f:
            f.write(json.dumps(prompt, separators=(",", ":")) + "\n")
        top = rows.first
        expect(top).to_have_attribute("data-id", sid(299))  # live, working now: first
        expect(top).to_have_class(re.compile(r"\bflash\b"))  # drawn as it came into view: it says it moved
        expect(rows).to_have_count(250)
