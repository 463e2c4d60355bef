"""Times from files, checked where they are decoded (model/times): a finite number of
seconds between 1970 and 2200, or none; formatting never raises."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from huddle.model import times


def test_times_outside_1970_to_2200_are_no_times():
    assert times.seconds(1796126186.5) == 1796126186.5
    for bad in (1e300, -1.0, math.inf, math.nan, 2**64, 10**400, True, "1796126186", None):
        assert times.seconds(bad) is None
    assert times.millis(1796126186500) == 1796126186.5 and times.millis(2**64) is None
    assert times.parse_time("2026-11-30T03:04:14.193Z") == 1796007854.193
    assert times.parse_time("9999-12-31T23:59:59Z") is None and times.parse_time("soon") is None
    assert times.out_of_range("9999-12-31T23:59:59Z") and not times.out_of_range("soon")
    assert times.out_of_range(datetime(9999, 1, 1, tzinfo=UTC)) and times.out_of_range(1e300)


@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(), st.none()))
def test_formatting_never_raises(v):
    out = times.iso(v)
    assert out is None or (out.endswith("Z") and 1970 <= int(out[:4]) < 2200)


def _of_datetime_as_it_was(d):
    if d.tzinfo is None:
        d = d.replace(tzinfo=UTC)
    try:
        return times.seconds(d.timestamp())
    except (OverflowError, OSError, ValueError):
        return None


def _parse_time_as_it_was(s):
    d = times._iso(s)
    return _of_datetime_as_it_was(d) if d is not None else None


@given(
    st.datetimes(timezones=st.sampled_from([None, UTC, timezone(timedelta(hours=-7)), timezone(timedelta(hours=14))]))
)
def test_of_datetime_inlined_reads_every_time_as_before(d):
    assert times.of_datetime(d) == _of_datetime_as_it_was(d)


@given(
    st.one_of(
        st.datetimes(timezones=st.sampled_from([None, UTC])).map(lambda d: d.isoformat()),
        st.datetimes().map(lambda d: d.isoformat(timespec="milliseconds") + "Z"),
        st.text(max_size=30),
        st.sampled_from(["", "2026-11-30T03:35:23.091Z", "9999-12-31T23:59:59Z", "1969-12-31T23:59:59Z", "2026-13-01"]),
        st.none(),
        st.integers(),
    )
)
def test_parse_time_inlined_reads_every_value_as_before(s):
    """parse_time inlines _iso / of_datetime / seconds (it runs for every record):
    the same number, or None, for any value."""
    assert times.parse_time(s) == _parse_time_as_it_was(s)


_CLAUDE_TIME = st.datetimes(min_value=datetime(1960, 1, 1), max_value=datetime(2210, 1, 1)).map(
    lambda d: d.isoformat(timespec="milliseconds") + "Z"
)


@given(
    _CLAUDE_TIME,
    st.lists(
        st.tuples(st.integers(0, 23), st.sampled_from(list("0123456789:-.TZ +_x") + ["\u0663", "\u00b2", "\uff11"])),
        max_size=3,
    ),
)
def test_claude_codes_own_times_read_from_their_parts_as_the_general_path_reads_them(s, changes):
    """Claude Code's `2026-11-30T02:18:35.224Z` is read from its parts (its minute once,
    its seconds and milliseconds by tables): the same float as fromisoformat + timestamp,
    or None alike, for that form with any character changed (non-ASCII digits too)."""
    chars = list(s)
    for at, c in changes:
        chars[at] = c
    s = "".join(chars)
    times._minutes.clear()
    cold = times.parse_time(s)
    assert cold == _parse_time_as_it_was(s)
    assert times.parse_time(s) == cold  # its minute known now


def _iso_as_it_was(v):
    t = times.seconds(v)
    if t is None:
        return None
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@given(
    st.one_of(
        st.floats(min_value=-1.0, max_value=times.LATEST + 1.0),
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(min_value=-10, max_value=2**64),
        st.sampled_from([0.0, 5e-7, 4.9e-7, 0.9994999, 0.9995, 0.9999995, 1796007854.9999995, times.LATEST - 1e-6]),
        st.none(),
    )
)
def test_iso_formats_as_before(v):
    assert times.iso(v) == _iso_as_it_was(v)
