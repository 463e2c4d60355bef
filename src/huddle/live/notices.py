"""The agents' folders watched (watchfiles): a wake-up for the watcher, and the files
each notice named, as the sources name them (a folder reached through a symlink is
watched at its real path).

watchfiles is only a hint: whatever it says, the core's reads decide what changed (a
missed or spurious notice costs nothing but a poll). Its own thread; `wake` is set on
every batch.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable


class Notices:
    def __init__(self, wake: threading.Event, threads: list[threading.Thread]) -> None:
        self.wake = wake
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

    def ensure(self, roots: list[str], given: Callable[[], list[str]]) -> None:
        """Watch these folders (`roots`, real paths; `given()`: the same as the sources
        name them), those that exist now; start again when that set changes."""
        now = tuple(sorted(r for r in set(roots) if os.path.isdir(r)))
        self._real = {os.path.realpath(r): r for r in given()}
        if now == self.watched and (self.watching or not now):
            return
        self.stop()
        self.watched = now
        self.watching = False
        if not now:
            return
        stop = self._stop = threading.Event()
        t = threading.Thread(target=self._watch, args=(now, stop), name="huddle-watch", daemon=True)
        t.start()
        self.threads.append(t)

    def stop(self) -> None:
        if self._stop is not None:
            self._stop.set()

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
        """watchfiles' RustNotify (its documented core, used here rather than `watch()` so
        the moment its watches are in place is known): a wake-up per batch of changes."""
        try:
            from watchfiles._rust_notify import RustNotify

            with RustNotify(list(roots), False, False, 300, True, True) as notify:
                self.watching = True
                self.wake.set()  # whatever moved while the watches were being set up
                self.ready.set()
                while not stop.is_set():
                    # (a batch once 10 ms pass with no change: one appended line is read at once)
                    got = notify.watch(50, 10, 5000, stop)
                    if got == "stop":
                        break
                    if isinstance(got, set) and got:
                        self._named_in(got)
                        self.wake.set()
        except Exception:  # no inotify, too many watches...: the poll carries on alone
            pass
        finally:
            self.ready.set()
            if self._stop is stop:
                self.watching = False

    def name(self, paths: list[str], folders: Iterable[str] = ()) -> None:
        """Files known to have moved (a `status --json` asking the server: io.served), read
        at the next round as if a notice had named them: the command's stat of each file
        it hangs on is the poll; `folders`, those it saw move (Huddle.read_files)."""
        with self._lock:
            if self._named is not None:
                self._named.update(paths)
            self._told = [*(self._told or ()), *folders]

    def _named_in(self, got: set) -> None:
        with self._lock:
            if self._named is not None:
                try:
                    self._named.update(str(path) for _change, path in got)
                except (TypeError, ValueError):
                    self._named = None
