"""`huddle usage`'s report kept summed beside the usage index's rows.

The index keeps each session's sums per day, agent and model (its row); a report by
day over all time adds every row up: at 5,000 sessions, 12,000 sums, most of the run
after one line was appended. The report's own sums (per day and in total: tokens,
responses, cost as exact partials, priced and unpriced groups, sessions, models, and
the responses per source) are kept in the index's meta instead, and a run takes out
the rows it replaces and puts in their new ones: it costs what moved. Every count is
kept so that it can be taken out again (a model is named while a group names it; a
session is counted on a day while it has a group on it), and costs are exact sums
(usage.add_exact), so what is kept says exactly what adding every row up says.

The sums say the checksums of the heads they were added up from (core.store: each
head's, as the store checks it anyway): after any write they were not part of (another
command's, another process's or version's, a damaged entry left out) they are not
trusted, and are added up again from the rows. A kept value that is damaged is said in
one line and added up again.
"""

from __future__ import annotations

import marshal
import zlib
from typing import Any, cast

from huddle.cost.pricing import Table
from huddle.model.events import Usage

from .report import Line, add_exact, shaped

KEY = "sums"  # in the usage index's meta
FORMAT = "huddle-sums/1"

# A line: tokens (input, output, cache read, cache write, of which 1-hour), responses,
# cost partials, priced groups, unpriced {model: [tokens, groups]}, sessions, {model: groups}, groups
RESPONSES, COSTS, PRICED, UNPRICED, SESSIONS, MODELS, GROUPS = range(5, 12)


def empty() -> dict[str, Any]:
    return {"days": {}, "total": _line(), "by_source": {}, "duplicates": 0}


def _line() -> list[Any]:
    return [0, 0, 0, 0, 0, 0, [], 0, {}, 0, {}, 0]


def apply(sums: dict[str, Any], row: Any, sign: int) -> None:
    """Put a session's row (usage_index._entry) in (`sign` 1) or take it out (-1)."""
    groups = row.get("groups") if isinstance(row, dict) else None
    if not groups:
        return  # (a session with nothing counted is in no report)
    days: dict[str, list[Any]] = sums["days"]
    total = sums["total"]
    by_source = sums["by_source"]
    src = row["source"]
    sums["duplicates"] += sign * row.get("duplicates", 0)
    seen: set[str] = set()
    for g in groups:
        day, model, n, cost = g[0], g[2], g[8], g[9]
        line = days.get(day)
        if line is None:
            if sign < 0:  # taken out, never put in: the sums are not those of the rows
                raise ValueError(day)
            line = days[day] = _line()
        if day not in seen:
            seen.add(day)
            line[SESSIONS] += sign
        for ln in (line, total):
            _add(ln, model, g, n, cost, sign)
        if line[GROUPS] == 0:
            del days[day]
        left = by_source.get(src, 0) + sign * n
        if left:
            by_source[src] = left
        else:
            by_source.pop(src, None)
    total[SESSIONS] += sign


def _add(ln: list[Any], model: str, g: list[Any], n: int, cost: list[float] | None, sign: int) -> None:
    for i in range(5):
        ln[i] += sign * g[3 + i]
    ln[RESPONSES] += sign * n
    ln[GROUPS] += sign
    models = ln[MODELS]
    named = models.get(model, 0) + sign
    if named < 0:
        raise ValueError(model)
    if named:
        models[model] = named
    else:
        del models[model]
    if cost is None:
        up = ln[UNPRICED]
        e = up.get(model) or [0, 0]
        e[0] += sign * (g[3] + g[4] + g[5] + g[6])  # (Usage.total)
        e[1] += sign
        if e[1]:
            up[model] = e
        else:
            up.pop(model, None)
    else:
        for c in cost:
            add_exact(ln[COSTS], c if sign > 0 else -c)  # (exact: taken out, it leaves no trace)
        ln[PRICED] += sign


def total_of(rows: list[Any]) -> dict[str, Any]:
    """The sums of these rows, added up from nothing."""
    sums = empty()
    for row in rows:
        apply(sums, row, 1)
    return sums


def report(sums: dict[str, Any], table: Table, notes: list[str]) -> dict[str, Any]:
    """What usage.aggregate(by="day") says of every row these sums were made of."""
    lines = {day: _as_line(v) for day, v in sums["days"].items()}
    return shaped(
        "day", lines, _as_line(sums["total"]), dict(sums["by_source"]), sums["duplicates"], table, notes=notes
    )


def _as_line(v: list[Any]) -> Line:
    line = Line()
    line.usage = Usage(*v[:5])
    line.costs = list(v[COSTS])
    line.priced = v[PRICED] > 0
    line.unpriced = {m: e[0] for m, e in v[UNPRICED].items()}
    line.responses = v[RESPONSES]
    line.sessions = cast("set[str]", range(v[SESSIONS]))  # (only how many is said: len)
    line.models = set(v[MODELS])
    return line


def dumped(sums: dict[str, Any], crcs: dict[str, int], pricing: str) -> list[Any]:
    """What the meta keeps: the sums, and the checksums of the heads they were added up
    from (core.store.Store.crcs)."""
    payload = marshal.dumps((crcs, sums))
    return [FORMAT, pricing, zlib.crc32(payload), payload]


def loaded(kept: Any, crcs: dict[str, int], pricing: str) -> tuple[dict[str, Any] | None, str | None]:
    """(the kept sums if they are those of the heads with these checksums under these
    prices, or None; a line when what was kept is damaged)."""
    if kept is None:
        return None, None
    damaged = "the report's kept sums are damaged; added up again from the rows"
    if not isinstance(kept, list) or len(kept) != 4 or kept[0] != FORMAT:
        return None, damaged
    _fmt, priced, crc, payload = kept
    try:
        if not isinstance(payload, bytes) or zlib.crc32(payload) != crc:
            raise ValueError("checksum")
        made_from, sums = marshal.loads(payload)
        if not (
            isinstance(sums, dict)
            and isinstance(sums.get("days"), dict)
            and isinstance(sums.get("total"), list)
            and len(sums["total"]) == 12
            and isinstance(sums.get("by_source"), dict)
            and isinstance(sums.get("duplicates"), int)
        ):
            raise ValueError("shape")
    except (ValueError, EOFError, TypeError):
        return None, damaged
    if priced != pricing or made_from != crcs:
        return None, None  # (other prices, or rows written since: added up again)
    return sums, None
