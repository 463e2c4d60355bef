"""How long a new state is held before it shows: a flicker helps no one, a move of the
process's own word is never held."""

from __future__ import annotations

import time

from . import State


class Debouncer:
    """Hold a new state until it has lasted `hold` seconds: the pid file and the
    transcript can disagree for ~0.3 s (either may lead), and a flicker helps no one.
    A change that comes with a move of the process's own word (`signal`: the liveness
    and the status it reports, such as a registry flip to "waiting" or a lock released)
    is not a flicker and shows at once: that is the moment a person must see."""

    def __init__(self, hold: float = 0.5):
        self.hold = hold
        self.shown: dict[str, State] = {}
        self.pending: dict[str, tuple[State, float]] = {}
        self.signals: dict[str, object] = {}

    def __call__(self, key: str, st: State, now: float | None = None, signal: object = None) -> State:
        now = time.monotonic() if now is None else now
        shown = self.shown.get(key)
        moved = signal is not None and key in self.signals and self.signals[key] != signal
        if signal is not None:
            self.signals[key] = signal
        if shown is None or shown.state == st.state or moved:
            self.shown[key] = st
            self.pending.pop(key, None)
            return st
        p = self.pending.get(key)
        if p is None or p[0].state != st.state:
            self.pending[key] = (st, now)
            return shown
        if now - p[1] >= self.hold:
            self.shown[key] = st
            del self.pending[key]
            return st
        return shown
