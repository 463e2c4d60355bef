"""The board as a table in the terminal (`huddle status`, `huddle status --watch`)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any, NamedTuple

from rich.cells import cell_len, set_cell_size
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


def _cells_of(text: str) -> int:
    """The cells `text` takes (printable ASCII, most of a board: one a character)."""
    return len(text) if text.isascii() and text.isprintable() else cell_len(text)


def _cut(text: str, width: int) -> str:
    """`text` in at most `width` cells, an ellipsis where it was cut: its longest start
    that leaves the ellipsis its cell (found by halves: a title of a long first prompt
    cut a character at a time measured it hundreds of times)."""
    if cell_len(text) <= width:
        return text
    lo, hi = 0, len(text)  # text[:lo] fits; text[:hi] does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if cell_len(text[:mid]) <= width - 1 else (lo, mid)
    return text[:lo] + "…"


def _what(s: Row) -> str:
    if s.error:
        return "error: " + visible(s.error)
    what = s.waiting_for or s.doing or ""
    if s.background:
        what = (what + " · " if what else "") + "; ".join(s.background)
    return visible(" ".join(what.split()))


class Column(NamedTuple):
    key: str
    width: int
    right: bool = False  # justified right
    style: str = ""  # every cell's


GAP = 2  # cells between columns (rich's padding (0, 1), none at the edges)


def fits(columns: list[Column], width: int) -> bool:
    """Whether these columns, and the gaps between them, fit `width` cells."""
    return sum(c.width for c in columns) + GAP * (len(columns) - 1) <= width


def table(data: dict, now: float | None = None, width: int = 120, ids: dict[str, str] | None = None) -> Drawn | Table:
    """The board in `width` columns: id, state, for how long, agent, title, project,
    tokens, cost at 120 and more (what it waits on or does beside the title, in its own
    column from 140); at 80 the project goes and the title takes what is left. `ids`:
    the short ids, worked out over every session (`short_ids` of the whole board), not
    only the rows shown, so each one opens its own session.

    Laid out here as lines of padded cells (`Drawn`): rich's Table measured and wrapped
    every cell, 0.4 ms a row, so `status --all` over a two-year history (2,900 rows)
    took a second to draw. Where the columns cannot fit (a terminal under ~70
    columns), rich's Table draws them, wrapping cells (`_wrapped`)."""
    cells = _cells(data, now, ids)
    columns = _columns(cells, width)
    if not fits(columns, width):
        return _wrapped(columns, cells)
    return Drawn(columns, (_row(columns, c) for c in cells))


def _cells(data: dict, now: float | None, ids: dict[str, str] | None) -> list[dict[str, Any]]:
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
    return cells


