"""Codex token usage: one usage per model response, counted once, summing to the
thread's own cumulative total.

Codex writes, per thread, cumulative totals (`token_count.total_token_usage`, which
may be re-emitted unchanged and, in `exec fork` threads, continue the parent's
totals) and, since 0.160, one `token_usage_record` per response. The ledger emits
the per-response figures where they exist and reconciles them with the cumulative
totals: a total that moved further than the responses seen since the last total
(a compaction call, an older CLI without records) yields the difference, and
whatever the first total already held before this thread's first response is
inherited, never counted; so is the last total of a forked child's copy of its
parent's history (`inherit`): the child's own first count repeats it, and the
parent's last response with it, before the child has answered at all.
"""

from __future__ import annotations

from huddle.model.events import Usage

from .records import Tokens

Counts = tuple[int, int, int, int, int]
ZERO: Counts = (0, 0, 0, 0, 0)  # input (incl. cached), cached, cache-written, output (incl. reasoning), reasoning


def raw(t: Tokens | None) -> Counts:
    if t is None:
        return ZERO
    return (
        t.input_tokens or 0,
        t.cached_input_tokens or 0,
        t.cache_write_input_tokens or 0,
        t.output_tokens or 0,
        t.reasoning_output_tokens or 0,
    )


def to_usage(v: Counts) -> Usage:
    """Codex counts input including cached (and cache-written) input, and output
    including reasoning. huddle's Usage wants input net of both caches."""
    inp, cached, written, out, _reasoning = v
    net = inp - cached - written
    return Usage(input=net if net > 0 else 0, output=out, cache_read=cached, cache_write=written)


def _sub(a: Counts, b: Counts) -> Counts:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3], a[4] - b[4])


def _add(a: Counts, b: Counts) -> Counts:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4])


def _pos(a: Counts) -> Counts:
    return (
        a[0] if a[0] > 0 else 0,
        a[1] if a[1] > 0 else 0,
        a[2] if a[2] > 0 else 0,
        a[3] if a[3] > 0 else 0,
        a[4] if a[4] > 0 else 0,
    )


class Ledger:
    """Per thread. Feed it records and totals in file order; it says what to count."""

    def __init__(self) -> None:
        self.total: Counts | None = None  # last cumulative total seen
        self.inherited = ZERO  # what the first total held before this thread's responses
        self.pending = ZERO  # responses counted since the last total
        self.counted = ZERO  # everything counted so far (raw Codex fields)
        self.records = 0
        self.moved = False  # the last totals moved: a model response was accounted for

    def inherit(self, total: Tokens | None) -> None:
        """A cumulative total inside a copy of another thread's history (a forked
        child's): what this thread starts from, none of it its own."""
        t = raw(total)
        if t != ZERO and self.counted == ZERO:
            self.total = self.inherited = t
            self.pending = ZERO

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
        # (raw, _sub, _add and to_usage written out: the most frequent line's path, five calls less)
        t0, t1, t2, t3 = (
            total.input_tokens or 0,
            total.cached_input_tokens or 0,
            total.cache_write_input_tokens or 0,
            total.output_tokens or 0,
        )
        t = (t0, t1, t2, t3, total.reasoning_output_tokens or 0)
        before = self.total
        if before is None:
            # What the thread started with: the first total minus the responses behind it
            # (the records seen so far, or else the last response it reports).
            behind = self.pending if self.pending != ZERO else raw(last)
            before = self.inherited = self.total = _pos(_sub(t, behind))
        if t == before:
            return None  # re-emitted unchanged
        delta = (t0 - before[0], t1 - before[1], t2 - before[2], t3 - before[3], t[4] - before[4])
        if delta[0] < 0 or delta[1] < 0 or delta[2] < 0 or delta[3] < 0 or delta[4] < 0:
            # Totals went down (a rewritten or restarted count): start again from here.
            self.total, self.pending = t, ZERO
            return None
        self.total = t
        self.moved = True
        # Records not yet in the totals stay pending (a total may be re-emitted unchanged
        # after a new record); totals beyond the records are what is left to count.
        pending = self.pending
        if pending == delta:  # the records since the last total, exactly (0.160+)
            self.pending = ZERO
            return None
        if pending == ZERO:  # no records (before 0.160): the whole move (delta >= 0)
            rest = delta
        else:
            rest = _pos(_sub(delta, pending))
            self.pending = _pos(_sub(pending, delta))
            if rest == ZERO:
                return None
        c = self.counted
        self.counted = (c[0] + rest[0], c[1] + rest[1], c[2] + rest[2], c[3] + rest[3], c[4] + rest[4])
        net = rest[0] - rest[1] - rest[2]
        return Usage(input=net if net > 0 else 0, output=rest[3], cache_read=rest[1], cache_write=rest[2])
