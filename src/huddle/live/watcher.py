"""Keeps the core fresh and turns what changed into stream messages.

watchfiles is only a wake-up: whatever it says, the core's stat checks decide what
changed (a missed or spurious notification costs nothing but a poll). A changed file
or live signal (a registry entry, a lock) re-evaluates that session's row at once.
What changes with no file touched is looked at on a schedule kept per row: a live row
(a process known, or working / waiting / needing you) every second (a process dies, a
command starts, a file change waits for approval), a "your turn" row when it would turn
idle, a held state when the debouncer lets it show. A slow full pass over every row
stays as a safety net, not as the way anything is seen.

The board rows are kept here, up to date row by row, so the board route answers
from them instead of recomputing a thousand sessions per request.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Protocol

from huddle.model.attention import ACTIVE, ENDED, IDLE_AFTER, YOUR_TURN
from huddle.model.times import parse_time
from huddle.views import api
from huddle.views.board import board_notes, listed, session_entry, sort_rows
from huddle.views.states import Debouncer

POLL_WATCHED = 15.0  # seconds between stat polls while watchfiles works (a safety net)
POLL_UNWATCHED = 1.0  # ... and while it does not
HOT_EVERY = 1.0  # seconds between looks at a live row (dead process, process table, timers)
FULL_EVERY = 120.0  # seconds between full re-evaluations of every row (a safety net only)
LATER = 60.0  # seconds: a "your turn" row past its idle time (background work goes on)
EVENTS_PER_MESSAGE = 500

Publish = Callable[[list[tuple[str, dict, str | None]]], None]


class Listener(Protocol):
    def prime(self, rows: Iterable[dict]) -> None:
        """The board as it stands when the listener joins (or the watcher starts)."""

    def rows(self, changed: list[dict], removed: list[str]) -> None:
        """Rows that changed (as sent to the pages) and keys that went."""


class Watcher:
    def __init__(
        self,
        h,
        publish: Publish,
        debounce: Debouncer | None = None,
        poll_watched: float = POLL_WATCHED,
        poll_unwatched: float = POLL_UNWATCHED,
        full_every: float = FULL_EVERY,
        hot_every: float = HOT_EVERY,
        use_watchfiles: bool = True,
    ):
        self.h = h
        self.publish = publish
        self.debounce = debounce or Debouncer()
        self.poll_watched = poll_watched
        self.poll_unwatched = poll_unwatched
        self.full_every = full_every
        self.hot_every = hot_every
        self.use_watchfiles = use_watchfiles
        self.listeners: list[Callable[[set[str]], None]] = []  # told the keys each refresh changed
        self.idle_after = float(getattr(h, "idle_after", IDLE_AFTER))
        self.rows: dict[str, dict] = {}  # session key -> its board row as last sent
        self.pushed: dict[str, tuple[int, int]] = {}  # session key -> (epoch, events sent)
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.watching = False
        self.watch_ready = threading.Event()  # set once the first watch is in place (or failed)
        self.ticks = 0
        self.last_error: str | None = None  # shown by /api/info
        self._watched: tuple[str, ...] = ()
        self._watch_stop: threading.Event | None = None
        self._threads: list[threading.Thread] = []
        self._last_full = 0.0
        self._last_refresh = 0.0
        self._refresh_cost = 0.0  # seconds the last refresh took
        self.due: dict[str, float] = {}  # session key -> when (monotonic) to look at its row again
        self.row_listeners: list[Listener] = []  # told each changed row (notifications)
        self.started = False

    # -- life ------------------------------------------------------------------------

    def start(self) -> None:
        """Read everything once (nothing is pushed for it), then follow changes."""
        with self.h.lock:
            self.h.refresh()
            self._full_pass(publish=False)
        self._ensure_watch()
        if self._watched:
            self.watch_ready.wait(5)  # from here on, no change goes unnoticed until the poll
        with self.h.lock:
            self.started = True
            for li in self.row_listeners:
                li.prime(list(self.rows.values()))
        t = threading.Thread(target=self._run, name="huddle-refresh", daemon=True)
        t.start()
        self._threads.append(t)

    def listen(self, li: Listener) -> None:
        """Tell `li` of every row change from now on (primed with the board as it stands)."""
        with self.h.lock:
            self.row_listeners.append(li)
            if self.started:
                li.prime(list(self.rows.values()))

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
            notes = board_notes(self.h)
        out: dict = {"sessions": sort_rows(rows)}
        if notes:
            out["notes"] = notes
        return out

    # -- the loop --------------------------------------------------------------------

    def _run(self) -> None:
        want = False  # watchfiles said something moved: refresh as soon as the gap allows
        while not self.stopping.is_set():
            self._ensure_watch()
            poll = self.poll_watched if self.watching else self.poll_unwatched
            next_refresh = self._last_refresh + (self._gap() if want else poll)
            if self.wake.wait(max(0.0, min(next_refresh, self._next_due()) - time.monotonic())):
                want = True
            self.wake.clear()
            if self.stopping.is_set():
                break
            refresh = time.monotonic() >= self._last_refresh + (self._gap() if want else poll)
            try:
                self.tick(refresh=refresh)
            except Exception as exc:  # the loop must outlive any one bad round
                self.last_error = f"refresh: {type(exc).__name__}: {exc}"
            if refresh:
                want = False

    def _gap(self) -> float:
        """The least time between two refreshes: four times what the last one cost, so
        agents writing all the time cost at most a fifth of a core (a few ms on a small
        board, ~0.1-0.2 s on a thousand sessions)."""
        return min(1.0, 4 * self._refresh_cost)

    def _next_due(self) -> float:
        held = [t + self.debounce.hold for _st, t in self.debounce.pending.values()]
        return min([*self.due.values(), *held, self._last_full + self.full_every])

    def tick(self, refresh: bool = True) -> None:
        """One round: read what changed on disk (`refresh`), then look at the rows that
        changed or fell due."""
        with self.h.lock:
            t0 = time.monotonic()
            changed = self.h.refresh() if refresh else set()
            now = time.monotonic()
            self.ticks += 1
            if refresh:
                self._last_refresh, self._refresh_cost = now, now - t0
            if now - self._last_full >= self.full_every:
                msgs = self._full_pass()
            else:
                due = {k for k, t in self.due.items() if t <= now}
                msgs = self._messages(changed | due | set(self.debounce.pending), fresh=due)
            for key in changed & self.rows.keys():  # one more look soon: a lock taken a moment ago
                self.due[key] = min(self.due.get(key, now + self.hot_every), now + self.hot_every)
        if msgs:
            self.publish(msgs)
            for kind, data, _ in msgs:
                if kind == "board":
                    for li in self.row_listeners:
                        li.rows(data["sessions"], data["removed"])
        if refresh:
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
        """watchfiles' RustNotify (its documented core, used here rather than `watch()` so
        the moment its watches are in place is known): a wake-up per batch of changes."""
        try:
            from watchfiles._rust_notify import RustNotify

            with RustNotify(list(roots), False, False, 300, True, True) as notify:
                self.watching = True
                self.wake.set()  # whatever moved while the watches were being set up
                self.watch_ready.set()
                while not stop.is_set():
                    got = notify.watch(50, 50, 5000, stop)
                    if got == "stop":
                        break
                    if isinstance(got, set) and got:
                        self.wake.set()
        except Exception:  # no inotify, too many watches...: the poll carries on alone
            pass
        finally:
            self.watch_ready.set()
            if self._watch_stop is stop:
                self.watching = False

    # -- what changed ----------------------------------------------------------------

    def _full_pass(self, publish: bool = True) -> list:
        self._last_full = time.monotonic()
        keys = set(self.h.handles) | set(self.rows)
        msgs = self._messages(keys)
        return msgs if publish else []

    def _messages(self, keys: set[str], fresh: set[str] | None = None) -> list[tuple[str, dict, str | None]]:
        h = self.h
        out: list[tuple[str, dict, str | None]] = []
        changed_rows: list[dict] = []
        removed: list[str] = []
        table = api.pricing_table(h) if keys else None
        wall, mono = time.time(), time.monotonic()
        for key in sorted(keys):
            handle = h.handles.get(key)
            if handle is None:
                if self.rows.pop(key, None) is not None:
                    removed.append(key)
                self.pushed.pop(key, None)
                self.due.pop(key, None)
                continue
            s = handle.session
            row = session_entry(h, s, debounce=self.debounce, table=table, fresh=fresh is not None and key in fresh)
            if not listed(row):  # nothing said or done yet: off the board (still readable by id)
                if self.rows.pop(key, None) is not None:
                    removed.append(key)
                self.due.pop(key, None)
                continue
            if self.rows.get(key) != row:
                self.rows[key] = row
                changed_rows.append(row)
            self._schedule(key, row, wall, mono)
            out.extend(self._new_events(key, handle))
        if changed_rows or removed:
            out.append(("board", {"sessions": changed_rows, "removed": removed}, None))
        return out

    def _schedule(self, key: str, row: dict, wall: float, mono: float) -> None:
        """When to look at this row again with no file touched (see the module doc)."""
        states = {row.get("state")} | {a.get("state") for a in row.get("agents") or ()}
        if states & ACTIVE or (row.get("pid") is not None and row.get("state") != ENDED):
            self.due[key] = mono + self.hot_every
            return
        if row.get("state") == YOUR_TURN:
            since = parse_time(row.get("state_since")) or parse_time(row.get("updated_at"))
            if since is not None:
                left = since + self.idle_after - wall  # past it and still your turn: background work
                self.due[key] = mono + (max(self.hot_every, left + 0.05) if left > 0 else LATER)
                return
        self.due.pop(key, None)

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
