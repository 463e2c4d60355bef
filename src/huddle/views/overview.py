"""`huddle overview --json` == GET /api/overview: a history at a glance.

Sessions, messages, active days and cost in a range; activity by day (a heatmap), by
hour of day and weekday; the top sessions by tokens, duration and cost; tool use by
tool and agent; cost over time by model, agent and project. For every agent huddle
reads, filtered by agent (its source) and project.

One count of everything: tokens and cost come from the usage index as `huddle usage`
counts them (`totals` is `huddle usage --json`'s for the same range and filters), what
was said and done from the overview's per-session summaries (overview_index). Both
read only what moved since they were last asked, so a big home answers from its
caches. Days are UTC days, as `huddle usage` counts them (a range is whole UTC days);
hours and weekdays, and the days of the activity heatmap, are the time zone's asked
for (the machine's own by default; the page sends the browser's).
"""

from __future__ import annotations

import math
import os
import re
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import TYPE_CHECKING, Any, cast
from zoneinfo import ZoneInfo

from huddle.errors import BadRequest
from huddle.model.times import iso
from huddle.usage.index import counted_from_index, day_aligned
from huddle.usage.report import NO_PROJECT, add_exact, aggregate, only

from .overview_index import BUCKET, CALLS, ERRORS, MINUTES, PROMPTS, REPLIES, summaries

if TYPE_CHECKING:
    from huddle.cost.pricing import Table
    from huddle.sources.settings import Settings

TOP = 10  # sessions in each top list
DIMENSIONS = ("model", "agent", "project")  # cost over time, by
PARAMS = ("agent", "project", "since", "until", "days", "tz")  # what the route and the command take
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_+\-/]{0,63}$")
_SOURCE = re.compile(r"^[a-z][a-z0-9_-]{0,30}$")


@dataclass(frozen=True)
class Params:
    agent: str | None
    project: str | None
    since: float | None
    until: float | None
    days: int | None
    zone: tzinfo
    zone_name: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "project": self.project,
            "since": iso(self.since),
            "until": iso(self.until),
            "days": self.days,
            "tz": self.zone_name,
        }


def local_zone() -> tuple[tzinfo, str]:
    """This machine's time zone and its name: $TZ, else /etc/localtime, else UTC."""
    name = os.environ.get("TZ", "").lstrip(":")
    if name:
        try:
            return ZoneInfo(name), name
        except (ValueError, OSError, KeyError):  # (ZoneInfoNotFoundError is a KeyError)
            pass
    try:
        target = os.path.realpath("/etc/localtime")
        if "/zoneinfo/" in target:
            key = target.split("/zoneinfo/", 1)[1]
            return ZoneInfo(key), key
    except (ValueError, OSError, KeyError):
        pass
    return UTC, "UTC"


def _zone(value: object) -> tuple[tzinfo, str]:
    if value in (None, ""):
        return local_zone()
    if not isinstance(value, str) or not _NAME.match(value) or ".." in value:
        raise BadRequest(f"bad tz: {str(value)[:40]!r} (a time zone name: Europe/Paris, UTC)")
    if value.upper() == "UTC":
        return UTC, "UTC"
    try:
        return ZoneInfo(value), value
    except (ValueError, OSError, KeyError):
        raise BadRequest(f"unknown time zone: {value[:40]!r} (a name such as Europe/Paris)") from None


def _bound(t: float | None, what: str) -> float | None:
    if t is not None and not day_aligned(t):
        raise BadRequest(f"bad {what}: {iso(t)} (the overview counts whole UTC days: use YYYY-MM-DD)")
    return t


def _agent(value: object) -> str | None:
    if value in (None, ""):
        return None
    if not isinstance(value, str) or not _SOURCE.match(value):
        raise BadRequest(f"bad agent: {str(value)[:40]!r}")
    return value


def params(
    agent: object = None,
    project: str | None = None,
    since: float | None = None,
    until: float | None = None,
    days: int | None = None,
    tz: object = None,
    now: float | None = None,
) -> Params:
    """The overview's parameters (each read by views/operations.py) checked together
    (BadRequest saying which is wrong and why). `days`: the last N UTC days, today's
    included (not with `since`)."""
    t_since, t_until = _bound(since, "since"), _bound(until, "until")
    n = days
    if n is not None:
        if t_since is not None:
            raise BadRequest("give days or since, not both")
        today = (time.time() if now is None else now) // 86400 * 86400
        t_since = today - (n - 1) * 86400
    if t_since is not None and t_until is not None and t_until <= t_since:
        raise BadRequest("until must come after since")
    zone, zone_name = _zone(tz)
    return Params(_agent(agent), project, t_since, t_until, n, zone, zone_name)


def overview(settings: Settings, table: Table, first: Any = None, now: float | None = None, **given: object) -> dict:
    """The overview for these parameters (`params`). `first` (core.FirstRead): how the
    indexes read sessions from their start (forked workers by default)."""
    p = params(now=now, **cast("dict[str, Any]", given))
    counted, notes = counted_from_index(settings, table, p.since, p.until, first=first)
    usage = aggregate(only(counted, p.agent, p.project), "day", p.since, table, list(notes), p.until)
    rows, more = summaries(settings, first=first)
    notes += [n for n in more if n not in notes]
    return assemble(p, counted, usage, rows, table, notes)