def _columns(cells: list[dict[str, Any]], width: int) -> list[Column]:
    fixed = ["id", "state", "for", "agent", "tokens", "cost"]
    span = {k: max([len(k)] + [_cells_of(c[k][0] if k == "state" else c[k]) for c in cells]) for k in fixed}
    free = width - sum(span.values()) - GAP * len(fixed)  # for title, project and what
    show_project = width >= 100 and free >= 40
    project_w = min(16, max([7] + [len(c["project"]) for c in cells])) if show_project else 0
    free -= project_w + GAP if show_project else 0
    show_what = width >= 140 and free >= 70
    what_w = min(60, max(free // 2, 20)) if show_what else 0
    free -= what_w + GAP if show_what else 0
    out = [
        Column("id", span["id"], style="dim"),
        Column("state", span["state"]),
        Column("for", span["for"], right=True),
        Column("agent", span["agent"]),
        Column("title", max(10, free)),  # each cell cuts itself (a why may take a second line)
    ]
    if show_project:
        out.append(Column("project", project_w))
    out += [Column("tokens", span["tokens"], right=True), Column("cost", span["cost"], right=True)]
    if show_what:
        out.append(Column("what", what_w))
    return out


Cell = list[tuple[str, str]]  # a cell's text in pieces, each with its style ("": none)


def _row(columns: list[Column], c: dict[str, Any]) -> list[Cell]:
    """One session's cells; the title's may hold a second line (what it waits on)."""
    title_w = next(col.width for col in columns if col.key == "title")
    show_what = columns[-1].key == "what"
    title: Cell = [(_cut(c["title"], title_w), "")]
    if not show_what and c["what"]:
        if c["error"] or c["state"][0] in (LABEL["needs_you"], LABEL["waiting"]):
            # what it waits on matters more than the title: a line of its own
            title.append(("\n" + _cut("↳ " + c["what"], title_w), "red" if c["error"] else "bold"))
        elif cell_len(title[0][0]) + 4 < title_w:  # what it does, beside the title while there is room
            title.append((_cut("  " + c["what"], title_w - cell_len(title[0][0])), "dim"))
    special: dict[str, Cell] = {
        "state": [c["state"]],
        "title": title,
        "what": [(c["what"], "red" if c["error"] else "")],
    }
    return [special.get(col.key) or [(c[col.key], "")] for col in columns]


def _fit(cell: Cell, col: Column, style: str) -> Cell:
    """A one-line cell in its column's width, padded, the column's `style` under its
    own: cut with an ellipsis where it runs over (as rich's overflow "ellipsis": the
    project, what it does; the rest fit)."""
    n = _cells_of(cell[0][0]) if len(cell) == 1 else sum(_cells_of(text) for text, _ in cell)
    if n > col.width:  # (a cut cell is one piece)
        text = set_cell_size("".join(text for text, _ in cell), col.width - 1) + "…"
        cell, n = [(text, cell[0][1])], cell_len(text)
    if style:
        cell = [(text, f"{style} {own}" if own else style) for text, own in cell]
    if n == col.width:
        return cell
    pad = (" " * (col.width - n), "")
    return [pad, *cell] if col.right else [*cell, pad]


class Drawn:
    """A table as lines of padded cells, drawn as rich segments: what rich's Table draws
    for columns that fit (test_cli_table compares the two), without its measuring and
    wrapping of every cell. `rows`: each a cell per column; a cell may hold a second
    line (a piece that starts with a newline), the row's other cells blank on it."""

    def __init__(self, columns: list[Column], rows: Iterable[list[Cell]]) -> None:
        self.lines: list[Cell] = [self._line(columns, [[(col.key, "bold")] for col in columns], head=True)]
        for row in rows:
            split = [_split(cell) for cell in row]
            self.lines.append(self._line(columns, [first for first, _ in split]))
            if any(more for _, more in split):
                self.lines.append(self._line(columns, [more for _, more in split]))

    @staticmethod
    def _line(columns: list[Column], row: list[Cell], head: bool = False) -> Cell:
        line: Cell = []
        texts: list[str] = []  # the run of one style being put together (one segment each)
        now = ""
        for i, (col, cell) in enumerate(zip(columns, row, strict=True)):
            fitted = _fit(cell, col, "" if head else col.style)  # (a column's style is its cells')
            for text, style in [(" " * GAP, ""), *fitted] if i else fitted:
                if style != now:
                    if texts:
                        line.append(("".join(texts), now))
                    texts, now = [], style
                texts.append(text)
        if texts:
            line.append(("".join(texts), now))
        return line

    def __rich_console__(self, console: Console, options: Any) -> Any:
        from rich.segment import Segment

        styles: dict[str, Any] = {"": None}
        for line in self.lines:
            for text, style in line:
                if style not in styles:
                    styles[style] = console.get_style(style)
                yield Segment(text, styles[style])
            yield Segment.line()


def _split(cell: Cell) -> tuple[Cell, Cell]:
    """A cell's first line and what follows its newline (a piece starts it)."""
    for i, (text, style) in enumerate(cell):
        if text.startswith("\n"):
            return cell[:i], [(text[1:], style), *cell[i + 1 :]]
    return cell, []


def _wrapped(columns: list[Column], cells: list[dict[str, Any]]) -> Table:
    """The table rich lays out, wrapping cells where the columns do not fit the width."""
    t = Table(box=None, pad_edge=False, expand=False, header_style="bold", padding=(0, 1))
    for col in columns:
        t.add_column(
            col.key,
            width=col.width,
            justify="right" if col.right else "left",
            style=col.style or None,
            no_wrap=col.key != "title",
        )
    for c in cells:
        t.add_row(*(Text.assemble(*cell) for cell in _row(columns, c)))
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
