"""Token totals and cost across every session of every agent (`huddle usage`).

Built only from the sessions' `usage` events (one per model response, sub-agents
included). Counted once: within a session the source already counted each response
once (what `session.model_usage` sums); across sessions a response is identified by
its source and response id, so a fork's copied history or a record seen in two
sessions counts a single time, in the session that started first. `copied` events
(fork history a source already recognised) are never counted.

`report()` returns plain data: `huddle usage --json` prints exactly it, and the web
app can serve the same. The command line keeps what it counted, summed per day, agent
and model, in an index in huddle's cache folder (`usage_index`), so a run reads only
the bytes appended since the last.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from huddle.cost.pricing import Table, current, model_name
from huddle.model import events as ev
from huddle.model.events import Event, Usage
from huddle.model.session import Session
from huddle.model.times import iso, project_name

if TYPE_CHECKING:
    from huddle.core import Huddle

GROUPS = ("day", "session", "project", "model", "agent")
UNKNOWN_DAY = "unknown"


def counted_usage(
    sessions: list[Session], since: float | None = None, stats: dict | None = None
) -> Iterator[tuple[Session, Event]]:
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
            if e.kind != ev.USAGE or e.usage is None or e.copied or e.counted_in:
                continue
            if e.id and owner.setdefault((src, e.id), s.key) != s.key:
                dupes += 1
                if stats is not None:
                    by = stats.setdefault("by_session", {})
                    by[s.key] = by.get(s.key, 0) + 1
                continue
            if since is not None and (e.t is None or e.t < since):
                continue
            yield s, e
    if stats is not None:
        stats["duplicates"] = dupes


def agent_label(s: Session, agent_id: str) -> str:
    """For `--by agent`: the lead, or the sub-agent's type."""
    a = s.agents.get(agent_id)
    if agent_id == s.lead_id or a is None:
        return "lead"
    return a.kind or "sub-agent"


def session_info(s: Session) -> dict[str, Any]:
    """What a report says of a session beside its counts."""
    return {
        "key": s.key,
        "source": s.source,
        "id": s.id,
        "title": s.title,
        "project": project_name(s.cwd),
        "started_at": iso(s.started_at),
    }


def collect(sessions: list[Session], per_session: bool = False) -> dict:
    """The counted usage as plain rows, per session: what a report is made from (and
    what the index sums). Row: [t, agent label, model, input, output, cache read,
    cache write, of which 1-hour]. `per_session`: each session says how many of its
    responses another session counts."""
    stats: dict = {}
    out: list[dict] = []
    current_key = None
    rows: list = []
    labels: dict[str, str] = {}  # the session's agents' labels, each worked out once
    for s, e in counted_usage(sessions, stats=stats):
        u = e.usage
        if u is None:  # (counted_usage yields none such)
            continue
        if s.key != current_key:
            current_key = s.key
            rows = []
            labels = {}
            out.append({**session_info(s), "rows": rows})
        label = labels.get(e.agent)
        if label is None:
            label = labels[e.agent] = agent_label(s, e.agent)
        rows.append([e.t, label, model_name(e.name), *u.to_tuple()])
    if per_session:
        for d in out:
            d["duplicates"] = stats.get("by_session", {}).get(d["key"], 0)
    return {"sessions": out, "duplicates": stats.get("duplicates", 0)}


NO_PROJECT = "(no project)"  # a session with no folder, as --by project and the board name it


def only(counted: dict, agent: str | None = None, project: str | None = None) -> dict:
    """The counted usage of one agent (its source: claude, codex...) and/or one project
    (the folder's name; NO_PROJECT for none): what `huddle usage --agent/--project` and
    the overview count."""
    if not agent and not project:
        return counted
    sessions = [
        s
        for s in counted["sessions"]
        if (not agent or s["source"] == agent) and (not project or (s["project"] or NO_PROJECT) == project)
    ]
    return {"sessions": sessions, "duplicates": sum(s.get("duplicates", 0) for s in sessions)}


def add_exact(partials: list[float], x: float) -> None:
    """Add `x` to a sum kept exactly, as non-overlapping partials (Shewchuk, as
    math.fsum): the sum of many costs is then the same whatever their order or
    grouping (the usage index adds per-day sums, the library single responses)."""
    i = 0
    for y in partials:
        if abs(x) < abs(y):
            x, y = y, x
        hi = x + y
        lo = y - (hi - x)
        if lo:
            partials[i] = lo
            i += 1
        x = hi
    partials[i:] = [x]


