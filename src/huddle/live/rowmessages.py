"""The watcher's rows turned into stream messages (a mixin of live.watcher.Watcher):
each session looked at gets its board row built again; a row that changed, went or
left the board is said, with the events its page has not had yet, and the next time
its row is due a look with no file touched is kept."""

from __future__ import annotations

import threading
import time
from typing import Any

from huddle.model.attention.debounce import Debouncer
from huddle.model.rows import Row
from huddle.views import api
from huddle.views.board import listed, session_entry
from huddle.views.states import look_again_in

from .pushed import new_events


class RowMessages:
    """What `_messages` needs of the watcher (set by Watcher.__init__)."""

    h: Any  # (the core: typed where Watcher takes it)
    debounce: Debouncer
    lazy: bool
    hot_every: float
    rows: dict[str, Row]
    rows_lock: threading.Lock
    built: dict[str, Row]
    pushed: dict[str, tuple[int, int]]
    due: dict[str, float]
    unlisted: set[str]
    _last_full: float

    def _full_pass(self, publish: bool = True) -> list:
        self._last_full = time.monotonic()
        msgs = self._messages(set(self.h.handles) | set(self.rows))
        return msgs if publish else []

    def _messages(self, keys: set[str], fresh: set[str] | None = None) -> list[tuple[str, dict, str | None]]:
        h = self.h
        out: list[tuple[str, dict, str | None]] = []
        changed_rows: list[Row] = []
        removed: list[str] = []
        table = api.pricing_table(h) if keys else None
        wall, mono = time.time(), time.monotonic()
        dormant = getattr(h, "dormant", None) or {}
        for key in sorted(keys):
            handle = h.handles.get(key)
            if handle is None:
                if key in dormant:
                    continue  # left unread (lazy): its row stands as last built
                with self.rows_lock:
                    if self.rows.pop(key, None) is not None:
                        removed.append(key)
                self.built.pop(key, None)
                self.pushed.pop(key, None)
                self.due.pop(key, None)
                continue
            s = handle.session
            row = session_entry(h, s, debounce=self.debounce, table=table, fresh=fresh is not None and key in fresh)
            if self.lazy:
                self.built[key] = row
            if not listed(row):  # nothing said or done yet: off the board (still readable by id)
                self.unlisted.add(key)
                with self.rows_lock:
                    if self.rows.pop(key, None) is not None:
                        removed.append(key)
                self.due.pop(key, None)
                continue
            self.unlisted.discard(key)
            if self.rows.get(key) != row:
                with self.rows_lock:
                    self.rows[key] = row
                changed_rows.append(row)
            self._schedule(key, row, wall, mono)
            out.extend(new_events(self.pushed, key, handle))
        if changed_rows or removed:
            out.append(("board", {"sessions": changed_rows, "removed": removed}, None))
        return out

    def _schedule(self, key: str, row: Row, wall: float, mono: float) -> None:
        """When to look at this row again with no file touched (views.states.look_again_in)."""
        wait = look_again_in(row, wall, self.hot_every)
        if wait is None:
            self.due.pop(key, None)
        else:
            self.due[key] = mono + wait
