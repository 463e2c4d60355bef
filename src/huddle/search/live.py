"""The server's indexing thread: a first build in the background (searches meanwhile
answer from what is indexed, and say the build is under way), then the sessions the
watcher reports changed, indexed as soon as it has read them.

The core's lock is held only to take a snapshot of the new events; reading records
back and writing the index happen outside it, so the board never waits on search.

Shutdown: `stop()` asks the thread to end (it looks between write transactions), joins
it, and the thread closes the index's connection itself as it ends; request threads
that still ask meanwhile hold the store's lock, so nothing closes under a statement.
"""

from __future__ import annotations

import threading
from typing import Any

from .index import SearchIndex
from .store import Damaged

CHECK = 5.0  # seconds between looks when nothing wakes the thread (a failed round waits this too)


class LiveIndexer:
    def __init__(self, h: Any, index: SearchIndex, after: threading.Event | None = None):
        """`after`: set once the core's first read is done (the server's watcher): the
        first build waits for it, so it reads at least as far as the core did (what the
        core read before holds no timeline to index: see Huddle.refresh keep_timelines)."""
        self.h = h
        self.after = after
        self.index = index
        self.dirty: set[str] | None = None  # None: every session (the first build)
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.idle = threading.Event()  # set while nothing is waiting to be indexed (tests wait on it)
        self.last_error: str | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._generation = index.generation
        self.built_by: int | None = None  # the process id of the last first build run apart (_level)

    def start(self) -> None:
        self.index.building = True  # the first build is due (it may wait for the core's first read)
        self.wake.set()
        self._thread = threading.Thread(target=self._run, name="huddle-search-index", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 30) -> None:
        self.stopping.set()
        self.wake.set()
        if self._thread is not None:
            self._thread.join(timeout)  # one write transaction at most (a guard, not a wait)

    def _run(self) -> None:
        try:
            while self.after is not None and not self.after.wait(0.5):
                if self.stopping.is_set():
                    return
            self._loop()
        finally:
            self.index.store.close()  # the owner closes, after its last use

    def notify(self, keys: set[str]) -> None:
        """The watcher read these sessions: index what they gained."""
        if not keys:
            return
        with self._lock:
            if self.dirty is not None:
                self.dirty |= keys
            self.idle.clear()
        self.wake.set()

    def _level(self) -> None:
        """The first build on a core that leaves sessions unread (the server from the
        cache): the search reads through its own handle cache, as `huddle search` does,
        so what it has not indexed is read whole (never a cached, partial timeline), and
        what it has stays unread. It runs in a child process: every timeline it reads
        is then memory the server never holds (a first build over 2 GB of sessions took
        the server from 240 to 620 MB RSS for good). The watcher's changes follow on the
        server's own core."""
        from huddle.io.apart import run_apart

        def heard(line: str) -> None:  # "pid <its pid>", then "<bytes done> <bytes in all>"
            done, _, total = line.partition(" ")
            if done == "pid" and total.isdigit():
                self.built_by = int(total)
            elif done.isdigit() and total.isdigit():
                self.index.progress = (int(done), int(total))  # what a search says of the build

        error = run_apart(__name__, "build_level", self.h.settings, self.stopping.is_set, heard)
        if error is not None and not self.stopping.is_set():
            raise _BuildFailed(error)

    def _take(self) -> set[str] | None:
        with self._lock:
            keys, self.dirty = self.dirty, set()
            return keys

    def _loop(self) -> None:
        while not self.stopping.is_set():
            self.wake.wait(CHECK)
            self.wake.clear()
            if self.stopping.is_set():
                break
            if self.index.vanished():
                self.index.reset()  # removed while serving: build it again
            if self.index.generation != self._generation:
                self._generation = self.index.generation
                with self._lock:
                    self.dirty = None
            keys = self._take()
            if keys is not None and not keys:
                self.idle.set()
                continue
            failed = not self._round(keys)
            with self._lock:
                pending = self.dirty is None or bool(self.dirty)
            if not pending:
                self.idle.set()
            elif not failed:
                self.wake.set()  # more came in meanwhile (a failure waits CHECK instead)

    def _round(self, keys: set[str] | None) -> bool:
        """One round: the sessions that moved indexed (`keys`; None: all of them, a first
        build). False when it failed (what it was to index is left to do again)."""
        first = keys is None
        try:
            if first:
                self.index.building = True
            if first and getattr(self.h, "lazy", False):
                self._level()
            else:
                with self.h.lock:
                    snaps = self.index.snapshot(self.h, keys)
                    handles = set(self.h.handles) | set(getattr(self.h, "dormant", ()))
                gone = first or bool(keys and keys - handles)
                self.index.index(snaps, present=handles if gone else None, stop=self.stopping.is_set)
            self.last_error = None
        except Damaged as exc:
            self.last_error = str(exc)
            with self._lock:
                self.dirty = None  # build it all again
        except Exception as exc:  # the thread outlives any one bad round
            said = str(exc) if isinstance(exc, _BuildFailed) else f"{type(exc).__name__}: {exc}"
            self.last_error = f"search index: {said}"
            with self._lock:
                if keys is None:
                    self.dirty = None
                elif self.dirty is not None:
                    self.dirty |= keys
            return False
        finally:
            if first:
                self.index.building = False
        return True


class _BuildFailed(Exception):
    """A first build run apart ended with this one line (said by the child)."""


def build_level(settings: Any, say: Any) -> None:
    """A first build in a child process (LiveIndexer._level, io.apart): its pid, then
    its progress as "<bytes done> <bytes in all>" lines."""
    import os

    from .index import make_level

    say(f"pid {os.getpid()}")

    def progress(what: str, total: int):
        return (lambda n, of: say(f"{n} {of}")) if what == "building the search index" else None

    index = SearchIndex(settings.huddle_home, settings.folders)
    try:
        core = make_level(settings, index, progress=progress)
        if core.cache is not None:
            core.cache.store.close()
    finally:
        index.store.close()
