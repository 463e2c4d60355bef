"""The session page tells the truth and reads well, in Debian's Chromium (a call waiting
for approval: test_browser_waits.py): a sub-agent just ordered shows working, slash commands are the person's, harness rows sit behind one toggle,
agent text is Markdown with raw HTML never passed through, times carry their date, and
nothing scrolls sideways at 800 px."""

from __future__ import annotations

import json
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from playwright.sync_api import expect

import incli
import web_corpus
from conftest import SAMPLES
from huddle.core import Huddle
from huddle.model.times import parse_time
from huddle.server import ServerThread
from huddle.sources import Settings
from test_browser import browser, page  # noqa: F401  (the shared Chromium fixtures)

pytestmark = pytest.mark.browser


def serve(settings: Settings) -> ServerThread:
    return ServerThread(Huddle(settings), watch_options={"poll_watched": 600.0, "full_every": 600.0})


def _happening_now(projects: Path) -> None:
    """The transcripts' times moved on so that their last record is a second old: the
    story happens now (a week-old one with no process is idle, its agents too)."""
    files = list(projects.rglob("*.jsonl"))
    stamps = [parse_time(json.loads(x).get("timestamp")) for f in files for x in f.read_text().splitlines()]
    shift = time.time() - 1 - max(t for t in stamps if t is not None)
    for f in files:
        out = []
        for line in f.read_text().splitlines():
            rec = json.loads(line)
            t = parse_time(rec.get("timestamp"))
            if t is not None:
                rec["timestamp"] = datetime.fromtimestamp(t + shift, UTC).isoformat(timespec="milliseconds")[:-6] + "Z"
            out.append(json.dumps(rec) + "\n")
        f.write_text("".join(out))


def test_a_sub_agent_just_ordered_shows_working(tmp_path, page):  # noqa: F811
    """The lead has ordered it; its file holds only the order so far (its model has not
    answered yet): working, not "your turn", in the tree and the call."""
    src = SAMPLES / "claude-live" / "15-waiting-on-subagent-foreground" / "config" / "projects"
    projects = tmp_path / "claude" / "projects"
    shutil.copytree(src, projects)
    (sub,) = projects.glob("*/*/subagents/agent-*.jsonl")
    sub.write_text(sub.read_text().splitlines()[0] + "\n")
    _happening_now(projects)
    none = str(tmp_path / "none")
    settings = Settings(folders={"claude": str(tmp_path / "claude"), "codex": none, "vibe": none})
    sid = next(projects.glob("*/*.jsonl")).stem
    with serve(settings) as srv:
        page.goto(f"{srv.url}session/{sid}#tree")
        node = page.locator(".tree li, .tree-row, [data-agent]").filter(has_text="Long foreground check").first
        expect(node).to_contain_text("working")
        page.goto(f"{srv.url}session/{sid}#call")
        tile = page.locator(".tile:not(.lead)").filter(has_text="Long foreground check")
        expect(tile.locator(".pill")).to_contain_text("working")
        page.goto(f"{srv.url}session/{sid}#replay")
        page.wait_for_selector(".replay-grid")
        page.keyboard.press("End")  # the end of the story: the sub-agent was ordered and works
        tree = page.locator(".mini-tree li").filter(has_text="Long foreground check")
        expect(tree).to_contain_text("working")  # not "ended, 0 tokens"


