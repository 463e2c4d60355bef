"""A store's latest known time, as its records tell it."""

from __future__ import annotations

from huddle.model.events import Event


class Clock:
    """The last time a record carried. Usage told before any time is known (an action
    result carries none) takes the next time a record tells, or the last one."""

    __slots__ = ("last_t", "untimed")

    def __init__(self) -> None:
        self.last_t: float | None = None
        self.untimed: list[Event] = []

    def saw(self, t: float | None) -> None:
        if t is None:
            return
        self.last_t = t
        for e in self.untimed:
            e.t = t
        self.untimed.clear()

    def flush(self) -> None:
        for e in self.untimed:
            e.t = e.t if e.t is not None else self.last_t
        self.untimed.clear()
