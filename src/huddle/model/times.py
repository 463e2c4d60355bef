"""Times and names as the views show them: ISO 8601 in UTC, unix seconds, a project by its folder."""

from __future__ import annotations

from datetime import UTC, datetime


def iso(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_time(s: str | None) -> float | None:
    """ISO 8601 (with Z or an offset) to unix seconds; None if it is not one."""
    if not s:
        return None
    try:
        d = datetime.fromisoformat(s)
    except (TypeError, ValueError):
        return None
    if d.tzinfo is None:
        d = d.replace(tzinfo=UTC)
    return d.timestamp()


def project_name(cwd: str) -> str:
    return cwd.rstrip("/").rsplit("/", 1)[-1] if cwd else ""
