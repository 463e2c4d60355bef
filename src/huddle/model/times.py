"""Times as the views show them (ISO 8601 in UTC, unix seconds, a project by its folder),
and times read from agents' files: the one check, made where each time is decoded.

A file can say anything: a year 9999 timestamp, 2^64 milliseconds, 1e300 seconds,
NaN. Formatting such a time raises (datetime stops at 9999), and one of them used to
take the whole board down. Here a time is a finite number of unix seconds between
1970 and 2200, or None: the event keeps no time and its line is noted (`odd`).
Standard library only.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

EARLIEST = 0.0  # 1970-01-01T00:00:00Z
LATEST = 7258118400.0  # 2200-01-01T00:00:00Z


def seconds(v: object) -> float | None:
    """Unix seconds, if `v` is a plausible time in seconds (not a bool, finite, 1970-2200)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        t = float(v)
    except OverflowError:  # an int too big for a float
        return None
    return t if math.isfinite(t) and EARLIEST <= t < LATEST else None


def millis(v: object) -> float | None:
    """Unix seconds from milliseconds (Vibe's createdAt, Claude's registry updatedAt)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        return seconds(v / 1000)
    except OverflowError:
        return None


def _iso(s: object) -> datetime | None:
    if not s or not isinstance(s, str):
        return None
    try:
        d = datetime.fromisoformat(s)
    except (TypeError, ValueError):
        return None
    return d.replace(tzinfo=UTC) if d.tzinfo is None else d


# Claude Code's own times, `2026-11-30T02:18:35.224Z`, read from parts: the minute by a
# table (each minute checked once by the general path), the seconds and milliseconds by
# tables of their digits. The unix seconds are the general path's to the bit: both divide
# the same whole number of microseconds by 10**6 (datetime.timestamp: delta.total_seconds()).
_MINUTE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:")
_minutes: dict[str, int | None] = {}  # "2026-11-30T02:18:" -> unix seconds of that minute (None: not one)
_SECONDS = {f"{n:02d}": n * 1_000_000 for n in range(60)}
_MILLIS = {f"{n:03d}": n * 1000 for n in range(1000)}


def _minute(key: str) -> int | None:
    if len(_minutes) >= 100_000:  # (a few hours of sessions use a few hundred)
        _minutes.clear()
    t = None
    if _MINUTE.fullmatch(key):
        try:
            t = int(datetime.fromisoformat(key + "00+00:00").timestamp()) * 1_000_000
        except (ValueError, OverflowError, OSError):
            t = None
    _minutes[key] = t
    return t


def parse_time(s: object) -> float | None:
    """ISO 8601 (with Z or an offset; no zone is UTC) to unix seconds; None if it is not
    one, or not between 1970 and 2200. (_iso, of_datetime and seconds inlined: every
    record of a transcript has its time read here.)"""
    if type(s) is str and len(s) == 24 and s[23] == "Z" and s[19] == ".":  # Claude Code's
        try:
            t = (_minutes[s[:17]] + _SECONDS[s[17:19]] + _MILLIS[s[20:23]]) / 1_000_000  # type: ignore[operator]
            return t if EARLIEST <= t < LATEST else None
        except KeyError:  # a minute not seen yet (then once more), or not digits where they go
            if s[:17] not in _minutes:
                _minute(s[:17])
                return parse_time(s)
        except TypeError:  # not a minute (None)
            pass
    if not s or not isinstance(s, str):
        return None
    try:
        d = datetime.fromisoformat(s)
    except (TypeError, ValueError):
        return None
    if d.tzinfo is None:
        d = d.replace(tzinfo=UTC)
    try:
        t = d.timestamp()  # a float, always finite
    except (OverflowError, OSError, ValueError):
        return None
    return t if EARLIEST <= t < LATEST else None


def out_of_range(v: object) -> bool:
    """A time, but not between 1970 and 2200 (year 9999, 1e300 s, 2^64 ms): such a one is
    noted where it is read; text that is no time at all is the parser's own affair."""
    if isinstance(v, datetime):  # (the common case first, cheaply)
        return not 1970 < v.year < 2199 and of_datetime(v) is None
    if isinstance(v, str):
        d = _iso(v)
        return d is not None and of_datetime(d) is None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return seconds(v) is None


def of_datetime(d: datetime) -> float | None:
    """Unix seconds of a decoded datetime (no zone is UTC), checked."""
    if d.tzinfo is None:
        d = d.replace(tzinfo=UTC)
    try:
        t = d.timestamp()  # a float, always finite: `seconds` inlined (a Codex line's time comes here)
    except (OverflowError, OSError, ValueError):
        return None
    return t if EARLIEST <= t < LATEST else None


def iso(t: float | None) -> str | None:
    """ISO 8601 in UTC with milliseconds; None for no time (or one that is not a time:
    it never raises, whatever reached it)."""
    if type(t) is not float or not EARLIEST <= t < LATEST:  # (a float in range: the common case, then no check)
        t = seconds(t)
        if t is None:
            return None
    # isoformat(timespec="milliseconds") and the zone replaced, as text sliced (twice as fast: a
    # hub's --by session says 50,000 of them): "…T02:18:35.224123+00:00", or "…T02:18:35+00:00" on a second
    s = datetime.fromtimestamp(t, UTC).isoformat()
    return s[:23] + "Z" if len(s) == 32 else s[:19] + ".000Z"


def odd(value: object) -> str:
    """The one line that notes a time that is not one."""
    shown = repr(value)
    return f"time {shown[:40]} is not between 1970 and 2200: kept without a time"


def project_name(cwd: str) -> str:
    return cwd.rstrip("/").rsplit("/", 1)[-1] if cwd else ""
