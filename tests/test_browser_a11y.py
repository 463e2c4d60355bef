"""Accessibility, in Debian's Chromium: state pills (and the words said in a state's
colour) meet WCAG AA contrast in the light and the dark theme, the session page's tabs
are ARIA tabs worked with the arrow keys, the needs-you banner is a live region, and
the board and the session page work from the keyboard alone."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

import web_corpus
from huddle.core import Huddle
from huddle.server import ServerThread
from live_agents import ClaudeProcess, claude_live
from test_browser import browser, page  # noqa: F401  (the shared Chromium fixtures)

pytestmark = pytest.mark.browser

SLOW_NETS = {"poll_watched": 600.0, "full_every": 600.0}
STATES = ("needs_you", "waiting", "working", "your_turn", "idle", "ended")

# The contrast of every sample the page draws: its text colour against the background
# it sits on (its own, else the nearest ancestor's that is not transparent), WCAG 2.x.
CONTRAST = """(sel) => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const bgOf = (n) => {
    for (; n; n = n.parentElement) {
      const c = rgb(getComputedStyle(n).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.99)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  return [...document.querySelectorAll(sel)].map((n) => {
    const a = lum(rgb(getComputedStyle(n).color).slice(0, 3)), b = lum(bgOf(n));
    return [n.className, n.textContent, (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)];
  });
}"""

SAMPLES_JS = """(states) => {
  const box = document.createElement("div");
  box.id = "a11y-samples";
  for (const s of states) {
    const p = document.createElement("span");
    p.className = `pill s-${s}`;
    p.textContent = s;
    box.append(p);
  }
  for (const [cls, text] of [["waiting-banner", "Needs you: approve"], ["t-sub why", "permission prompt"], ["t-sub wait", "waiting on"]]) {
    const n = document.createElement("span");
    n.className = cls;
    n.textContent = text;
    box.append(n);
  }
  const t = document.createElement("table");
  t.className = "board";
  const r = t.insertRow();
  r.className = "r-needs_you";
  r.insertCell().append(box);
  document.querySelector("main").append(t);
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_state_pills_and_state_words_meet_wcag_aa(tmp_path, browser, scheme):  # noqa: F811
    settings, _sid, _main = web_corpus.one_session(tmp_path, "01-basic-tools")
    ctx = browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme=scheme)
    pg = ctx.new_page()
    with ServerThread(Huddle(settings), watch_options=SLOW_NETS) as srv:
        pg.goto(srv.url)
        pg.wait_for_selector("#rows tr")
        pg.evaluate(SAMPLES_JS, list(STATES))
        got = pg.evaluate(CONTRAST, "#a11y-samples > *, #rows .pill, .chip-state")
    ctx.close()
    low = [(c, t, round(r, 2)) for c, t, r in got if r < 4.5]
    assert len(got) >= 9 and not low, low


def test_session_tabs_are_aria_tabs_worked_with_the_arrow_keys(tmp_path, page):  # noqa: F811
    settings, sid, _main = web_corpus.one_session(tmp_path, "01-basic-tools")
    with ServerThread(Huddle(settings), watch_options=SLOW_NETS) as srv:
        page.goto(f"{srv.url}session/{sid}#call")
        tabs = page.get_by_role("tab")
        expect(tabs).to_have_count(4)
        expect(page.get_by_role("tab", selected=True)).to_have_text(re.compile("^Call"))
        for tab in tabs.all():
            panel = page.locator(f"#{tab.get_attribute('aria-controls')}")
            assert panel.get_attribute("role") == "tabpanel"
            assert panel.get_attribute("aria-labelledby") == tab.get_attribute("id")
        page.get_by_role("tab", selected=True).focus()
        page.keyboard.press("ArrowRight")
        expect(page.get_by_role("tab", selected=True)).to_have_text(re.compile("^Tree"))
        expect(page.get_by_role("tab", selected=True)).to_be_focused()
        expect(page.locator("#tab-tree")).to_be_visible()
        page.keyboard.press("End")
        expect(page.get_by_role("tab", selected=True)).to_have_text(re.compile("^Replay"))
        page.keyboard.press("ArrowRight")  # round to the first
        expect(page.get_by_role("tab", selected=True)).to_have_text(re.compile("^Call"))
        assert [t.get_attribute("tabindex") for t in tabs.all()] == ["0", "-1", "-1", "-1"]  # one tab stop


def test_the_needs_you_banner_is_a_live_region(tmp_path, page):  # noqa: F811
    settings, sid, config = claude_live(tmp_path, "05-needs-you-bash-permission")
    claude = ClaudeProcess(config, sid, "busy")
    try:
        with ServerThread(Huddle(settings), watch_options=SLOW_NETS) as srv:
            page.goto(f"{srv.url}session/{sid}#call")
            live = page.locator("[aria-live]:has(#s-waiting)")
            expect(live).to_have_count(1)  # there before anything is said in it
            assert live.get_attribute("aria-live") in ("assertive", "polite")
            expect(live).to_be_attached()
            claude.set("waiting", "permission prompt")
            expect(live).to_contain_text("Needs you")
            expect(page.locator("#s-waiting")).to_be_visible()
    finally:
        claude.stop()


def test_the_board_and_a_session_work_from_the_keyboard(tmp_path, page):  # noqa: F811
    settings, _sid, _main = web_corpus.one_session(tmp_path, "01-basic-tools")
    with ServerThread(Huddle(settings), watch_options=SLOW_NETS) as srv:
        page.goto(srv.url)
        page.wait_for_selector("#rows tr")
        for _ in range(40):  # Tab from the top until a session's title has the focus
            page.keyboard.press("Tab")
            if page.evaluate("() => document.activeElement.classList.contains('t-title')"):
                break
        else:
            raise AssertionError("no session title is reachable with Tab")
        row = page.locator("#rows tr").first
        expect(row).to_have_class(re.compile(r"\bsel\b"))  # the selection follows the focus
        page.keyboard.press("Tab")  # its copy buttons come next, visible while focused
        copy = page.locator("#rows tr .row-copy .copy").first
        expect(copy).to_be_focused()
        expect(copy).to_be_visible()
        page.keyboard.press("Shift+Tab")
        page.keyboard.press("Enter")
        page.wait_for_url(re.compile(r"/session/"))
        # the session page: its download menu opens and closes from the keyboard
        button = page.get_by_role("button", name=re.compile("Download"))
        button.focus()
        page.keyboard.press("Enter")
        expect(button).to_have_attribute("aria-expanded", "true")
        expect(page.locator(".download-menu a").first).to_be_visible()
        page.keyboard.press("Tab")
        expect(page.locator(".download-menu a").first).to_be_focused()
        page.keyboard.press("Escape")
        expect(page.locator(".download-menu")).to_be_hidden()
        expect(button).to_be_focused()
        expect(button).to_have_attribute("aria-expanded", "false")
        assert "/session/" in page.url  # Escape closed the menu, it did not leave the page
