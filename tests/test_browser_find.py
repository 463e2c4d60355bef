"""Search, usage and sharing in a real browser (Debian's Chromium through Playwright)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

import web_corpus
from huddle.server import ServerThread
from test_browser import SHOTS, browser, page  # noqa: F401 (the shared browser fixtures)

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
        expect(page.locator("#state")).to_contain_text("session")  # (one row per session)
        page.wait_for_function("() => location.search.includes('source=codex')")
        metas = page.eval_on_selector_all(".r-meta", "ms => ms.map(m => m.textContent)")
        assert all(m.startswith("Codex") for m in metas) and len(metas) <= n
        page.fill("#q", '"--- NEAR( OR')
        page.press("#q", "Enter")
        expect(page.locator("#state")).to_contain_text("No messages found")


def test_board_filters_grouping_and_copy_buttons(tmp_path, browser):  # noqa: F811
    cfg = web_corpus.build(tmp_path)
    h = web_corpus.core(cfg)
    with ServerThread(h, watch_options=FAST) as srv:
        ctx = browser.new_context(
            viewport={"width": 1280, "height": 900}, permissions=["clipboard-read", "clipboard-write"]
        )
        pg = ctx.new_page()
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(srv.url)
        n = len(h.sessions())
        rows = pg.locator("#rows tr:not(.group-row)")
        expect(rows).to_have_count(n)
        states = pg.eval_on_selector_all("#rows tr", "trs => trs.map(t => t.className.match(/r-(\\w+)/)[1])")
        pick = max(set(states), key=states.count)
        pg.click(f".chip-state[data-state='{pick}']")
        expect(rows).to_have_count(states.count(pick))
        assert f"state={pick}" in pg.url
        pg.click(f".chip-state[data-state='{pick}']")
        pg.select_option("#f-agent", "codex")
        codex = sum(1 for s in h.sessions() if s.source == "codex")
        expect(rows).to_have_count(codex)
        kinds = pg.eval_on_selector_all("#rows .c-kind", "cs => cs.map(c => c.textContent)")
        assert kinds and all(k.startswith("Codex") for k in kinds)
        pg.click("#clear-filters")
        expect(rows).to_have_count(n)
        # grouped by project: each header is followed by that project's sessions only
        pg.check("#group-project")
        expect(pg.locator("#rows tr.group-row").first).to_be_visible()
        layout = pg.eval_on_selector_all(
            "#rows tr",
            "trs => trs.map(t => t.classList.contains('group-row') ? ['g', t.dataset.group] : ['r', t.querySelector('.c-project').textContent])",
        )
        group = None
        for kind, name in layout:
            if kind == "g":
                group = name
            else:
                assert name == group or (name == "—" and group == "(no project)"), layout
        assert len({name for kind, name in layout if kind == "g"}) == len(
            {s.cwd.rstrip("/").rsplit("/", 1)[-1] for s in h.sessions()}
        )
        # a bookmarked filter comes back
        pg.goto(srv.url + "?agent=claude&group=project")
        expect(pg.locator("#f-agent")).to_have_value("claude")
        claude = sum(1 for s in h.sessions() if s.source == "claude")
        expect(rows).to_have_count(claude)
        # copy buttons: the id and the command that resumes it
        first = rows.first
        sid = first.get_attribute("data-id")
        first.hover()
        first.locator(".row-copy button", has_text="ID").click()
        assert pg.evaluate("navigator.clipboard.readText()") == sid
        first.locator(".row-copy button", has_text="Resume").click()
        assert pg.evaluate("navigator.clipboard.readText()") == f"claude --resume {sid}"
        assert pg.url.startswith(srv.url), "copying did not open the session"
        # the session page has them too, and the download menu
        pg.goto(f"{srv.url}session/{sid}")
        pg.locator("#s-share button", has_text="Resume").click()
        assert pg.evaluate("navigator.clipboard.readText()") == f"claude --resume {sid}"
        pg.click("#s-share button:has-text('Download')")
        with pg.expect_download() as dl:
            pg.click(".download-menu a[data-format='md']")
        assert dl.value.suggested_filename.endswith(".md")
        text = Path(dl.value.path()).read_text(encoding="utf-8")
        assert text.startswith("# ") and "Redaction:" in text
        assert not errors, errors
        pg.screenshot(path=str(SHOTS / "board-filters.png"))
        ctx.close()
