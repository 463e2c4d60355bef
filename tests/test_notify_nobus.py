"""No desktop to notify: no traceback ever reaches the terminal. With no D-Bus session bus
(none set, or one named that is not there) the backends that need one are passed over,
and a backend that fails at its first notification is said once, in one line, that
notifications are off; the board goes on. Real processes, a real live Claude session."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from huddle.live import desktop
from live_agents import ClaudeProcess, claude_live, wait_until
from said import row

NO_DESKTOP = ("DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "WAYLAND_DISPLAY", "HUDDLE_NOTIFY")


def _as_in_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # (a suite run in the background ignores it)


@pytest.mark.parametrize("bus", [None, "unix:path=/nonexistent/huddle-no-bus"], ids=["no-bus", "a-bus-not-there"])
def test_watch_notify_with_no_bus_says_it_once_and_never_a_traceback(tmp_path, bus):
    settings, sid, config = claude_live(tmp_path)
    claude = ClaudeProcess(config, sid, "busy")
    env = {k: v for k, v in os.environ.items() if k not in NO_DESKTOP}
    env.update(settings.env())
    if bus:
        env["DBUS_SESSION_BUS_ADDRESS"] = bus
    p = subprocess.Popen(
        [sys.executable, "-m", "huddle", "watch", "--notify"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
        start_new_session=True,
        preexec_fn=_as_in_a_terminal,
    )
    try:
        assert p.stderr is not None and p.stdout is not None
        err = []
        while not any("watching" in x for x in err):
            line = p.stderr.readline()
            assert line, "huddle watch ended: " + "".join(err)
            err.append(line)
        for _ in range(2):  # two waits, each answered: the why is said once for both
            claude.set("waiting", "permission prompt")
            wait_until(lambda: "needs you" in p.stdout.readline(), time.time() + 120, "the wait")
            claude.set("busy")
            wait_until(lambda: "working" in p.stdout.readline(), time.time() + 120, "the answer")
    finally:
        p.send_signal(signal.SIGINT)
        _out, rest = p.communicate(timeout=30)
        claude.stop()
    err_text = "".join(err) + rest
    assert p.returncode == 0, err_text
    assert "Traceback" not in err_text and "Notification failed" not in err_text, err_text
    said = [x for x in err_text.splitlines() if "notification" in x.lower()]
    assert len(said) == 1, said  # one line: off (at the start), or which backend it goes through
    assert "off" in said[0] or "notifications through notify-send" in said[0], said


def test_with_no_bus_the_backends_that_need_one_are_passed_over(monkeypatch):
    for k in NO_DESKTOP:
        monkeypatch.delenv(k, raising=False)
    for name in ("desktop-notifier", "dbus"):
        with pytest.raises(desktop.Unavailable, match="no D-Bus session bus"):
            desktop.pick(name)
    try:
        chosen = desktop.pick()
    except desktop.Unavailable as exc:
        assert "\n" not in str(exc)
    else:
        assert chosen.name == "notify-send"  # the next backend, where one is there


def test_a_backend_failing_is_said_once(monkeypatch):
    """notify-send with nothing to talk to: it fails, said once; the next waits fail quietly."""
    if not shutil.which("notify-send"):
        pytest.skip("notify-send is not installed (Debian: libnotify-bin)")
    for k in NO_DESKTOP:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("DISPLAY", ":987")  # an X display that is not there: libnotify cannot reach a bus
    from huddle.live.notify import Notifier

    said: list[str] = []
    n = Notifier(desktop.NotifySend(), None, on_error=said.append, since=0)
    for k in range(3):
        n.rows([row(id=f"s{k}", source="claude", title="t", state="needs_you", state_since=f"2026-12-0{k + 1}")], [])
    assert len(said) == 1 and "\n" not in said[0] and "notify-send" in said[0], said
