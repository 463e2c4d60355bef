"""Times a user types: `--since`/`--until` on the command line, `?since=`/`?until=` on a
route. One parser and one wording of its error, whichever door the time came through."""

from __future__ import annotations

import time

from huddle.errors import BadRequest
from huddle.model.times import parse_time

_AGO = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
FORMS = "30m, 2h, 3d, 1w, YYYY-MM-DD or an ISO 8601 time"  # what the error says is understood


def parse_since(text: str, now: float | None = None) -> float | None:
    """A time ago (`30m`, `2h`, `3d`, `1w`), a date (YYYY-MM-DD or YYYYMMDD, UTC
    midnight) or an ISO 8601 time, as unix seconds; None if none of those."""
    text = text.strip()
    if len(text) >= 2 and text[-1].lower() in _AGO and text[:-1].replace(".", "", 1).isdigit():
        return (time.time() if now is None else now) - float(text[:-1]) * _AGO[text[-1].lower()]
    if len(text) == 8 and text.isdigit():  # YYYYMMDD, as ccusage accepts
        text = f"{text[:4]}-{text[4:6]}-{text[6:]}"
    return parse_time(text.replace(" ", "T", 1) if len(text) > 10 else text)


def user_time(value: object, what: str) -> float | None:
    """A time parameter named `what` (since, until): None when not given; a BadRequest
    in the one wording when it is no time."""
    if value is None or value == "":
        return None
    t = parse_since(value) if isinstance(value, str) else None
    if t is None:
        raise BadRequest(f"bad {what}: {str(value)[:40]!r} ({FORMS})")
    return t
