"""Codex token usage: one usage per model response, counted once, summing to the
thread's own cumulative total.

Codex writes, per thread, cumulative totals (`token_count.total_token_usage`, which
may be re-emitted unchanged and, in `exec fork` threads, continue the parent's
totals) and, since 0.160, one `token_usage_record` per response. The ledger emits
the per-response figures where they exist and reconciles them with the cumulative
totals: a total that moved further than the responses seen since the last total
(a compaction call, an older CLI without records) yields the difference, and
whatever the first total already held before this thread's first response is
inherited, never counted.
"""

from __future__ import annotations

from ..events import Usage
from .codex_records import Tokens

FIELDS = ("input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens", "reasoning_output_tokens")


def raw(t: Tokens | None) -> tuple[int, ...]:
    if t is None:
        return (0,) * len(FIELDS)
    return tuple(int(getattr(t, f) or 0) for f in FIELDS)


def to_usage(v: tuple[int, ...]) -> Usage:
    """Codex counts input including cached (and cache-written) input, and output
    including reasoning. huddle's Usage wants input net of both caches."""
    inp, cached, written, out, _reasoning = v
    return Usage(input=max(0, inp - cached - written), output=out, cache_read=cached, cache_write=written)


def _sub(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(x - y for x, y in zip(a, b))


def _add(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(x + y for x, y in zip(a, b))


ZERO = (0,) * len(FIELDS)


class Ledger:
    """Per thread. Feed it records and totals in file order; it says what to count."""

    def __init__(self) -> None:
        self.total: tuple[int, ...] | None = None  # last cumulative total seen
        self.inherited = ZERO  # what the first total held before this thread's responses
        self.pending = ZERO  # responses counted since the last total
        self.counted = ZERO  # everything counted so far (raw Codex fields)
        self.records = 0
        self.moved = False  # the last totals moved: a model response was accounted for

    def record(self, usage: Tokens | None) -> Usage | None:
        """A `token_usage_record`: one response. Count it."""
        v = raw(usage)
        if v == ZERO:
            return None
        self.records += 1
        self.pending = _add(self.pending, v)
        self.counted = _add(self.counted, v)
        return to_usage(v)

    def totals(self, total: Tokens | None, last: Tokens | None) -> Usage | None:
        """A `token_count` with cumulative totals. Returns what is left to count, if any."""
        self.moved = False
        if total is None:
            return None
        t = raw(total)
        if self.total is None:
            # What the thread started with: the first total minus the responses behind it
            # (the records seen so far, or else the last response it reports).
            behind = self.pending if self.pending != ZERO else raw(last)
            self.inherited = tuple(max(0, x) for x in _sub(t, behind))
            self.total = self.inherited
        delta = _sub(t, self.total)
        if any(x < 0 for x in delta):
            # Totals went down (a rewritten or restarted count): start again from here.
            self.total, self.pending = t, ZERO
            return None
        self.total = t
        self.moved = delta != ZERO
        # Records not yet in the totals stay pending (a total may be re-emitted unchanged
        # after a new record); totals beyond the records are what is left to count.
        rest = tuple(max(0, d - p) for d, p in zip(delta, self.pending))
        self.pending = tuple(max(0, p - d) for d, p in zip(delta, self.pending))
        if rest == ZERO:
            return None
        self.counted = _add(self.counted, rest)
        return to_usage(rest)
