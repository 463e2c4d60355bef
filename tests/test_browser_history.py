"""The board as a history, in Debian's Chromium: a last-active column that says when in
words a person uses (today, yesterday, a weekday, a date), columns sorted by a click or
from the keyboard (state, last active, tokens, cost, agent, project), and the sort kept
in the address with the filters."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

from conftest import SAMPLES
from huddle.core import Huddle
from huddle.server import ServerThread
from huddle.sources import Settings
from test_browser import browser, page  # noqa: F401  (the shared Chromium fixtures)

pytestmark = pytest.mark.browser


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(t))


def history(tmp_path) -> tuple[Settings, dict[str, str]]:
    """One Claude session copied four times, last active today, yesterday, three days
    ago and three weeks ago (by this machine's local days, as the browser counts them)."""
    src = next((SAMPLES / "claude" / "01-basic-tools" / "config" / "projects").glob("*/*.jsonl"))
    folder = tmp_path / "claude" / "projects" / src.parent.name
    folder.mkdir(parents=True)
    now = time.time()
    lt = time.localtime(now)
    midnight = time.mktime((lt.tm_year, lt.tm_mon, lt.tm_mday, 0, 0, 0, 0, 0, -1))
    when = {
        "today": now - min(60.0, (now - midnight) / 2),
        "yesterday": midnight - 12 * 3600,
        "weekday": midnight - 2.5 * 86400,
        "date": midnight - 20.5 * 86400,
    }
    ids = {}
    text = src.read_text()
    for n, (name, t) in enumerate(when.items()):
        sid = f"0000000{n}-aaaa-4bbb-8ccc-{n:012x}"
        body = re.sub(r'"timestamp":"[^"]+"', f'"timestamp":"{_iso(t)}"', text.replace(src.stem, sid))
        (folder / f"{sid}.jsonl").write_text(body)
        ids[name] = sid
    none = str(tmp_path / "none")
    return Settings(
        folders={"claude": str(tmp_path / "claude"), "codex": none, "vibe": none}, huddle_home=str(tmp_path / "hh")
    ), ids


def test_last_active_says_today_yesterday_a_weekday_or_a_date(tmp_path, page):  # noqa: F811
    settings, ids = history(tmp_path)
    with ServerThread(Huddle(settings)) as srv:
        page.goto(srv.url)
        page.wait_for_selector("#rows tr")
        cell = lambda name: page.locator(f'#rows tr[data-id="{ids[name]}"] .c-last')  # noqa: E731
        expect(cell("today")).to_have_text(re.compile(r"^today \d{2}:\d{2}$"))
        expect(cell("yesterday")).to_have_text(re.compile(r"^yesterday \d{2}:\d{2}$"))
        weekdays = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"
        expect(cell("weekday")).to_have_text(re.compile(rf"^({weekdays}) \d{{2}}:\d{{2}}$"))
        expect(cell("date")).to_have_text(
            re.compile(r"^[A-Z][a-z]{2} \d{1,2}(, \d{4})?$|^\d{1,2} [A-Z][a-z]{2}( \d{4})?$")
        )
        assert page.locator("th.c-last").inner_text().strip().lower() == "last active"


def test_columns_sort_by_a_click_or_a_key_and_the_sort_lives_in_the_address(tmp_path, page):  # noqa: F811
    settings, ids = history(tmp_path)
    order = [ids[k] for k in ("today", "yesterday", "weekday", "date")]
    with ServerThread(Huddle(settings)) as srv:
        page.goto(srv.url)
        page.wait_for_selector("#rows tr")
        shown = lambda: page.eval_on_selector_all("#rows tr[data-id]", "trs => trs.map(t => t.dataset.id)")  # noqa: E731
        last = page.locator("th.c-last button")
        last.click()
        expect(page.locator("th.c-last")).to_have_attribute("aria-sort", "descending")
        assert shown() == order  # newest first
        expect(page).to_have_url(re.compile(r"sort=last"))
        last.press("Enter")  # again, from the keyboard: oldest first
        expect(page.locator("th.c-last")).to_have_attribute("aria-sort", "ascending")
        assert shown() == order[::-1]
        page.reload()
        page.wait_for_selector("#rows tr")
        expect(page.locator("th.c-last")).to_have_attribute("aria-sort", "ascending")
        assert shown() == order[::-1]
        for key in ("state", "tokens", "cost", "agent", "project"):
            page.locator(f"th[data-sort='{key}'] button").click()
            expect(page.locator(f"th[data-sort='{key}']")).to_have_attribute("aria-sort", re.compile("ending$"))
            expect(page).to_have_url(re.compile(rf"sort={key}"))
        assert page.locator("th[aria-sort]").count() == 1  # one column sorts at a time