def exact_partials(costs: list[float]) -> list[float]:
    """The exact sum of these floats as partials (what `add_exact` keeps), found in C:
    each `math.fsum` gives the correctly rounded sum of what is left, which is taken
    away exactly until nothing is. (Three passes or so; it leaves `costs` longer.)"""
    out: list[float] = []
    s = math.fsum(costs)
    while s:  # (a sum of floats is a multiple of the least one: what is left reaches 0)
        out.append(s)
        costs.append(-s)
        s = math.fsum(costs)
    out.reverse()  # smallest first, as add_exact keeps them
    return out or [0.0]


class Line:
    """One row of the report being summed."""

    __slots__ = ("costs", "first", "info", "models", "priced", "responses", "sessions", "unpriced", "usage")

    def __init__(self, info: dict | None = None) -> None:
        self.usage = Usage()
        self.costs: list[float] = []  # the cost so far, exactly (add_exact)
        self.priced = False
        self.unpriced: dict[str, int] = {}  # model -> tokens
        self.responses = 0
        self.sessions: set[str] = set()
        self.models: set[str] = set()
        self.first: float | None = None
        self.info = info or {}

    @property
    def cost(self) -> float:
        return math.fsum(self.costs)

    def add(
        self, session_key: str, t: float | None, model: str, u: Usage, cost: float | list[float] | None, n: int = 1
    ) -> None:
        """`n` responses summing to `u` (and `cost`: a float, or a sum's exact partials)
        at the earliest time `t`."""
        self.usage.add(u)
        self.responses += n
        self.sessions.add(session_key)
        self.models.add(model)
        if cost is None:
            self.unpriced[model] = self.unpriced.get(model, 0) + u.total
        else:
            for c in cost if isinstance(cost, list) else (cost,):
                add_exact(self.costs, c)
            self.priced = True
        if t is not None and (self.first is None or t < self.first):
            self.first = t

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = self.usage.to_dict()
        d["total_tokens"] = self.usage.total
        d["cost_usd"] = round(self.cost, 6) if self.priced else (None if self.unpriced else 0.0)
        d["unpriced"] = sorted(self.unpriced)
        d["models"] = sorted(self.models)
        d["responses"] = self.responses
        d["sessions"] = len(self.sessions)
        return d


def _day(t: float | None) -> str:
    return UNKNOWN_DAY if t is None else datetime.fromtimestamp(t, UTC).date().isoformat()


def aggregate(
    counted: dict,
    by: str = "day",
    since: float | None = None,
    table: Table | None = None,
    notes: list[str] | None = None,
    until: float | None = None,
    bounded: bool = False,
) -> dict:
    """A report from collected rows (see `collect`), of usage at or after `since` and
    before `until` (unix seconds; either may be None). `bounded`: the sums (`groups`)
    hold only usage inside the bounds already (the hub sums in SQL what they let in)."""
    if by not in GROUPS:
        raise ValueError(f"by must be one of {', '.join(GROUPS)}")
    t = table or current()
    lines: dict[str, Line] = {}
    total = Line()
    by_source: dict[str, int] = {}
    for s in counted["sessions"]:
        key_s, src = s["key"], s["source"]
        for when, day, agent, model, u, cost, n in _items(s, since, until, bounded, t):
            key = _line_key(by, s, day, agent, model)
            line = lines.get(key)
            if line is None:
                line = lines[key] = Line(_line_info(by, s, agent))
            line.add(key_s, when, model, u, cost, n)
            total.add(key_s, when, model, u, cost, n)
            by_source[src] = by_source.get(src, 0) + n
    return shaped(by, lines, total, by_source, counted.get("duplicates", 0), t, since, until, notes)


def _items(s: dict, since: float | None, until: float | None, bounded: bool, t: Table) -> list[tuple[Any, ...]]:
    """A session's usage inside the bounds: (time, day, agent, model, usage, cost, responses),
    from its sums per day, agent and model (the usage index) or from its rows."""
    if "groups" in s:
        kept = s["groups"] if bounded else groups_in(s["groups"], since, until)
        return [(g[10], g[0], g[1], g[2], Usage(*g[3:8]), g[9], g[8]) for g in kept]
    items = []
    for r in s["rows"]:
        when = r[0]
        if since is not None and (when is None or when < since):
            continue
        if until is not None and (when is None or when >= until):
            continue
        u = Usage(*r[3:8])
        items.append((when, _day(when), r[1], r[2], u, t.cost(r[2], u), 1))
    return items


def _line_key(by: str, s: dict, day: str, agent: str, model: str) -> str:
    if by == "day":
        return day
    if by == "session":
        return str(s["key"])
    if by == "model":
        return model
    if by == "agent":
        return f"{s['source']}:{agent}"
    return s["project"] or NO_PROJECT


def _line_info(by: str, s: dict, agent: str) -> dict | None:
    """What a line names beside its key: its session's, or its agent's."""
    if by == "session":
        info = {k: s[k] for k in ("source", "id", "title", "project", "started_at")}
        info["session"] = info.pop("id")
        return info
    if by == "agent":
        return {"source": s["source"], "agent": agent}
    return None


