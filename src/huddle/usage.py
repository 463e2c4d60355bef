"""Token totals and cost across every session of every agent (`huddle usage`).

Built only from the sessions' `usage` events (one per model response, sub-agents
included). Counted once: within a session the source already counted each response
once (what `session.model_usage` sums); across sessions a response is identified by
its source and response id, so a fork's copied history or a record seen in two
sessions counts a single time, in the session that started first. `copied` events
(fork history a source already recognised) are never counted.

`report()` returns plain data: `huddle usage --json` prints exactly it, and the web
app can serve the same.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Iterator

from . import events as ev
from .events import Event, Usage
from .pricing import Table, current, model_name
from .session import Session, iso, parse_time, project_name

GROUPS = ("day", "session", "project", "model", "agent")
UNKNOWN_DAY = "unknown"


def parse_since(text: str) -> float | None:
    """`--since`: a date (YYYY-MM-DD, UTC midnight) or an ISO 8601 time; None if neither."""
    text = text.strip()
    if len(text) == 8 and text.isdigit():  # YYYYMMDD, as ccusage accepts
        text = f"{text[:4]}-{text[4:6]}-{text[6:]}"
    t = parse_time(text.replace(" ", "T", 1) if len(text) > 10 else text)
    return t


def counted_usage(sessions: list[Session], since: float | None = None,
                  stats: dict | None = None) -> Iterator[tuple[Session, Event]]:
    """Every usage event to count, once. Sessions are walked oldest first so that a
    response seen in two sessions is credited to the one that made it before the copy.
    Inside one session every usage event counts: the source already de-duplicated
    them, and some sources reuse an id for successive increments of one total."""
    owner: dict[tuple[str, str], str] = {}  # (source, response id) -> the session counting it
    dupes = 0
    order = sorted(sessions, key=lambda s: (s.started_at is None, s.started_at or 0.0, s.key))
    for s in order:
        if not s.counts.get(ev.USAGE):
            continue
        src = s.source
        for e in s.events:
            if e.kind != ev.USAGE or e.usage is None or e.copied:
                continue
            if e.id and owner.setdefault((src, e.id), s.key) != s.key:
                dupes += 1
                continue
            if since is not None and (e.t is None or e.t < since):
                continue
            yield s, e
    if stats is not None:
        stats["duplicates"] = dupes


class Line:
    """One row being summed."""

    __slots__ = ("usage", "cost", "priced", "unpriced", "responses", "sessions", "models", "first", "info")

    def __init__(self, info: dict | None = None) -> None:
        self.usage = Usage()
        self.cost = 0.0
        self.priced = False
        self.unpriced: dict[str, int] = {}  # model -> tokens
        self.responses = 0
        self.sessions: set[str] = set()
        self.models: set[str] = set()
        self.first: float | None = None
        self.info = info or {}

    def add(self, s: Session, e: Event, model: str, cost: float | None) -> None:
        u = e.usage
        self.usage.add(u)
        self.responses += 1
        self.sessions.add(s.key)
        self.models.add(model)
        if cost is None:
            self.unpriced[model] = self.unpriced.get(model, 0) + u.total
        else:
            self.cost += cost
            self.priced = True
        if e.t is not None and (self.first is None or e.t < self.first):
            self.first = e.t

    def to_dict(self) -> dict:
        d = self.usage.to_dict()
        d["total_tokens"] = self.usage.total
        d["cost_usd"] = round(self.cost, 6) if self.priced else (None if self.unpriced else 0.0)
        d["unpriced"] = sorted(self.unpriced)
        d["models"] = sorted(self.models)
        d["responses"] = self.responses
        d["sessions"] = len(self.sessions)
        return d


def _key(by: str, s: Session, e: Event, model: str) -> tuple[str, dict | None]:
    if by == "day":
        if e.t is None:
            return UNKNOWN_DAY, None
        return datetime.fromtimestamp(e.t, timezone.utc).date().isoformat(), None
    if by == "session":
        return s.key, {"source": s.source, "session": s.id, "title": s.title,
                       "project": project_name(s.cwd), "started_at": iso(s.started_at)}
    if by == "project":
        return project_name(s.cwd) or "(no project)", None
    if by == "model":
        return model, None
    # agent: the lead, or the sub-agent's type, per source, across sessions
    a = s.agents.get(e.agent)
    if e.agent == s.lead_id or a is None:
        kind = "lead"
    else:
        kind = a.kind or "sub-agent"
    return f"{s.source}:{kind}", {"source": s.source, "agent": kind}


def report(huddle, by: str = "day", since: float | None = None, table: Table | None = None) -> dict:
    """Token totals and cost grouped `by` day (UTC), session, project, model or agent,
    from usage at or after `since` (unix seconds). Reads what `huddle` holds: call
    `huddle.refresh()` first."""
    if by not in GROUPS:
        raise ValueError(f"by must be one of {', '.join(GROUPS)}")
    t = table or current(huddle.settings.huddle_home)
    lines: dict[str, Line] = {}
    total = Line()
    by_source: dict[str, int] = {}
    stats: dict = {}
    for s, e in counted_usage(huddle.sessions(), since, stats):
        model = model_name(e.name)
        p = t.price(model)
        cost = p.request_cost(e.usage) if p is not None else None
        key, info = _key(by, s, e, model)
        line = lines.get(key)
        if line is None:
            line = lines[key] = Line(info)
        line.add(s, e, model, cost)
        total.add(s, e, model, cost)
        by_source[s.source] = by_source.get(s.source, 0) + 1
    rows = []
    for key, line in _ordered(by, lines):
        d = {"key": key, **line.info, **line.to_dict()}
        rows.append(d)
    totals = total.to_dict()
    unpriced = [
        {"model": m, "tokens": n} for m, n in sorted(total.unpriced.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    return {
        "by": by,
        "since": iso(since),
        "rows": rows,
        "totals": totals,
        "unpriced": unpriced,
        "pricing": t.describe(),
        "counted": {
            "responses": total.responses,
            "duplicates_skipped": stats.get("duplicates", 0),
            "by_source": dict(sorted(by_source.items())),
        },
        "notes": list(getattr(huddle, "notes", []) or []),
    }


def _ordered(by: str, lines: dict[str, Line]) -> list[tuple[str, Line]]:
    items = list(lines.items())
    if by == "day":
        return sorted(items, key=lambda kv: (kv[0] == UNKNOWN_DAY, kv[0]))
    if by == "session":
        return sorted(items, key=lambda kv: (kv[1].first is None, kv[1].first or 0.0, kv[0]))
    # biggest spend first, then most tokens
    return sorted(items, key=lambda kv: (-kv[1].cost, -kv[1].usage.total, kv[0]))
