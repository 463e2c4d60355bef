"""The overview's tables, each from the summaries or the counted usage (views/overview.py
puts them together), and each table as CSV (`huddle overview --csv TABLE`, the page's
links)."""

from __future__ import annotations

import csv
import io
import math
from datetime import datetime, tzinfo
from typing import Any

from huddle.model.events import Usage
from huddle.model.times import iso
from huddle.usage.report import NO_PROJECT, Line, groups_in

from .overview_index import BUCKET, CALLS, ERRORS, MINUTES, PROMPTS, REPLIES

WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def _where(buckets: set[int], zone: tzinfo) -> dict[int, tuple[str, int, int]]:
    """Each bucket's local (day, hour, weekday) in `zone` (worked out once per bucket)."""
    out = {}
    for n in buckets:
        d = datetime.fromtimestamp(n * BUCKET, zone)
        out[n] = (d.date().isoformat(), d.hour, d.weekday())
    return out


def activity(rows: dict[str, dict], lo: int | None, hi: int | None, zone: tzinfo) -> dict[str, Any]:
    """Activity in buckets [lo, hi): per local day, hour, weekday and weekday-hour, in
    total, and per session (what it did in the range, for the top lists)."""
    inside: dict[str, list[tuple[int, list[int]]]] = {}
    every: set[int] = set()
    for key, r in rows.items():
        got = [(n, c) for n, c in r["b"].items() if (lo is None or n >= lo) and (hi is None or n < hi)]
        if got:
            inside[key] = got
            every.update(n for n, _ in got)
    where = _where(every, zone)
    days: dict[str, list[Any]] = {}
    hours = [[0, 0, 0] for _ in range(24)]
    weekdays = [[0, 0, 0] for _ in range(7)]
    week_hours = [[0] * 24 for _ in range(7)]
    totals = [0, 0, 0, 0, 0]
    sessions: dict[str, dict[str, Any]] = {}
    for key, got in inside.items():
        mine = [0, 0, 0, 0, 0]
        first = last = None
        seen_days: set[str] = set()
        for n, c in got:
            day, hour, wd = where[n]
            acts = c[PROMPTS] + c[REPLIES] + c[CALLS]
            msgs = c[PROMPTS] + c[REPLIES]
            cell = days.get(day)
            if cell is None:
                cell = days[day] = [0, 0, 0, 0]
            cell[0] += acts
            cell[1] += msgs
            cell[2] += c[CALLS]
            if day not in seen_days:
                seen_days.add(day)
                cell[3] += 1
            for line in (hours[hour], weekdays[wd]):
                line[0] += acts
                line[1] += msgs
                line[2] += c[CALLS]
            week_hours[wd][hour] += acts
            minutes = c[MINUTES]
            for i in (PROMPTS, REPLIES, CALLS, ERRORS):
                mine[i] += c[i]
            mine[MINUTES] += minutes.bit_count()
            if minutes:
                lo_min = n * BUCKET + 60 * ((minutes & -minutes).bit_length() - 1)
                hi_min = n * BUCKET + 60 * minutes.bit_length()
                first = lo_min if first is None or lo_min < first else first
                last = hi_min if last is None or hi_min > last else last
        for i in range(5):
            totals[i] += mine[i]
        sessions[key] = {"counts": mine, "first": first, "last": last}

    def said(line: list[int]) -> dict[str, int]:
        return {"activity": line[0], "messages": line[1], "tool_calls": line[2]}

    return {
        "heatmap": [
            {"day": d, "activity": v[0], "messages": v[1], "tool_calls": v[2], "sessions": v[3]}
            for d, v in sorted(days.items())
        ],
        "hours": [{"hour": h, **said(v)} for h, v in enumerate(hours)],
        "weekdays": [{"weekday": i, "name": WEEKDAYS[i], **said(v)} for i, v in enumerate(weekdays)],
        "week_hours": week_hours,
        "totals": totals,
        "sessions": sessions,
    }


def top_sessions(
    rows: dict[str, dict], acted: dict[str, dict], spent: dict[str, dict], n: int
) -> dict[str, list[dict[str, Any]]]:
    """The `n` sessions with the most tokens, the longest and the costliest in the range."""
    entries: list[dict[str, Any]] = []
    for key in acted.keys() | spent.keys():
        r = rows.get(key) or {}
        a = acted.get(key)
        u = spent.get(key)
        info = u["info"] if u else {}
        counts = a["counts"] if a else [0, 0, 0, 0, 0]
        first, last = (a["first"], a["last"]) if a else (None, None)
        entries.append(
            {
                "key": key,
                "id": r.get("id") or info.get("id") or key.split(":", 1)[-1],
                "source": r.get("source") or info.get("source") or key.split(":", 1)[0],
                "title": r.get("title") or info.get("title") or "",
                "project": r.get("project") or info.get("project") or "",
                "tokens": u["tokens"] if u else 0,
                "cost_usd": u["cost_usd"] if u else 0.0,
                "unpriced": bool(u and u["unpriced"]),
                "duration_s": (last - first) if first is not None and last is not None else 0,
                "active_s": counts[MINUTES] * 60,
                "messages": counts[PROMPTS] + counts[REPLIES],
                "tool_calls": counts[CALLS],
                "first": iso(first),
                "last": iso(last),
            }
        )
    entries.sort(key=lambda e: e["key"])  # (ties keep one order, whoever asks)

    def top(what: str) -> list[dict[str, Any]]:
        got = [e for e in entries if e[what]]
        return sorted(got, key=lambda e: -(e[what] or 0))[:n]

    return {"tokens": top("tokens"), "cost": top("cost_usd"), "duration": top("active_s")}


