"""Keeps the core fresh and turns what changed into stream messages.

A notice (live.notices) is only a wake-up: whatever it says, the core's stat checks decide what
changed (a missed or spurious notification costs nothing but a poll). A changed file
or live signal (a registry entry, a lock) re-evaluates that session's row at once.
What changes with no file touched is looked at on a schedule kept per row: a live row
(a process known, or working / waiting / needing you) every second (a process dies, a
command starts), any other when time alone moves its state (its `next_change`), a held
state when the debouncer lets it show. A slow full pass over every row stays as a
safety net, not as the way anything is seen.

The board rows are kept here, up to date row by row, so the board route answers
from them instead of recomputing a thousand sessions per request. On a core that
reads from the cache and leaves unmoved sessions unread (lazy: `huddle serve`), the
board answers at once with the rows as last built, while the first read runs on the
watcher's thread; what it finds different is pushed like any change. The sessions
left unread keep their cached rows (they are settled: see Huddle._sleeps), and the
cache is written back with the rows now and then, and at the stop.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Protocol

from huddle.core.coldread import FirstRead
from huddle.core.keeper import KEEP_WHOLE
from huddle.live.firstread import read_apart
from huddle.live.notices import Notices
from huddle.model.attention.debounce import Debouncer
from huddle.model.rows import Row
from huddle.views import api
from huddle.views.board import board_notes, cached_rows, kept_rows, listed, rows_key, session_entry, sort_rows
from huddle.views.files import file_counts
from huddle.views.states import look_again_in

from .pushed import new_events

POLL_WATCHED = 15.0  # seconds between stat polls while the folders are watched (a safety net)
POLL_UNWATCHED = 1.0  # ... and while it does not
HOT_EVERY = 1.0  # seconds between looks at a live row (dead process, process table, timers)
FULL_EVERY = 120.0  # seconds between full re-evaluations of every row (a safety net only)
ASKED_WAIT = 30.0  # seconds a round asked for (read_now) may take: a hang guard
SAVE_EVERY = 30.0  # seconds between writes of the cache by a lazy core's watcher
LET_GO_EVERY = 5.0  # seconds between looks for timelines no page follows (a lazy core)

Publish = Callable[[list[tuple[str, dict, str | None]]], None]


class Listener(Protocol):
    def prime(self, rows: Iterable[Row]) -> None:
        """The board as it stands when the listener joins (or the watcher starts)."""

    def rows(self, changed: list[Row], removed: list[str]) -> None:
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
        read_apart: bool = True,
        followed: Callable[[], Iterable[str]] = tuple,
        let_go_every: float = LET_GO_EVERY,
        keep_whole: int = KEEP_WHOLE,
    ):
        self.h = h
        self.read_apart = read_apart  # a first read without a cache in a child (live.firstread)
        self.publish = publish
        self.debounce = debounce or Debouncer()
        self.poll_watched = poll_watched
        self.poll_unwatched = poll_unwatched
        self.full_every = full_every
        self.hot_every = hot_every
        self.use_watchfiles = use_watchfiles
        # the ids of the sessions pages follow now (the server's stream hub says): their
        # timelines are held whole, and a few more (`keep_whole`), the rest let go
        self.followed = followed
        self.let_go_every = let_go_every
        self.keep_whole = keep_whole
        self._let_go_at = 0.0
        self._read_whole = 0  # sessions read whole for pages since the last let-go
        self.listeners: list[Callable[[set[str]], None]] = []  # told the keys each refresh changed
        self.rows: dict[str, Row] = {}  # session key -> its board row as last sent
        self.unlisted: set[str] = set()  # sessions whose row is off the board (nothing in them)
        self.files: dict[str, dict[str, int]] = {}  # the board's `files` (views.doctor.file_counts)
        self.pushed: dict[str, tuple[int, int]] = {}  # session key -> (epoch, events sent)
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.ticks = 0
        self.last_error: str | None = None  # shown by /api/info
        self._threads: list[threading.Thread] = []
        self.notices = Notices(self.wake, self._threads)  # the folders watched, what each notice named
        self._last_full = 0.0
        self._last_refresh = 0.0
        self._last_poll = 0.0  # the last whole refresh (stat checks of every session): a safety net's pace

        self._refresh_cost = 0.0  # seconds the last refresh took
        self.rounds = threading.Condition()  # a refresh round asked for now (`read_now`) and its end
        self._asked = self._read_at = 0.0  # when one was asked; when the last one done began
        self._whole, self.whole_at_ns = False, 0  # a whole read asked for; when the last one began
        self.due: dict[str, float] = {}  # session key -> when (monotonic) to look at its row again
        self.row_listeners: list[Listener] = []  # told each changed row (notifications)
        self.started = False  # the first read is done (until then the board is the cached rows)
        self.ready = threading.Event()  # set with `started` (the search index's first build waits on it)
        self.rows_lock = threading.Lock()  # the rows, copied by the board without the core's lock
        # a lazy core (sessions left unread, their rows from the cache): this watcher
        # keeps every row it built (listed or not) and saves them with the cache
        self.lazy = bool(getattr(h, "lazy", False)) and getattr(h, "cache", None) is not None
        self.built: dict[str, Row] = {}
        self._saved_gen = -1
        self._saved_at = 0.0
        if hasattr(h, "on_complete"):
            h.on_complete.append(self._completed)

    # -- life ------------------------------------------------------------------------

    def start(self) -> None:
        """Read everything once (nothing is pushed for it), then follow changes. On a lazy
        core the rows as last built answer at once; the first read runs on the thread and
        pushes what differs."""
        if self.lazy:
            self._prime_from_cache()
            t = threading.Thread(target=self._first_then_run, name="huddle-refresh", daemon=True)
        else:
            self._first(publish=False)
            t = threading.Thread(target=self._run, name="huddle-refresh", daemon=True)
        t.start()
        self._threads.append(t)

    def _first(self, publish: bool) -> None:
        h = self.h
        # no cache yet: a child reads it all (live.firstread), and its rows are the board
        first = self.lazy and self.read_apart and not h.dormant and not h.handles
        note = read_apart(h, self.stopping.is_set) if first else ""
        if note and self.stopping.is_set():
            return  # (the server stops: nothing to read for)
        if note:  # (read here instead)
            self.last_error = f"first read in a child process: {note}"
        apart = note is None
        if apart:
            self._prime_from_cache()
        with h.lock:
            self._first_refresh()
            msgs = self._full_pass(publish=publish)
            self.files = file_counts(h, self.unlisted)
            if apart and publish and self.rows:  # (pages that came early have none of them)
                msgs.insert(0, ("board", {"sessions": list(self.rows.values()), "removed": []}, None))
            if self.lazy:
                self._save(force=True)
                h.keeper.put_to_sleep(h)
        self._ensure_watch()
        if self.notices.watched:
            self.notices.ready.wait(5)  # from here on, no change goes unnoticed until the poll
        with h.lock:
            self.started = True
            for li in self.row_listeners:
                li.prime(list(self.rows.values()))
        self.ready.set()
        if msgs:
            self.publish(msgs)  # the pages' board; listeners were primed with the result

    def _first_then_run(self) -> None:
        try:
            self._first(publish=True)
        except Exception as exc:  # the loop below reads again; the board shows the cache meanwhile
            self.last_error = f"first read: {type(exc).__name__}: {exc}"
        self._run()

    def _prime_from_cache(self) -> None:
        """The board as the cache last saw it (views.board.cached_rows). Before the
        watcher's thread starts: nothing else reads the cache yet (the core's lock is not
        taken, so a caller that holds it does not hold up the start)."""
        rows = cached_rows(self.h)
        if rows is not None:
            with self.rows_lock:
                self.rows = rows

    def _completed(self, key: str, s) -> None:
        """A page read this session whole (the core's lock is held): its events are pushed
        from here on; what pages no longer show is let go in a while (`_let_go`)."""
        self.pushed[key] = (s.epoch, len(s.events))
        self._read_whole += 1

    def _save(self, force: bool = False) -> None:
        """Write the cache with the rows built (a lazy core): at most every SAVE_EVERY
        seconds while anything changed, and at the stop."""
        h = self.h
        now = time.monotonic()
        if not force and (h.generation == self._saved_gen or now - self._saved_at < SAVE_EVERY):
            return
        with h.lock:
            try:
                h.keeper.save(h, kept_rows(dict(self.built)))
                built_with = rows_key(h, api.pricing_table(h))
                if h.cache.meta().get("rows") != built_with:
                    h.cache.set_meta(rows=built_with)
            except Exception as exc:  # the cache is only a head start: the next start reads more
                self.last_error = f"cache: {type(exc).__name__}: {exc}"
            self._saved_gen, self._saved_at = h.generation, now

    def listen(self, li: Listener) -> None:
        """Tell `li` of every row change from now on (primed with the board as it stands)."""
        with self.h.lock:
            self.row_listeners.append(li)
            if self.started:
                li.prime(list(self.rows.values()))

    def stop(self) -> None:
        self.stopping.set()
        self.wake.set()
        self.notices.stop()
        for t in self._threads:
            if t.name == "huddle-refresh":  # a watch thread notices its stop within rust_timeout
                t.join(timeout=3)
        if self.lazy and self.started:
            self._save(force=True)

    @property
    def watching(self) -> bool:
        """Whether the agents' folders are watched (live.notices; else the poll is quick)."""
        return self.notices.watching

    def board(self) -> dict:
        """The board from the kept rows: what board_json would give, most urgent first."""
        with self.rows_lock:  # not the core's: a first read holds that for seconds
            rows = list(self.rows.values())
        notes = board_notes(self.h)
        if not self.started:
            notes.append("reading the session files: rows as last seen until then")
        out: dict = {"sessions": sort_rows(rows)}
        if notes:
            out["notes"] = notes
        if self.files:
            out["files"] = self.files  # (counted under the core's lock, in a round)
        return out

    # -- the loop --------------------------------------------------------------------

    def _run(self) -> None:
        want = False  # a notice said something moved: refresh as soon as the gap allows
        while not self.stopping.is_set():
            self._ensure_watch()
            poll = self.poll_watched if self.notices.watching else self.poll_unwatched
            next_refresh = self._last_refresh + (self._gap() if want else poll)
            if self.wake.wait(max(0.0, min(next_refresh, self._next_due()) - time.monotonic())):
                want = True
            self.wake.clear()
            if self.stopping.is_set():
                break
            refresh = self._asked > self._read_at or time.monotonic() >= self._last_refresh + (
                self._gap() if want else poll
            )
            try:
                self.tick(refresh=refresh)
            except Exception as exc:  # the loop must outlive any one bad round
                self.last_error = f"refresh: {type(exc).__name__}: {exc}"
            if refresh:
                want = False

    def read_now(
        self, moved: list[str] | None = None, since: int | None = None, folders: Iterable[str] = (), fence: str = ""
    ) -> bool:
        """A round now on the watcher's thread, told as any round's (a `status --json` a
        server answers: every byte written before it asked is read). `moved`: the only
        files that moved since `since` (ns: io.served), and the `folders` that did; or a
        command's `fence` (live.fences): what notices named before it. Read alone if the
        last whole read began after that, else all. False if the watcher stopped, the
        round took over ASKED_WAIT, or the fence was not seen."""
        if fence and (since := self.notices.fenced(fence)) is None:
            return False
        moved = [] if fence else moved
        with self.rounds:
            if moved is not None and since is not None and self.whole_at_ns >= since:
                self.notices.name(moved, folders)
            else:
                self._whole = True
            self._asked = asked = time.monotonic()
            self.wake.set()
            done = self.rounds.wait_for(lambda: self._read_at >= asked or self.stopping.is_set(), ASKED_WAIT)
        return done and not self.stopping.is_set()

    def _gap(self) -> float:
        """The least time between two refreshes: four times what the last one cost, so
        agents writing all the time cost at most a fifth of a core (a few ms on a small
        board, ~0.1-0.2 s on a thousand sessions)."""
        return min(1.0, 4 * self._refresh_cost)

    def _first_refresh(self) -> None:
        """The first read. Lazy: what is read from its start is held as the cache holds it
        (a page reads it whole when it opens it), then whatever is settled sleeps again: a
        first read of a large history holds one timeline at a time (none, when fresh worker
        processes read it: huddle.core.coldread)."""
        h = self.h
        self.whole_at_ns = time.time_ns()
        if not self.lazy:
            h.refresh()
            return
        h.refresh(FirstRead(spawn=True, keep_timelines=False))
        if h.dormant and h.cache.meta().get("rows") != rows_key(h, api.pricing_table(h)):
            h.wake_all()  # rows built with other prices or idle time: built again

    def _next_due(self) -> float:
        held = [t + self.debounce.hold for _st, t in self.debounce.pending.values()]
        let_go = [self._let_go_at + self.let_go_every] if self.lazy and self._read_whole else []  # (idle: no wake)
        return min([*self.due.values(), *held, *let_go, self._last_full + self.full_every])

    def tick(self, refresh: bool = True) -> None:
        """One round: read what changed on disk (`refresh`), then look at the rows that
        changed or fell due. A refresh a notice asked for reads the files it named, in the
        sessions that read them (Huddle.read_files); a new file, a notice without names or
        a poll falling due reads the home's stat checks whole."""
        with self.h.lock:
            t0 = time.monotonic()
            changed = self._read_changes(t0) if refresh else set()
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
            self.files = file_counts(self.h, self.unlisted) if changed else self.files
        if msgs:
            self._tell(msgs)
        if refresh:
            for fn in self.listeners:
                fn(changed)
            with self.rounds:
                self._read_at = t0
                self.rounds.notify_all()
        if self.lazy:
            self._save()
            self._let_go()

    def _read_changes(self, t0: float) -> set[str]:
        """What changed on disk: the files a notice named, read in their sessions, else
        (a new file, a notice without names, a poll falling due) the home's stat checks."""
        hints, told = self.notices.take()
        poll = self.poll_watched if self.notices.watching else self.poll_unwatched
        whole, self._whole = self._whole, False
        quick = hints is not None and not whole and (told is not None or (bool(hints) and t0 - self._last_poll < poll))
        # (a fence's round with nothing named: nothing to read)
        got = (self.h.read_files(hints, told or ()) if hints or told else set()) if quick else None
        if got is None:
            self.whole_at_ns = time.time_ns()  # (what moved before this, this read sees)
            got = self.h.refresh()
            self._last_poll = t0
        return got

    def _tell(self, msgs: list) -> None:
        """The pages (the stream) and the row listeners hear what moved."""
        self.publish(msgs)
        for kind, data, _ in msgs:
            if kind == "board":
                for li in self.row_listeners:
                    li.rows(data["sessions"], data["removed"])

    def _let_go(self) -> None:
        """Every `let_go_every` seconds: the timelines no page follows, past the last few
        read, are let go (Huddle.let_go), and what is settled sleeps again, as after the
        first read. A server's memory is its board and its open pages, not its history."""
        now = time.monotonic()
        if now - self._let_go_at < self.let_go_every:
            return
        self._let_go_at = now
        if not self._read_whole:
            return  # (nothing read whole since the last look: the same ones held)
        self._read_whole = 0
        h = self.h
        with h.lock:
            if h.keeper.let_go(h, set(self.followed()), self.keep_whole):
                self._save(force=True)  # (what sleeps is said from the cache: as it stands now)
                h.keeper.put_to_sleep(h)

    def _ensure_watch(self) -> None:
        """Watch the agent folders that exist now; restart when that set changes."""
        if self.use_watchfiles:
            self.notices.ensure(self.h.agent_roots(), lambda: [r for src in self.h.sources for r in src.roots()])

    # -- what changed ----------------------------------------------------------------

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
