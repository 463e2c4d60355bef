"""The overview page and the palette in Debian's Chromium: the page draws what GET
/api/overview says (stats, the calendar, hours, weekdays, top sessions, tool use, cost
over time), its filters live in the address, its tabs work from the keyboard, every
table links its CSV, and at 390 px nothing overflows sideways. Ctrl+K on any page finds
a session by its title, the start of its id or the words said in it."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import httpx
import pytest
from playwright.sync_api import expect

import web_corpus
from huddle.core import Huddle
from huddle.server import ServerThread
from test_browser import browser, page  # noqa: F401  (the shared Chromium fixtures)
from test_overview import every_agent

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    settings = every_agent(tmp_path_factory.mktemp("overview-page"))
    with ServerThread(Huddle(settings)) as srv:
        yield srv


def _ready(page) -> None:  # noqa: F811
    page.wait_for_selector("body[data-ready]", timeout=60_000)


def test_the_page_draws_what_the_api_says(served, page):  # noqa: F811
    page.goto(served.url)
    page.get_by_role("link", name="Overview").click()
    page.wait_for_url(re.compile(r"/overview"))
    page.goto(f"{served.url}overview?days=0")
    _ready(page)
    tz = page.evaluate("Intl.DateTimeFormat().resolvedOptions().timeZone")
    api = httpx.get(f"{served.url}api/overview", params={"tz": tz}, timeout=60).json()
    stats = page.eval_on_selector_all(
        "#stats .stat", "ss => ss.map(s => [s.querySelector('span').textContent, s.querySelector('b').textContent])"
    )
    shown = dict(stats)
    assert shown["sessions"] == f"{api['stats']['sessions']:,}"
    assert shown["messages"] == f"{api['stats']['messages']:,}"
    assert shown["tool calls"] == f"{api['stats']['tool_calls']:,}"
    active = [d["day"] for d in api["heatmap"] if d["activity"]]
    for day in active:
        assert "lv0" not in page.locator(f'#heatmap rect[data-day="{day}"]').get_attribute("class")
    expect(page.locator("#hours svg g.day")).to_have_count(24)
    expect(page.locator("#weekdays svg g.day")).to_have_count(7)
    expect(page.locator("#top tbody tr")).to_have_count(len(api["top_sessions"]["tokens"]))
    first = api["top_sessions"]["tokens"][0]
    assert page.locator("#top tbody tr a").first.get_attribute("href") == f"/session/{first['id']}"
    expect(page.locator("#tools tbody tr")).to_have_count(min(12, len(api["tools"])))
    assert page.locator("#cost-table tbody tr").count() == len(api["cost_over_time"]["model"])
    for a in page.locator("a.csv").all():
        href = a.get_attribute("href")
        r = httpx.get(served.url.rstrip("/") + href, timeout=60)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv"), href


def test_filters_and_tabs_live_in_the_address_and_the_keyboard(served, page):  # noqa: F811
    page.goto(f"{served.url}overview?days=0")
    _ready(page)
    page.select_option("#agent", "claude")
    page.wait_for_url(re.compile(r"agent=claude"))
    tz = page.evaluate("Intl.DateTimeFormat().resolvedOptions().timeZone")
    api = httpx.get(f"{served.url}api/overview", params={"tz": tz, "agent": "claude"}, timeout=60).json()
    expect(page.locator("#stats .stat b").first).to_have_text(f"{api['stats']['sessions']:,}")
    assert {r["agent"] for r in api["tools"]} == {"claude"}
    page.get_by_role("tab", name="Time active").click()
    expect(page.get_by_role("tab", name="Time active")).to_have_attribute("aria-selected", "true")
    assert parse_qs(urlparse(page.url).query)["top"] == ["duration"]
    page.keyboard.press("ArrowRight")
    expect(page.get_by_role("tab", name="Cost", exact=True)).to_have_attribute("aria-selected", "true")
    assert "table=top_cost" in page.locator("#top-csv").get_attribute("href")
    page.get_by_role("tab", name="Project").click()
    assert "table=cost_project" in page.locator("#cost-csv").get_attribute("href")
    page.reload()
    _ready(page)
    expect(page.locator("#agent")).to_have_value("claude")
    expect(page.get_by_role("tab", name="Project")).to_have_attribute("aria-selected", "true")
    page.locator("button[data-days='7']").click()
    page.wait_for_url(re.compile(r"days=7"))
    _ready(page)


@pytest.mark.parametrize("width", [390, 800])
def test_nothing_overflows_sideways(served, browser, width):  # noqa: F811
    pg = browser.new_page(viewport={"width": width, "height": 860})
    try:
        pg.goto(f"{served.url}overview?days=0")
        _ready(pg)
        assert pg.evaluate("document.documentElement.scrollWidth") <= width
    finally:
        pg.close()


def test_ctrl_k_finds_a_session_by_title_id_or_words(tmp_path, page):  # noqa: F811
    cfg, sid, main = web_corpus.one_session(tmp_path)
    web_corpus.append_say(main, "the quokkaplanet migration is done")
    with ServerThread(web_corpus.core(cfg)) as srv:
        assert srv.state.indexer.idle.wait(60)
        title = httpx.get(f"{srv.url}api/sessions").json()["sessions"][0]["title"]
        for path in ("", "usage", "search", f"session/{sid}", "overview"):
            page.goto(f"{srv.url}{path}")
            page.wait_for_load_state("networkidle")
            page.keyboard.press("Control+k")
            box = page.locator("dialog.palette input")
            expect(box).to_be_focused()
            page.keyboard.press("Escape")
            expect(page.locator("dialog.palette")).not_to_be_visible()
        page.goto(srv.url)
        page.wait_for_selector("#rows tr")
        page.keyboard.press("Control+k")
        page.keyboard.type(sid[:6])
        expect(page.locator(".palette-item[aria-selected=true]")).to_contain_text(title[:20])
        page.keyboard.type("zz")  # an id no session starts with, and no title holds
        expect(page.locator(".palette-item", has_text=title[:20])).to_have_count(0)
        box = page.locator("dialog.palette input")
        box.fill(" ".join(title.split()[:2]))
        expect(page.locator(".palette-item").first).to_contain_text(title[:20])
        box.fill("quokkaplanet")
        expect(page.locator(".palette-group", has_text="Said in")).to_be_visible()
        item = page.locator(".palette-item", has_text="1 hit")
        expect(item).to_contain_text("quokkaplanet")
        expect(item).to_have_attribute("aria-selected", "true")  # (no title holds the word: the hit comes first)
        page.keyboard.press("ArrowDown")
        expect(page.locator(".palette-item", has_text="Search every message")).to_have_attribute(
            "aria-selected", "true"
        )
        page.keyboard.press("ArrowUp")
        expect(item).to_have_attribute("aria-selected", "true")
        page.keyboard.press("Enter")
        page.wait_for_url(re.compile(rf"/session/{sid}#conversation\?"))
        expect(page.locator("mark", has_text="quokkaplanet").first).to_be_visible()


def test_the_search_page_says_one_row_per_session_with_its_hits(tmp_path, page):  # noqa: F811
    cfg, sid, main = web_corpus.one_session(tmp_path)
    for i in range(3):
        web_corpus.append_say(main, f"the pelicanfrost build {i} passes")
    web_corpus.append_say(main, "two builds passed")
    with ServerThread(web_corpus.core(cfg)) as srv:
        assert srv.state.indexer.idle.wait(60)
        page.goto(f"{srv.url}search?q=pelicanfrost")
        row = page.locator(".result")
        expect(row).to_have_count(1)
        expect(row.locator(".r-hits")).to_have_text("3 hits: see them all")
        row.locator(".r-hits").click()
        page.wait_for_url(re.compile(rf"session={sid}"))
        expect(page.locator(".result")).to_have_count(3)
        expect(page.locator("#state")).to_contain_text("in this session")
        page.get_by_role("link", name="Back to every session").click()
        expect(page.locator(".result")).to_have_count(1)
        page.fill("#q", "passing")  # only a stem matches: "passes", "passed"
        page.press("#q", "Enter")
        expect(page.locator(".result .r-hits")).to_contain_text("by a similar word")