def used_tools(rows: dict[str, dict], lo_day: str | None, hi_day: str | None) -> list[dict[str, Any]]:
    """Tool calls and errors by tool and agent (the source) on the UTC days [lo_day, hi_day)."""
    by: dict[tuple[str, str], list[int]] = {}
    sessions: dict[tuple[str, str], set[str]] = {}
    for key, r in rows.items():
        src = r.get("source") or key.split(":", 1)[0]
        for day, tools in r["tools"].items():
            if (lo_day is not None and day < lo_day) or (hi_day is not None and day >= hi_day):
                continue
            for tool, (calls, errors) in tools.items():
                got = by.setdefault((tool, src), [0, 0])
                got[0] += calls
                got[1] += errors
                sessions.setdefault((tool, src), set()).add(key)
    out: list[dict[str, Any]] = [
        {"tool": tool, "agent": src, "calls": v[0], "errors": v[1], "sessions": len(sessions[(tool, src)])}
        for (tool, src), v in by.items()
    ]
    out.sort(key=lambda x: (-x["calls"], -x["errors"], x["tool"], x["agent"]))
    return out


def cost_over_time(counted: dict, by: str, since: float | None, until: float | None) -> list[dict[str, Any]]:
    """Cost and tokens per UTC day of each model, agent (source) or project: [{key, the
    range's sums (as a usage row), days: {day: cost}}], costliest first."""
    lines: dict[str, Line] = {}
    per_day: dict[str, dict[str, list[float]]] = {}
    for s in counted["sessions"]:
        for g in groups_in(s["groups"], since, until):
            key = g[2] if by == "model" else s["source"] if by == "agent" else (s["project"] or NO_PROJECT)
            line = lines.get(key)
            if line is None:
                line = lines[key] = Line()
            line.add(s["key"], g[10], g[2], Usage(*g[3:8]), g[9], g[8])
            if g[9] is not None:
                per_day.setdefault(key, {}).setdefault(g[0], []).extend(g[9])
    out = []
    for key, line in lines.items():
        d = line.to_dict()
        days = {day: round(math.fsum(c), 6) for day, c in sorted(per_day.get(key, {}).items())}
        out.append(
            {
                "key": key,
                **{k: d[k] for k in ("total_tokens", "cost_usd", "responses", "sessions", "unpriced")},
                "days": days,
            }
        )
    out.sort(key=lambda x: (-(x["cost_usd"] or 0), -x["total_tokens"], x["key"]))
    return out


# -- CSV -------------------------------------------------------------------------------

TABLES = (
    "heatmap",
    "hours",
    "weekdays",
    "top_tokens",
    "top_duration",
    "top_cost",
    "tools",
    "cost_model",
    "cost_agent",
    "cost_project",
)
_TOP = (
    "key",
    "source",
    "id",
    "title",
    "project",
    "tokens",
    "cost_usd",
    "duration_s",
    "active_s",
    "messages",
    "tool_calls",
    "first",
    "last",
)


def _cell(v: Any) -> Any:
    """A cell a spreadsheet would run as a formula (= + - @) is kept as text."""
    if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + v
    return "" if v is None else v


def table_rows(data: dict, table: str) -> tuple[list[str], list[list[Any]]]:
    """(header, rows) of one of the overview's TABLES."""
    if table == "heatmap":
        head = ["day", "activity", "messages", "tool_calls", "sessions"]
        return head, [[r[k] for k in head] for r in data["heatmap"]]
    if table in ("hours", "weekdays"):
        first = "hour" if table == "hours" else "name"
        head = [first, "activity", "messages", "tool_calls"]
        return head, [[r[k] for k in head] for r in data[table]]
    if table.startswith("top_"):
        return list(_TOP), [[r[k] for k in _TOP] for r in data["top_sessions"][table[4:]]]
    if table == "tools":
        head = ["tool", "agent", "calls", "errors", "sessions"]
        return head, [[r[k] for k in head] for r in data["tools"]]
    if table.startswith("cost_"):
        rows = data["cost_over_time"][table[5:]]
        head = ["day", table[5:], "cost_usd"]
        return head, [[day, r["key"], c] for r in rows for day, c in r["days"].items()]
    raise ValueError(table)


def to_csv(data: dict, table: str) -> str:
    head, rows = table_rows(data, table)
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\r\n")
    w.writerow(head)
    for r in rows:
        w.writerow([_cell(v) for v in r])
    return out.getvalue()
