"""Token usage in Claude Code's stream-json, counted once per message: the one rule for
the hosted source (which turns it into usage events) and for `huddle run`'s live line
(which shows the totals as they grow).

With partial messages on (`stream_event` lines), a message's usage is known from its
`message_start` and final at its `message_delta`. With them off, each `assistant` line
(one per content block) repeats the message_start usage, and the turn's sum comes with
the `result`. Sub-agents' messages never get a final usage on stdout: their totals
arrive unsplit (`usage.total_tokens` of task_progress / task_notification).
"""

from __future__ import annotations

from huddle.model.events import Usage

_FIELDS = ("input", "output", "cache_read", "cache_write", "cache_write_1h")


def _clean(u: Usage) -> Usage:
    """A copy without negative counts (a hostile or broken line counts as nothing)."""
    return Usage(*(max(0, getattr(u, f)) for f in _FIELDS))


class StreamLedger:
    """Feed it the stream's usage in order; each call returns what is now final, to
    count once (None when nothing is)."""

    def __init__(self) -> None:
        self.partials = False  # stream_event lines seen: messages get their final usage
        self.open: dict[str, Usage] = {}  # partials on: message id -> its usage so far
        self.counted: set[str] = set()
        self.turn: dict[str, Usage] = {}  # partials off: message id -> usage, since the last result
        self.tasks: dict[str, int] = {}  # sub-agent -> its unsplit total, not yet counted

    def started(self, mid: str, u: Usage) -> None:
        """A message_start (partials on)."""
        self.partials = True
        if mid and mid not in self.counted:
            self.open[mid] = _clean(u)

    def delta(self, mid: str, final: Usage) -> Usage | None:
        """A message_delta: the message's final usage (what it gives; the rest stands)."""
        self.partials = True
        if not mid or mid in self.counted:
            return None
        u = self.open.pop(mid, None) or Usage()
        final = _clean(final)
        for f in _FIELDS:
            if getattr(final, f) or f == "output":
                setattr(u, f, getattr(final, f))
        self.counted.add(mid)
        return u

    def assistant(self, mid: str, u: Usage) -> None:
        """An assistant line of the lead (not a sub-agent's, not `<synthetic>`)."""
        if not mid:
            return
        if self.partials:
            if mid not in self.counted:
                self.open.setdefault(mid, _clean(u))
        else:
            self.turn.setdefault(mid, _clean(u))

    def result(self, u: Usage | None) -> Usage | None:
        """A `result`: with partials off, the turn's usage (its own figure, or else the
        sum of its messages). With partials on its messages were counted already."""
        if self.partials:
            return None
        turn = _clean(u) if u is not None else Usage()
        if not turn.total:
            for m in self.turn.values():
                turn.add(m)
        self.turn.clear()
        return turn

    def task(self, sub: str, total: int) -> None:
        """A sub-agent's running total (task_progress / task_notification)."""
        if sub:
            self.tasks[sub] = max(self.tasks.get(sub, 0), total if total > 0 else 0)

    def task_done(self, sub: str) -> int:
        """A sub-agent finished: its unsplit total, to count once."""
        return self.tasks.pop(sub, 0)

    def settle(self) -> tuple[list[tuple[str, Usage]], Usage | None]:
        """The run ended: messages never made final, and a turn never closed by a result."""
        left = [(mid, u) for mid, u in self.open.items() if mid not in self.counted]
        self.counted.update(mid for mid, _ in left)
        self.open.clear()
        turn = None
        if self.turn:
            turn = Usage()
            for m in self.turn.values():
                turn.add(m)
            self.turn.clear()
        return left, turn

    def in_flight(self) -> Usage:
        """Usage known but not final yet (the live line shows it)."""
        out = Usage()
        for u in (*self.open.values(), *self.turn.values()):
            out.add(u)
        return out
