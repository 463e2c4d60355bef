"""`huddle serve --hub`: the board's rows from the hub, polled, published to the pages
as the local watcher publishes them (changed rows, removed keys), so the same pages
show every machine's sessions. This machine's own sessions keep their detail pages:
the local core is refreshed alongside (the hub holds no timelines).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from . import HubError, connect, describe, driver, scrub
from .read import board

POLL = 2.0


class HubWatcher:
    def __init__(self, h: Any, publish: Callable[[list], None], dsn: str, every: float = POLL) -> None:
        self.h = h
        self.publish = publish
        self.dsn = dsn
        self.every = every
        self.rows: dict[str, dict] = {}
        self.watching = False
        self.last_error: str | None = None
        self.conn: Any = None
        self.stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def _key(self, row: dict) -> str:
        return f"{row.get('source')}:{row.get('id')}"

    def _fetch(self) -> dict[str, dict]:
        if self.conn is None or self.conn.closed:
            self.conn = connect(self.dsn)
        return {self._key(r): r for r in board(self.conn)["sessions"]}

    def start(self) -> None:
        try:
            with self.h.lock:
                self.h.refresh()
            self.rows = self._fetch()
        except (HubError, driver().Error) as exc:
            self.last_error = f"hub: {scrub(str(exc), self.dsn)}"
        self._thread = threading.Thread(target=self._run, name="huddle-hub", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.conn is not None:
            self.conn.close()

    def board(self) -> dict:
        from huddle.views.board import sort_rows

        out: dict = {"sessions": sort_rows(list(self.rows.values())), "hub": describe(self.dsn)}
        if self.last_error:
            out["notes"] = [self.last_error]
        return out

    def tick(self) -> None:
        with self.h.lock:
            self.h.refresh()
        rows = self._fetch()
        changed = [r for k, r in rows.items() if self.rows.get(k) != r]
        removed = [k for k in self.rows if k not in rows]
        self.rows = rows
        self.last_error = None
        if changed or removed:
            self.publish([("board", {"sessions": changed, "removed": removed}, None)])

    def _run(self) -> None:
        delay = self.every
        while not self.stopping.wait(delay):
            try:
                self.tick()
                delay = self.every
            except (HubError, driver().Error) as exc:
                self.last_error = f"hub: {scrub(str(exc), self.dsn)}"
                if self.conn is not None:
                    self.conn.close()
                    self.conn = None
                delay = min(delay * 2, 30.0)
            except Exception as exc:  # the loop outlives a bad round
                self.last_error = f"hub: {type(exc).__name__}: {exc}"
