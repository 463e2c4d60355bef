"""What the tests read of a board or a row: its JSON's values (`huddle status --json`,
GET /api/sessions), the contract scripts outside huddle rely on. The library gives
typed rows (huddle.model.rows); a test asserting on a field by its JSON name reads
them as JSON says them."""

from __future__ import annotations

from typing import Any

import msgspec

from huddle.model.rows import AgentRow, Row


def as_json(value: Any) -> Any:
    """A board, a row, or anything holding typed rows, as plain JSON values."""
    return msgspec.to_builtins(value)


_A_ROW: dict[str, Any] = {
    "id": "s",
    "source": "claude",
    "title": None,
    "cwd": None,
    "project": "",
    "started_at": None,
    "updated_at": None,
    "usage": {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0},
    "models": {},
    "agents": [],
    "events": {},
    "skipped_lines": 0,
}
_AN_AGENT: dict[str, Any] = {
    "name": "",
    "label": "",
    "type": "",
    "tool_use_id": None,
    "usage": _A_ROW["usage"],
    "quiet": False,
}


def row(**fields: Any) -> Row:
    """A board row with these fields said as JSON says them (the rest: a row with
    nothing in it), agents with theirs (`id` and `parent` given)."""
    agents = [{**_AN_AGENT, "parent": None, **a} for a in fields.pop("agents", ())]
    return msgspec.convert({**_A_ROW, **fields, "agents": agents}, Row)


def as_agent(fields: dict[str, Any]) -> AgentRow:
    """An agent of a row with these fields (the rest: an agent with nothing in it)."""
    return msgspec.convert({**_AN_AGENT, "parent": None, **fields}, AgentRow)
