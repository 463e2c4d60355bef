"""Which board rows to show: `huddle status --state/--project/--since/--all` and the
same filters on GET /api/sessions (`?state=&project=&since=`), so the CLI's --json is the
route's answer with the same filters.

`since` keeps the sessions that moved since then and every live one (a session that
waits on you is shown however long ago it last wrote). The table, with no filter, shows
the live and the recent (`RECENT`), never an archived one (a thread its agent put away:
Codex's own resume list hides them); `--all` shows everything.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from huddle.errors import BadRequest
from huddle.model.attention import ENDED, IDLE, STATES
from huddle.model.rows import Row
from huddle.model.times import parse_time

RECENT = "24h"  # the table's default window
ALIASES = {s.replace("_", "-"): s for s in STATES} | {"waiting-on-subagent": "waiting", "needs": "needs_you"}


def parse_states(values: Iterable[str] | str | None) -> frozenset[str] | None:
    """`needs_you,working` or repeated values, `needs-you` spelled either way."""
    if values is None:
        return None
    items = [values] if isinstance(values, str) else list(values)
    out = set()
    for item in items:
        for v in item.split(","):
            v = v.strip().lower()
            if not v:
                continue
            v = ALIASES.get(v, v)
            if v not in STATES:
                raise BadRequest(f"bad state: {v[:30]!r} (one of {', '.join(STATES)})")
            out.add(v)
    return frozenset(out) or None


def parse_window(value: str | None) -> float | None:
    if value is None or value == "":
        return None
    from huddle.views.when import user_time

    return user_time(value, "since")


def is_live(row: Row) -> bool:
    return row.state not in (ENDED, IDLE)


class Select:
    def __init__(
        self, states: object = None, project: object = None, since: object = None, hide_archived: bool = False
    ) -> None:
        self.hide_archived = hide_archived
        self.states = parse_states(states if isinstance(states, (str, list, tuple)) else None)
        self.project = project.strip().lower() if isinstance(project, str) and project.strip() else None
        self.since_text = since if isinstance(since, str) and since else None
        self.since = parse_window(self.since_text)

    @property
    def any(self) -> bool:
        return bool(self.states or self.project or self.since is not None or self.hide_archived)

    def keeps(self, row: Row) -> bool:
        if self.hide_archived and row.archived:
            return False
        if self.states and row.state not in self.states:
            return False
        if self.project:
            where = f"{row.project or ''}\n{row.cwd or ''}".lower()
            if self.project not in where:
                return False
        if self.since is not None and not is_live(row):
            t = parse_time(row.updated_at)
            if t is None or t < self.since:
                return False
        return True

    def apply(self, board: dict[str, Any]) -> dict[str, Any]:
        if not self.any:
            return board
        out = dict(board)
        out["sessions"] = [r for r in board.get("sessions", []) if self.keeps(r)]
        return out
