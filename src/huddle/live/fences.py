"""Fences: how a running server knows, without a stat, that it has heard of every write
made before a `huddle status --json` asked it (huddle.io.served).

The command creates a file of its own in `$HUDDLE_HOME/run/fences` before it asks. The
server watches that folder with the same inotify instance as the agents' folders, and
the kernel queues one instance's events in the order they happened: once the fence's
creation is read, every write made before the command started has been named too
(live.notices). A round that reads what those notices named is then as good as the
command's stat of every file its stored answer hangs on, at none of its cost. Only the
kernel's notices say this; watchfiles' batches and a poll do not, and a server there
declines a fence (the command stats, as before).
"""

from __future__ import annotations

import os
import threading

FENCE_WAIT = 1.0  # seconds a fence may take to be read: the kernel queued it at once
KEEP = 256  # names seen and never waited on (a fence's removal, a command that died): the oldest go


class Fences:
    def __init__(self) -> None:
        self.folder: str | None = None  # set by the status socket: watched with the agents' folders
        self._seen: dict[str, int] = {}  # fence name -> when its watches were all in place (ns)
        self._cond = threading.Condition()
        self._lost = 0  # how many times notices were lost (an overflow, a restart): waits end

    def apart(self, named: set[str]) -> tuple[set[str], list[str]]:
        """(`named` without the fence folder and what is in it, the fences' names)."""
        folder = self.folder
        if not folder or not named:
            return named, []
        prefix = folder + os.sep
        fences = [p for p in named if p.startswith(prefix)]
        if not fences and folder not in named:
            return named, []
        return {p for p in named if p != folder and not p.startswith(prefix)}, [p[len(prefix) :] for p in fences]

    def seen(self, names: list[str], since_ns: int) -> None:
        """Fences read by the watches in place since `since_ns` (told after what came
        with them was named)."""
        with self._cond:
            for n in names:
                self._seen[n] = since_ns
            while len(self._seen) > KEEP:
                del self._seen[next(iter(self._seen))]
            self._cond.notify_all()

    def lost(self) -> None:
        """Notices were lost (the kernel's queue overflowed, the watches were set anew):
        a fence among them is never seen, so whoever waits on one stops waiting."""
        with self._cond:
            self._lost += 1
            self._cond.notify_all()

    def wait(self, name: str, timeout: float) -> int | None:
        """When the watches that saw the fence `name` were all in place (ns), once it is
        seen (waiting up to `timeout` seconds); None if it was not, or notices were lost
        meanwhile."""
        with self._cond:
            lost = self._lost
            if not self._cond.wait_for(lambda: name in self._seen or self._lost != lost, timeout):
                return None
            return self._seen.pop(name, None)

    def clear(self) -> None:
        """Stale fence files gone (a command that died before removing its own)."""
        folder = self.folder
        if not folder:
            return
        try:
            names = os.listdir(folder)
        except OSError:
            return
        for n in names:
            try:
                os.unlink(os.path.join(folder, n))
            except OSError:
                pass
