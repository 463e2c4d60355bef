"""The board as a table in the terminal (`huddle status`, `huddle status --watch`)."""

from __future__ import annotations

import time
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from huddle.io.visible import visible
from huddle.model.rows import Cost, Row
from huddle.model.times import parse_time
from huddle.views.numbers import short_tokens

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


def money(cost: Cost) -> str:
    if cost.usd is None:
        return "?" if cost.unpriced else ""
    return f"${cost.usd:.2f}" + ("+" if cost.unpriced else "")


def short_ids(rows: list[Row], least: int = 8) -> dict[str, str]:
    """The shortest start of each id (at least `least` characters) that no other row
    shares: what the id column shows and what every command accepts. An id's start is
    shared exactly as far as it runs alike with its neighbours in sorted order."""
    ids = sorted({r.id for r in rows})
    out = {}
    for k, i in enumerate(ids):
        alike = max((_common(i, ids[j]) for j in (k - 1, k + 1) if 0 <= j < len(ids)), default=-1)
        out[i] = i[: min(len(i), max(min(least, len(i)), alike + 1))]
    return out


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _cut(text: str, width: int) -> str:
    """`text` in at most `width` cells, an ellipsis where it was cut."""
    if cell_len(text) <= width:
        return text
    while text and cell_len(text) > width - 1:
        text = text[:-1]
    return text + "…"


def _what(s: Row) -> str:
    if s.error:
        return "error: " + visible(s.error)
    what = s.waiting_for or s.doing or ""
    if s.background:
        what = (what + " · " if what else "") + "; ".join(s.background)
    return visible(" ".join(what.split()))


