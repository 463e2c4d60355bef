"""A call that waits for the person's approval says so everywhere, in Debian's Chromium:
the conversation's call and the call tab's feed read "waiting for your approval: <cmd>",
never "running", on Claude Code (a registry file saying waiting), Codex (a thread lock
held, the escalated command not started) and Mistral Vibe (a session lock held, its
approval record written)."""

from __future__ import annotations

import json
import shutil

import pytest
from playwright.sync_api import expect

from conftest import SAMPLES
from huddle.core import Huddle
from huddle.server import ServerThread
from huddle.sources import Settings
from live_agents import ClaudeProcess, LockHolder, claude_live
from test_browser import browser, page  # noqa: F401  (the shared Chromium fixtures)

pytestmark = pytest.mark.browser

SLOW_NETS = {"poll_watched": 600.0, "full_every": 600.0}


def codex_waiting(tmp_path):
    snap = SAMPLES / "codex-live" / "03-needs-you-approval-tui" / "codex_home"
    home = tmp_path / "codex"
    shutil.copytree(snap / "sessions", home / "sessions")
    (home / "thread-writer-locks").mkdir()
    thread = json.loads((snap.parent / "truth.json").read_text())[0]["thread_id"]
    none = str(tmp_path / "none")
    settings = Settings(folders={"claude": none, "codex": str(home), "vibe": none}, huddle_home=str(tmp_path / "hh"))
    return settings, thread, LockHolder(home / "thread-writer-locks" / f"{thread}.lock")


def vibe_waiting(tmp_path):
    home = tmp_path / "vibe"
    shutil.copytree(SAMPLES / "vibe" / "3.0.3-unified-approval-waiting" / "logs", home / "logs")
    active = home / "logs" / "session" / "active"
    (sid,) = {p.name.split(".")[0] for p in active.glob("*.lock.json")}
    for p in active.glob(f"{sid}.lock*"):
        p.unlink()  # the recorded process is long gone: a live one takes the lock
    none = str(tmp_path / "none")
    settings = Settings(folders={"claude": none, "codex": none, "vibe": str(home)}, huddle_home=str(tmp_path / "hh"))
    return settings, sid, LockHolder(active / f"{sid}.lock", active / f"{sid}.lock.json", sid)


def says_it_waits(pg, url: str, sid: str, cmd: str) -> None:
    """The conversation's call and the call feed both say the wait, with the command."""
    want = f"waiting for your approval: {cmd}"
    pg.goto(f"{url}session/{sid}#conversation")
    call = pg.locator("details.tool").filter(has_text=cmd).last
    expect(call.locator(".what")).to_have_text(want)
    expect(call.locator(".st")).to_have_text("needs you")
    assert pg.locator("details.tool .st", has_text="running").count() == 0
    pg.goto(f"{url}session/{sid}#call")
    feed = pg.locator(".feed li").filter(has_text=cmd)
    expect(feed.first.locator(".w")).to_have_text(want)
    assert pg.locator(".feed li .w", has_text=f"running {cmd}").count() == 0


def test_claude_code_permission_prompt(tmp_path, page):  # noqa: F811
    settings, sid, config = claude_live(tmp_path, "05-needs-you-bash-permission")
    claude = ClaudeProcess(config, sid, "waiting")
    claude.set("waiting", "permission prompt")
    try:
        with ServerThread(Huddle(settings), watch_options=SLOW_NETS) as srv:
            says_it_waits(page, srv.url, sid, "touch build-marker.txt && echo created")
            claude.set("busy")  # approved: the command runs, and says so again
            page.goto(f"{srv.url}session/{sid}#conversation")
            call = page.locator("details.tool").filter(has_text="touch build-marker.txt").last
            expect(call.locator(".st")).to_have_text("running…")
            expect(call.locator(".what")).to_have_text("running touch build-marker.txt && echo created")
            expect(page.locator("text=waiting for your approval")).to_have_count(0)  # the call tab too
    finally:
        claude.stop()


def test_codex_command_approval(tmp_path, page):  # noqa: F811
    settings, thread, holder = codex_waiting(tmp_path)
    try:
        with ServerThread(Huddle(settings), watch_options=SLOW_NETS) as srv:
            says_it_waits(page, srv.url, thread, "cat /etc/hostname && echo approved-live")
    finally:
        holder.kill()


def test_vibe_tool_approval(tmp_path, page):  # noqa: F811
    """Vibe's approval record has an id of its own: the wait is still said on its call."""
    settings, sid, holder = vibe_waiting(tmp_path)
    try:
        with ServerThread(Huddle(settings), watch_options=SLOW_NETS) as srv:
            cmd = "touch /home/dev/work/cases/3.0.3-unified-approval/proj/approved.flag && echo approved-command-ran"
            says_it_waits(page, srv.url, sid, cmd)
    finally:
        holder.kill()
