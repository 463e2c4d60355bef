"""Search, usage and sharing in a real browser (Debian's Chromium through Playwright)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

import web_corpus
from huddle.server import ServerThread
from test_browser import browser, page  # noqa: F401 (the shared browser fixtures)

pytestmark = pytest.mark.browser
FAST = {"poll_watched": 0.5, "poll_unwatched": 0.2}
HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2"> the flamingoquest passes'


def test_a_search_opens_the_conversation_at_the_message(tmp_path, page):  # noqa: F811
    cfg, sid, main = web_corpus.one_session(tmp_path)
    web_corpus.lengthen(main, 120)  # the message sits far above the latest page
    web_corpus.append_say(main, HOSTILE)
    for i in range(80):
        web_corpus.append_say(main, f"later message {i:03d}")
    with ServerThread(web_corpus.core(cfg), watch_options=FAST) as srv:
        assert srv.state.indexer.idle.wait(60)
        page.goto(srv.url)
        page.fill("#head-search", "flamingoquest")
        page.press("#head-search", "Enter")
        page.wait_for_url(re.compile(r"/search\?q=flamingoquest"))
        result = page.locator(".result")
        expect(result).to_have_count(1)
        expect(result.locator("mark")).to_have_text("flamingoquest")
        expect(result.locator(".r-snip")).to_contain_text("<script>window.__pwned=1</script>")
        assert page.evaluate("window.__pwned") is None
        result.locator("a").click()
        page.wait_for_url(re.compile(rf"/session/{sid}#conversation\?"))
        focus = page.locator(".msg.focus")
        expect(focus).to_have_count(1)
        expect(focus.locator("mark")).to_have_text("flamingoquest")
        expect(focus).to_contain_text('<img src=x onerror="window.__pwned=2">')
        assert page.evaluate("window.__pwned") is None
        box = focus.bounding_box()
        chat = page.locator(".chat").bounding_box()
        assert box and chat and chat["y"] <= box["y"] <= chat["y"] + chat["height"], "the message is in view"
        # scrolling down loads the later messages (it opened in the middle)
        page.locator(".chat").evaluate("c => { c.scrollTop = c.scrollHeight; }")
        expect(page.locator(".chat")).to_contain_text("later message 079")
        expect(page.locator(".new-msgs")).to_be_hidden()


def test_the_search_page_narrows_and_says_when_nothing_is_found(tmp_path, page):  # noqa: F811
    cfg = web_corpus.build(tmp_path, vibe=False)
    with ServerThread(web_corpus.core(cfg), watch_options=FAST) as srv:
        assert srv.state.indexer.idle.wait(60)
        page.goto(srv.url + "search?q=the")
        expect(page.locator(".result").first).to_be_visible()
        n = page.locator(".result").count()
        page.select_option("#source", "codex")
        expect(page.locator("#state")).to_contain_text("result")
        page.wait_for_function("() => location.search.includes('source=codex')")
        metas = page.eval_on_selector_all(".r-meta", "ms => ms.map(m => m.textContent)")
        assert all(m.startswith("Codex") for m in metas) and len(metas) <= n
        page.fill("#q", '"--- NEAR( OR')
        page.press("#q", "Enter")
        expect(page.locator("#state")).to_contain_text("No messages found")
