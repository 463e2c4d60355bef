"""The agents' folders watched: a wake-up for the watcher, and the files each notice
named, as the sources name them (a folder reached through a symlink is watched at its
real path). Linux's inotify read blocking (live.inotify: no wake-up while nothing
moves), else watchfiles.

A notice is only a hint: whatever it says, the core's reads decide what changed (a
missed or spurious notice costs nothing but a poll). Its own thread; `wake` is set on
every batch.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from .fences import FENCE_WAIT, Fences


class Notices:
    def __init__(self, wake: threading.Event, threads: list[threading.Thread], kernel: bool | None = None) -> None:
        self.wake = wake
        # inotify read directly (live.inotify), or watchfiles (another system, or asked for)
        self.kernel = sys.platform.startswith("linux") if kernel is None else kernel
        self._inotify: Any = None  # (the thread's own: interrupted at a stop)
        self.threads = threads  # (the watcher's: joined at its stop)
        self.watching = False
        self.ready = threading.Event()  # set once the first watch is in place (or failed)
        self.watched: tuple[str, ...] = ()
        self._stop: threading.Event | None = None
        # the files named since they were last taken (None: a notice that named none usable)
        self._named: set[str] | None = set()
        self._told: list[str] | None = None  # named by a command (`name`): the folders it saw move
        self._lock = threading.Lock()
        self._real: dict[str, str] = {}  # a watched folder's real path -> the path the sources use
        self.fences = Fences()  # a command's marks in the same queue (live.fences): the kernel's only
        self.since_ns = 0  # when the kernel's watches were all in place (0: not watching through it)

    def ensure(self, roots: list[str], given: Callable[[], list[str]]) -> None:
        """Watch these folders (`roots`, real paths; `given()`: the same as the sources
        name them), those that exist now; start again when that set changes."""
        fences = self.fences.folder
        now = tuple(sorted(r for r in {*roots, *([fences] if fences else ())} if os.path.isdir(r)))
        self._real = {os.path.realpath(r): r for r in given()}
        if now == self.watched and (self.watching or not now):
            return
        self.stop()
        self.watched = now
        self.watching = False
        self.since_ns = 0
        if not now:
            return
        stop = self._stop = threading.Event()
        t = threading.Thread(target=self._watch, args=(now, stop), name="huddle-watch", daemon=True)
        t.start()
        self.threads.append(t)

    @property
    def fencing(self) -> bool:
        """Whether a fence made now would be seen (live.fences): the kernel's watches
        are in place, the fence folder among them."""
        folder = self.fences.folder
        return self.since_ns > 0 and self.watching and folder is not None and folder in self.watched

    def fenced(self, fence: str) -> int | None:
        """When the watches that read the command's `fence` were all in place (ns), once
        every notice before it is named; None if it is not seen in FENCE_WAIT."""
        return (self.fences.wait(fence, FENCE_WAIT) or None) if self.fencing else None

    def stop(self) -> None:
        self.fences.lost()
        if self._stop is not None:
            self._stop.set()
            if (inotify := self._inotify) is not None:
                inotify.interrupt()

    def take(self) -> tuple[set[str] | None, list[str] | None]:
        """(the files named since the last take, as the sources name them (None: read it
        all), and if a command named some, the folders it saw move (`name`))."""
        with self._lock:
            (named, told), self._named, self._told = (self._named, self._told), set(), None
        if named is None:
            return None, told
        out = set()
        for p in named:
            for real, root in self._real.items():
                if p == real or p.startswith(real + os.sep):
                    p = root + p[len(real) :]
                    break
            out.add(p)
        return out, told

    def _watch(self, roots: tuple[str, ...], stop: threading.Event) -> None:
        try:
            if not (self.kernel and self._watch_inotify(roots, stop)):
                self._watch_rust(roots, stop)
        except Exception:  # no inotify, too many watches...: the poll carries on alone
            pass
        finally:
            self.ready.set()
            if self._stop is stop:
                self.watching = False

    def _watch_inotify(self, roots: tuple[str, ...], stop: threading.Event) -> bool:
        """inotify's events, a wake-up per read of them; False if the kernel cannot
        watch these folders (watchfiles then)."""
        from .inotify import Inotify

        try:
            inotify = Inotify(roots)
        except (OSError, AttributeError):  # (AttributeError: a libc with no inotify)
            return False
        with inotify:
            self._inotify = inotify
            since = time.time_ns()  # (every watch in place: whatever moves from here on is named)
            if not stop.is_set():
                self.since_ns = since
                self._started()
            while not stop.is_set():
                named = inotify.read()
                rest, fences = (None, []) if named is None else self.fences.apart(named)
                if named is None:
                    self.fences.lost()
                if rest is None or rest:
                    self._named_in(rest)
                    self.wake.set()
                if fences:  # (after what came before them was named)
                    self.fences.seen(fences, since)
        return True

    def _started(self) -> None:
        self.watching = True
        self.wake.set()  # whatever moved while the watches were being set up
        self.ready.set()

    def _watch_rust(self, roots: tuple[str, ...], stop: threading.Event) -> None:
        """watchfiles' RustNotify (its documented core, used here rather than `watch()` so
        the moment its watches are in place is known): a wake-up per batch of changes."""
        from watchfiles._rust_notify import RustNotify

        with RustNotify(list(roots), False, False, 300, True, True) as notify:
            self._started()
            while not stop.is_set():
                # (a batch once 10 ms pass with no change: one appended line is read at once)
                got = notify.watch(50, 10, 5000, stop)
                if got == "stop":
                    break
                if isinstance(got, set) and got:
                    try:  # (a fence here says nothing of order: set apart, never seen)
                        named: set[str] | None = self.fences.apart({str(path) for _change, path in got})[0]
                    except (TypeError, ValueError):
                        named = None
                    if named is not None and not named:
                        continue
                    self._named_in(named)
                    self.wake.set()

    def name(self, paths: list[str], folders: Iterable[str] = ()) -> None:
        """Files known to have moved (a `status --json` asking the server: io.served), read
        at the next round as if a notice had named them: the command's stat of each file
        it hangs on is the poll; `folders`, those it saw move (Huddle.read_files)."""
        with self._lock:
            if self._named is not None:
                self._named.update(paths)
            self._told = [*(self._told or ()), *folders]

    def _named_in(self, paths: set[str] | None) -> None:
        """Files a notice named (None: it named none usable, everything is read)."""
        with self._lock:
            if paths is None:
                self._named = None
            elif self._named is not None:
                self._named.update(paths)
