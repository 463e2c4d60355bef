"""`huddle serve` opens the board in a graphical browser, detached from its terminal,
and never starts a console browser (lynx, w3m, www-browser) there, which would take
the terminal over. The openers here are real programs on PATH that record how they
were started; the server is a real `huddle` process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from live_agents import wait_until

RECORDER = """#!/bin/sh
PATH=/usr/bin:/bin
echo "$(basename "$0") pid=$$ sid=$(cut -d' ' -f6 /proc/$$/stat) $*" >> {record}
"""


def openers(tmp_path: Path, *names: str) -> tuple[Path, Path]:
    bin_dir, record = tmp_path / "bin", tmp_path / "opened.txt"
    bin_dir.mkdir()
    for name in names:
        p = bin_dir / name
        p.write_text(RECORDER.format(record=record))
        p.chmod(0o755)
    return bin_dir, record


def serve_and_open(bin_dir: Path, display: str | None) -> tuple[subprocess.Popen, str]:
    """A bare `huddle` (serve, opening the page) with only `bin_dir` on PATH; its first
    lines, up to the address."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER")}
    env["PATH"] = str(bin_dir)
    if display:
        env["DISPLAY"] = display
    p = subprocess.Popen(
        [sys.executable, "-m", "huddle", "--port", "0", "--no-notify"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    assert p.stdout is not None
    said = ""
    while " at http" not in said:
        line = p.stdout.readline()
        assert line, "huddle ended"
        said += line
    return p, said


def said_no_browser(p: subprocess.Popen) -> str:
    """The server's output until it says it opened nothing (it tries 0.6 s after start),
    then the rest once stopped with Ctrl-C (exit 0)."""
    assert p.stdout is not None
    out = ""
    try:
        while "no graphical browser" not in out:
            line = p.stdout.readline()
            if not line:
                break
            out += line
    finally:
        out += stop(p)
    return out


def stop(p: subprocess.Popen) -> str:
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    return out


def test_without_a_graphical_session_no_browser_is_started(tmp_path):
    bin_dir, record = openers(tmp_path, "www-browser", "lynx", "w3m", "xdg-open")
    p, _ = serve_and_open(bin_dir, display=None)
    assert "no graphical browser to open here" in said_no_browser(p)
    assert not record.exists()  # not even xdg-open: with no display it would pick a console browser


def test_a_console_browser_is_never_started_in_the_terminal(tmp_path):
    bin_dir, record = openers(tmp_path, "www-browser", "lynx", "w3m")  # all Python's webbrowser would find
    p, _ = serve_and_open(bin_dir, display=":99")
    assert "no graphical browser to open here" in said_no_browser(p)
    assert not record.exists()


def test_a_graphical_opener_gets_the_page_in_its_own_session(tmp_path):
    bin_dir, record = openers(tmp_path, "xdg-open", "www-browser")
    p, said = serve_and_open(bin_dir, display=":99")
    try:
        url = said.split(" at ")[1].split()[0]
        line = wait_until(lambda: record.exists() and record.read_text(), time.time() + 120, "xdg-open")
    finally:
        stop(p)
    (only,) = line.splitlines()
    name, pid, sid, opened = only.split()
    assert name == "xdg-open" and opened == url
    assert pid.split("=")[1] == sid.split("=")[1]  # a session of its own: not in the server's terminal
