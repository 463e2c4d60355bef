"""Desktop notifications through a real D-Bus session bus: dbus-run-session starts a
dbus-daemon, a small recording notification server owns org.freedesktop.Notifications on
it (tests/helpers/notification_server.py), and huddle speaks real D-Bus to it (jeepney,
notify-send, desktop-notifier). Live sessions are real processes with real registry
files. One notification per wait, saying which session, which agent and why; closed
when the wait is answered."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from huddle.core import Huddle
from huddle.live import desktop
from huddle.live.notify import Notifier, notice
from huddle.live.watcher import Watcher
from huddle.model.rows import Row
from huddle.model.times import iso
from live_agents import ClaudeProcess, claude_live, wait_until
from said import row

HELPER = Path(__file__).parent / "helpers" / "notification_server.py"
pytestmark = pytest.mark.skipif(
    not os.path.exists("/usr/bin/dbus-run-session"), reason="scripts/test installs dbus (dbus-run-session)"
)


class Bus:
    def __init__(self, tmp: Path):
        self.record = tmp / "notifications.jsonl"
        addr = tmp / "bus-address"
        self.proc = subprocess.Popen(
            ["dbus-run-session", "--", sys.executable, str(HELPER), str(self.record), str(addr)],
            stdin=subprocess.PIPE,
        )
        wait_until(lambda: addr.exists(), time.time() + 120, "the recording notification server")
        self.address = addr.read_text()

    def calls(self, kind: str | None = None) -> list[dict]:
        if not self.record.exists():
            return []
        got = [json.loads(x) for x in self.record.read_text().splitlines()]
        return [c for c in got if kind is None or c["call"] == kind]

    def wait(self, kind: str, n: int, within: float = 10.0) -> list[dict]:
        def enough() -> list[dict] | None:
            got = self.calls(kind)
            return got if len(got) >= n else None

        return wait_until(enough, time.time() + within, f"{n} {kind}")

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=20)


@pytest.fixture
def bus(tmp_path, monkeypatch):
    b = Bus(tmp_path)
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", b.address)
    yield b
    b.stop()


@pytest.fixture
def live_claude(tmp_path):
    settings, sid, config = claude_live(tmp_path)
    claude = ClaudeProcess(config, sid, "busy")
    yield settings, sid, claude
    claude.stop()


def follow(settings, backend) -> tuple[Watcher, Notifier]:
    h = Huddle(settings)
    w = Watcher(h, lambda msgs: None, poll_watched=600.0, full_every=600.0)
    errors: list[str] = []
    n = Notifier(backend, "http://127.0.0.1:7430/", on_error=errors.append)
    w.listen(n)
    w.start()
    return w, n


def one_wait_then_another(bus: Bus, claude: ClaudeProcess, close_kind: str) -> list[dict]:
    """busy -> waiting (one notification, however often the row moves) -> busy (closed)
    -> waiting again (a new one)."""
    claude.set("waiting", "permission prompt")
    (_first,) = bus.wait("Notify", 1)
    # the same wait rewritten (a later updatedAt, the same prompt): never a second notification
    claude.base["name"] = "proj (renamed)"
    claude.set("waiting", "permission prompt")
    claude.set("busy")
    bus.wait(close_kind, 1 if close_kind == "CloseNotification" else 2)
    claude.set("waiting", "permission prompt")
    return bus.wait("Notify", 2 if close_kind == "CloseNotification" else 3)


def test_dbus_one_notification_per_wait_closed_when_answered(bus, live_claude):
    settings, _sid, claude = live_claude
    backend = desktop.DBus()
    w, n = follow(settings, backend)
    try:
        calls = one_wait_then_another(bus, claude, "CloseNotification")
        first, second = calls[0], calls[1]
        assert first["app"] == "huddle" and first["summary"].endswith("needs you")
        assert "Explain this project" in first["summary"]  # which session
        assert "The lead" in first["body"] and "Claude Code" in first["body"]  # which agent, which tool
        assert "permission prompt: Bash" in first["body"]  # why: the command
        assert "long_task.sh" in first["body"] or "long task" in first["body"]
        assert first["hints"]["urgency"] == 2
        (closed,) = list(bus.calls("CloseNotification"))
        assert closed["id"] == first["id"]  # the answered wait's own notification
        assert second["id"] != first["id"]  # a new wait is a new notification
        assert len(bus.calls("Notify")) == 2
    finally:
        w.stop()
        n.close_all()
        backend.stop()


def test_notify_send_shows_and_replaces_when_answered(bus, live_claude):
    settings, _sid, claude = live_claude
    w, _n = follow(settings, desktop.NotifySend())
    try:
        claude.set("waiting", "permission prompt")
        (first,) = bus.wait("Notify", 1)
        assert first["summary"].endswith("needs you") and "permission prompt: Bash" in first["body"]
        assert first["hints"]["urgency"] == 2
        claude.set("busy")
        _, answered = bus.wait("Notify", 2)
        assert answered["replaces"] == first["id"] and answered["summary"] == "Answered"  # notify-send cannot close
    finally:
        w.stop()


def test_desktop_notifier_extra_over_the_same_bus(bus, live_claude):
    pytest.importorskip("desktop_notifier")
    settings, _sid, claude = live_claude
    backend = desktop.Notifier()
    w, _n = follow(settings, backend)
    try:
        claude.set("waiting", "permission prompt")
        (first,) = bus.wait("Notify", 1)
        assert first["summary"].endswith("needs you") and "permission prompt: Bash" in first["body"]
        assert "default" in first["actions"]  # clickable: opens the session's page
        claude.set("busy")
        (closed,) = bus.wait("CloseNotification", 1)
        assert closed["id"] == first["id"]
    finally:
        w.stop()
        backend.stop()


def test_waits_already_there_at_start_are_not_news(bus, tmp_path):
    settings, sid, config = claude_live(tmp_path)
    claude = ClaudeProcess(config, sid, "waiting")
    claude.set("waiting", "permission prompt")
    backend = desktop.DBus()
    try:
        w, _n = follow(settings, backend)
        assert w.rows[f"claude:{sid}"].state == "needs_you"
        claude.set("busy")
        wait_until(lambda: w.rows[f"claude:{sid}"].state == "working", time.time() + 120, "working")
        claude.set("waiting", "permission prompt")
        bus.wait("Notify", 1)  # the next wait is news
        w.stop()
        assert len(bus.calls("Notify")) == 1 and not bus.calls("CloseNotification")
    finally:
        backend.stop()
        claude.stop()


def test_a_wait_begun_after_the_start_is_news_though_the_first_read_finds_it(bus):
    """A server shows its cached rows at once and reads for seconds after: a session that
    turns to "needs you" in between reaches the notifier in the rows it is primed with."""
    backend = desktop.DBus()
    try:
        started = time.time() - 60
        n = Notifier(backend, since=started)

        def waiting(sid: str, since: float) -> Row:
            return row(source="claude", id=sid, title=sid, state="needs_you", state_since=iso(since))

        old, new = waiting("before", started - 5), waiting("after", started + 5)
        n.prime([old, new, row(source="claude", id="busy", state="working")])
        (shown,) = bus.wait("Notify", 1)
        assert shown["summary"] == "after needs you"
        n.rows([old, new], [])  # the same waits again: neither is news now
        n.close_all()
        bus.wait("CloseNotification", 1)
        assert len(bus.calls("Notify")) == 1 and n.sent == 1
    finally:
        backend.stop()


def _as_in_a_terminal() -> None:
    """Ctrl-C's signal as a terminal's foreground command has it: a suite started in the
    background (`cmd &` in a script) hands its children SIGINT ignored, and Python then
    leaves it ignored, so the Ctrl-C these tests send would do nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def huddle_child(settings, *args: str) -> subprocess.Popen:
    """`huddle ARGS` in its own process group (a Ctrl-C goes to it alone), notifying over D-Bus."""
    return subprocess.Popen(
        [sys.executable, "-m", "huddle", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **settings.env(), "HUDDLE_NOTIFY": "dbus"},
        text=True,
        start_new_session=True,
        preexec_fn=_as_in_a_terminal,
    )


