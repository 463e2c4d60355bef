"""The board as a table in the terminal (`huddle status`, `huddle status --watch`)."""

from __future__ import annotations

import time

from rich.console import Console
from rich.table import Table
from rich.text import Text

from huddle.model.session import parse_time

STYLE = {
    "needs_you": "bold red",
    "waiting": "magenta",
    "working": "green",
    "your_turn": "yellow",
    "idle": "dim",
    "ended": "dim",
}
LABEL = {
    "needs_you": "✋ needs you",
    "waiting": "⏳ waiting",
    "working": "⚙ working",
    "your_turn": "↩ your turn",
    "idle": "· idle",
    "ended": "■ ended",
}


def ago(iso: str | None, now: float | None = None) -> str:
    t = parse_time(iso)
    if t is None:
        return ""
    s = max(0, int((now or time.time()) - t))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d"


def money(cost: dict | None) -> str:
    if not cost or cost.get("usd") is None:
        return "?" if cost and cost.get("unpriced") else ""
    return f"${cost['usd']:.2f}" + ("+" if cost.get("unpriced") else "")


def table(data: dict, now: float | None = None) -> Table:
    t = Table(box=None, pad_edge=False, expand=False, header_style="bold")
    t.add_column("state", no_wrap=True)
    t.add_column("for", justify="right", no_wrap=True)
    t.add_column("agent", no_wrap=True)
    t.add_column("title", overflow="ellipsis", no_wrap=True, max_width=48)
    t.add_column("project", overflow="ellipsis", no_wrap=True, max_width=18)
    t.add_column("subs", justify="right")
    t.add_column("tokens", justify="right", no_wrap=True)
    t.add_column("cost", justify="right", no_wrap=True)
    t.add_column("what", overflow="ellipsis", no_wrap=True, max_width=50)
    for s in data.get("sessions", []):
        state = s.get("state") or ""
        what = s.get("waiting_for") or s.get("doing") or ""
        if s.get("background"):
            what = (what + " · " if what else "") + "; ".join(s["background"])
        if s.get("error"):
            what = "error: " + s["error"]
        subs = sum(1 for a in s.get("agents", []) if a.get("parent") and not a.get("quiet"))
        t.add_row(
            Text(LABEL.get(state, state), style=STYLE.get(state, "")),
            Text(ago(s.get("state_since") or s.get("updated_at"), now)),
            Text(s.get("source", "")),
            Text(s.get("title") or s.get("id", "")),
            Text(s.get("project", "")),
            Text(str(subs) if subs else ""),
            Text(f"{s.get('tokens', 0):,}"),
            Text(money(s.get("cost"))),
            Text(what, style="red" if s.get("error") else ""),
        )
    return t


def print_table(data: dict, console: Console | None = None) -> None:
    console = console or Console()
    if not data.get("sessions"):
        console.print(Text("No agent sessions found.", style="dim"))
        return
    console.print(table(data))


def watch_table(h, interval: float = 1.0) -> None:
    """Keep the board live in the terminal until Ctrl-C (or SIGTERM). The rows come from
    the same watcher as the server's, so a change is on screen as soon as it is on the
    board (the table is drawn again at least every `interval` for the "for" column).
    When the output is not a terminal, print the table again each time it changes."""
    import signal
    import threading

    from rich.live import Live

    from huddle.live.watcher import Watcher

    def stop(*_):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    moved = threading.Event()
    w = Watcher(h, lambda msgs: moved.set())
    console = Console()
    w.start()
    try:
        if not console.is_terminal:
            last = None
            while True:
                data = w.board()
                shown = [(s.get("id"), s.get("state"), s.get("title"), s.get("tokens")) for s in data["sessions"]]
                if shown != last:
                    print_table(data, console)
                    console.file.flush()
                    last = shown
                moved.wait(interval)
                moved.clear()
        with Live(table(w.board()), console=console, auto_refresh=False, screen=False) as live:
            while True:
                moved.wait(interval)
                moved.clear()
                live.update(table(w.board()), refresh=True)
    except KeyboardInterrupt:
        pass
    finally:
        w.stop()