def test_a_live_update_whose_fetch_fails_costs_no_page_error(tmp_path, page):  # noqa: F811
    """A session rewritten under an open page makes the page read it again; when that
    read fails (the server restarting), the page waits for the stream's next hello
    instead of throwing (an unhandled rejection once failed CI as the server stopped)."""
    settings, sid, main = web_corpus.one_session(tmp_path)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    with serve(settings) as srv:
        page.goto(f"{srv.url}session/{sid}#conversation")
        page.wait_for_selector(".msg")
        page.route(f"**/api/sessions/{sid}**", lambda route: route.abort("connectionrefused"))
        with page.expect_event("requestfailed", lambda r: f"/api/sessions/{sid}" in r.url, timeout=30_000):
            lines = main.read_bytes().splitlines(keepends=True)
            main.write_bytes(b"".join(lines[: len(lines) // 2]))  # in place, shorter: read again
        page.evaluate("() => new Promise((r) => setTimeout(r, 50))")  # (its rejections settle)
    assert errors == []


def say_record(main, text: str) -> None:
    web_corpus.append_say(main, text)


def test_markdown_is_rendered_and_raw_html_never_passed_through(tmp_path, page):  # noqa: F811
    settings, sid, main = web_corpus.one_session(tmp_path, "05-compact")
    hostile = (
        "Here is **the plan**:\n\n- one\n- two\n\n```py\nprint('hi')\n```\n\n"
        '<img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script>\n\n'
        "[click](javascript:window.__pwned=3) and [docs](https://example.org/docs) and app.py"
    )
    say_record(main, hostile)
    with serve(settings) as srv:
        page.goto(f"{srv.url}session/{sid}#conversation")
        msg = page.locator(".msg.agent .md").last
        expect(msg.locator("strong")).to_have_text("the plan")
        expect(msg.locator("li")).to_have_count(2)
        expect(msg.locator("pre code")).to_contain_text("print('hi')")
        assert msg.locator("img, script").count() == 0  # the HTML shows as text
        assert '<img src=x onerror="window.__pwned=1">' in msg.inner_text()
        links = msg.locator("a")
        assert links.count() == 1 and links.get_attribute("href") == "https://example.org/docs"
        assert "noopener" in links.get_attribute("rel") and links.get_attribute("target") == "_blank"
        assert (
            "javascript:" not in msg.inner_html().split("[click]")[0] or msg.locator("a[href^=javascript]").count() == 0
        )
        assert page.evaluate("() => window.__pwned === undefined")


def test_slash_commands_are_the_persons_and_harness_rows_hide_behind_one_toggle(tmp_path, page):  # noqa: F811
    settings, sid, main = web_corpus.one_session(tmp_path, "05-compact")
    assert "<command-name>/compact" in main.read_text()
    with serve(settings) as srv:
        page.goto(f"{srv.url}session/{sid}#conversation")
        cmd = page.locator(".msg.human.command").first
        expect(cmd).to_contain_text("/compact")
        expect(cmd.locator(".who")).to_contain_text("You")
        toggle = page.locator("#show-harness")
        harness = page.locator(".msg.context")
        assert harness.count() > 0
        expect(harness.first).to_be_hidden()
        toggle.check()
        expect(harness.first).to_be_visible()
        page.reload()
        expect(page.locator(".msg.context").first).to_be_visible()  # the choice is remembered
        page.locator("#show-harness").uncheck()
        expect(page.locator(".msg.context").first).to_be_hidden()


def test_times_carry_their_date_and_nothing_scrolls_sideways_at_800px(tmp_path, browser):  # noqa: F811
    settings = web_corpus.build(tmp_path)
    h = web_corpus.core(settings)
    rich = max(h.sessions(), key=lambda s: len(s.agents) if s.source == "claude" else 0)
    ctx = browser.new_context(viewport={"width": 800, "height": 800})
    pg = ctx.new_page()
    with ServerThread(h) as srv:
        pg.goto(srv.url)
        pg.wait_for_selector("#rows tr")
        assert pg.evaluate("() => document.documentElement.scrollWidth <= innerWidth")
        for tab in ("call", "tree", "conversation", "replay"):
            pg.goto(f"{srv.url}session/{rich.id}#{tab}")
            pg.wait_for_selector(f"#tab-{tab}:not([hidden]) > *")
            assert pg.evaluate("() => document.documentElement.scrollWidth <= innerWidth"), tab
        started = pg.locator(".s-started")
        expect(started).to_contain_text("started")
        day = time.strftime("%d", time.gmtime(rich.started_at)).lstrip("0")
        assert day in started.inner_text()  # a date, not only a clock time
        pg.goto(f"{srv.url}session/{rich.id}#conversation")
        when = pg.locator(".msg .who span").nth(1).inner_text()
        assert any(
            m in when for m in ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
        )
    ctx.close()


def test_the_board_filter_matches_agent_programs_and_agent_names(tmp_path, page):  # noqa: F811
    settings = web_corpus.build(tmp_path)
    with ServerThread(web_corpus.core(settings)) as srv:
        page.goto(srv.url)
        page.wait_for_selector("#rows tr")
        page.fill("#filter", "mistral")
        rows = page.locator("#rows tr:visible")
        expect(rows.first).to_be_visible()
        assert rows.count() > 0 and all("Mistral Vibe" in t for t in rows.all_inner_texts())
        page.fill("#filter", "reviewer")  # a sub-agent's type, in no title
        expect(page.locator("#rows tr:visible").first).to_contain_text("Claude Code")


def test_codex_sub_agents_have_one_name_in_the_web_app_and_the_cli(tmp_path):
    import os

    home = SAMPLES / "codex" / "subagents_v2" / "codex_home"
    none = str(tmp_path / "none")
    settings = Settings(folders={"claude": none, "codex": str(home), "vibe": none}, huddle_home=str(tmp_path / "hh"))
    h = web_corpus.core(settings)
    (s,) = h.sessions()
    from huddle.views import api

    web = {a["id"]: a["label"] for a in api.transcripts(h, s.id)["agents"]}
    tree = {a["id"]: a["label"] for a in api.session_detail(h, s.id)["tree"]}
    assert web == tree and "Bacon (/root/count_files)" in web.values()
    out = incli.huddle("show", s.id[:8], env={**os.environ, **settings.env()}).stdout
    assert all(label in out for label in web.values()), out
