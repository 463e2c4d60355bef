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
    def __init__(self, h: Any, index: SearchIndex):
        self.h = h
        self.index = index
        self.dirty: set[str] | None = None  # None: every session (the first build)
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.idle = threading.Event()  # set while nothing is waiting to be indexed (tests wait on it)
        self.last_error: str | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._generation = index.generation

    def start(self) -> None:
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
            first = keys is None
            failed = False
            try:
                if first:
                    self.index.building = True
                with self.h.lock:
                    snaps = self.index.snapshot(self.h, keys)
                    handles = set(self.h.handles)
                gone = first or bool(keys and keys - handles)
                self.index.index(snaps, present=handles if gone else None, stop=self.stopping.is_set)
                self.last_error = None
            except Damaged as exc:
                self.last_error = str(exc)
                with self._lock:
                    self.dirty = None  # build it all again
            except Exception as exc:  # the thread outlives any one bad round
                self.last_error = f"search index: {type(exc).__name__}: {exc}"
                failed = True
                with self._lock:
                    if keys is None:
                        self.dirty = None
                    elif self.dirty is not None:
                        self.dirty |= keys
            finally:
                if first:
                    self.index.building = False
            with self._lock:
                pending = self.dirty is None or bool(self.dirty)
            if not pending:
                self.idle.set()
            elif not failed:
                self.wake.set()  # more came in meanwhile (a failure waits CHECK instead)
