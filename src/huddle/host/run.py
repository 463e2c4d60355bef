"""`huddle run`: host a command under huddle's own data folder, show what it does
in one live line until it exits, then a short summary.

The host is a process of its own (`huddle host`, in its own session), so the log
and the agent do not depend on this terminal; this is only a client that
attaches, feeds the live line and, on Ctrl-C, asks the host to stop.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from huddle.errors import HostingError
from huddle.io import private
from huddle.sources import Settings

from .client import Connection, attach, connect, running
from .liveline import LiveLine, is_partial
from .log import last_seq, raw_json
from .paths import HOST_ERR, TRACE_NAME, check_name, log_path, new_run_id, runs_dir

TICK = 0.1  # seconds between spinner frames while the agent is silent


class RunError(HostingError):
    """`huddle run` cannot go on; the message says why."""


def run_dir(name: str | None, settings: Settings | None = None) -> tuple[str, str]:
    settings = settings or Settings.from_env()
    if name:
        why = check_name(name)
        if why:
            raise RunError(why)
    else:
        name = new_run_id()
    d = os.path.join(runs_dir(settings.huddle_home), name)
    real = os.path.realpath(d)
    for root in settings.folders.values():
        r = os.path.realpath(root)
        if real == r or real.startswith(r + os.sep):
            raise RunError(f"{d} is inside an agent's folder ({root}); set HUDDLE_HOME elsewhere")
    return d, name


def run_hosted(
    command: list[str],
    name: str | None = None,
    grace: float = 3.0,
    out=None,
    protocol: str | None = None,
    prompt: str = "",
) -> int:
    out = out or sys.stdout
    given_name = name
    d, name = run_dir(name)
    try:
        private.folder(d)
    except OSError as exc:
        raise RunError(f"cannot create {d}: {exc.strerror}") from None
    if running(d):
        raise RunError(f"the run {name!r} is still going: huddle attach {d}")
    start = last_seq(log_path(d)) + 1
    err_path = os.path.join(d, HOST_ERR)
    err_at = os.path.getsize(err_path) if os.path.exists(err_path) else 0
    with private.opened(err_path, "ab") as err:
        host = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "huddle",
                "host",
                "--dir",
                d,
                "--grace",
                str(grace),
                *(["--name", given_name] if given_name else []),
                *(["--protocol", protocol] if protocol else []),
                *(["--prompt", prompt] if prompt else []),
                "--",
                *command,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
    while not running(d) and host.poll() is None:
        time.sleep(0.02)
    stops = _Stops(d)
    old = {s: signal.signal(s, stops.ask) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        live, exited, began = _follow(d, start, stops, out)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        stops.close()
    host.wait()
    _host_said(err_path, err_at)
    _summary(out, d, live, exited, time.monotonic() - began)
    if exited is None:
        return host.returncode if host.returncode else 1
    return int(exited.get("status") or 0)


class _Stops:
    """Ctrl-C asks the host to stop the agent (a second one: without the waits)."""

    def __init__(self, d: str):
        self.d = d
        self.asked = 0
        self.sent = 0
        self.conns: list[Connection] = []

    def ask(self, signum, frame) -> None:
        self.asked += 1

    def send(self) -> None:
        while self.sent < min(self.asked, 2):
            self.sent += 1
            c = connect(self.d)
            if c is not None:
                c.send({"op": "stop", "now": self.sent > 1})
                self.conns.append(c)  # the reply is not needed: the log says when it exited

    def close(self) -> None:
        for c in self.conns:
            c.close()


def _follow(d: str, start: int, stops: _Stops, out) -> tuple[LiveLine, dict | None, float]:
    live = LiveLine()
    exited = None
    began = time.monotonic()
    view = _view(out)
    with private.opened(os.path.join(d, TRACE_NAME), "ab") as trace:
        try:
            for line in attach(d, start, tick=TICK):
                stops.send()
                if line is not None:
                    entry = json.loads(line)
                    kind = entry.get("kind")
                    if kind == "started":
                        live.pid = entry.get("pid")
                        began = time.monotonic()
                    elif kind == "stdout":
                        raw = raw_json(line) if "json" in entry else None
                        if raw is None:  # text, or an entry not laid out as the host writes it
                            raw = (
                                json.dumps(entry["json"]) if "json" in entry else str(entry.get("text", ""))
                            ).encode()
                        if not is_partial(raw):
                            trace.write(raw + b"\n")  # before it is parsed
                        live.feed(raw)
                    elif kind == "stderr":
                        live.feed_plain(str(entry.get("text", "")))
                    elif kind == "exited":
                        exited = entry
                        if live.state in ("starting", "working"):
                            live.state = "stopped" if entry.get("stopped") else "exited"
                view.show(live, stops.asked)
        finally:
            view.close()
    return live, exited, began


class _PlainView:
    """Not a terminal: a plain line rewritten with \\r, a few times a second."""

    def __init__(self, out):
        self.out = out
        self.last = ""
        self.at = 0.0
        self.width = 0

    def show(self, live: LiveLine, stopping: int) -> None:
        text = ("stopping · " if stopping else "") + live.render()
        now = time.monotonic()
        if text == self.last or now - self.at < 0.2:
            return
        self.last, self.at = text, now
        self.out.write("\r" + text.ljust(self.width))
        self.width = len(text)
        self.out.flush()

    def close(self) -> None:
        if self.width:
            self.out.write("\r" + " " * self.width + "\r")
            self.out.flush()


class _RichView:
    def __init__(self, out):
        from rich.console import Console
        from rich.live import Live
        from rich.spinner import Spinner

        self.spinner = Spinner("dots", text="starting")
        self.live = Live(self.spinner, console=Console(file=out), refresh_per_second=10, transient=True)
        self.live.start()

    def show(self, live: LiveLine, stopping: int) -> None:
        self.spinner.update(text=("stopping · " if stopping else "") + live.render())

    def close(self) -> None:
        self.live.stop()


def _view(out):
    return _RichView(out) if getattr(out, "isatty", lambda: False)() else _PlainView(out)


def _host_said(path: str, offset: int) -> None:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            said = f.read(8192).decode("utf-8", "replace").strip()
    except OSError:
        return
    if said:
        print(said, file=sys.stderr)


def _summary(out, d: str, live: LiveLine, exited: dict | None, seconds: float) -> None:
    reason = exited.get("reason", "exited") if exited else "the host ended without an exit entry"
    parts = [reason, f"{seconds:.1f} s", f"{live.tool_calls} tool call{'s' if live.tool_calls != 1 else ''}"]
    if live.subagents:
        parts.append(f"{live.subagents} sub-agent{'s' if live.subagents != 1 else ''}")
    tokens = f"{live.up:,} up / {live.down:,} down tokens"
    if live.unsplit:
        tokens += f" (of which {live.unsplit:,} could not be split)"
    parts.append(tokens)
    lines = [" · ".join(parts)]
    if live.result:
        text = live.result.strip()
        lines.append("result: " + (text if len(text) <= 600 else text[:599] + "…"))
    failed = (exited is None or exited.get("status")) or live.error
    if failed:
        why = live.explanation()
        if why:
            lines.append("why: " + why.replace("\n", "\n     "))
    lines.append(f"log: {log_path(d)}")
    out.write("\n".join(lines) + "\n")
    out.flush()
