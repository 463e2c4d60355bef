"""The pages at a phone's width and at a desk's, in Debian's Chromium: at 390 px nothing
on the board or a session page scrolls sideways, the usage charts' labels never run
into each other, a row's buttons never cover its title; a filter that matches nothing
says so, and every filter (the words typed too) lives in the address."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

import web_corpus
from huddle.server import ServerThread
from test_browser import SHOTS, browser, page  # noqa: F401  (the shared Chromium fixtures)

pytestmark = pytest.mark.browser

FITS = "() => document.documentElement.scrollWidth <= innerWidth"

# Boxes of the elements `sel` matches that overlap another one's (on screen, in px).
OVERLAPS = """(sel) => {
  const boxes = [...document.querySelectorAll(sel)].map((n) => [n.textContent, n.getBoundingClientRect()]);
  const out = [];
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const [ta, a] = boxes[i], [tb, b] = boxes[j];
    if (a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5) out.push([ta, tb]);
  }
  return [boxes.length, out];
}"""


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    settings = web_corpus.build(tmp_path_factory.mktemp("narrow"))
    h = web_corpus.core(settings)
    rich = max(h.sessions(), key=lambda s: len(s.agents) if s.source == "claude" else 0)
    with ServerThread(h) as srv:
        yield srv, rich.id


def test_nothing_scrolls_sideways_at_390px(served, browser):  # noqa: F811
    srv, sid = served
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True)
    pg = ctx.new_page()
    pg.goto(srv.url)
    pg.wait_for_selector("#rows tr")
    assert pg.evaluate(FITS), pg.evaluate("() => document.documentElement.scrollWidth")
    for tab in ("call", "tree", "conversation", "replay"):
        pg.goto(f"{srv.url}session/{sid}#{tab}")
        pg.wait_for_selector(f"#tab-{tab}:not([hidden]) > *")
        wide = pg.evaluate("() => document.documentElement.scrollWidth")
        assert pg.evaluate(FITS), f"{tab}: {wide} px wide"
    for path in ("usage", "search?q=the"):
        pg.goto(srv.url + path)
        pg.wait_for_load_state("networkidle")
        assert pg.evaluate(FITS), path
    ctx.close()


@pytest.mark.parametrize("width", [390, 800, 1440])
def test_usage_chart_labels_never_collide(served, browser, width):  # noqa: F811
    srv, _sid = served
    ctx = browser.new_context(viewport={"width": width, "height": 900})
    pg = ctx.new_page()
    pg.goto(srv.url + "usage")
    pg.wait_for_selector("#cost-chart svg .day")
    for chart in ("#cost-chart", "#token-chart"):
        n, hit = pg.evaluate(OVERLAPS, f"{chart} svg text.axis")
        assert n >= 4 and not hit, (chart, hit)
    ctx.close()


BOXES = """() => {
  const row = document.querySelector('#rows tr.sel');
  const box = (sel) => {
    const el = row && row.querySelector(sel);
    if (!el) return null;
    const r = el.getBoundingClientRect();
    return r.width || r.height ? { x: r.x, y: r.y, width: r.width, height: r.height } : null;
  };
  return [box('.t-title'), box('.row-copy')];
}"""


@pytest.mark.parametrize("width", [390, 800, 1440])
def test_a_rows_buttons_never_cover_its_title(served, browser, width):  # noqa: F811
    srv, _sid = served
    ctx = browser.new_context(viewport={"width": width, "height": 900})
    pg = ctx.new_page()
    pg.goto(srv.url)
    pg.wait_for_selector("#rows tr.sel")
    row = pg.locator("#rows tr.sel")
    expect(row.locator(".t-title")).to_be_visible()
    expect(row.locator(".row-copy")).to_be_visible()
    # (both boxes in one look at the page: a live update may draw the row again between two)
    t, b = pg.evaluate(BOXES)
    assert t and b and (t["x"] + t["width"] <= b["x"] + 0.5 or t["y"] + t["height"] <= b["y"] + 0.5), (t, b)
    ctx.close()


def test_a_filter_that_matches_nothing_says_so_and_filters_live_in_the_address(served, page):  # noqa: F811
    srv, _sid = served
    page.goto(srv.url)
    page.wait_for_selector("#rows tr")
    page.fill("#filter", "no-session-is-called-this")
    expect(page.locator("#rows tr")).to_have_count(0)
    expect(page.locator("#none-match")).to_be_visible()
    expect(page.locator("#none-match")).to_contain_text("No session matches")
    expect(page.locator("#none-match")).to_contain_text("no-session-is-called-this")
    assert "q=no-session-is-called-this" in page.url
    page.fill("#filter", "mistral")
    page.locator(".chip-state[data-state='ended']").click()
    expect(page).to_have_url(re.compile(r"q=mistral"))
    expect(page).to_have_url(re.compile(r"state=ended"))
    expect(page.locator("#rows tr").first).to_be_visible()
    rows = page.locator("#rows tr").all_text_contents()
    page.reload()  # the address is the whole choice: the same rows again
    expect(page.locator("#filter")).to_have_value("mistral")
    # Retried: the live stream may draw a row again while it is read (a row replaced
    # mid-read has no layout, so its text is compared as text, not as laid out).
    expect(page.locator("#rows tr")).to_have_text(rows)
    assert rows
    page.locator("#clear-filters").click()
    expect(page.locator("#filter")).to_have_value("")
    assert "q=" not in page.url and "state=" not in page.url
