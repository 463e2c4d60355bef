"""The usage page: GET /api/usage is `huddle usage --json`, and the page draws it
(charts as SVG, the tables, a date range, a CSV download) in a real browser."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

import incli
import web_corpus
from huddle.server import ServerThread
from test_browser import browser, page  # noqa: F401 (the shared browser fixtures)

FAST = {"poll_watched": 0.5, "poll_unwatched": 0.2}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    cfg = web_corpus.build(tmp_path_factory.mktemp("usage"))
    with ServerThread(web_corpus.core(cfg), watch_options=FAST) as srv:
        yield cfg, srv


def _cli(cfg, *args):
    env = {**os.environ, **web_corpus.env_of(cfg)}
    out = incli.huddle("usage", "--json", *args, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_route_is_the_command(served):
    cfg, srv = served
    days = httpx.get(srv.url + "api/usage", timeout=30).json()
    assert days["rows"] and days["by"] == "day"
    first = days["rows"][0]["key"]
    for by in ("day", "session", "project", "model", "agent"):
        assert httpx.get(srv.url + "api/usage", params={"by": by}, timeout=30).json() == _cli(cfg, "--by", by)
    ranged = httpx.get(
        srv.url + "api/usage", params={"by": "day", "since": first, "until": first + "T12:00:00Z"}
    ).json()
    assert ranged == _cli(cfg, "--by", "day", "--since", first, "--until", first + "T12:00:00Z")
    assert ranged["until"] and all(r["key"] == first for r in ranged["rows"])
    assert ranged["totals"]["total_tokens"] <= days["totals"]["total_tokens"]


@pytest.mark.parametrize("params", [{"by": "week"}, {"since": "yesterday"}, {"until": "2026-13-45"}])
def test_bad_parameters_are_400(served, params):
    _cfg, srv = served
    r = httpx.get(srv.url + "api/usage", params=params)
    assert r.status_code == 400 and "bad" in r.json()["error"]


@pytest.mark.browser
def test_the_page_draws_the_range_and_downloads_csv(served, page):  # noqa: F811
    _cfg, srv = served
    days = httpx.get(srv.url + "api/usage").json()
    known = [r["key"] for r in days["rows"] if r["key"] != "unknown"]
    lo, hi = known[0], known[-1]
    page.goto(f"{srv.url}usage?from={lo}&to={hi}")
    expect(page.locator("#cost-chart svg .day")).to_have_count(len(web_days(lo, hi)))
    expect(page.locator("#token-chart svg rect").first).to_be_attached()
    expect(page.locator("#by-model tbody tr").first).to_be_visible()
    models = httpx.get(srv.url + "api/usage", params={"by": "model", "since": lo}).json()["rows"]
    expect(page.locator("#by-model tbody tr")).to_have_count(len(models))
    expect(page.locator("#by-agent")).to_contain_text("lead")
    title = page.locator("#cost-chart svg .day title").first.text_content()
    assert title.startswith(lo)
    with page.expect_download() as dl:
        page.click("#csv")
    body = Path(dl.value.path()).read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(body)))
    groups = {r["group"] for r in rows}
    assert groups == {"day", "project", "model", "agent"}
    assert {r["key"] for r in rows if r["group"] == "model"} == {m["key"] for m in models}
    # a narrower range narrows every part of the page
    page.fill("#from", hi)
    page.dispatch_event("#from", "change")
    expect(page.locator("#cost-chart svg .day")).to_have_count(1)
    page.click(".range [data-days='0']")
    page.wait_for_function("() => location.search === ''")


def web_days(lo: str, hi: str) -> list[str]:
    from datetime import date, timedelta

    a, b = date.fromisoformat(lo), date.fromisoformat(hi)
    return [(a + timedelta(days=i)).isoformat() for i in range((b - a).days + 1)]
