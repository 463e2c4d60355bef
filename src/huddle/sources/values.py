"""What a record's odd-but-valid values become, for the adapters whose formats hold
counts and nested JSON as the agent wrote them: one owner, so two readers of the same
odd value never disagree (a count that is null, negative, NaN or a float; a JSON piece
too big to build or broken; a time that is not text)."""

from __future__ import annotations

import math
from typing import Any

import msgspec
from msgspec import Raw

from huddle.model.times import parse_time

Number = int | float | None
_decode_any = msgspec.json.Decoder().decode


def count(v: object) -> int:
    """A token count: odd values (null, negative, NaN, a float) as what they can mean."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return 0
    if isinstance(v, float):
        return int(v) if math.isfinite(v) and v > 0 else 0
    return v if v > 0 else 0


def loose(raw: Raw | bytes | str, limit: int = 1 << 22) -> Any:
    """A JSON value, or None when absent, too big to build, or broken."""
    if not raw or len(raw) > limit:
        return None
    try:
        return _decode_any(raw)
    except (msgspec.DecodeError, RecursionError):  # (RecursionError: nested too deep)
        return None


def when(s: object) -> float | None:
    """A time given as text (else none)."""
    return parse_time(s) if isinstance(s, str) else None
