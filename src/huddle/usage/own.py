"""huddle's own tokens: what huddle itself asked a model for (translation, opted in),
shown apart from every session's usage and never summed into it.

`huddle usage` (and GET /api/usage) carry it as `huddle_own`: its rows by what and
model, priced by the same table (cost/pricing), and its totals. Read from
$HUDDLE_HOME/translate/cache.db (translate/store.py); nothing there, nothing shown.
"""

from __future__ import annotations

import math
from typing import Any

from huddle.cost.pricing import Table
from huddle.model.events import Usage
from huddle.translate.store import spent


def own_usage(home: str, table: Table, since: float | None = None, until: float | None = None) -> dict[str, Any]:
    sums: dict[tuple[str, str], tuple[Usage, list[float], list[int], str]] = {}
    total, total_cost, unpriced = Usage(), [], set[str]()
    for r in spent(home, since, until) if home else ():
        u = Usage(input=r["input"], output=r["output"], cache_read=r["cache_read"], cache_write=r["cache_write"])
        cost = table.cost(r["model"], u)
        key = (r["what"], r["model"])
        if key not in sums:
            sums[key] = (Usage(), [], [0], r["via"])
        line = sums[key]
        line[0].add(u)
        line[2][0] += 1
        total.add(u)
        if cost is None:
            unpriced.add(r["model"])
        else:
            line[1].append(cost)
            total_cost.append(cost)
    rows = []
    for (what, model), (u, costs, n, via) in sorted(sums.items()):
        priced = model not in unpriced
        rows.append(
            {
                "key": what,
                "model": model,
                "via": via,
                **_counts(u),
                "cost_usd": round(math.fsum(costs), 6) if priced else None,
                "unpriced": [] if priced else [model],
                "responses": n[0],
            }
        )
    totals = {
        **_counts(total),
        "cost_usd": round(math.fsum(total_cost), 6),
        "unpriced": sorted(unpriced),
        "responses": sum(n[0] for _, _, n, _ in sums.values()),
    }
    return {"rows": rows, "totals": totals}


def _counts(u: Usage) -> dict[str, int]:
    return {**u.to_dict(), "total_tokens": u.total}


def with_own(
    data: dict[str, Any], home: str, table: Table, since: float | None = None, until: float | None = None
) -> dict[str, Any]:
    """The usage report with huddle's own tokens beside it (never in its rows or totals)."""
    data["huddle_own"] = own_usage(home, table, since, until)
    return data
