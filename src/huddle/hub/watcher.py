"""`huddle serve --hub`: the board's rows from the hub, polled, published to the pages
as the local watcher publishes them (changed rows, removed keys), so the same pages
show every machine's sessions. This machine's own sessions keep their detail pages:
the local core is refreshed alongside (the hub holds no timelines).

The first answer is the hub's live sessions and those that moved in the last week
(read.BOARD_DAYS), read before anything else. Each poll then asks only for what was
written since the last (by the hub's clock, with a margin for a push still committing)
and works out again which live rows are stale; a whole look every minute drops what
aged out or was deleted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import msgspec

from huddle.model.rows import HubRow

from . import HubError, connect, describe, driver, scrub
from .read import BOARD_DAYS, LIVE, STALE_AFTER, board

POLL = 2.0
MARGIN = 120.0  # seconds a push's transaction may take to commit after it wrote a session
WHOLE_EVERY = 60.0  # seconds between whole looks


class HubWatcher:
    def __init__(
        self,
        h: Any,
        publish: Callable[[list], None],
        dsn: str,
        every: float = POLL,
        days: float | None = BOARD_DAYS,
        telemetry_as: str | None = None,
    ) -> None:
        self.h = h
        self.pusher: Any = None
        if telemetry_as is not None:  # (serve --hub --otlp: what the receiver takes goes to the hub)
            import msgspec

            from huddle.core import Huddle

            from .push import Pusher

            only = msgspec.structs.replace(h.settings, only=("telemetry",))
            self.pusher = Pusher(Huddle(only), dsn, telemetry_as)
        self.days = days  # None: every session
        self.publish = publish
        self.dsn = dsn
        self.every = every
        self.rows: dict[str, HubRow] = {}
        self.count = 0
        self.outside = 0  # sessions the window left out (the last whole read)
        self.unread: list[str] = []  # what the last whole read could not take, one line each
        self.watching = False
        self.last_error: str | None = None
        self.conn: Any = None
        self.stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._mark = 0.0  # the newest write seen (the hub's clock)
        self._whole_at = 0.0

    def _key(self, row: HubRow) -> str:
        return row.key

    def _conn(self) -> Any:
        if self.conn is None or self.conn.closed:
            self.conn = connect(self.dsn)
        return self.conn

    def _window(self) -> float | None:
        return None if self.days is None else time.time() - self.days * 86400.0

    def _whole(self) -> dict[str, HubRow]:
        got = board(self._conn(), since=self._window())
        self.count = got["count"]
        self.outside = got["outside"]
        self.unread = list(got.get("notes", ()))  # (rows another machine wrote that cost themselves)
        self._mark = max(self._mark, got["changed_at"])
        self._whole_at = time.monotonic()
        return {self._key(r): r for r in got["sessions"]}

    def start(self) -> None:
        try:
            self.rows = self._whole()
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
        if self.pusher is not None:
            self.pusher.close()

    def board(self) -> dict:
        from huddle.views.board import sort_rows

        out: dict = {"sessions": sort_rows(list(self.rows.values())), "hub": describe(self.dsn)}
        notes = list(self.unread)
        if self.outside and self.days is not None:
            notes.append(
                f"hub: {self.outside:,} sessions that have not moved in {self.days:g} days are not"
                " shown (huddle status --hub DSN --all lists every one)"
            )
        if self.last_error:
            notes.append(self.last_error)
        if notes:
            out["notes"] = notes
        return out

    def _stale(self, rows: dict[str, HubRow], now: float) -> None:
        """Live rows whose machine has gone quiet are marked stale (and no longer when it pushes)."""
        seen = dict(self._conn().execute("SELECT name, last_seen FROM huddle.machines").fetchall())
        self._conn().commit()
        for r in rows.values():
            if r.state not in LIVE:
                continue
            last = seen.get(r.machine)
            stale = last is None or now - last > STALE_AFTER
            if stale != bool(r.stale):  # (a copy: the row as last sent stays as it was)
                rows[r.key] = msgspec.structs.replace(r, stale=True if stale else msgspec.UNSET)

    def tick(self) -> None:
        if time.monotonic() - self._whole_at >= WHOLE_EVERY:
            rows = self._whole()
        else:
            got = board(self._conn(), since=self._window(), changed_after=self._mark - MARGIN)
            self.count = got["count"]
            self._mark = max(self._mark, got["changed_at"])
            rows = dict(self.rows)
            rows.update((self._key(r), r) for r in got["sessions"])
        self._stale(rows, time.time())
        changed = [r for k, r in rows.items() if self.rows.get(k) != r]
        removed = [k for k in self.rows if k not in rows]
        self.rows = rows
        self.last_error = None
        if changed or removed:
            self.publish([("board", {"sessions": changed, "removed": removed}, None)])
        with self.h.lock:  # this machine's own sessions, for their detail pages
            self.h.refresh()
        if self.pusher is not None:
            self.pusher.h.refresh()
            self.pusher.push_once()

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
