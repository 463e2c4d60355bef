"""Keeps the core fresh and turns what changed into stream messages.

watchfiles is only a wake-up: whatever it says, the core's stat checks decide what
changed (a missed or spurious notification costs nothing but a poll). A periodic
poll covers filesystems where notifications do not work, and a slower full pass
re-evaluates every row, for states that change with time or with a process dying
(a killed agent leaves its files untouched).

The board rows are kept here, up to date row by row, so the board route answers
from them instead of recomputing a thousand sessions per request.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from huddle.views import api
from huddle.views.board import session_entry, sort_rows
from huddle.views.states import Debouncer

POLL_WATCHED = 15.0  # seconds between stat polls while watchfiles works (a safety net)
POLL_UNWATCHED = 1.0  # ... and while it does not
FULL_EVERY = 45.0  # seconds between full re-evaluations of every row (time, dead processes)
EVENTS_PER_MESSAGE = 500

Publish = Callable[[list[tuple[str, dict, str | None]]], None]


class Watcher:
    def __init__(
        self,
        h,
        publish: Publish,
        debounce: Debouncer | None = None,
        poll_watched: float = POLL_WATCHED,
        poll_unwatched: float = POLL_UNWATCHED,
        full_every: float = FULL_EVERY,
        use_watchfiles: bool = True,
    ):
        self.h = h
        self.publish = publish
        self.debounce = debounce or Debouncer()
        self.poll_watched = poll_watched
        self.poll_unwatched = poll_unwatched
        self.full_every = full_every
        self.use_watchfiles = use_watchfiles
        self.listeners: list[Callable[[set[str]], None]] = []  # told the keys each refresh changed
        self.rows: dict[str, dict] = {}  # session key -> its board row as last sent
        self.pushed: dict[str, tuple[int, int]] = {}  # session key -> (epoch, events sent)
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.watching = False
        self.ticks = 0
        self.last_error: str | None = None  # shown by /api/info
        self._watched: tuple[str, ...] = ()
        self._watch_stop: threading.Event | None = None
        self._threads: list[threading.Thread] = []
        self._last_full = 0.0

    # -- life ------------------------------------------------------------------------

    def start(self) -> None:
        """Read everything once (nothing is pushed for it), then follow changes."""
        with self.h.lock:
            self.h.refresh()
            self._full_pass(publish=False)
        t = threading.Thread(target=self._run, name="huddle-refresh", daemon=True)
        t.start()
        self._threads.append(t)

    def stop(self) -> None:
        self.stopping.set()
        self.wake.set()
        if self._watch_stop is not None:
            self._watch_stop.set()
        for t in self._threads:
            if t.name == "huddle-refresh":  # a watch thread notices its stop within rust_timeout
                t.join(timeout=3)

    def board(self) -> dict:
        """The board from the kept rows: what board_json would give, most urgent first."""
        with self.h.lock:
            rows = list(self.rows.values())
            notes = list(self.h.notes)
        out: dict = {"sessions": sort_rows(rows)}
        if notes:
            out["notes"] = notes
        return out

    # -- the loop --------------------------------------------------------------------

    def _run(self) -> None:
        while not self.stopping.is_set():
            self._ensure_watch()
            wait = self.poll_watched if self.watching else self.poll_unwatched
            if self.debounce.pending:
                wait = min(wait, self.debounce.hold + 0.05)
            self.wake.wait(wait)
            self.wake.clear()
            if self.stopping.is_set():
                break
            try:
                self.tick()
            except Exception as exc:  # the loop must outlive any one bad round
                self.last_error = f"refresh: {type(exc).__name__}: {exc}"

    def tick(self) -> None:
        with self.h.lock:
            changed = self.h.refresh()
            self.ticks += 1
            if time.monotonic() - self._last_full >= self.full_every:
                msgs = self._full_pass()
            else:
                msgs = self._messages(changed | set(self.debounce.pending))
        if msgs:
            self.publish(msgs)
        for fn in self.listeners:
            fn(changed)

    def _ensure_watch(self) -> None:
        """Watch the agent folders that exist now; restart when that set changes."""
        if not self.use_watchfiles:
            return
        roots = tuple(sorted(r for r in set(self.h.agent_roots()) if os.path.isdir(r)))
        if roots == self._watched and (self.watching or not roots):
            return
        if self._watch_stop is not None:
            self._watch_stop.set()
        self._watched = roots
        self.watching = False
        if not roots:
            return
        stop = self._watch_stop = threading.Event()
        t = threading.Thread(target=self._watch, args=(roots, stop), name="huddle-watch", daemon=True)
        t.start()
        self._threads.append(t)

    def _watch(self, roots: tuple[str, ...], stop: threading.Event) -> None:
        try:
            import watchfiles

            self.watching = True
            for _ in watchfiles.watch(
                *roots,
                watch_filter=None,
                debounce=150,
                step=50,
                stop_event=stop,
                rust_timeout=5000,
                raise_interrupt=False,
            ):
                self.wake.set()
        except Exception:  # no inotify, too many watches...: the poll carries on alone
            pass
        finally:
            if self._watch_stop is stop:
                self.watching = False

    # -- what changed ----------------------------------------------------------------

    def _full_pass(self, publish: bool = True) -> list:
        self._last_full = time.monotonic()
        keys = set(self.h.handles) | set(self.rows)
        msgs = self._messages(keys)
        return msgs if publish else []

    def _messages(self, keys: set[str]) -> list[tuple[str, dict, str | None]]:
        h = self.h
        out: list[tuple[str, dict, str | None]] = []
        changed_rows, removed = [], []
        table = api.pricing_table(h) if keys else None
        for key in sorted(keys):
            handle = h.handles.get(key)
            if handle is None:
                if self.rows.pop(key, None) is not None:
                    removed.append(key)
                self.pushed.pop(key, None)
                continue
            s = handle.session
            row = session_entry(h, s, debounce=self.debounce, table=table)
            if self.rows.get(key) != row:
                self.rows[key] = row
                changed_rows.append(row)
            out.extend(self._new_events(key, handle))
        if changed_rows or removed:
            out.append(("board", {"sessions": changed_rows, "removed": removed}, None))
        return out

    def _new_events(self, key: str, handle) -> list[tuple[str, dict, str | None]]:
        s = handle.session
        n = len(s.events)
        had = self.pushed.get(key)
        self.pushed[key] = (s.epoch, n)
        if had is None or had == (s.epoch, n):
            return []  # a session just found: pages load it through the API
        epoch, sent = had
        if epoch != s.epoch or sent > n:
            return [("reset", {"session": s.id, "key": key, "epoch": s.epoch, "why": "rewritten"}, s.id)]
        files = api.files_index(handle)
        out = []
        for start in range(sent, n, EVENTS_PER_MESSAGE):
            chunk = api.timeline_json(s, files, start, min(n, start + EVENTS_PER_MESSAGE))
            out.append(("events", {"session": s.id, "key": key, "epoch": s.epoch, "events": chunk}, s.id))
        return out
