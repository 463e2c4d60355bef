"""A session page as a daily user meets it, in Debian's Chromium: an ended session opens
on its conversation (the tab with content), a slash command reads as the person typed
it, a thinking summary is Markdown, and a Codex sub-agent has one name in every view
(call, tree, conversation, search)."""

from __future__ import annotations

import shutil

import pytest
from playwright.sync_api import expect

import web_corpus
from conftest import SAMPLES
from huddle.core import Huddle
from huddle.server import ServerThread
from huddle.sources import Settings
from test_browser import browser, page  # noqa: F401  (the shared Chromium fixtures)

pytestmark = pytest.mark.browser

SLOW_NETS = {"poll_watched": 600.0, "full_every": 600.0}


def serve(settings: Settings) -> ServerThread:
    return ServerThread(Huddle(settings), watch_options=SLOW_NETS)


def codex_subagents(tmp_path) -> tuple[Settings, str]:
    home = tmp_path / "codex"
    shutil.copytree(SAMPLES / "codex" / "subagents_v2" / "codex_home", home)
    none = str(tmp_path / "none")
    settings = Settings(folders={"claude": none, "codex": str(home), "vibe": none}, huddle_home=str(tmp_path / "hh"))
    (s,) = web_corpus.core(settings).sessions()
    return settings, s.id


def test_an_ended_session_opens_on_its_conversation(tmp_path, page):  # noqa: F811
    settings, sid, _main = web_corpus.one_session(tmp_path, "01-basic-tools")
    with serve(settings) as srv:
        page.goto(f"{srv.url}session/{sid}")
        expect(page.locator("#tab-conversation")).to_be_visible()
        expect(page.locator("#tab-conversation .msg").first).to_be_visible()
        expect(page.locator("#tab-call")).to_be_hidden()
        expect(page.locator('.tabs [data-tab="conversation"]')).to_have_class("on")
        page.keyboard.press("1")  # the call is still a key away
        expect(page.locator("#tab-call")).to_be_visible()


def test_slash_commands_read_as_the_person_typed_them(tmp_path, page):  # noqa: F811
    settings, sid, _main = web_corpus.one_session(tmp_path, "10-interactive-tmux")
    with serve(settings) as srv:
        page.goto(f"{srv.url}session/{sid}#conversation")
        typed = page.locator(".msg.human.command .body")
        expect(typed).to_have_text(["/rename Interactive demo session", "/compact"])
        page.locator("#show-harness").check()  # harness rows too: no raw wrapper anywhere
        expect(page.locator(".msg.context").first).to_be_visible()
        assert "<command-name>" not in page.locator(".chat").inner_text()
        assert page.locator(".msg.human", has_text="Session renamed to").count() == 0  # its output is not yours


def test_a_thinking_summary_is_markdown(tmp_path, page):  # noqa: F811
    settings, sid = codex_subagents(tmp_path)
    with serve(settings) as srv:
        page.goto(f"{srv.url}session/{sid}#conversation")
        think = page.locator("details.think").first
        think.locator("summary").click()
        expect(think.locator(".pane strong").first).to_have_text("Delegating")
        assert "**" not in think.locator(".pane").inner_text()
        assert "**" not in think.locator("summary").inner_text()


def test_a_codex_sub_agent_has_one_name_in_every_view(tmp_path, page):  # noqa: F811
    settings, sid = codex_subagents(tmp_path)
    name = "Zeno (/root/review_readme)"
    with serve(settings) as srv:
        page.goto(f"{srv.url}session/{sid}#call")
        expect(page.locator(".left-call .chip .r", has_text="Zeno")).to_contain_text(f"{name} · ")  # it reported
        page.goto(f"{srv.url}session/{sid}#tree")
        expect(page.locator(".node .name", has_text="Zeno")).to_have_text(name)
        page.goto(f"{srv.url}session/{sid}#conversation")
        expect(page.locator(".agents-list .nm", has_text="Zeno")).to_have_text(name)
        page.goto(f"{srv.url}search?q=README&session={sid}")  # (a session's every hit: not its best one)
        meta = page.locator(".result .r-meta", has_text="Zeno")
        expect(meta.first).to_contain_text(name)
        assert page.locator(".result .r-meta", has_text="/root/review_readme").count() == meta.count()