def _choices(counted: dict, rows: dict[str, dict]) -> dict[str, list[str]]:
    """Every agent and project there is (unfiltered): what the page's filters offer."""
    agents = {s["source"] for s in counted["sessions"]} | {r.get("source", "") for r in rows.values()}
    projects = {s["project"] or NO_PROJECT for s in counted["sessions"]}
    projects |= {r.get("project") or NO_PROJECT for r in rows.values()}
    return {"agents": sorted(a for a in agents if a), "projects": sorted(projects)}


def assemble(p: Params, counted: dict, usage: dict, rows: dict[str, dict], table: Table, notes: list[str]) -> dict:
    """The overview from the counted usage (its report for the range and filters) and the summaries."""
    from .overview_tables import activity, cost_over_time, top_sessions, used_tools

    mine = {
        k: r
        for k, r in rows.items()
        if (not p.agent or r.get("source") == p.agent)
        and (not p.project or (r.get("project") or NO_PROJECT) == p.project)
    }
    lo = None if p.since is None else int(p.since // BUCKET)
    hi = None if p.until is None else int(p.until // BUCKET)
    act = activity(mine, lo, hi, p.zone)
    spent = per_session(only(counted, p.agent, p.project), p.since, p.until)
    totals = usage["totals"]
    stats = {
        "sessions": len(set(act["sessions"]) | {k for k, v in spent.items() if v["responses"]}),
        "messages": act["totals"][PROMPTS] + act["totals"][REPLIES],
        "prompts": act["totals"][PROMPTS],
        "replies": act["totals"][REPLIES],
        "tool_calls": act["totals"][CALLS],
        "tool_errors": act["totals"][ERRORS],
        "active_days": len(act["heatmap"]),
        "active_minutes": act["totals"][MINUTES],
        "tokens": totals["total_tokens"],
        "cost_usd": totals["cost_usd"],
    }
    lo_day = None if p.since is None else _day(p.since)
    hi_day = None if p.until is None else _day(p.until)
    return {
        "filters": p.to_dict(),
        "stats": stats,
        "totals": totals,
        "heatmap": act["heatmap"],
        "hours": act["hours"],
        "weekdays": act["weekdays"],
        "week_hours": act["week_hours"],
        "top_sessions": top_sessions(mine, act["sessions"], spent, TOP),
        "tools": used_tools(mine, lo_day, hi_day),
        "cost_days": [
            {k: r[k] for k in ("key", "total_tokens", "cost_usd", "responses", "sessions")} for r in usage["rows"]
        ],
        "cost_over_time": {
            d: cost_over_time(only(counted, p.agent, p.project), d, p.since, p.until) for d in DIMENSIONS
        },
        "choices": _choices(counted, rows),
        "unpriced": usage["unpriced"],
        "pricing": usage["pricing"],
        "notes": notes,
    }


def _day(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).date().isoformat()


def per_session(counted: dict, since: float | None, until: float | None) -> dict[str, dict[str, Any]]:
    """Each session's tokens, cost and responses in the range (from its sums per day)."""
    from huddle.usage.report import groups_in

    out: dict[str, dict[str, Any]] = {}
    for s in counted["sessions"]:
        tokens = responses = 0
        costs: list[float] = []
        priced = unpriced = False
        for g in groups_in(s["groups"], since, until):
            tokens += g[3] + g[4] + g[5] + g[6]
            responses += g[8]
            if g[9] is None:
                unpriced = True
            else:
                priced = True
                for c in g[9]:
                    add_exact(costs, c)
        if responses:
            cost = round(math.fsum(costs), 6) if priced else (None if unpriced else 0.0)
            out[s["key"]] = {
                "info": s,
                "tokens": tokens,
                "responses": responses,
                "cost_usd": cost,
                "unpriced": unpriced,
            }
    return out


# -- in a server -------------------------------------------------------------------------

_serving = threading.Lock()  # one overview worked out at a time: a second asker waits, then reads what moved since


def cold(settings: Settings) -> bool:
    """Whether the overview's caches are still to be built (a first read of the whole home)."""
    from huddle.core.cache import USAGE_INDEX, cache_dir

    from .overview_index import CACHE_NAME

    home = cache_dir(settings.huddle_home)
    return not all(os.path.exists(os.path.join(home, name)) for name in (USAGE_INDEX, CACHE_NAME))


def served(settings: Settings, stopping: Any = None, **given: object) -> dict:
    """GET /api/overview: what `huddle overview --json` says for the same parameters. A
    server has threads, and never forks: a first build (every session read, in forked
    workers) runs in a child process of its own (io.apart), whose heap goes when it
    ends; afterwards the server reads what moved itself."""
    from huddle.core import FirstRead
    from huddle.cost.pricing import current
    from huddle.io.apart import run_apart

    asked = cast("dict[str, Any]", given)
    params(**asked)  # (a bad parameter is said before anything is read)
    with _serving:
        if settings.huddle_home and cold(settings):
            run_apart(__name__, "warm", settings, stopping or (lambda: False))  # (not done: read below, here)
        return overview(settings, current(settings.huddle_home), first=FirstRead(workers=False), **asked)


def warm(settings: Settings, say: Any) -> None:
    """In a child process (io.apart): the overview's caches built, in forked workers."""
    from huddle.cost.pricing import current

    overview(settings, current(settings.huddle_home))