def shaped(
    by: str,
    lines: dict[str, Line],
    total: Line,
    by_source: dict[str, int],
    duplicates: int,
    t: Table,
    since: float | None = None,
    until: float | None = None,
    notes: list[str] | None = None,
) -> dict:
    """The report of lines summed (`aggregate`; or kept summed: usage.sums)."""
    rows = [{"key": key, **line.info, **line.to_dict()} for key, line in _ordered(by, lines)]
    unpriced = [{"model": m, "tokens": n} for m, n in sorted(total.unpriced.items(), key=lambda kv: (-kv[1], kv[0]))]
    return {
        "by": by,
        "since": iso(since),
        **({"until": iso(until)} if until is not None else {}),
        "rows": rows,
        "totals": total.to_dict(),
        "unpriced": unpriced,
        "pricing": t.describe(),
        "counted": {
            "responses": total.responses,
            "duplicates_skipped": duplicates,
            "by_source": dict(sorted(by_source.items())),
        },
        "notes": list(notes or []),
    }


def report(
    huddle: Huddle,
    by: str = "day",
    since: float | None = None,
    table: Table | None = None,
    until: float | None = None,
    agent: str | None = None,
    project: str | None = None,
) -> dict[str, Any]:
    """Token totals and cost grouped `by` day (UTC), session, project, model or agent,
    from usage at or after `since` and before `until` (unix seconds), of one agent and/or
    project when given. Reads what `huddle` holds: call `huddle.refresh()` first."""
    from .own import with_own

    t = table or current(huddle.settings.huddle_home)
    data = _aggregated(huddle, (by, since, until, agent, project), t)
    return with_own(dict(data), huddle.settings.huddle_home, t, since, until)  # (its own beside: read each time)


_reports: weakref.WeakKeyDictionary[Any, list[tuple[tuple, Table, dict]]] = weakref.WeakKeyDictionary()
KEPT_REPORTS = 8  # the questions a page asks of one board (its groupings, a range or two)


def _aggregated(huddle: Huddle, question: tuple, t: Table) -> dict:
    """`aggregate` of the core's counted usage for (by, since, until, agent, project),
    once per change of the core, question and prices: a page asks again each time it is
    opened, and a two-year history's 85,000 responses took 0.3 s to add up, under the
    core's lock."""
    by, since, until, agent, project = question
    notes = getattr(huddle, "notes", None)
    gen = getattr(huddle, "generation", None)
    key = (gen, question, tuple(notes or ()))
    try:
        kept = _reports.get(huddle)
    except TypeError:
        kept = None
    for k, table, data in kept or ():
        if gen is not None and k == key and table is t:
            return data
    data = aggregate(only(_collected(huddle), agent, project), by, since, t, notes, until)
    if gen is not None:
        try:
            entries = _reports.setdefault(huddle, [])
        except TypeError:
            return data
        entries.insert(0, (key, t, data))
        del entries[KEPT_REPORTS:]
    return data


_collected_memo: weakref.WeakKeyDictionary[Any, tuple[int, dict]] = weakref.WeakKeyDictionary()


def _collected(huddle: Huddle) -> dict:
    """`collect` over the core's sessions, once per change of the core (a page asks
    for several groupings of the same rows)."""
    gen = getattr(huddle, "generation", None)
    try:
        got = _collected_memo.get(huddle)
    except TypeError:
        got = None
    if got is not None and gen is not None and got[0] == gen:
        return got[1]
    counted = collect(huddle.sessions())
    if gen is not None:
        try:
            _collected_memo[huddle] = (gen, counted)
        except TypeError:
            pass
    return counted


def _ordered(by: str, lines: dict[str, Line]) -> list[tuple[str, Line]]:
    items = list(lines.items())
    if by == "day":
        return sorted(items, key=lambda kv: (kv[0] == UNKNOWN_DAY, kv[0]))
    if by == "session":
        return sorted(items, key=lambda kv: (kv[1].first is None, kv[1].first or 0.0, kv[0]))
    # biggest spend first, then most tokens
    return sorted(items, key=lambda kv: (-kv[1].cost, -kv[1].usage.total, kv[0]))


def groups_in(groups: list[list[Any]], since: float | None, until: float | None) -> list[list[Any]]:
    """The sums of the days at or after `since` and before `until` (both on midnights)."""
    lo = _day(since) if since is not None else None
    hi = _day(until) if until is not None else None
    out = []
    for g in groups:
        day = g[0]
        if day == UNKNOWN_DAY:
            if lo is None and hi is None:
                out.append(g)
            continue
        if (lo is None or day >= lo) and (hi is None or day < hi):
            out.append(g)
    return out