def test_huddle_watch_notify(bus, live_claude, tmp_path):
    """The light command for people who keep no page open; Ctrl-C exits 0."""
    settings, _sid, claude = live_claude
    p = huddle_child(settings, "watch", "--notify")
    try:
        assert p.stderr is not None
        line = ""
        while "watching" not in line:  # (notes about folders that are not there come first)
            line = p.stderr.readline()
            assert line, "huddle watch ended"
        assert "watching 1 sessions" in line and "notifications through dbus" in line, line
        claude.set("waiting", "permission prompt")
        (first,) = bus.wait("Notify", 1)
        assert "permission prompt: Bash" in first["body"]
        claude.set("busy")
        (closed,) = bus.wait("CloseNotification", 1)
        assert closed["id"] == first["id"]
    finally:
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=20)
    assert p.returncode == 0, err
    assert "needs you" in out and "permission prompt" in out  # one line per change of state
    assert "Traceback" not in err


def test_huddle_serve_notifies_and_ctrl_c_exits_0(bus, live_claude):
    settings, _sid, claude = live_claude
    p = huddle_child(settings, "--port", "0", "--no-open")  # a bare huddle takes serve's options
    try:
        assert p.stdout is not None
        line = p.stdout.readline()
        assert "serving your sessions at http://127.0.0.1:" in line
        url = line.split(" at ")[1].strip()

        def up() -> bool:  # answering: the watcher has read the board (as it stood: not news)
            try:
                rows = httpx.get(url + "api/sessions", timeout=5).json()["sessions"]
                return bool(rows) and rows[0]["state"] == "working"  # (none while its first read runs)
            except httpx.HTTPError:
                return False

        wait_until(up, time.time() + 120, "the server")
        claude.set("waiting", "permission prompt")
        (first,) = bus.wait("Notify", 1)
        assert first["summary"].endswith("needs you")
    finally:
        p.send_signal(signal.SIGINT)
        _out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    assert "Traceback" not in err and "Aborted" not in err


