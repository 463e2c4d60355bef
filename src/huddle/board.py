"""The board: every session, as `huddle status --json` and `GET /api/sessions` give it."""

from __future__ import annotations

from datetime import datetime, timezone

from .session import parse_time


def parse_at(value: str) -> float | None:
    """A time given on the command line: unix seconds or ISO 8601."""
    try:
        return float(value)
    except ValueError:
        pass
    t = parse_time(value)
    return t


def board_json(h, at: float | None = None) -> dict:
    sessions = [s.summary() for s in h.sessions()]
    sessions.sort(key=lambda d: d.get("updated_at") or "", reverse=True)
    out = {"sessions": sessions}
    if h.notes:
        out["notes"] = list(h.notes)
    return out


def now() -> float:
    return datetime.now(timezone.utc).timestamp()
