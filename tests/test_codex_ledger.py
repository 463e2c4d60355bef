"""The Codex ledger's totals, worked out inline (the most frequent line's path), against
the same rule said through its helpers (raw, _sub, _pos, _add, to_usage): the same usage
and the same state after any run of records, totals and inherited totals."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from huddle.model.events import Usage
from huddle.sources.codex.records import Tokens
from huddle.sources.codex.usage import ZERO, Ledger, _add, _pos, _sub, raw, to_usage


def plain_totals(ledger: Ledger, total: Tokens | None, last: Tokens | None) -> Usage | None:
    """Ledger.totals as it read before it was written out inline."""
    ledger.moved = False
    if total is None:
        return None
    t = raw(total)
    if ledger.total is None:
        behind = ledger.pending if ledger.pending != ZERO else raw(last)
        ledger.inherited = _pos(_sub(t, behind))
        ledger.total = ledger.inherited
    if t == ledger.total:
        return None
    delta = _sub(t, ledger.total)
    if min(delta) < 0:
        ledger.total, ledger.pending = t, ZERO
        return None
    ledger.total = t
    ledger.moved = True
    pending = ledger.pending
    if pending == delta:
        ledger.pending = ZERO
        return None
    rest = delta if pending == ZERO else _pos(_sub(delta, pending))
    if pending != ZERO:
        ledger.pending = _pos(_sub(pending, delta))
        if rest == ZERO:
            return None
    ledger.counted = _add(ledger.counted, rest)
    return to_usage(rest)


count = st.one_of(st.none(), st.integers(0, 40), st.integers(-5, 10**13))
tokens = st.builds(
    Tokens,
    input_tokens=count,
    cached_input_tokens=count,
    cache_write_input_tokens=count,
    output_tokens=count,
    reasoning_output_tokens=count,
)
step = st.tuples(st.sampled_from(("record", "totals", "inherit")), st.one_of(st.none(), tokens), st.none() | tokens)


def _state(ledger: Ledger) -> tuple[object, ...]:
    return (ledger.total, ledger.inherited, ledger.pending, ledger.counted, ledger.records, ledger.moved)


@settings(max_examples=400, deadline=None)
@given(st.lists(step, max_size=30))
def test_inline_totals_say_what_the_helpers_say(steps):
    fast, plain = Ledger(), Ledger()
    for kind, a, b in steps:
        if kind == "record":
            assert fast.record(a) == plain.record(a)
        elif kind == "inherit":
            fast.inherit(a)
            plain.inherit(a)
        else:
            assert fast.totals(a, b) == plain_totals(plain, a, b)
        assert _state(fast) == _state(plain)