def test_no_bus_is_one_line_not_a_failure(monkeypatch, tmp_path):
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={tmp_path}/no-bus-here")
    with pytest.raises(desktop.Unavailable, match="no D-Bus session bus"):
        desktop.DBus()


def test_notice_says_which_agent_of_several():
    waiting = row(
        id="s1",
        source="codex",
        title="Port the parser",
        project="shop",
        state="needs_you",
        waiting_for="approve command: rm -rf build",
        agents=[
            {"id": "s1", "parent": None, "name": "main", "state": "waiting"},
            {"id": "a2", "parent": "s1", "name": "Euclid", "label": "Euclid (explorer)", "state": "needs_you"},
        ],
    )
    summary, body = notice(waiting)
    assert summary == "Port the parser needs you"
    assert body.splitlines() == ["Euclid (explorer) (Codex · shop)", "approve command: rm -rf build"]


def test_huddle_demo_rings_its_needs_you_moment_then_answered(bus, tmp_path):
    """`huddle demo`, the command the README names: the lead asks to push (38 s into the
    story, 9.5 s at speed 4), a desktop notification says so as a bare `huddle` would for
    your own sessions, and it is closed when the push is allowed (answered)."""
    env = {"HUDDLE_HOME": str(tmp_path / "hh")}
    p = subprocess.Popen(
        [sys.executable, "-m", "huddle", "demo", "--no-open", "--port", "0", "--speed", "4"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **env},
        text=True,
        start_new_session=True,
        preexec_fn=_as_in_a_terminal,
    )
    try:
        (note,) = bus.wait("Notify", 1, within=60)
        assert note["summary"].endswith("needs you") and "dark mode" in note["summary"].lower()
        assert "git push" in note["body"] and "The lead" in note["body"]
        (closed,) = bus.wait("CloseNotification", 1, within=60)
        assert closed["id"] == note["id"]  # answered: its own notification closed
    finally:
        p.send_signal(signal.SIGINT)
        _out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    assert "Traceback" not in err


HOSTILE_BODY = 'The lead\n<b>run</b> <a href="https://evil.example/">this</a> <img src="file:///etc/passwd"/> & \x1b[2J'


@pytest.mark.parametrize("name", ["dbus", "notify-send", "desktop-notifier"])
def test_a_body_is_text_never_markup(bus, name):
    """The Notifications spec lets a server render <b>, <a href> and <img> in a body: what a
    session's file says must be shown as written, so it is escaped (and its control
    characters shown as escapes)."""
    if name == "desktop-notifier":
        pytest.importorskip("desktop_notifier")
    backend = desktop.pick(name)
    try:
        backend.show("a <i>title</i> \x1b]52;c;eA==\x07 needs you", HOSTILE_BODY, None)
        (got,) = bus.wait("Notify", 1)
    finally:
        if hasattr(backend, "stop"):
            backend.stop()
    body = got["body"]
    assert "<b>" not in body and "<a " not in body and "<img" not in body
    assert "&lt;b&gt;run&lt;/b&gt;" in body and "&amp;" in body
    assert "\x1b" not in body and "\x1b" not in got["summary"] and "\\x1b[2J" in body
    assert "The lead\n" in body  # lines stay lines