def table(data: dict, now: float | None = None, width: int = 120, ids: dict[str, str] | None = None) -> Table:
    """The board in `width` columns: id, state, for how long, agent, title, project,
    tokens, cost at 120 and more (what it waits on or does beside the title, in its own
    column from 140); at 80 the project goes and the title takes what is left. `ids`:
    the short ids, worked out over every session (`short_ids` of the whole board), not
    only the rows shown, so each one opens its own session."""
    rows: list[Row] = data.get("sessions", [])
    sid = ids if ids is not None else short_ids(rows)
    cells: list[dict[str, Any]] = []
    for s in rows:
        state = s.state
        subs = sum(1 for a in s.agents if a.parent and not a.quiet)
        cells.append(
            {
                "id": visible(sid.get(s.id, "")),
                "state": (LABEL.get(state, state), STYLE.get(state, "")),
                "for": ago(s.state_since or s.updated_at, now),
                "agent": visible(s.source) + (f" +{subs}" if subs else ""),
                "title": visible(" ".join((s.title or s.id).split())),
                "project": visible(s.project),
                "tokens": "?" if s.usage_unknown else short_tokens(s.tokens),
                "cost": "?" if s.usage_unknown else money(s.cost),
                "what": _what(s),
                "error": bool(s.error),
            }
        )
    fixed = ["id", "state", "for", "agent", "tokens", "cost"]
    head = {"id": "id", "state": "state", "for": "for", "agent": "agent", "tokens": "tokens", "cost": "cost"}
    span = {k: max([cell_len(head[k])] + [cell_len(c[k][0] if k == "state" else c[k]) for c in cells]) for k in fixed}
    gap = 2
    free = width - sum(span.values()) - gap * len(fixed)  # for title, project and what
    show_project = width >= 100 and free >= 40
    project_w = min(16, max([7] + [len(c["project"]) for c in cells])) if show_project else 0
    free -= project_w + gap if show_project else 0
    show_what = width >= 140 and free >= 70
    what_w = min(60, max(free // 2, 20)) if show_what else 0
    free -= what_w + gap if show_what else 0
    title_w = max(10, free)

    t = Table(box=None, pad_edge=False, expand=False, header_style="bold", padding=(0, 1))
    t.add_column("id", no_wrap=True, style="dim", width=span["id"])
    t.add_column("state", no_wrap=True, width=span["state"])
    t.add_column("for", justify="right", no_wrap=True, width=span["for"])
    t.add_column("agent", no_wrap=True, width=span["agent"])
    t.add_column("title", width=title_w)  # each cell cuts itself (a why may take a second line)
    if show_project:
        t.add_column("project", overflow="ellipsis", no_wrap=True, width=project_w)
    t.add_column("tokens", justify="right", no_wrap=True, width=span["tokens"])
    t.add_column("cost", justify="right", no_wrap=True, width=span["cost"])
    if show_what:
        t.add_column("what", overflow="ellipsis", no_wrap=True, width=what_w)
    for c in cells:
        title = Text(_cut(c["title"], title_w))
        if not show_what and c["what"]:
            if c["error"] or c["state"][0] in (LABEL["needs_you"], LABEL["waiting"]):
                # what it waits on matters more than the title: a line of its own
                title.append("\n" + _cut("↳ " + c["what"], title_w), style="red" if c["error"] else "bold")
            elif cell_len(title.plain) + 4 < title_w:  # what it does, beside the title while there is room
                title.append(_cut("  " + c["what"], title_w - cell_len(title.plain)), style="dim")
        row = [Text(c["id"]), Text(c["state"][0], style=c["state"][1]), Text(c["for"]), Text(c["agent"]), title]
        if show_project:
            row.append(Text(c["project"]))
        row += [Text(c["tokens"]), Text(c["cost"])]
        if show_what:
            row.append(Text(c["what"], style="red" if c["error"] else ""))
        t.add_row(*row)
    return t


def shown_line(shown: int, total: int, window: str | None, pick, since: str | None, archived: int = 0) -> str | None:
    """What the table leaves out, and how to see it."""
    if shown == total:
        return None
    why = []
    if window and since is None:
        why.append(f"live, or moved in the last {window}")
    elif since:
        why.append(f"live, or moved since {since}")
    if pick.states:
        why.append("state " + ", ".join(sorted(pick.states)))
    if pick.project:
        why.append(f"project ~ {pick.project}")
    if pick.hide_archived and archived:
        why.append(f"{archived} archived hidden")
    return f"{shown} of {total} sessions ({'; '.join(why)}); --all for every one"


def print_table(
    data: dict, console: Console | None = None, footer: str | None = None, ids: dict[str, str] | None = None
) -> None:
    console = console or Console()
    if not data.get("sessions"):
        console.print(Text(footer or "No agent sessions found.", style="dim"), soft_wrap=True)
        return
    console.print(table(data, width=console.width, ids=ids))
    if footer:
        console.print(Text(footer, style="dim"), soft_wrap=True)


def shown_board(board: dict, pick=None) -> tuple[dict, dict[str, str]]:
    """The rows `pick` keeps, and the short ids of every row (unique among them all)."""
    return (pick.apply(board) if pick else board), short_ids(board.get("sessions", []))


def watch_table(h, interval: float = 1.0, pick=None) -> None:
    """Keep the board live in the terminal until Ctrl-C (or SIGTERM). The rows come from
    the same watcher as the server's, so a change is on screen as soon as it is on the
    board (the table is drawn again at least every `interval` for the "for" column).
    When the output is not a terminal, print the table again each time it changes."""
    import signal
    import threading

    from rich.live import Live

    from huddle.live.boardfile import BoardFile
    from huddle.live.watcher import Watcher

    def stop(*_):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    moved = threading.Event()
    w = Watcher(h, lambda msgs: moved.set())
    w.listen(BoardFile(w))  # the status line agrees with this table
    console = Console()
    w.start()
    try:
        if not console.is_terminal:
            last = None
            while True:
                data, ids = shown_board(w.board(), pick)
                shown = [(s.id, s.state, s.title, s.tokens) for s in data["sessions"]]
                if shown != last:
                    print_table(data, console, ids=ids)
                    console.file.flush()
                    last = shown
                moved.wait(interval)
                moved.clear()
        data, ids = shown_board(w.board(), pick)
        with Live(table(data, width=console.width, ids=ids), console=console, auto_refresh=False, screen=False) as live:
            while True:
                moved.wait(interval)
                moved.clear()
                data, ids = shown_board(w.board(), pick)
                live.update(table(data, width=console.width, ids=ids), refresh=True)
    except KeyboardInterrupt:
        pass
    finally:
        w.stop()
