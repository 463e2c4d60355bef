"""The pages in a real browser: Playwright driving Debian's Chromium (headless).
Each test leaves a screenshot in tests/screenshots/ for a person to look at."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

import web_corpus
from huddle.server import ServerThread

pytestmark = pytest.mark.browser

SHOTS = Path(__file__).parent / "screenshots"
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
FAST = {"poll_watched": 0.5, "poll_unwatched": 0.2}


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    expect.set_options(timeout=15_000)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, request):
    ctx = browser.new_context(viewport={"width": 1280, "height": 860})
    pg = ctx.new_page()
    pg.set_default_timeout(15_000)
    problems: list[str] = []
    pg.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    pg.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    yield pg
    SHOTS.mkdir(exist_ok=True)
    pg.screenshot(path=str(SHOTS / f"{request.node.name}.png"), full_page=True)
    ctx.close()
    assert not [p for p in problems if "Content Security Policy" in p or "page error" in p], problems


def test_the_board_shows_the_samples(tmp_path, page):
    settings = web_corpus.build(tmp_path)
    h = web_corpus.core(settings)
    with ServerThread(h, watch_options=FAST) as srv:
        page.goto(srv.url)
        n = len(h.sessions())
        expect(page.locator("#rows tr")).to_have_count(n)
        states = page.eval_on_selector_all("#rows tr", "trs => trs.map(t => t.className)")
        order = ["needs_you", "waiting", "working", "your_turn", "idle", "ended"]
        ranks = [order.index(re.search(r"r-(\w+)", c).group(1)) for c in states]
        assert ranks == sorted(ranks), "most urgent first"
        titles = page.eval_on_selector_all("#rows .t-title", "as => as.map(a => a.textContent)")
        assert any("Investigate the project" in t for t in titles)
        # keyboard: move down and open
        page.keyboard.press("j")
        page.keyboard.press("Enter")
        page.wait_for_url(re.compile(r"/session/"))
        page.wait_for_selector(".tile")


def test_an_appended_line_appears_live(tmp_path, page):
    settings, sid, main = web_corpus.one_session(tmp_path)
    with ServerThread(web_corpus.core(settings), watch_options=FAST) as srv:
        page.goto(f"{srv.url}session/{sid}#conversation")
        page.wait_for_selector(".chat .msg")
        web_corpus.append_say(main, "A line written just now")
        page.get_by_text("A line written just now").wait_for()
        page.goto(f"{srv.url}session/{sid}#call")
        page.wait_for_selector(".tile.lead")
        web_corpus.append_say(main, "Speaking on the call")
        page.locator(".tile.lead .bubble", has_text="Speaking on the call").wait_for()


def test_scrolling_up_loads_history_and_keeps_the_place(tmp_path, page):
    settings, sid, main = web_corpus.one_session(tmp_path)
    web_corpus.lengthen(main, 160)
    with ServerThread(web_corpus.core(settings), watch_options=FAST) as srv:
        page.goto(f"{srv.url}session/{sid}#conversation")
        page.get_by_text("history message 159").wait_for()
        before = page.locator(".chat .msg").count()
        assert before <= 50
        assert page.get_by_text("history message 100", exact=True).count() == 0
        anchor = page.locator(".chat .msg[data-line]").first.get_attribute("data-line")
        page.eval_on_selector(".chat", "c => { c.scrollTop = 0; c.dispatchEvent(new Event('scroll')); }")
        page.get_by_text("history message 100", exact=True).wait_for(state="attached")
        assert page.locator(".chat .msg").count() > before
        # the message that was at the top is still in view: the reader did not jump
        top = page.eval_on_selector(".chat", "c => c.getBoundingClientRect().top")
        bottom = page.eval_on_selector(".chat", "c => c.getBoundingClientRect().bottom")
        y = page.locator(f'.chat .msg[data-line="{anchor}"]').bounding_box()["y"]
        assert top - 5 <= y <= bottom
        # new messages while scrolled up: a button, not a jump
        web_corpus.append_say(main, "fresh while reading history")
        page.locator(".new-msgs").wait_for(state="visible")
        page.locator(".new-msgs").click()
        page.get_by_text("fresh while reading history").wait_for()


def test_replay_plays_and_scrubs(tmp_path, page):
    settings, sid, _ = web_corpus.one_session(tmp_path)
    with ServerThread(web_corpus.core(settings), watch_options=FAST) as srv:
        page.goto(f"{srv.url}session/{sid}#replay")
        page.wait_for_selector(".controls .clock")
        start = page.text_content(".controls .clock")
        assert page.locator(".mini-tree li").count() == 1  # only the lead at the start
        page.select_option(".controls select", "10")
        page.get_by_role("button", name="▶ Play").click()
        expect(page.locator(".controls .clock")).not_to_have_text(start)
        page.keyboard.press("Space")  # pause
        page.eval_on_selector(".scrub", "s => { s.value = '1000'; s.dispatchEvent(new Event('input')); }")
        expect(page.locator(".mini-tree li")).to_have_count(4)
        assert page.locator(".usage-table").text_content().count(",") >= 3
        page.eval_on_selector(".scrub", "s => { s.value = '0'; s.dispatchEvent(new Event('input')); }")
        expect(page.locator(".mini-tree li")).to_have_count(1)
        page.keyboard.press("Shift+ArrowRight")  # next turn
        page.keyboard.press("ArrowRight")  # next event
        page.keyboard.press("End")
        expect(page.locator(".mini-tree li")).to_have_count(4)


def test_the_demo_runs(page):
    from huddle.demo import Demo

    d = Demo(speed=8)
    assert d.dir.startswith(os.environ["HUDDLE_HOME"])
    with ServerThread(d.huddle(), demo=d, watch_options=FAST) as srv:
        page.goto(srv.url)
        page.wait_for_selector("#demo-badge:not([hidden])")
        page.wait_for_selector("tr.r-needs_you", timeout=30_000)
        assert page.title().startswith("(1) huddle")
        assert "permission" in page.text_content("tr.r-needs_you .t-sub")
        page.click("tr.r-needs_you a.t-title")
        page.wait_for_selector(".tile.lead")
        assert page.locator(".tile, .chip").count() >= 5
        page.locator("#s-state.s-your_turn").wait_for(timeout=30_000)
    assert not os.path.exists(d.dir)
