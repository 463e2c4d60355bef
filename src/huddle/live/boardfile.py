"""Keeps the status line's board file (`$HUDDLE_HOME/cache/board.bin`) level with a
running watcher (`huddle serve`, `huddle watch`).

The status line reads that file and overlays only Claude Code's registry; a Codex or
Vibe lock taken, a wait read from a transcript, reached it only when its own refresher
had read every session again (seconds on a big history). A watcher already holds every
row: it writes them out when a state moves, and now and then otherwise, so the status
line agrees with the board within the watcher's own delay.

Writing stamps every session's files (a stat each: ~0.1 s on a thousand sessions), so
it runs on a thread of its own, with the core's lock held only to copy what it writes.
"""

from __future__ import annotations

import marshal
import threading
import time
from collections.abc import Iterable
from typing import Any

from huddle.core.cache import Stamped
from huddle.io.boardfile import board_row, entry_of, write_kept
from huddle.model.rows import Row, plain

FRESH_EVERY = 5.0  # seconds: rewrite at least this often while rows move (tokens, titles)
WRITE_AFTER = 0.25  # seconds between a change and its write (the status line reads about once a second)


def _said(row: Row) -> tuple:
    """What the status line shows of a row: a change here is written at once."""
    return (row.state, row.waiting_for, row.title)


class _Files:
    """A handle's files as they were when the rows were copied."""

    def __init__(self, files: list[str]) -> None:
        self._files = files
        self.stamps: list | None = None

    def files(self) -> list[str]:
        return self._files


class BoardFile:
    """A watcher listener (see `live.watcher.Listener`) writing the board file."""

    def __init__(self, watcher) -> None:
        self.w = watcher
        self.said: dict[str, tuple] = {}
        self.written = 0.0
        self.writes = 0
        self.last_error: str | None = None
        self._wanted = threading.Event()
        self._thread: threading.Thread | None = None
        # a sleeping session's row as last written (its row and head the same objects while
        # it sleeps: core.cache.Dormant), so a write encodes only the awake ones
        self._asleep: dict[str, tuple[Any, Any, bytes, list[Any]]] = {}

    def prime(self, rows: Iterable[Row]) -> None:
        self.said = {r.key: _said(r) for r in rows}
        self._want()

    def rows(self, changed: list[Row], removed: list[str]) -> None:
        moved = bool(removed)
        for r in changed:
            said = _said(r)
            if self.said.get(r.key) != said:
                self.said[r.key] = said
                moved = True
        for key in removed:
            self.said.pop(key, None)
        if moved or time.monotonic() - self.written >= FRESH_EVERY:
            self._want()

    def _want(self) -> None:
        self.written = time.monotonic()  # asked for: the next "now and then" counts from here
        self._wanted.set()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="huddle-boardfile", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            self._wanted.wait()
            # a moment first: a `status` asked of the server right after the change is
            # answered before this write takes the CPU, and a burst of changes is one write
            time.sleep(WRITE_AFTER)
            self._wanted.clear()  # what moves while this write runs asks for the next one
            self.write()

    def write(self) -> None:
        h = self.w.h
        home = h.settings.huddle_home
        if not home:
            return
        try:
            # under the core's lock only what a round changes (a status asked of the server
            # waits on it); a sleeping session's stamps are its head's, which never change
            with h.lock:
                rows = dict(self.w.rows)
                files = {k: _Files(list(hd.files())) for k, hd in h.handles.items() if k in self.w.rows}
                asleep = [d for k, d in getattr(h, "dormant", {}).items() if k in self.w.rows and k not in files]
            dirs, folders = h.watch_dirs(), dict(h.settings.folders)
            out: dict[str, dict[str, Any] | None] = {}
            blobs: dict[str, bytes] = {}
            index: dict[str, list[Any]] = {}
            was, now = self._asleep, {}
            for d in asleep:
                hit = was.get(d.key)
                row = rows[d.key]
                if hit is None or hit[0] is not row or hit[1] is not d:
                    st = Stamped(d)  # (as core.cache.Stamped says a sleeping session's files)
                    f = _Files(st.files())
                    f.stamps = st.stamps
                    said = board_row(plain(row), f)
                    hit = (row, d, marshal.dumps(said), entry_of(said))
                now[d.key] = hit
            self._asleep = now
            for key, r in rows.items():
                if (hit := now.get(key)) is not None:
                    out[key], blobs[key], index[key] = None, hit[2], hit[3]
                else:
                    said = board_row(plain(r), files.get(key))
                    out[key], index[key] = said, entry_of(said)
            write_kept(home, out, blobs, index, dirs, folders)
            self.writes += 1
        except Exception as exc:  # the status line falls back to its own refresher
            self.last_error = f"board file: {type(exc).__name__}: {exc}"
