"""Keeps the status line's board file (`$HUDDLE_HOME/cache/board.bin`) level with a
running watcher (`huddle serve`, `huddle watch`).

The status line reads that file and overlays only Claude Code's registry; a Codex or
Vibe lock taken, a wait read from a transcript, reached it only when its own refresher
had read every session again (seconds on a big history). A watcher already holds every
row: it writes them out when a state moves, and now and then otherwise, so the status
line agrees with the board within the watcher's own delay.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

FRESH_EVERY = 5.0  # seconds: rewrite at least this often while rows move (tokens, titles)


def _said(row: dict) -> tuple:
    """What the status line shows of a row: a change here is written at once."""
    return (row.get("state"), row.get("waiting_for"), row.get("title"))


class BoardFile:
    """A watcher listener (see `live.watcher.Listener`) writing the board file."""

    def __init__(self, watcher) -> None:
        self.w = watcher
        self.said: dict[str, tuple] = {}
        self.written = 0.0
        self.last_error: str | None = None

    def prime(self, rows: Iterable[dict]) -> None:
        self.said = {f"{r['source']}:{r['id']}": _said(r) for r in rows}
        self._write()

    def rows(self, changed: list[dict], removed: list[str]) -> None:
        moved = bool(removed)
        for r in changed:
            key = f"{r['source']}:{r['id']}"
            said = _said(r)
            if self.said.get(key) != said:
                self.said[key] = said
                moved = True
        for key in removed:
            self.said.pop(key, None)
        if moved or time.monotonic() - self.written >= FRESH_EVERY:
            self._write()

    def _write(self) -> None:
        h = self.w.h
        try:
            with h.lock:  # the handles' files are stamped as the rows were read
                h.write_board_cache({"sessions": list(self.w.rows.values())})
        except Exception as exc:  # the status line falls back to its own refresher
            self.last_error = f"board file: {type(exc).__name__}: {exc}"
        self.written = time.monotonic()
